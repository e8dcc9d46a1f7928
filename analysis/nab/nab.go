// Package nab scores anomaly detections the way the Numenta Anomaly
// Benchmark does (Lavin & Ahmad 2015; NAB's sweeper.py), so that inferwatch's
// detectors can be compared with the published NAB results.
//
// The rules, for one data file of N rows with labelled anomaly windows
// (row ranges [L, R], width w = R−L+1; rows are numbered in file order,
// as NAB numbers them, whatever their timestamps: see WindowRows) and a
// profile of weights (A_TP, A_FP, A_FN):
//
//   - Probation: the first min(⌊0.15·N⌋, 750) rows are not scored.
//   - σ(y) = 2/(1+e^{5y}) − 1, and −1 when y ≥ 3 (ScaledSigmoid).
//   - A detection at row i inside a window scores
//     A_TP·σ(−(R−i+1)/w)/σ(−1); a window counts once, with its best (that
//     is, its earliest) detection.
//   - A detection outside every window scores A_FP·σ(|i−R'|/(w'−1))
//     against the last window [L', R'] that ended before it, or −A_FP when
//     none has.
//   - A window without a detection scores −A_FN.
//
// Scores of files add up; Normalize turns a total into NAB's 0–100 scale with
// the null detector (never detects: −A_FN per window) and the perfect one
// (A_TP per window). Everything here is pure: no I/O, no clocks.
package nab

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Profile is one of NAB's application profiles: the weights of true
// positives, false positives and false negatives.
type Profile struct {
	Name       string
	TP, FP, FN float64
}

// NAB's three profiles (config/profiles.json).
var (
	Standard    = Profile{Name: "standard", TP: 1, FP: 0.11, FN: 1}
	RewardLowFP = Profile{Name: "reward_low_FP_rate", TP: 1, FP: 0.22, FN: 1}
	RewardLowFN = Profile{Name: "reward_low_FN_rate", TP: 1, FP: 0.11, FN: 2}
)

// Profiles returns NAB's three profiles: standard, reward_low_FP_rate,
// reward_low_FN_rate.
func Profiles() []Profile { return []Profile{Standard, RewardLowFP, RewardLowFN} }

