package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metricsql"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules"
)

// detectorFlags are the flags that choose and tune the rule, shared by
// detect and backtest: its detector and the settings of an anomaly rule.
type detectorFlags struct {
	name          string
	window        string
	step          string
	params        paramFlag
	forDur        durationFlag
	keepFiringFor durationFlag
	minDev        float64
}

func (d *detectorFlags) register(fs *flag.FlagSet) {
	d.params = paramFlag{}
	fs.StringVar(&d.name, "detector", analysis.DefaultDetector, "detector: "+strings.Join(analysis.Names(), ", "))
	fs.StringVar(&d.window, "window", "", fmt.Sprintf("the rule's lookback, a MetricsQL duration (5m, 1d); default: none, the detector's own history (auto: a week of 15-minute summaries; sigma, robust, levelshift: %d steps)",
		analysis.DefaultPoints))
	fs.StringVar(&d.step, "step", "", "the rule's step, a MetricsQL duration; default: the file's most common interval between rows")
	fs.Var(d.params, "param", "a detector parameter key=value (repeatable), e.g. --param k=3")
	fs.Var(&d.forDur, "for", "the rule's for: how long a breach must last before a finding fires (default 0)")
	fs.Var(&d.keepFiringFor, "keep-firing-for", "the rule's keep_firing_for (default 0)")
	fs.Float64Var(&d.minDev, "min-dev", 0, "the rule's min_dev: the smallest deviation from the expected value that counts")
}

// windowMS returns the --window flag in ms, or 0 (the detector's own
// history) when it is not set.
func (d *detectorFlags) windowMS() (int64, error) {
	return durationMS("--window", d.window)
}

// durationMS reads a duration flag in ms; empty is 0.
func durationMS(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	ms, err := metricsql.DurationValue(s, 0)
	if err != nil || ms <= 0 || strings.ContainsAny(s, "iI") {
		return 0, fmt.Errorf("%s %q: want a duration > 0 such as 5m, 1h30m or 1d", flag, s)
	}
	return ms, nil
}

// rule checks the flags and returns the rule they describe.
func (d *detectorFlags) rule() (rules.SeriesRule, error) {
	window, err := d.windowMS()
	if err != nil {
		return rules.SeriesRule{}, err
	}
	step, err := durationMS("--step", d.step)
	if err != nil {
		return rules.SeriesRule{}, err
	}
	if _, err := analysis.Build(analysis.Spec{Name: d.name, Window: window, Step: step, Params: d.params}); err != nil {
		return rules.SeriesRule{}, fmt.Errorf("--detector %s: %w", d.name, err)
	}
	if math.IsNaN(d.minDev) || math.IsInf(d.minDev, 0) || d.minDev < 0 {
		return rules.SeriesRule{}, fmt.Errorf("--min-dev %v: want a finite number ≥ 0", d.minDev)
	}
	if window > 0 && step > window {
		return rules.SeriesRule{}, fmt.Errorf("--step %s must not exceed --window %s", d.step, d.window)
	}
	return rules.SeriesRule{Detector: d.name, Params: d.params, Lookback: time.Duration(window) * time.Millisecond,
		Step: time.Duration(step) * time.Millisecond, For: d.forDur.d, KeepFiringFor: d.keepFiringFor.d, MinDev: d.minDev}, nil
}

// describe is the rule and its settings, for reports.
func (d *detectorFlags) describe() string {
	var b strings.Builder
	b.WriteString(d.name)
	keys := make([]string, 0, len(d.params))
	for k := range d.params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, d.params[k])
	}
	if d.window != "" {
		b.WriteString(" lookback=" + d.window)
	} else {
		b.WriteString(" lookback=default")
	}
	if d.step != "" {
		b.WriteString(" step=" + d.step)
	}
	if d.forDur.d > 0 {
		b.WriteString(" for=" + dur.Format(d.forDur.d))
	}
	if d.keepFiringFor.d > 0 {
		b.WriteString(" keep_firing_for=" + dur.Format(d.keepFiringFor.d))
	}
	if d.minDev > 0 {
		fmt.Fprintf(&b, " min_dev=%g", d.minDev)
	}
	return b.String()
}

