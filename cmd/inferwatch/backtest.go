package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/analysis/nab"
	"github.com/inferwatch/inferwatch/rules"
)

const backtestUsage = `Usage: inferwatch backtest nab --data DIR --windows FILE [flags]

Judges every file of a Numenta Anomaly Benchmark corpus
(DIR/CATEGORY/FILE.csv) as the daemon judges a series — one anomaly rule
with the flags' detector and settings (by default nothing but its step,
the file's most common interval), evaluated once over the whole file as
` + "`inferwatch run --once --backfill`" + ` does, through the alert lifecycle — and
scores it as NAB does (probation, sigmoid scoring, profiles, normalisation
between the null and the perfect detector): at the rule's findings (a row
is a detection where a finding fired), and at the best threshold on the
detector's scores (among 1.05^k, 1 included; each run of rows at or above
it counting once, at its first row, as the lifecycle counts an anomalous
stretch), per category and overall, with the false positives per day of
one series.

Rows are taken in file order, as NAB takes them: a row's place in its file,
not its timestamp, decides whether it is in a labelled window and how far it
is from one (NAB's sweeper enters a window at the first row with the
window's start time and leaves it at the first row from there with its end
time). The detectors judge a series forward in time, so a row whose
timestamp is not after the newest one fed so far is not fed to the detector:
a row that repeats the previous row's timestamp (four NAB files have one)
takes that row's score and decision; a row that steps back in time, and
every row after it until the time passes the newest one fed, scores 0 and
is no detection, as a detector treats a sample out of order
(realKnownCause/machine_temperature_system_failure.csv steps back at line
10151). The files with rows that step back are named on stderr.

`

func cmdBacktest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "scale" {
		return cmdBacktestScale(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "nab" {
		fmt.Fprint(stderr, "inferwatch backtest: name the benchmark: nab, or scale (inferwatch backtest scale --help)\n\n"+backtestUsage)
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
			return 0
		}
		return 2
	}
	return cmdBacktestNAB(ctx, args[1:], stdout, stderr)
}

func cmdBacktestNAB(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newOfflineFlagSet("inferwatch backtest nab", backtestUsage)
	dataDir := fs.String("data", "", "the corpus: DIR/CATEGORY/FILE.csv")
	windowsFile := fs.String("windows", "", "NAB's labelled windows (labels/combined_windows.json)")
	profile := fs.String("profile", "all", "standard, reward_low_FP, reward_low_FN, or all")
	asJSON := fs.Bool("json", false, "write the result as JSON")
	forceProgress := fs.Bool("progress", false, "draw a progress bar on stderr even when it is not a terminal")
	var det detectorFlags
	det.register(fs)
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if *dataDir == "" || *windowsFile == "" {
		fmt.Fprintln(stderr, "inferwatch backtest nab: --data DIR and --windows FILE are required, and nothing else may follow the flags")
		return 2
	}
	profiles := nab.Profiles()
	if *profile != "all" {
		p, err := nab.ProfileByName(*profile)
		if err != nil {
			fmt.Fprintln(stderr, "inferwatch backtest nab: --profile:", err)
			return 2
		}
		profiles = []nab.Profile{p}
	}
	// Check the rule before reading anything.
	rule, err := det.rule()
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch backtest nab:", err)
		return 2
	}

	start := time.Now()
	data, err := os.ReadFile(*windowsFile)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch backtest nab: reading the windows:", err)
		return 1
	}
	windows, err := nab.ParseWindows(data, *windowsFile)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch backtest nab:", err)
		return 1
	}
	keys, err := listNABFiles(*dataDir, windows, *windowsFile)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch backtest nab:", err)
		return 1
	}
	bar := newProgress(stderr, isTerminal(stderr), *forceProgress || isTerminal(stderr), len(keys), "files")
	runs, err := rules.ReplayNAB(ctx, *dataDir, keys, windows, rule, func() { bar.add(1) })
	bar.finish()
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch backtest nab:", err)
		return 1
	}

	for _, r := range runs {
		if r.Behind > 0 {
			fmt.Fprintf(stderr, "inferwatch backtest nab: %s: %d row%s behind the newest time before them, the first on line %d where the timestamps step back: scored in file order as NAB does, not fed to the detector (score 0, no detection)\n",
				r.Key, r.Behind, pluralS(r.Behind), r.BehindLine)
		}
	}
	rep, err := rules.ScoreNAB(runs, profiles)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch backtest nab:", err)
		return 1
	}
	rep.Detector, rep.Params, rep.Window = det.name, det.params, det.window
	if rep.Window == "" {
		rep.Window = "default"
	}
	rep.Seconds = time.Since(start).Seconds()

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "inferwatch backtest nab: writing the result:", err)
			return 1
		}
		return 0
	}
	writeNABText(stdout, &det, rep)
	return 0
}

