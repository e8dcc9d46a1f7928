package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/analysis"
)

const decayHelp = `Usage: inferwatch decay --input FILE [flags]

Measures the throughput decay of a serving replica from a throughput series
(tokens/s, tokens/s per running request, requests/s): how far it has fallen
below its peak, η = 1 - throughput/peak, and whether η is trending up.

FILE is a CSV of timestamp,value rows, a saved Prometheus query or
query_range response (.json) or VictoriaMetrics export JSON lines (.jsonl);
a file holding several series needs --series to pick one. NaN, ±Inf and
staleness markers are dropped.

Output, one JSON object (null where a value is undefined):
  peak                  the peak throughput η is measured against: --peak,
                        or the 0.99 quantile of the throughput over the last
                        --window (over the last 7 days without --window)
  peak_estimated        true when the peak was estimated, not given
  eta_current           η now: the median η of the samples in the last
                        --current (default 1h) up to the newest sample;
                        0 at the peak, 0.3 when 30 % below it, negative above
  eta_trend_per_day     the Theil-Sen slope of η against time, in η per day
                        (0.02: the throughput loses 2 % of the peak a day;
                        negative: it is recovering)
  eta_trend_ci_lower,
  eta_trend_ci_upper    Sen's confidence interval of that slope, at
                        confidence (default 0.95)
  significant           true when the interval lies above 0 and the slope is
                        at least min_slope_per_day: the decay is real
  day_over_day          mean η over the last day minus that of the day before
  week_over_week        mean η over the last day minus that of the same day a
                        week earlier (null with less than 8 days of data)
  n, from, to           samples used and the time they span (RFC 3339, UTC)
  input                 file, series, finite samples, samples dropped and
                        median sampling step

Exit status: 0 ok, 1 bad input (the message names the file and line),
2 usage error.

Flags:
`

type decayOptions struct {
	file, series     string
	peak             float64
	window, current  time.Duration
	minSlope, confid float64
}

func cmdDecay(args []string, stdout, stderr io.Writer) int {
	var o decayOptions
	var window, current durationFlag
	current.d = time.Hour
	fs := newOfflineFlagSet("inferwatch decay", decayHelp)
	fs.StringVar(&o.file, "input", "", "`FILE` holding the throughput series")
	fs.StringVar(&o.series, "series", "", "series `SELECTOR` picking one series of the file, e.g. 'tokens_per_request{pod=\"llama-0\"}'")
	fs.Float64Var(&o.peak, "peak", 0, "peak throughput `VALUE` of a healthy replica, in the unit of the series (0: estimate it)")
	fs.Var(&window, "window", "analyse only the last `DURATION` up to the newest sample, e.g. 7d (default: all of the file)")
	fs.Var(&current, "current", "span up to the newest sample whose median η is eta_current, a `DURATION`")
	fs.Float64Var(&o.minSlope, "min-slope", analysis.DefaultDecayMinSlope, "least η trend per day that counts as significant decay")
	fs.Float64Var(&o.confid, "confidence", analysis.DefaultDecayConfidence, "confidence level of the trend's interval, in (0, 1)")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	o.window, o.current = window.d, current.d
	switch {
	case o.file == "":
		return usageError(stderr, fs, "--input FILE is required")
	case !(o.peak >= 0) || math.IsInf(o.peak, 0):
		return usageError(stderr, fs, fmt.Sprintf("--peak must be a finite number ≥ 0 (0: estimate it), got %v", o.peak))
	case !(o.minSlope > 0) || math.IsInf(o.minSlope, 0):
		return usageError(stderr, fs, fmt.Sprintf("--min-slope must be a finite number > 0, got %v", o.minSlope))
	case !(o.confid > 0 && o.confid < 1):
		return usageError(stderr, fs, fmt.Sprintf("--confidence must be in (0, 1), got %v", o.confid))
	case o.current <= 0:
		return usageError(stderr, fs, "--current must be longer than 0")
	}
	res, err := decay(o)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch decay:", err)
		return 1
	}
	return writeJSON(stdout, stderr, res)
}

type decayResult struct {
	Peak            alerting.JSONFloat `json:"peak"`
	PeakEstimated   bool               `json:"peak_estimated"`
	EtaCurrent      alerting.JSONFloat `json:"eta_current"`
	EtaTrendPerDay  alerting.JSONFloat `json:"eta_trend_per_day"`
	EtaTrendCILower alerting.JSONFloat `json:"eta_trend_ci_lower"`
	EtaTrendCIUpper alerting.JSONFloat `json:"eta_trend_ci_upper"`
	Confidence      float64            `json:"confidence"`
	Significant     bool               `json:"significant"`
	MinSlopePerDay  float64            `json:"min_slope_per_day"`
	DayOverDay      alerting.JSONFloat `json:"day_over_day"`
	WeekOverWeek    alerting.JSONFloat `json:"week_over_week"`
	N               int                `json:"n"`
	From            string             `json:"from"`
	To              string             `json:"to"`
	Input           inputInfo          `json:"input"`
}

func decay(o decayOptions) (decayResult, error) {
	s, info, err := readOneSeries(o.file, o.series, "--series")
	if err != nil {
		return decayResult{}, err
	}
	ts, vs := s.Timestamps, s.Values
	last := ts[len(ts)-1]
	cfg := analysis.DecayConfig{Peak: o.peak, MinSlope: o.minSlope, Confidence: o.confid, Current: o.current.Milliseconds()}
	if o.window > 0 {
		w := o.window.Milliseconds()
		first, _ := slices.BinarySearch(ts, last-w+1) // samples in (last − w, last]
		ts, vs = ts[first:], vs[first:]
		cfg.Reference = w
		if len(ts) < minSeriesPoints {
			return decayResult{}, fmt.Errorf("%s: the last %s of %s hold %d sample%s, need at least %d: widen --window",
				o.file, o.window, info.Series, len(ts), pluralS(len(ts)), minSeriesPoints)
		}
	}
	d, err := analysis.ThroughputDecay(ts, vs, cfg)
	if err != nil {
		return decayResult{}, fmt.Errorf("%s: %s: %w", o.file, info.Series, err)
	}
	res := decayResult{
		Peak:            alerting.JSONFloat(d.Peak),
		PeakEstimated:   o.peak == 0,
		EtaCurrent:      alerting.JSONFloat(d.EtaCurrent),
		EtaTrendPerDay:  alerting.JSONFloat(d.Trend.Slope),
		EtaTrendCILower: alerting.JSONFloat(d.Trend.Lower),
		EtaTrendCIUpper: alerting.JSONFloat(d.Trend.Upper),
		Confidence:      o.confid,
		Significant:     d.Significant,
		MinSlopePerDay:  o.minSlope,
		DayOverDay:      alerting.JSONFloat(d.DayOverDay),
		WeekOverWeek:    alerting.JSONFloat(d.WeekOverWeek),
		N:               d.Trend.N,
		From:            time.UnixMilli(ts[0]).UTC().Format(time.RFC3339),
		To:              time.UnixMilli(last).UTC().Format(time.RFC3339),
		Input:           info,
	}
	return res, nil
}
