package main

import (
	"bufio"
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/VictoriaMetrics/metricsql"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
)

// detectorFlags are the flags that choose and tune the detector, shared by
// detect and backtest.
type detectorFlags struct {
	name   string
	window string
	params paramFlag
}

func (d *detectorFlags) register(fs *flag.FlagSet) {
	d.params = paramFlag{}
	fs.StringVar(&d.name, "detector", analysis.DefaultDetector, "detector: "+strings.Join(analysis.Names(), ", "))
	fs.StringVar(&d.window, "window", "", fmt.Sprintf("the history each point is scored against, a MetricsQL duration (5m, 1d); default: the detector's own, a number of the series' steps (auto: %d; sigma, robust, levelshift: %d)",
		analysis.DefaultAutoPoints, analysis.DefaultPoints))
	fs.Var(d.params, "param", "a detector parameter key=value (repeatable), e.g. --param k=3")
}

// windowMS returns the --window flag in ms, or 0 (the detector's own
// default window, in steps of the series) when it is not set.
func (d *detectorFlags) windowMS() (int64, error) {
	if d.window == "" {
		return 0, nil
	}
	ms, err := metricsql.DurationValue(d.window, 0)
	if err != nil || ms <= 0 || strings.ContainsAny(d.window, "iI") {
		return 0, fmt.Errorf("--window %q: want a duration > 0 such as 5m, 1h30m or 1d", d.window)
	}
	return ms, nil
}

// factory checks the flags and builds the detector they name.
func (d *detectorFlags) factory() (analysis.Factory, error) {
	window, err := d.windowMS()
	if err != nil {
		return nil, err
	}
	f, err := analysis.Build(analysis.Spec{Name: d.name, Window: window, Params: d.params})
	if err != nil {
		return nil, fmt.Errorf("--detector %s: %w", d.name, err)
	}
	return f, nil
}

// describe is the detector and its settings, for reports.
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
		b.WriteString(" window=" + d.window)
	} else {
		b.WriteString(" window=default")
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

// scoreRows runs a fresh detector over a series row by row, in the order
// of the rows. The detectors judge a series forward in time, so a row is
// fed to the detector only when its timestamp is after the newest one fed
// so far; any other row is not fed:
//   - a row whose timestamp equals the previous row's (a duplicate, kept
//     with --allow-duplicates or by backtest) takes the previous row's
//     score and decision: the detector has already judged that instant;
//   - a row that steps back in time, and every row after it until the
//     time passes the newest one fed (only backtest keeps such rows, in
//     file order as NAB does), scores 0 and is not anomalous, as a
//     detector itself treats a sample out of order (see analysis.Detector
//     and Sigma): the detector has not judged it. Its windows are ordered
//     by time and left as they were, so the rows after are scored as if
//     those rows were absent.
//
// A NaN or infinite value scores 0 and is not anomalous.
//
// The rows between such rows are scored in one batch where the detector
// takes batches, as the daemon scores the points of a cycle: one Observe
// per row would find the detector's state cold each time (see
// analysis.BatchDetector).
func scoreRows(newDetector analysis.Factory, ts []int64, vs []float64) (scores []float64, anomalous []bool) {
	d := newDetector()
	bd, batch := d.(analysis.BatchDetector)
	scores = make([]float64, len(ts))
	anomalous = make([]bool, len(ts))
	res := make([]analysis.Result, len(ts))
	var newest int64 // the newest timestamp fed, once i > 0
	for i := 0; i < len(ts); {
		if i > 0 && ts[i] <= newest {
			if ts[i] == ts[i-1] {
				scores[i], anomalous[i] = scores[i-1], anomalous[i-1]
			}
			i++
			continue
		}
		j := i + 1
		for j < len(ts) && ts[j] > ts[j-1] {
			j++
		}
		if batch {
			bd.ObserveBatch(ts[i:j], vs[i:j], res[i:j])
		} else {
			for k := i; k < j; k++ {
				res[k] = d.Observe(ts[k], vs[k])
			}
		}
		for k := i; k < j; k++ {
			scores[k], anomalous[k] = res[k].Score, res[k].Anomalous()
		}
		newest = ts[j-1]
		i = j
	}
	return scores, anomalous
}

// rowsBehind counts the rows that scoreRows does not feed to the detector
// because they step back in time (not the duplicates of the row before
// them), and returns the index of the first, or -1.
func rowsBehind(ts []int64) (n, first int) {
	first = -1
	var newest int64
	for i, t := range ts {
		switch {
		case i == 0 || t > newest:
			newest = t
		case t != ts[i-1]:
			if n++; first < 0 {
				first = i
			}
		}
	}
	return n, first
}

// detectInput is a file read for detect: the series and each row's
// timestamp as written.
type detectInput struct {
	ts    []int64
	vs    []float64
	raw   []string // timestamp text per row
	lines []int    // line per row; nil when the format has no lines
	nums  []int    // 1-based sample number per row, when it has none
}

// readOptions say what readDetectInput accepts.
type readOptions struct {
	// allowDuplicates keeps rows that repeat the previous row's timestamp.
	allowDuplicates bool
	// sort sorts the rows by timestamp, stably (rows with equal timestamps
	// keep their order in the file), before they are checked.
	sort bool
	// flags: the command offers --allow-duplicates and --sort, and the
	// errors name them.
	flags bool
}

// readDetectInput reads a CSV file keeping its timestamp text, or any other
// file format ingest reads, which must hold exactly one series. The rows
// must be in time order (or o.sort sorts them), without repeated
// timestamps unless o.allowDuplicates; an error names the first row that
// is not, by its line (CSV) or sample number.
func readDetectInput(path string, o readOptions) (*detectInput, error) {
	var in *detectInput
	if strings.EqualFold(filepath.Ext(path), ".csv") || ingest.SniffFormat(peek(path)) == ingest.FormatCSV {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		c, err := ingest.ReadCSV(bytes.NewReader(data), path, ingest.CSVOptions{AllowDuplicates: true, AllowUnsorted: true})
		if err != nil {
			return nil, err
		}
		in = &detectInput{ts: c.Series.Timestamps, vs: c.Series.Values, raw: c.RawTimestamps, lines: c.Lines}
	} else {
		ss, err := ingest.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(ss) != 1 {
			return nil, fmt.Errorf("%s: holds %d series; detect scores one series per file", path, len(ss))
		}
		s := ss[0]
		if len(s.Timestamps) == 0 {
			return nil, fmt.Errorf("%s: the series %s has no samples", path, s.Labels)
		}
		in = &detectInput{ts: s.Timestamps, vs: s.Values, raw: make([]string, len(s.Timestamps)), nums: make([]int, len(s.Timestamps))}
		for i, t := range s.Timestamps {
			in.raw[i] = formatUnixMillis(t)
			in.nums[i] = i + 1
		}
	}
	if o.sort {
		in.sortByTime()
	}
	if err := in.checkOrder(path, o); err != nil {
		return nil, err
	}
	return in, nil
}

// sortByTime sorts the rows by timestamp, stably.
func (in *detectInput) sortByTime() {
	if slices.IsSorted(in.ts) {
		return
	}
	perm := make([]int, len(in.ts))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(in.ts[a], in.ts[b]) })
	in.ts = permute(in.ts, perm)
	in.vs = permute(in.vs, perm)
	in.raw = permute(in.raw, perm)
	if in.lines != nil {
		in.lines = permute(in.lines, perm)
	}
	if in.nums != nil {
		in.nums = permute(in.nums, perm)
	}
}

