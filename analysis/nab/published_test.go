package nab

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nabDir is the NAB subset shared with the project, when present.
const nabDir = "../../../shared/data/nab"

// published is one of NAB's published result files of the windowed
// Gaussian detector: per row, the detector's anomaly score and the score
// column S(t) of each profile.
type published struct {
	key        string // category/file.csv
	timestamps []int64
	anomaly    []float64
	st         map[string][]float64 // profile name → S(t)
}

func readPublished(t *testing.T, path, key string) published {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	if !sc.Scan() {
		t.Fatalf("%s: empty", path)
	}
	header := strings.Split(sc.Text(), ",")
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	p := published{key: key, st: map[string][]float64{}}
	line := 1
	for sc.Scan() {
		line++
		f := strings.Split(sc.Text(), ",")
		tm, err := time.Parse("2006-01-02 15:04:05", f[0])
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		p.timestamps = append(p.timestamps, tm.UnixMilli())
		num := func(name string) float64 {
			v, err := strconv.ParseFloat(f[col[name]], 64)
			if err != nil {
				t.Fatalf("%s:%d: %s: %v", path, line, name, err)
			}
			return v
		}
		p.anomaly = append(p.anomaly, num("anomaly_score"))
		for _, pr := range Profiles() {
			p.st[pr.Name] = append(p.st[pr.Name], num("S(t)_"+pr.Name))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return p
}

func readWindows(t *testing.T) map[string][][2]int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nabDir, "labels/combined_windows.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string][][2]string
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string][][2]int64{}
	for k, ws := range raw {
		for _, w := range ws {
			var l [2]int64
			for i, s := range w {
				tm, err := time.Parse("2006-01-02 15:04:05.999999", s)
				if err != nil {
					t.Fatalf("%s: %v", k, err)
				}
				l[i] = tm.UnixMilli()
			}
			out[k] = append(out[k], l)
		}
	}
	return out
}

// TestPublishedWindowedGaussian scores NAB's published windowed-Gaussian
// results at its published threshold (a row is a detection when its
// anomaly score is ≥ 1.0) and checks every row's S(t) of every profile,
// each file's total, and the subset's normalised standard score, 37.05.
func TestPublishedWindowedGaussian(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(nabDir, "results/windowedGaussian/*/*.csv"))
	if len(files) == 0 {
		t.Skip(nabDir + " is absent; the published NAB results are read from there when present")
	}
	windows := readWindows(t)
	const threshold = 1.0
	totals := map[string]*Result{}
	sums := map[string]float64{}
	var all []Scores
	for _, path := range files {
		key := filepath.Base(filepath.Dir(path)) + "/" + strings.TrimPrefix(filepath.Base(path), "windowedGaussian_")
		p := readPublished(t, path, key)
		ws, err := WindowRows(p.timestamps, windows[key])
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		f, err := NewFile(key, len(p.timestamps), ws)
		if err != nil {
			t.Fatal(err)
		}
		det := make([]bool, len(p.anomaly))
		for i, v := range p.anomaly {
			det[i] = v >= threshold
		}
		all = append(all, Scores{File: f, Scores: p.anomaly})
		for _, pr := range Profiles() {
			r, rows, err := f.RowScores(pr, det)
			if err != nil {
				t.Fatal(err)
			}
			bad, sum := 0, 0.0
			for i, v := range rows {
				want := p.st[pr.Name][i]
				sum += want
				if math.Abs(v-want) > 1e-9 {
					if bad++; bad <= 3 {
						t.Errorf("%s row %d (line %d): S(t)_%s = %.12f, published %.12f", key, i, i+2, pr.Name, v, want)
					}
				}
			}
			if math.Abs(r.Score-sum) > 1e-9 {
				t.Errorf("%s %s: score %.12f, the published column sums to %.12f", key, pr.Name, r.Score, sum)
			}
			if totals[pr.Name] == nil {
				totals[pr.Name] = &Result{}
			}
			totals[pr.Name].Add(r)
			sums[pr.Name] += sum
		}
	}
	std := totals[Standard.Name]
	if std.Windows != 50 {
		t.Errorf("%d windows scored, the subset has 50", std.Windows)
	}
	if got := std.Normalized(Standard); math.Abs(got-37.05) > 0.01 {
		t.Errorf("normalised standard score %.4f, published 37.05", got)
	}
	for _, pr := range Profiles() {
		got := totals[pr.Name].Normalized(pr)
		want := Normalize(pr, sums[pr.Name], std.Windows)
		t.Logf("%-20s raw %9.4f normalised %7.3f (TP %d FP %d FN %d)", pr.Name, totals[pr.Name].Score, got, totals[pr.Name].TP, totals[pr.Name].FP, totals[pr.Name].FN)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: normalised %.6f, from the published columns %.6f", pr.Name, got, want)
		}
		// The best threshold can only do better than the published one.
		best, err := Sweep(pr, all)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-20s best threshold %v: raw %.4f normalised %.3f", pr.Name, best.Threshold, best.Score, best.Normalized(pr))
		if best.Score < totals[pr.Name].Score-1e-9 {
			t.Errorf("%s: the sweep's best %.6f is below the published threshold's %.6f", pr.Name, best.Score, totals[pr.Name].Score)
		}
	}
}
