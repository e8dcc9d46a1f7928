package analysis

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/analysis/nab"
)

// The detector tests score against the shared NAB subset at
// ../../shared/data/nab with the analysis/nab scorer.

const nabDir = "../../shared/data/nab"

// nabFile is one data file of the subset with its labelled windows.
type nabFile struct {
	name     string // category/file.csv
	category string
	ts       []int64
	vs       []float64
	file     *nab.File
}

// loadNAB reads every file of the subset, or skips the test when the
// shared data is absent.
func loadNAB(tb testing.TB) []nabFile {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(nabDir, "labels", "combined_windows.json"))
	if os.IsNotExist(err) {
		tb.Skipf("NAB data not found at %s", nabDir)
	}
	if err != nil {
		tb.Fatal(err)
	}
	var labels map[string][][2]string
	if err := json.Unmarshal(raw, &labels); err != nil {
		tb.Fatalf("reading NAB windows: %v", err)
	}
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	slices.Sort(names)
	parse := func(s string) int64 {
		tm, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			tb.Fatalf("NAB timestamp %q: %v", s, err)
		}
		return tm.UnixMilli()
	}
	var files []nabFile
	for _, n := range names {
		f, err := os.Open(filepath.Join(nabDir, "data", n))
		if err != nil {
			tb.Fatal(err)
		}
		nf := nabFile{name: n, category: filepath.Dir(n)}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "timestamp") {
				continue
			}
			a, b, ok := strings.Cut(line, ",")
			if !ok {
				tb.Fatalf("%s: bad line %q", n, line)
			}
			v, err := strconv.ParseFloat(b, 64)
			if err != nil {
				tb.Fatalf("%s: %v", n, err)
			}
			nf.ts = append(nf.ts, parse(a))
			nf.vs = append(nf.vs, v)
		}
		f.Close()
		limits := make([][2]int64, len(labels[n]))
		for k, w := range labels[n] {
			limits[k] = [2]int64{parse(w[0]), parse(w[1])}
		}
		ws, err := nab.WindowRows(nf.ts, limits)
		if err != nil {
			tb.Fatalf("%s: %v", n, err)
		}
		if nf.file, err = nab.NewFile(n, len(nf.ts), ws); err != nil {
			tb.Fatal(err)
		}
		files = append(files, nf)
	}
	return files
}

// nabRun is what a detector made of the files: each row's score and
// decision, a run of anomalous rows deciding once, at its first row, as a
// rule's lifecycle raises one finding for it.
type nabRun struct {
	scores [][]float64
	det    [][]bool
}

// runNAB runs a fresh detector from newDet over every file.
func runNAB(files []nabFile, newDet func() Detector) nabRun {
	run := nabRun{scores: make([][]float64, len(files)), det: make([][]bool, len(files))}
	for i, f := range files {
		d := newDet()
		run.scores[i] = make([]float64, len(f.ts))
		run.det[i] = make([]bool, len(f.ts))
		prev := false
		for j := range f.ts {
			r := d.Observe(f.ts[j], f.vs[j])
			run.scores[i][j], run.det[i][j] = r.Score, r.Anomalous() && !prev
			prev = r.Anomalous()
		}
	}
	return run
}

// nabResult is the outcome of a run under one profile: at the detector's
// own decisions and at the best threshold on its scores, overall and per
// category.
type nabResult struct {
	profile   nab.Profile
	own       nab.Result
	ownCat    map[string]nab.Result
	threshold float64
	best      nab.Result
	bestCat   map[string]nab.Result
}

// score scores the run of the files idx (all when nil) under p.
func (run nabRun) score(tb testing.TB, files []nabFile, idx []int, p nab.Profile) nabResult {
	tb.Helper()
	if idx == nil {
		idx = make([]int, len(files))
		for i := range idx {
			idx[i] = i
		}
	}
	res := nabResult{profile: p, ownCat: map[string]nab.Result{}, bestCat: map[string]nab.Result{}}
	sweep := make([]nab.Scores, len(idx))
	for k, i := range idx {
		sweep[k] = nab.Scores{File: files[i].file, Scores: run.scores[i]}
	}
	th, err := nab.Sweep(p, sweep)
	if err != nil {
		tb.Fatal(err)
	}
	res.threshold = th.Threshold
	for _, i := range idx {
		f := files[i]
		own, err := f.file.Score(p, run.det[i])
		if err != nil {
			tb.Fatal(err)
		}
		best := make([]bool, len(f.ts))
		for j, s := range run.scores[i] {
			best[j] = s >= th.Threshold
		}
		at, err := f.file.Score(p, best)
		if err != nil {
			tb.Fatal(err)
		}
		res.own.Add(own)
		res.best.Add(at)
		c := res.ownCat[f.category]
		c.Add(own)
		res.ownCat[f.category] = c
		c = res.bestCat[f.category]
		c.Add(at)
		res.bestCat[f.category] = c
	}
	return res
}

func (r nabResult) String() string {
	var b strings.Builder
	p := r.profile
	fmt.Fprintf(&b, "%s: own %.2f (TP %d FP %d FN %d), best %.2f at score ≥ %.4g (TP %d FP %d FN %d)\n",
		p.Name, r.own.Normalized(p), r.own.TP, r.own.FP, r.own.FN,
		r.best.Normalized(p), r.threshold, r.best.TP, r.best.FP, r.best.FN)
	cats := make([]string, 0, len(r.ownCat))
	for c := range r.ownCat {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	for _, c := range cats {
		o, bt := r.ownCat[c], r.bestCat[c]
		fmt.Fprintf(&b, "  %-22s own %7.2f (TP %2d FP %4d FN %2d)  best %7.2f (FP %4d)\n",
			c, o.Normalized(p), o.TP, o.FP, o.FN, bt.Normalized(p), bt.FP)
	}
	return b.String()
}

// TestNABScorer checks the scoring of these tests against NAB's published
// per-row output of the windowed-Gaussian detector: its detections
// (anomaly_score ≥ 1, its threshold for the standard profile) must score
// the published 37.1 on this subset.
func TestNABScorer(t *testing.T) {
	files := loadNAB(t)
	run := nabRun{scores: make([][]float64, len(files)), det: make([][]bool, len(files))}
	for i, f := range files {
		dir, base := filepath.Split(f.name)
		raw, err := os.ReadFile(filepath.Join(nabDir, "results", "windowedGaussian", dir, "windowedGaussian_"+base))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")[1:]
		if len(lines) != len(f.ts) {
			t.Fatalf("%s: %d result rows for %d data rows", f.name, len(lines), len(f.ts))
		}
		run.scores[i] = make([]float64, len(lines))
		run.det[i] = make([]bool, len(lines))
		for j, l := range lines {
			cols := strings.Split(l, ",")
			sc, err := strconv.ParseFloat(cols[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			run.scores[i][j], run.det[i][j] = sc, sc >= 1
		}
	}
	r := run.score(t, files, nil, nab.Standard)
	t.Logf("windowedGaussian: %s", r)
	if got := r.own.Normalized(nab.Standard); math.Abs(got-37.1) > 0.1 {
		t.Errorf("windowed Gaussian scores %.2f on the standard profile, want the published 37.1", got)
	}
}

// newDefault returns what a rule naming the detector without a window or
// parameters gets, for the subset's 5-minute step.
func newDefault(name string) func() Detector {
	f, err := Build(Spec{Name: name, Step: 300_000})
	if err != nil {
		panic(err)
	}
	return f
}