// ProfileByName finds a profile by its NAB name; the "_rate" suffix may be
// left out (reward_low_FP).
func ProfileByName(name string) (Profile, error) {
	for _, p := range Profiles() {
		if name == p.Name || name+"_rate" == p.Name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("unknown NAB profile %q (known: standard, reward_low_FP, reward_low_FN)", name)
}

// Null is the score of a detector that never detects, over windows scored
// windows.
func (p Profile) Null(windows int) float64 { return -p.FN * float64(windows) }

// Perfect is the score of a detector that detects every window at its
// first row and nothing else, over windows scored windows.
func (p Profile) Perfect(windows int) float64 { return p.TP * float64(windows) }

// Normalize maps a raw total over windows scored windows to NAB's scale:
// 100·(S − S_null)/(S_perfect − S_null), 0 for the null detector and 100
// for the perfect one. It is NaN when windows is 0 (nothing to normalise by).
func Normalize(p Profile, raw float64, windows int) float64 {
	null, perfect := p.Null(windows), p.Perfect(windows)
	if perfect == null {
		return math.NaN()
	}
	return 100 * (raw - null) / (perfect - null)
}

// ProbationPercent is the share of a file's rows that NAB leaves unscored
// at its start, and ProbationMax caps that count (0.15 × 5000 rows).
const (
	ProbationPercent = 0.15
	ProbationMax     = 750
)

// Probation returns how many leading rows of an n-row file are not scored:
// min(⌊0.15·n⌋, 750).
func Probation(n int) int {
	return min(int(math.Floor(ProbationPercent*float64(n))), ProbationMax)
}

// ScaledSigmoid is NAB's scoring curve: 2/(1+e^{5y}) − 1, and −1 for
// y ≥ 3. It is ≈0.987 at y = −1 (a window's left edge), 0 at y = 0 and
// ≈−0.987 at y = 1.
func ScaledSigmoid(y float64) float64 {
	if y >= 3 {
		return -1
	}
	return 2/(1+math.Exp(5*y)) - 1
}

// Window is a labelled anomaly window: rows Start through End, inclusive.
type Window struct {
	Start, End int
}

// WindowRows turns windows given as times [start, end] (unix ms, sorted by
// start) into rows of a file with these timestamps, in file order.
//
// NAB walks a file's rows in file order (nab/sweeper.py,
// Sweeper.calcSweepScore): it enters a window at the first row whose
// timestamp equals the window's start, leaves it after the first row from
// there whose timestamp equals its end, and takes the window's right edge
// and width from the rows' positions (timestamps.index of the end and the
// start, the first rows with those times). A row is in a window by where it
// sits in the file, not by its own timestamp: a row that steps back in time
// between a window's first and last rows is in the window even when its
// time lies before the window's start, and a row outside those rows is
// outside even when its time falls within the window's times. Every
// position (the probation, a detection's place in its window, a false
// positive's distance from the window before it) is the row's index in the
// file. (NAB's labeller also marks each row 1 or 0 by its own time,
// t1 ≤ t ≤ t2, in nab/labeler.py CorpusLabel.getLabels, but the scorer
// does not read that column.) WindowRows does the same: a window starts at
// the first row with its start time and ends at the first row from there
// with its end time.
//
// NAB's labels always name rows' times (its labeller checks that they do).
// Where a time is no row's, WindowRows is lenient: a window starts at the
// first row at or after its start, and ends at the last row before the
// first row after its start that is later than its end (for a sorted file:
// the last row at or before the end). A window that holds no row is an
// error, and so is one whose end time first appears before its start row:
// NAB would measure such a window from a row outside it.
func WindowRows(timestamps []int64, limits [][2]int64) ([]Window, error) {
	out := make([]Window, 0, len(limits))
	for k, l := range limits {
		if l[1] < l[0] {
			return nil, fmt.Errorf("window %d (%d..%d ms) ends before it starts", k+1, l[0], l[1])
		}
		start := slices.Index(timestamps, l[0])
		if start < 0 {
			start = slices.IndexFunc(timestamps, func(t int64) bool { return t >= l[0] })
		}
		if start < 0 {
			return nil, fmt.Errorf("window %d (%d..%d ms) holds no row of the file", k+1, l[0], l[1])
		}
		end := -1
		if first := slices.Index(timestamps, l[1]); first >= 0 && first < start {
			return nil, fmt.Errorf("window %d (%d..%d ms): its end time is first on row %d, before its start on row %d (rows out of time order); NAB would measure the window from that earlier row",
				k+1, l[0], l[1], first, start)
		} else if first >= 0 {
			end = first
		} else {
			later := slices.IndexFunc(timestamps[start:], func(t int64) bool { return t > l[1] })
			if later < 0 {
				later = len(timestamps) - start
			}
			end = start + later - 1
		}
		if start > end {
			return nil, fmt.Errorf("window %d (%d..%d ms) holds no row of the file", k+1, l[0], l[1])
		}
		out = append(out, Window{Start: start, End: end})
	}
	return out, nil
}

// File is one data file of a benchmark: its length and its labelled
// windows, with what scoring needs precomputed. Make it with NewFile.
type File struct {
	name      string
	rows      int
	probation int
	windows   []Window
	// window[i] is the index of the window holding row i, or -1.
	window []int32
	// prev[i] is, for a row outside every window, the index of the last
	// window that ended before it, or -1.
	prev []int32
}

// NewFile checks windows against a file of rows rows (sorted, not
// overlapping, inside the file) and prepares scoring. name is used in
// errors only.
func NewFile(name string, rows int, windows []Window) (*File, error) {
	if rows <= 0 {
		return nil, fmt.Errorf("%s: a file to score needs rows, got %d", name, rows)
	}
	f := &File{
		name:      name,
		rows:      rows,
		probation: Probation(rows),
		windows:   slices.Clone(windows),
		window:    make([]int32, rows),
		prev:      make([]int32, rows),
	}
	for k, w := range windows {
		switch {
		case w.Start < 0 || w.End >= rows || w.Start > w.End:
			return nil, fmt.Errorf("%s: window %d covers rows %d..%d, outside the file's rows 0..%d", name, k+1, w.Start, w.End, rows-1)
		case k > 0 && w.Start <= windows[k-1].End:
			return nil, fmt.Errorf("%s: window %d (rows %d..%d) overlaps or precedes window %d (rows %d..%d); windows must be sorted and disjoint",
				name, k+1, w.Start, w.End, k, windows[k-1].Start, windows[k-1].End)
		}
	}
	k, last := 0, int32(-1)
	for i := range rows {
		for k < len(windows) && windows[k].End < i {
			last = int32(k)
			k++
		}
		f.prev[i] = last
		f.window[i] = -1
		if k < len(windows) && windows[k].Start <= i {
			f.window[i] = int32(k)
		}
	}
	return f, nil
}

// Name returns the name the file was made with.
func (f *File) Name() string { return f.name }

// Rows returns the file's number of rows.
func (f *File) Rows() int { return f.rows }

// Probation returns the number of leading rows not scored.
func (f *File) Probation() int { return f.probation }

// Windows returns the file's labelled windows.
func (f *File) Windows() []Window { return slices.Clone(f.windows) }

// ScoredWindows returns how many windows hold at least one row after the
// probation: the windows that count, as TP or FN. (NAB's own normalisation
// counts every labelled window for the perfect score; the two agree unless
// a window lies entirely in the probation.)
func (f *File) ScoredWindows() int {
	n := 0
	for _, w := range f.windows {
		if w.End >= f.probation {
			n++
		}
	}
	return n
}

// RowScore is what a detection at row i would score under p, before the
// windows' best-detection rule: NAB's per-row sweep score. It is 0 for a
// row in the probation.
func (f *File) RowScore(p Profile, i int) float64 {
	if i < f.probation {
		return 0
	}
	if k := f.window[i]; k >= 0 {
		w := f.windows[k]
		width := float64(w.End - w.Start + 1)
		return p.TP * ScaledSigmoid(-float64(w.End-i+1)/width) / ScaledSigmoid(-1)
	}
	k := f.prev[i]
	if k < 0 {
		return p.FP * ScaledSigmoid(3)
	}
	w := f.windows[k]
	// NAB divides by w−1; a one-row window divides by 1 instead of 0.
	return p.FP * ScaledSigmoid(float64(i-w.End)/float64(max(w.End-w.Start, 1)))
}

// Result is the outcome of scoring detections.
type Result struct {
	// Score is the raw NAB score: the sum of the windows' TP or FN scores
	// and of the false positives' scores.
	Score float64
	// TP and FN count the scored windows with and without a detection; FP
	// counts the detections outside every window after the probation.
	TP, FP, FN int
	// Windows is the number of scored windows (TP + FN).
	Windows int
}

// Add accumulates o into r.
func (r *Result) Add(o Result) {
	r.Score += o.Score
	r.TP += o.TP
	r.FP += o.FP
	r.FN += o.FN
	r.Windows += o.Windows
}

// Normalized returns r's score on NAB's 0–100 scale under p (NaN without
// windows).
func (r Result) Normalized(p Profile) float64 { return Normalize(p, r.Score, r.Windows) }

// Score scores a file's detections (one per row) under profile p.
func (f *File) Score(p Profile, detected []bool) (Result, error) {
	r, _, err := f.score(p, detected, false)
	return r, err
}

// RowScores scores a file's detections like Score and also returns NAB's
// per-row score column S(t) as its result files publish it: each window's
// score (its best detection's, or −A_FN) on the window's first row, each
// false positive's score on its row, 0 elsewhere.
func (f *File) RowScores(p Profile, detected []bool) (Result, []float64, error) {
	return f.score(p, detected, true)
}

func (f *File) score(p Profile, detected []bool, rows bool) (Result, []float64, error) {
	if len(detected) != f.rows {
		return Result{}, nil, fmt.Errorf("%s: %d detections for %d rows", f.name, len(detected), f.rows)
	}
	var col []float64
	if rows {
		col = make([]float64, f.rows)
	}
	var r Result
	for _, w := range f.windows {
		if w.End < f.probation {
			continue
		}
		r.Windows++
		s := -p.FN
		r.FN++
		for i := max(w.Start, f.probation); i <= w.End; i++ {
			if detected[i] { // the earliest detection scores best
				s = f.RowScore(p, i)
				r.FN--
				r.TP++
				break
			}
		}
		r.Score += s
		if rows {
			col[w.Start] = s
		}
	}
	for i := f.probation; i < f.rows; i++ {
		if detected[i] && f.window[i] < 0 {
			s := f.RowScore(p, i)
			r.FP++
			r.Score += s
			if rows {
				col[i] = s
			}
		}
	}
	return r, col, nil
}

// Scores are a file's per-row anomaly scores, for Sweep. A NaN score never
// counts as a detection.
type Scores struct {
	File   *File
	Scores []float64
}

// Threshold is the best threshold a Sweep found and the result there.
type Threshold struct {
	// Threshold: a row is a detection when its score is ≥ Threshold. NaN
	// (which no score is ≥ to) means that detecting nothing scored best.
	Threshold float64
	Result
}

// errNoFiles is returned by Sweep without input.
var errNoFiles = errors.New("sweeping thresholds: no files")

// Sweep finds the threshold on the anomaly scores that maximises the total
// raw score of all files under p, as NAB's optimiser does: every distinct
// score of a scored row is a candidate, and so is detecting nothing (NaN).
// Ties go to the higher threshold. It sorts the rows once and updates the
// total incrementally: O(R log R) for R rows in all.
func Sweep(p Profile, files []Scores) (Threshold, error) {
	if len(files) == 0 {
		return Threshold{}, errNoFiles
	}
	type row struct {
		score  float64
		weight float64
		window int32 // global window id, or -1
	}
	var rs []row
	var bad []string
	nw := 0
	for _, fs := range files {
		f := fs.File
		if len(fs.Scores) != f.rows {
			bad = append(bad, fmt.Sprintf("%s: %d scores for %d rows", f.name, len(fs.Scores), f.rows))
			continue
		}
		// Windows entirely in the probation do not count.
		base := int32(nw)
		for i := f.probation; i < f.rows; i++ {
			v := fs.Scores[i]
			if math.IsNaN(v) {
				continue
			}
			id := int32(-1)
			if k := f.window[i]; k >= 0 {
				id = base + k
			}
			rs = append(rs, row{score: v, weight: f.RowScore(p, i), window: id})
		}
		nw += len(f.windows)
	}
	if len(bad) > 0 {
		return Threshold{}, fmt.Errorf("sweeping thresholds: %s", strings.Join(bad, "; "))
	}
	slices.SortFunc(rs, func(a, b row) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})

	// best[k] is window k's score so far and hit[k] whether it has a
	// detection.
	best := make([]float64, nw)
	hit := make([]bool, nw)
	var cur Result
	{
		base := 0
		for _, fs := range files {
			for k, w := range fs.File.windows {
				if w.End >= fs.File.probation {
					best[base+k] = -p.FN
					cur.Windows++
					cur.FN++
					cur.Score -= p.FN
				}
			}
			base += len(fs.File.windows)
		}
	}
	top := Threshold{Threshold: math.NaN(), Result: cur}
	for i := 0; i < len(rs); {
		t := rs[i].score
		for ; i < len(rs) && rs[i].score == t; i++ {
			r := rs[i]
			if r.window < 0 {
				cur.FP++
				cur.Score += r.weight
				continue
			}
			if !hit[r.window] {
				hit[r.window] = true
				cur.TP++
				cur.FN--
			}
			// A window's TP weights are > 0 > −A_FN; keep its best.
			if b := best[r.window]; r.weight > b {
				cur.Score += r.weight - b
				best[r.window] = r.weight
			}
		}
		if cur.Score > top.Score {
			top = Threshold{Threshold: t, Result: cur}
		}
	}
	return top, nil
}