// listNABFiles lists DIR/CATEGORY/*.csv as CATEGORY/FILE.csv keys, sorted;
// each must have an entry in the windows file (entries without a file are
// fine: the corpus may be a subset).
func listNABFiles(dir string, windows map[string][][2]int64, windowsFile string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.csv"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("--data: %w", err)
		}
		return nil, fmt.Errorf("--data %s: no CATEGORY/FILE.csv files in it", dir)
	}
	keys := make([]string, 0, len(paths))
	var missing []string
	for _, p := range paths {
		key := filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p)
		if _, ok := windows[key]; !ok {
			missing = append(missing, key)
		}
		keys = append(keys, key)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s has no entry for these files of %s: %s (a file without labels cannot be scored; an entry with [] says it has no anomaly)",
			windowsFile, dir, strings.Join(missing, ", "))
	}
	slices.Sort(keys)
	return keys, nil
}

func writeNABText(w io.Writer, det *detectorFlags, rep *rules.NABReport) {
	behind := ""
	if rep.Behind > 0 {
		behind = fmt.Sprintf(" (%d stepping back in time, not fed to the detector)", rep.Behind)
	}
	fmt.Fprintf(w, "NAB backtest: detector %s; %d files, %d rows%s, %d windows; %.2fs\n",
		det.describe(), rep.Files, rep.Rows, behind, rep.Windows, rep.Seconds)
	for _, p := range rep.Profiles {
		th := "none (detecting nothing scores best)"
		if p.BestThreshold != nil {
			th = fmt.Sprintf("score ≥ %.6g", p.BestThreshold)
		}
		fmt.Fprintf(w, "\nprofile %s (A_TP %g, A_FP %g, A_FN %g); best threshold: %s\n", p.Name, p.Weights.TP, p.Weights.FP, p.Weights.FN, th)
		fmt.Fprintf(w, "%-22s %5s %7s | %-40s | %-33s\n", "", "", "", "own decisions (findings)", "best threshold (scores)")
		fmt.Fprintf(w, "%-22s %5s %7s | %7s %8s %5s %5s %5s %6s | %7s %8s %5s %5s %5s\n",
			"category", "files", "windows", "score", "raw", "TP", "FP", "FN", "FP/day", "score", "raw", "TP", "FP", "FN")
		for i := range p.Own.Categories {
			writeNABLine(w, p.Own.Categories[i].Category, p.Own.Categories[i], p.Best.Categories[i])
		}
		writeNABLine(w, "overall", p.Own.Overall, p.Best.Overall)
	}
}

func writeNABLine(w io.Writer, name string, own, best nab.Line) {
	score := func(s *float64) string {
		if s == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", *s)
	}
	fmt.Fprintf(w, "%-22s %5d %7d | %7s %8.2f %5d %5d %5d %6.3f | %7s %8.2f %5d %5d %5d\n", name, own.Files, own.Windows,
		score(own.Score), own.Raw, own.TP, own.FP, own.FN, own.FPPerSeriesDay, score(best.Score), best.Raw, best.TP, best.FP, best.FN)
}
