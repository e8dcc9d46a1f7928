package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metricsql"

	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
)

const forecastUsage = `Usage: inferwatch forecast (--input FILE | --sum-of GLOB) [--model NAME] [--horizon 10m] [--level 0.9] [--weekly] [--resample STEP] [--backtest]

Forecasts a timestamp,value series (CSV, or a query_range JSON or export
JSON lines file holding one series) whose samples are evenly spaced; the
step is the most common spacing. Times a little off their schedule, as a
raw export of scrapes keeps them, are taken at the nearest step of the most
common whole-second spacing when within a quarter of it, and stderr says
how many moved. Samples farther off, or repeating a time, are refused with
their line: --resample STEP reads such a file as the mean of the samples
in each STEP (aligned on multiples of it since the epoch, as a range
query's steps are). Missing steps are gaps, filled by the model's own forecast
and counted; forecasts are clipped at 0 (rates), and a model's are kept
within twice the range of what it has seen beyond that range (a trend
that runs away stops there).

With --sum-of: forecasts the sum of the series in the files matching GLOB
(a service's traffic from each client's, say) bottom-up: each part by its
own model (by default auto between the last value and seasonal_step, the
last value plus the step the part took one period before), the interval
from the sum's own errors. The files share one step; outside a file's own
time range its part counts as 0, and a step missing inside it is a gap.

Without --backtest: writes the forecast from the end of the file as CSV,
origin,target,yhat,yhat_lower,yhat_upper (unix seconds), one row per lead.

With --backtest: a rolling-origin backtest. At every origin after
--min-history it forecasts from the data up to and including the origin
only, writes one row per origin and lead time, and prints to stderr the MAE
at the horizon of the model and of the naive and seasonal naive forecasts
on the same origins, their ratio, sMAPE and the interval coverage.

`

