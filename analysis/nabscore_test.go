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
)

// This file is a small NAB scorer for the detector tests (Lavin & Ahmad
// 2015), reading the shared subset at ../../shared/data/nab.

const nabDir = "../../shared/data/nab"

type nabFile struct {
	name     string // category/file.csv
	category string
	ts       []int64
	vs       []float64
	windows  [][2]int // row ranges [L, R], inclusive
}

type nabProfile struct {
	name       string
	tp, fp, fn float64
}

var nabProfiles = []nabProfile{
	{"standard", 1, 0.11, 1},
	{"reward_low_FP_rate", 1, 0.22, 1},
	{"reward_low_FN_rate", 1, 0.11, 2},
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
		s = strings.TrimSuffix(s, ".000000")
		tm, err := time.Parse("2006-01-02 15:04:05", s)
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
		for _, w := range labels[n] {
			l, r := parse(w[0]), parse(w[1])
			li, _ := slices.BinarySearch(nf.ts, l)
			ri, found := slices.BinarySearch(nf.ts, r)
			if !found {
				ri--
			}
			nf.windows = append(nf.windows, [2]int{li, ri})
		}
		files = append(files, nf)
	}
	return files
}

// nabRaw returns the raw score of one file's detections under profile p,
// and the number of windows.
func nabRaw(f nabFile, det []bool, p nabProfile) (float64, int) {
	n := len(f.ts)
	probation := min(int(math.Floor(0.15*float64(n))), 750)
	sig := func(y float64) float64 {
		if y > 3 {
			return -1
		}
		return 2/(1+math.Exp(5*y)) - 1
	}
	best := make([]float64, len(f.windows))
	hit := make([]bool, len(f.windows))
	var s float64
	for i := probation; i < n; i++ {
		if !det[i] {
			continue
		}
		in, prev := -1, -1
		for wi, w := range f.windows {
			if i >= w[0] && i <= w[1] {
				in = wi
			}
			if w[1] < i {
				prev = wi
			}
		}
		if in >= 0 {
			w := f.windows[in]
			width := float64(w[1] - w[0] + 1)
			sc := p.tp * sig(-float64(w[1]-i+1)/width) / sig(-1)
			if !hit[in] || sc > best[in] {
				best[in], hit[in] = sc, true
			}
			continue
		}
		if prev < 0 {
			s -= p.fp
			continue
		}
		w := f.windows[prev]
		s += p.fp * sig(float64(i-w[1])/float64(w[1]-w[0]))
	}
	for wi := range f.windows {
		if hit[wi] {
			s += best[wi]
		} else {
			s -= p.fn
		}
	}
	return s, len(f.windows)
}

// nabResult is the normalised score of a set of files, overall and per
// category, for every profile.
type nabResult struct {
	total map[string]float64            // profile → score
	cat   map[string]map[string]float64 // category → profile → score
	fp    int                           // detections outside every window, after probation
}

func (r nabResult) String() string {
	var b strings.Builder
	for _, p := range nabProfiles {
		fmt.Fprintf(&b, "%s=%.1f ", p.name, r.total[p.name])
	}
	fmt.Fprintf(&b, "fp=%d\n", r.fp)
	cats := make([]string, 0, len(r.cat))
	for c := range r.cat {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	for _, c := range cats {
		fmt.Fprintf(&b, "  %-22s", c)
		for _, p := range nabProfiles {
			fmt.Fprintf(&b, " %s=%.1f", p.name, r.cat[c][p.name])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// scoreNAB normalises the raw scores of the detections det[i] of files[i].
func scoreNAB(files []nabFile, det [][]bool) nabResult {
	res := nabResult{total: map[string]float64{}, cat: map[string]map[string]float64{}}
	type acc struct{ s, w float64 }
	for _, p := range nabProfiles {
		all := acc{}
		cats := map[string]*acc{}
		for i, f := range files {
			s, w := nabRaw(f, det[i], p)
			all.s += s
			all.w += float64(w)
			if cats[f.category] == nil {
				cats[f.category] = &acc{}
			}
			cats[f.category].s += s
			cats[f.category].w += float64(w)
		}
		norm := func(a acc) float64 {
			perfect, null := p.tp*a.w, -p.fn*a.w
			return 100 * (a.s - null) / (perfect - null)
		}
		res.total[p.name] = norm(all)
		for c, a := range cats {
			if res.cat[c] == nil {
				res.cat[c] = map[string]float64{}
			}
			res.cat[c][p.name] = norm(*a)
		}
	}
	for i, f := range files {
		probation := min(int(math.Floor(0.15*float64(len(f.ts)))), 750)
		for j := probation; j < len(f.ts); j++ {
			if !det[i][j] {
				continue
			}
			in := false
			for _, w := range f.windows {
				in = in || (j >= w[0] && j <= w[1])
			}
			if !in {
				res.fp++
			}
		}
	}
	return res
}

// runNAB runs a fresh detector from newDet over every file and returns the
// anomalous rows.
func runNAB(files []nabFile, newDet func() Detector) [][]bool {
	det := make([][]bool, len(files))
	for i, f := range files {
		d := newDet()
		det[i] = make([]bool, len(f.ts))
		for j := range f.ts {
			det[i][j] = d.Observe(f.ts[j], f.vs[j]).Anomalous()
		}
	}
	return det
}

// TestNABScorer checks the scorer against NAB's published per-row output of
// the windowed-Gaussian detector: its detections (anomaly_score ≥ 1, its
// threshold for the standard profile) must score the published 37.1 on
// this subset.
func TestNABScorer(t *testing.T) {
	files := loadNAB(t)
	det := make([][]bool, len(files))
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
		det[i] = make([]bool, len(lines))
		for j, l := range lines {
			cols := strings.Split(l, ",")
			sc, err := strconv.ParseFloat(cols[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			det[i][j] = sc >= 1
		}
	}
	r := scoreNAB(files, det)
	t.Logf("windowedGaussian: %s", r)
	if got := r.total["standard"]; math.Abs(got-37.1) > 0.1 {
		t.Errorf("windowed Gaussian scores %.2f on the standard profile, want the published 37.1", got)
	}
}
