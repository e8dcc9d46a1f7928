package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
)

const correlateHelp = `Usage: inferwatch correlate --x FILE --y FILE [flags]

Correlates two time series read from files: how strongly y moves with x, and
at which lag the relation is strongest (for example GPU duty cycle against
request latency, or against the jitter of the latency with --y-jitter).

Each FILE is a CSV of timestamp,value rows, a saved Prometheus query or
query_range response (.json) or VictoriaMetrics export JSON lines (.jsonl).
A file holding several series needs --x-series or --y-series to pick one.
NaN, ±Inf and staleness markers are dropped. Both series are averaged into
buckets of --align-step (default: the coarser of the two series' median
sampling steps) and compared bucket by bucket.

Output, one JSON object (null where a value is undefined, e.g. a constant
series):
  n                     buckets where both series have a value
  pearson               Pearson's r at lag 0, in [-1, 1]
  p_value               two-sided p-value of pearson against "no correlation"
                        (Student's t with n-2 degrees of freedom)
  spearman              Spearman's rank correlation at lag 0 (monotone, not
                        only linear relations; robust to outliers)
  spearman_p_value      its p-value, same approximation
  best_lag_seconds      the lag within ±max-lag where |r| is largest
  best_lag_steps        the same in buckets of align_step_seconds
  best_lag_correlation  Pearson's r at that lag; best_lag_p_value and
                        best_lag_n are its p-value and number of pairs
  align_step_seconds    the bucket width used
  max_lag_seconds       the largest lag tried
  x, y                  file, series, finite samples used, samples dropped
                        and median sampling step of each input

Lag sign convention: at lag L, x at time t is paired with y at time t+L.
A positive best_lag_seconds means y follows x (x leads: a change in x shows
in y L seconds later); a negative one means x follows y. Only lags with at
least --min-pairs pairs compete; best_lag_* are null when none has.

Exit status: 0 ok, 1 bad input (the message names the file and line),
2 usage error.

Flags:
`

type correlateOptions struct {
	xFile, yFile       string
	xSeries, ySeries   string
	yJitter, alignStep time.Duration
	maxLag             time.Duration
	maxLagSet          bool
	minPairs           int
}

// defaultMaxLagSteps is how many grid steps either way correlate tries
// when --max-lag is not given.
const defaultMaxLagSteps = 10

func cmdCorrelate(args []string, stdout, stderr io.Writer) int {
	var o correlateOptions
	var yJitter, alignStep, maxLag durationFlag
	fs := newOfflineFlagSet("inferwatch correlate", correlateHelp)
	fs.StringVar(&o.xFile, "x", "", "`FILE` holding the x series (the candidate cause, e.g. GPU duty cycle)")
	fs.StringVar(&o.yFile, "y", "", "`FILE` holding the y series (the candidate effect, e.g. latency)")
	fs.StringVar(&o.xSeries, "x-series", "", "series `SELECTOR` picking one series of the x file, e.g. 'DCGM_FI_DEV_GPU_UTIL{pod=\"p0\"}'")
	fs.StringVar(&o.ySeries, "y-series", "", "series `SELECTOR` picking one series of the y file")
	fs.Var(&yJitter, "y-jitter", "correlate with the jitter of y instead of y: its standard deviation over the trailing `WINDOW` (e.g. 5m) at each sample, needing at least 5 samples in the window")
	fs.Var(&maxLag, "max-lag", "largest lag to try either way, a `DURATION` (e.g. 10m; default 10 align steps; 0: lag 0 only)")
	fs.Var(&alignStep, "align-step", "bucket width of the common grid, a `DURATION` (default: the coarser of the two series' median steps)")
	fs.IntVar(&o.minPairs, "min-pairs", analysis.DefaultCouplingMinN, "least number of pairs a lag needs to compete for best_lag (at least 3)")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if o.xFile == "" || o.yFile == "" {
		return usageError(stderr, fs, "--x FILE and --y FILE are required")
	}
	if o.minPairs < 3 {
		return usageError(stderr, fs, fmt.Sprintf("--min-pairs must be at least 3, got %d", o.minPairs))
	}
	fs.Visit(func(f *flag.Flag) { o.maxLagSet = o.maxLagSet || f.Name == "max-lag" })
	o.yJitter, o.alignStep, o.maxLag = yJitter.d, alignStep.d, maxLag.d
	res, err := correlate(o)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch correlate:", err)
		return 1
	}
	return writeJSON(stdout, stderr, res)
}