func cmdForecast(args []string, stdout, stderr io.Writer) int {
	fs := newOfflineFlagSet("inferwatch forecast", forecastUsage)
	input := fs.String("input", "", "the series to forecast")
	sumOf := fs.String("sum-of", "", "forecast the sum of the series in the files matching this glob, bottom-up")
	model := fs.String("model", forecasting.ModelAuto, "model: "+strings.Join(forecasting.Models(), ", "))
	horizonS := fs.String("horizon", "10m", "how far ahead, a duration rounded up to whole steps")
	level := fs.Float64("level", 0.9, "coverage of the prediction interval, in (0, 1)")
	periodS := fs.String("period", "1d", "the seasonal period")
	weekly := fs.Bool("weekly", false, "keep two weeks of history (fourteen periods) plus a calibration window instead of seven periods, so auto can choose the weekly models (hw_weekly, hw_weekly_log) once the history holds that much")
	backtest := fs.Bool("backtest", false, "run a rolling-origin backtest instead of forecasting from the end")
	minHistS := fs.String("min-history", "", "history before the first backtest origin (default: one period)")
	resampleS := fs.String("resample", "", "average the samples in each step of this duration (aligned on multiples of it since the epoch) instead of taking the file's own step: for a file whose samples are uneven or repeat a time")
	forceProgress := fs.Bool("progress", false, "draw a progress bar on stderr even when it is not a terminal")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if (*input == "") == (*sumOf == "") {
		fmt.Fprintln(stderr, "inferwatch forecast: one of --input FILE or --sum-of GLOB is required, and nothing else may follow the flags")
		return 2
	}
	var resample time.Duration
	if *resampleS != "" {
		var err error
		if resample, err = cliDuration("--resample", *resampleS); err != nil {
			fmt.Fprintln(stderr, "inferwatch forecast:", err)
			return 2
		}
	}
	horizon, err1 := cliDuration("--horizon", *horizonS)
	period, err2 := cliDuration("--period", *periodS)
	var minHist time.Duration
	var err3 error
	if *minHistS != "" {
		minHist, err3 = cliDuration("--min-history", *minHistS)
	}
	if err := errors.Join(err1, err2, err3); err != nil {
		fmt.Fprintln(stderr, "inferwatch forecast:", err)
		return 2
	}
	if _, err := forecasting.New(forecasting.Options{Step: time.Minute, Model: *model, Level: *level}); err != nil {
		fmt.Fprintln(stderr, "inferwatch forecast: --model/--level:", err)
		return 2
	}

	var (
		series *ingest.EvenSeries
		parts  [][]float64 // with --sum-of
		err    error
		name   = *input
	)
	if *sumOf != "" {
		series, parts, err = readParts(*sumOf, resample, false, nil)
		name = fmt.Sprintf("the sum of the %d files matching %s", len(parts), *sumOf)
	} else {
		series, err = readSeries(*input, ingest.RowsOptions{RepeatHint: "rows must not repeat a timestamp; give --resample STEP to average the samples in each step"}, resample, false)
	}
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch forecast:", err)
		return 1
	}
	if note := series.GridNote(name); note != "" {
		fmt.Fprintln(stderr, "inferwatch forecast:", note)
	}
	step := series.Step
	h := int((horizon + step - 1) / step)
	p := int(period / step)
	if p < 2 {
		fmt.Fprintf(stderr, "inferwatch forecast: --period %s is less than two steps of %s\n", *periodS, step)
		return 2
	}
	opts := forecasting.Options{Step: step, Model: *model, Horizon: max(h, 1), Level: *level, Period: p, Weekly: *weekly}
	if series.Gaps > 0 {
		fmt.Fprintf(stderr, "%s: %d of %d steps of %s are missing or not finite; the forecaster fills them with its own forecast and does not score them\n",
			name, series.Gaps, len(series.Values), step)
	}
	w := bufio.NewWriterSize(stdout, 64<<10)
	defer w.Flush()
	w.WriteString("origin,target,yhat,yhat_lower,yhat_upper\n")
	stepMs := step.Milliseconds()
	row := func(buf []byte, origin, target int64, y, lo, hi float64) []byte {
		buf = append(buf[:0], ingest.FormatUnixMillis(origin)...)
		buf = append(buf, ',')
		buf = append(buf, ingest.FormatUnixMillis(target)...)
		for _, v := range []float64{y, lo, hi} {
			buf = append(buf, ',')
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		}
		return append(buf, '\n')
	}

	if !*backtest {
		var fc forecasting.Forecast
		if parts != nil {
			s, err := forecasting.NewSum(opts, len(parts))
			if err == nil {
				err = s.Fit(series.Start, parts)
			}
			if err != nil {
				fmt.Fprintf(stderr, "inferwatch forecast: %s: %v\n", name, err)
				return 1
			}
			s.ForecastInto(&fc)
		} else {
			f, err := forecasting.New(opts)
			if err != nil {
				fmt.Fprintln(stderr, "inferwatch forecast:", err)
				return 2
			}
			if err := f.Fit(series.Start, series.Values); err != nil {
				fmt.Fprintf(stderr, "inferwatch forecast: %s: %v\n", name, err)
				return 1
			}
			fc = f.Forecast()
		}
		var buf []byte
		for i := range fc.Mean {
			buf = row(buf, fc.Origin, fc.Origin+int64(i+1)*stepMs, fc.Mean[i], fc.Lower[i], fc.Upper[i])
			w.Write(buf)
		}
		used := fc.Model
		switch {
		case fc.Fallback != "" && parts != nil:
			fmt.Fprintf(stderr, "%s: too little history: %s (up to %d points, %s, are needed; the files have %d): FALLBACK\n",
				name, fc.Fallback, fc.Need, time.Duration(fc.Need)*step, len(series.Values))
			used = fc.Model + " (parts falling back)"
		case fc.Fallback != "":
			fmt.Fprintf(stderr, "%s: too little history: %s needs %d points (%s); the file has %d: FALLBACK to %s\n",
				name, *model, fc.Need, time.Duration(fc.Need)*step, len(series.Values), fc.Model)
			used = fc.Model + " (fallback)"
		}
		fmt.Fprintf(stderr, "forecast from %s, step %s, horizon %d steps, model %s, peak %.6g at lead %d (upper %.6g), %d gaps filled\n",
			time.UnixMilli(fc.Origin).UTC().Format(time.RFC3339), step, len(fc.Mean), used, fc.Peak, fc.PeakLead, fc.UpperPeak, fc.Gaps)
		if err := w.Flush(); err != nil {
			fmt.Fprintln(stderr, "inferwatch forecast: writing the output:", err)
			return 1
		}
		return 0
	}

	mh := p
	if *minHistS != "" {
		mh = int(minHist / step)
	}
	if need := mh + 2; len(series.Values) < need {
		fmt.Fprintf(stderr, "inferwatch forecast: %s: too little history for a backtest: %d points of %s; need at least %d (min history %d steps = %s, plus an origin and a target); lower --min-history or use a longer file\n",
			name, len(series.Values), step, need, mh, time.Duration(mh)*step)
		return 1
	}
	total := len(series.Values) - 1 - mh
	bar := newProgress(stderr, isTerminal(stderr), (*forceProgress || isTerminal(stderr)) && total >= 1000, total, "origins")
	last := 0
	bo := forecasting.BacktestOptions{Options: opts, MinHistory: mh,
		Progress: func(done, _ int) { bar.add(done - last); last = done }}
	var res *forecasting.BacktestResult
	if parts != nil {
		res, err = forecasting.BacktestSum(parts, bo)
	} else {
		res, err = forecasting.BacktestWith(series.Values, bo)
	}
	bar.finish()
	if err != nil {
		fmt.Fprintf(stderr, "inferwatch forecast: %s: %v\n", name, err)
		return 1
	}
	var buf []byte
	for _, r := range res.Rows {
		buf = row(buf, series.Start+int64(r.Origin)*stepMs, series.Start+int64(r.Target)*stepMs, r.Yhat, r.Lower, r.Upper)
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(stderr, "inferwatch forecast: writing the output:", err)
		return 1
	}
	fmt.Fprintf(stderr, "backtest of %s on %s: %d origins scored at the horizon (%d steps = %s), step %s, period %d steps, min history %d steps\n",
		res.Model, name, res.Origins, res.Horizon, time.Duration(res.Horizon)*step, step, res.Period, res.MinHistory)
	fmt.Fprintf(stderr, "  MAE %.4g   naive %.4g   seasonal naive %s   mean %.4g\n", res.MAE, res.NaiveMAE, fmtMaybe(res.SeasonalNaiveMAE), res.MeanMAE)
	fmt.Fprintf(stderr, "  ratio %.4g (MAE / best baseline)   sMAPE %.2f%%   coverage %.3f at level %g (above upper %.3f)\n",
		res.Ratio, res.SMAPE, res.Coverage, res.Level, res.AboveUpper)
	fmt.Fprintf(stderr, "  models chosen %v\n", res.Chosen)
	if res.FallbackOrigins > 0 {
		fmt.Fprintf(stderr, "  FALLBACK: %d of %d origins had too little history for %s and used a simpler model (marked in the counts above)\n",
			res.FallbackOrigins, res.Origins, res.Model)
	}
	if res.Gaps > 0 {
		fmt.Fprintf(stderr, "  %d gaps filled (not scored)\n", res.Gaps)
	}
	return 0
}