// paramFlag collects repeated --param key=value flags.
type paramFlag map[string]string

func (p paramFlag) String() string { return "" }

func (p paramFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return fmt.Errorf("want key=value, e.g. k=3, got %q", s)
	}
	if _, dup := p[k]; dup {
		return fmt.Errorf("parameter %q given twice", k)
	}
	p[k] = strings.TrimSpace(v)
	return nil
}

const detectHelp = `Usage: inferwatch detect --input FILE [--detector NAME] [--window DURATION] [--step DURATION] [--param key=value ...] [--for DURATION] [--keep-firing-for DURATION] [--min-dev X] [--sort] [--allow-duplicates]

Scores every row of a timestamp,value CSV file (or a query_range JSON or
export JSON lines file holding one series) and writes CSV to stdout:
timestamp,value,anomaly_score,is_anomaly, the timestamp as written in the input.

The file is judged as the daemon judges a series: one anomaly rule with
the flags' settings (the detector, and the rule's lookback, step, for,
keep_firing_for and min_dev; by default a rule with nothing set but its
step, the file's most common interval), evaluated once over the file's
whole span as ` + "`inferwatch run --once --backfill`" + ` does, through the alert
lifecycle. anomaly_score is the detector's score (≥ 1: anomalous; 0 while
it warms up); is_anomaly is 1 on the rows where the daemon would publish a
finding (an anomalous stretch lasting for, once per stretch). What the
detector cannot do at that step is said on stderr.

The detectors judge a series forward in time, so the rows must be in time
order: a row whose timestamp is before the previous row's is an error naming
its line, unless --sort sorts the rows by timestamp first. With --sort the
output rows are in that sorted order, the order they were scored in (each
row's score depends on the rows above it); rows with equal timestamps keep
their order in the file, and after sorting they are duplicates, which need
--allow-duplicates.

`

func cmdDetect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newOfflineFlagSet("inferwatch detect", detectHelp+"Flags:\n")
	input := fs.String("input", "", "the file to score")
	allowDup := fs.Bool("allow-duplicates", false, "keep rows that repeat the previous row's timestamp; each takes the previous row's score and decision")
	sortRows := fs.Bool("sort", false, "sort the rows by timestamp (stably) before scoring, and write them in that order, each timestamp as written")
	var det detectorFlags
	det.register(fs)
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if *input == "" {
		fmt.Fprintln(stderr, "inferwatch detect: --input FILE is required, and nothing else may follow the flags")
		return 2
	}
	rule, err := det.rule()
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch detect:", err)
		return 2
	}
	in, err := ingest.ReadRows(*input, ingest.RowsOptions{AllowDuplicates: *allowDup, Sort: *sortRows,
		OrderHint:  "rows must be in time order; pass --sort to sort the rows by timestamp before scoring",
		RepeatHint: "pass --allow-duplicates to keep such rows (each is given the score and decision of the row before it)"})
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch detect:", err)
		return 1
	}
	rows, t, v := rules.Advancing(in.Timestamps, in.Values)
	rep, err := rules.ReplaySeries(ctx, rule, t, v)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch detect:", err)
		return 1
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(stderr, "inferwatch detect:", n)
	}
	scores, anomalous := rules.JudgeRows(in.Timestamps, rows, rep)

	w := bufio.NewWriterSize(stdout, 64<<10)
	w.WriteString("timestamp,value,anomaly_score,is_anomaly\n")
	var buf []byte
	for i := range in.Timestamps {
		buf = append(buf[:0], in.Raw[i]...)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, in.Values[i], 'g', -1, 64)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, scores[i], 'g', -1, 64)
		if anomalous[i] {
			buf = append(buf, ",1\n"...)
		} else {
			buf = append(buf, ",0\n"...)
		}
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(stderr, "inferwatch detect: writing the output:", err)
		return 1
	}
	return 0
}