type correlateResult struct {
	N                  int                `json:"n"`
	Pearson            alerting.JSONFloat `json:"pearson"`
	PValue             alerting.JSONFloat `json:"p_value"`
	Spearman           alerting.JSONFloat `json:"spearman"`
	SpearmanPValue     alerting.JSONFloat `json:"spearman_p_value"`
	BestLagSeconds     alerting.JSONFloat `json:"best_lag_seconds"`
	BestLagSteps       *int               `json:"best_lag_steps"`
	BestLagCorrelation alerting.JSONFloat `json:"best_lag_correlation"`
	BestLagPValue      alerting.JSONFloat `json:"best_lag_p_value"`
	BestLagN           int                `json:"best_lag_n"`
	AlignStepSeconds   float64            `json:"align_step_seconds"`
	MaxLagSeconds      float64            `json:"max_lag_seconds"`
	YJitterSeconds     float64            `json:"y_jitter_seconds,omitempty"`
	X                  inputInfo          `json:"x"`
	Y                  inputInfo          `json:"y"`
}

// inputInfo describes one input series of an offline command.
type inputInfo struct {
	File              string  `json:"file"`
	Series            string  `json:"series"`
	Samples           int     `json:"samples"`
	Dropped           int     `json:"dropped"`
	MedianStepSeconds float64 `json:"median_step_seconds"`

	medianStep int64 // milliseconds
}

func correlate(o correlateOptions) (correlateResult, error) {
	xs, xi, err := readOneSeries(o.xFile, o.xSeries, "--x-series")
	if err != nil {
		return correlateResult{}, err
	}
	ys, yi, err := readOneSeries(o.yFile, o.ySeries, "--y-series")
	if err != nil {
		return correlateResult{}, err
	}
	res := correlateResult{X: xi, Y: yi}
	step := o.alignStep.Milliseconds()
	if step <= 0 {
		step = max(xi.medianStep, yi.medianStep)
	}
	res.AlignStepSeconds = float64(step) / 1000
	maxLag := defaultMaxLagSteps
	if o.maxLagSet {
		maxLag = int(o.maxLag.Milliseconds() / step)
	}
	c := analysis.CorrelateConfig{Step: step, From: math.MinInt64, MaxLag: maxLag, MinPairs: o.minPairs}
	if o.yJitter > 0 {
		c.YJitter = o.yJitter.Milliseconds()
		res.YJitterSeconds = o.yJitter.Seconds()
	}
	m := analysis.Correlate(xs.Timestamps, xs.Values, ys.Timestamps, ys.Values, c)
	if o.yJitter > 0 && m.JitterDefined < minSeriesPoints {
		return res, fmt.Errorf("%s: the jitter of %s over %s is defined at %d sample%s, need at least %d: widen --y-jitter (every window needs %d samples) or give a longer series",
			o.yFile, yi.Series, o.yJitter, m.JitterDefined, pluralS(m.JitterDefined), minSeriesPoints, analysis.DefaultJitterMinPoints)
	}
	if m.Pearson.N < minSeriesPoints {
		return res, fmt.Errorf("%s and %s share %d bucket%s of %s, need at least %d: x covers %s, y covers %s (do they overlap in time? is --align-step too coarse?)",
			o.xFile, o.yFile, m.Pearson.N, pluralS(m.Pearson.N), time.Duration(step)*time.Millisecond, minSeriesPoints,
			timeRange(xs.Timestamps), timeRange(ys.Timestamps))
	}
	p, s := m.Pearson, m.Spearman
	res.N = p.N
	res.Pearson, res.PValue = alerting.JSONFloat(p.R), alerting.JSONFloat(p.P)
	res.Spearman, res.SpearmanPValue = alerting.JSONFloat(s.R), alerting.JSONFloat(s.P)
	res.MaxLagSeconds = float64(int64(m.MaxLag)*step) / 1000
	lc := m.Lag
	res.BestLagSeconds, res.BestLagCorrelation, res.BestLagPValue = alerting.JSONFloat(math.NaN()), alerting.JSONFloat(lc.R), alerting.JSONFloat(lc.P)
	if !math.IsNaN(lc.R) {
		lag := lc.Lag
		res.BestLagSteps = &lag
		res.BestLagSeconds = alerting.JSONFloat(float64(int64(lag)*step) / 1000)
		res.BestLagN = lc.N
	}
	return res, nil
}

// The helpers below are shared by the offline commands (correlate, decay,
// knee).

// minSeriesPoints is the least number of finite samples an offline
// command works with: below it a correlation has no p-value and a trend no
// interval.
const minSeriesPoints = 3

// readOneSeries reads the file's one series (ingest.ReadOne), or the one
// the selector flagName gives picks, with at least minSeriesPoints finite
// samples.
func readOneSeries(file, selector, flagName string) (ingest.Series, inputInfo, error) {
	s, si, err := ingest.ReadOne(file, ingest.OneOptions{Selector: selector, SelectorName: flagName, MinSamples: minSeriesPoints})
	info := inputInfo{File: si.File, Series: si.Series, Samples: si.Samples, Dropped: si.Dropped,
		MedianStepSeconds: float64(si.MedianStep) / 1000, medianStep: si.MedianStep}
	return s, info, err
}

func timeRange(ts []int64) string {
	f := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
	return f(ts[0]) + " .. " + f(ts[len(ts)-1])
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