func fmtMaybe(x float64) string {
	if math.IsNaN(x) {
		return "n/a (less than a period before some origin)"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func cliDuration(name, s string) (time.Duration, error) {
	ms, err := metricsql.DurationValue(s, 0)
	if err != nil || ms <= 0 || strings.ContainsAny(s, "iI") {
		return 0, fmt.Errorf("%s %q: want a duration > 0 such as 10m, 1h or 1d", name, s)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// resampleHint is what an error about uneven samples ends with: the flag
// that reads them, with the file's step.
func resampleHint(step time.Duration) string {
	return fmt.Sprintf("give --resample %s to average the samples in each step of %s", dur.Format(step), dur.Format(step))
}

// withResampleHint ends an error about samples off their grid
// (ingest.GridError) with the --resample that reads them.
func withResampleHint(err error) error {
	var ge *ingest.GridError
	if errors.As(err, &ge) {
		return fmt.Errorf("%w; %s", err, resampleHint(ge.Step))
	}
	return err
}

// readSeries reads one series file on an even step (ingest.ReadEven);
// an error about samples off their grid ends with the --resample that
// reads them.
func readSeries(file string, o ingest.RowsOptions, resample time.Duration, sum bool) (*ingest.EvenSeries, error) {
	r, err := ingest.ReadEven(file, o, resample, sum)
	return r, withResampleHint(err)
}

// readParts reads the files matching glob as the parts of a sum, laid on
// one grid (ingest.SumParts): their common step, from the earliest sample
// of any to the latest. Outside a file's own time range its part is 0; a
// step missing inside it is a gap (NaN). The returned series is the sum,
// NaN where a part has a gap. check, when not nil, judges each file's
// series as read.
func readParts(glob string, resample time.Duration, sum bool, check func(file string, r *ingest.EvenSeries) error) (*ingest.EvenSeries, [][]float64, error) {
	files, err := filepath.Glob(glob)
	if err != nil {
		return nil, nil, fmt.Errorf("--sum-of %q: %v", glob, err)
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("--sum-of %q matches no file", glob)
	}
	total, parts, err := ingest.ReadParts(files, resample, sum, check)
	return total, parts, withResampleHint(err)
}