// permute returns xs[perm[0]], xs[perm[1]], ….
func permute[T any](xs []T, perm []int) []T {
	out := make([]T, len(xs))
	for i, k := range perm {
		out[i] = xs[k]
	}
	return out
}

// checkOrder reports the first row whose timestamp is before the previous
// row's, or repeats it without o.allowDuplicates.
func (in *detectInput) checkOrder(path string, o readOptions) error {
	where := func(i int) string {
		if in.lines != nil {
			return fmt.Sprintf("%s:%d", path, in.lines[i])
		}
		return fmt.Sprintf("%s: sample %d", path, in.nums[i])
	}
	prev := func(i int) string {
		if in.lines != nil {
			return fmt.Sprintf("line %d's %s", in.lines[i], in.raw[i])
		}
		return fmt.Sprintf("sample %d's %s", in.nums[i], in.raw[i])
	}
	for i := 1; i < len(in.ts); i++ {
		switch {
		case in.ts[i] < in.ts[i-1]:
			hint := "rows must be in time order"
			if o.flags {
				hint += "; pass --sort to sort the rows by timestamp before scoring"
			}
			return fmt.Errorf("%s: timestamp %s is before %s (%s)", where(i), in.raw[i], prev(i-1), hint)
		case in.ts[i] == in.ts[i-1] && !o.allowDuplicates:
			hint := "rows must not repeat a timestamp"
			if o.flags {
				hint = "pass --allow-duplicates to keep such rows (each is given the score and decision of the row before it)"
			}
			return fmt.Errorf("%s: timestamp %s repeats %s; %s", where(i), in.raw[i], prev(i-1), hint)
		}
	}
	return nil
}

// peek returns the first bytes of a file, for sniffing its format (nil on
// error: reading it properly reports the error).
func peek(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// formatUnixMillis writes unix milliseconds as unix seconds, with a
// fraction only when needed (1700000000, 1700000000.25).
func formatUnixMillis(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

const detectHelp = `Usage: inferwatch detect --input FILE [--detector NAME] [--window DURATION] [--param key=value ...] [--sort] [--allow-duplicates]

Scores every row of a timestamp,value CSV file (or a query_range JSON or
export JSON lines file holding one series) and writes CSV to stdout:
timestamp,value,anomaly_score,is_anomaly, the timestamp as written in the input.
is_anomaly is 1 when the detector's own threshold is crossed (score ≥ 1).

The detectors judge a series forward in time, so the rows must be in time
order: a row whose timestamp is before the previous row's is an error naming
its line, unless --sort sorts the rows by timestamp first. With --sort the
output rows are in that sorted order, the order they were scored in (each
row's score depends on the rows above it); rows with equal timestamps keep
their order in the file, and after sorting they are duplicates, which need
--allow-duplicates.

`

func cmdDetect(args []string, stdout, stderr io.Writer) int {
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
	newDetector, err := det.factory()
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch detect:", err)
		return 2
	}
	in, err := readDetectInput(*input, readOptions{allowDuplicates: *allowDup, sort: *sortRows, flags: true})
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch detect:", err)
		return 1
	}
	scores, anomalous := scoreRows(newDetector, in.ts, in.vs)

	w := bufio.NewWriterSize(stdout, 64<<10)
	w.WriteString("timestamp,value,anomaly_score,is_anomaly\n")
	var buf []byte
	for i := range in.ts {
		buf = append(buf[:0], in.raw[i]...)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, in.vs[i], 'g', -1, 64)
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
