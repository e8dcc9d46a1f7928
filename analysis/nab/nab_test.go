package nab

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestScaledSigmoid(t *testing.T) {
	f := func(y, want float64) {
		t.Helper()
		if got := ScaledSigmoid(y); !near(got, want, 1e-12) {
			t.Errorf("ScaledSigmoid(%v) = %.15f, want %.15f", y, got, want)
		}
	}
	// 2/(1+e^{5y}) − 1 by hand: e^{-5} = 0.006737947, 2/1.006737947 − 1.
	f(-1, 0.9866142981514305)
	f(-0.5, 0.8482836399575131) // 2/(1+e^{-2.5}) − 1
	f(0, 0)
	f(1, -0.9866142981514303)
	f(2.9999, -0.9999993878895675) // just below the cut
	f(3, -1)                       // NAB's sweeper: −1 from 3 on
	f(10, -1)
}

func TestProbation(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{1, 0}, {6, 0}, {7, 1}, {100, 15}, {1127, 169}, {4032, 604}, {4730, 709},
		{5000, 750}, {5006, 750}, {22695, 750},
	} {
		if got := Probation(c.n); got != c.want {
			t.Errorf("Probation(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestProfileByName(t *testing.T) {
	for name, want := range map[string]Profile{
		"standard": Standard, "reward_low_FP": RewardLowFP, "reward_low_FP_rate": RewardLowFP,
		"reward_low_FN": RewardLowFN, "reward_low_FN_rate": RewardLowFN,
	} {
		if got, err := ProfileByName(name); err != nil || got != want {
			t.Errorf("ProfileByName(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := ProfileByName("low_fp"); err == nil || !strings.Contains(err.Error(), "known: standard, reward_low_FP, reward_low_FN") {
		t.Errorf("unknown profile: %v", err)
	}
}

// TestScoreByHand scores a 100-row file whose numbers were worked out by
// hand: probation 15 rows; window A = rows 40..59 (w = 20), window B = rows
// 80..89.
//
//	row 10: detection in the probation: ignored
//	row 20: FP before any window: −A_FP
//	row 45: TP in A: σ(−(59−45+1)/20)/σ(−1) = 0.954047/0.986614 = 0.966989
//	row 50: a later detection in A: does not count
//	row 70: FP after A: A_FP·σ(11/19) = A_FP·(−0.895171)
//	B: missed: −A_FN
func TestScoreByHand(t *testing.T) {
	f, err := NewFile("hand", 100, []Window{{40, 59}, {80, 89}})
	if err != nil {
		t.Fatal(err)
	}
	det := make([]bool, 100)
	for _, i := range []int{10, 20, 45, 50, 70} {
		det[i] = true
	}
	const tp, fp = 0.9669890878000605, -0.8951712922770830
	for _, c := range []struct {
		p    Profile
		want float64
	}{
		{Standard, tp + 0.11*fp - 1 - 0.11},
		{RewardLowFP, tp + 0.22*fp - 1 - 0.22},
		{RewardLowFN, tp + 0.11*fp - 2 - 0.11},
	} {
		r, rows, err := f.RowScores(c.p, det)
		if err != nil {
			t.Fatal(err)
		}
		if !near(r.Score, c.want, 1e-12) || r.TP != 1 || r.FP != 2 || r.FN != 1 || r.Windows != 2 {
			t.Errorf("%s: %+v, want score %.12f TP 1 FP 2 FN 1", c.p.Name, r, c.want)
		}
		wantRows := map[int]float64{20: -c.p.FP, 40: tp, 70: c.p.FP * fp, 80: -c.p.FN}
		sum := 0.0
		for i, v := range rows {
			sum += v
			if !near(v, wantRows[i], 1e-12) {
				t.Errorf("%s: S(t) of row %d = %v, want %v", c.p.Name, i, v, wantRows[i])
			}
		}
		if !near(sum, r.Score, 1e-12) {
			t.Errorf("%s: the rows sum to %v, the score is %v", c.p.Name, sum, r.Score)
		}
	}
	if got := Normalize(Standard, -0.24147975435041857, 2); !near(got, 100*(2-0.24147975435041857)/4, 1e-12) {
		t.Errorf("Normalize = %v", got)
	}
	if r, _ := f.Score(Standard, make([]bool, 100)); r.Score != -2 || r.FN != 2 || Normalize(Standard, r.Score, r.Windows) != 0 {
		t.Errorf("the null detector: %+v", r)
	}
	perfect := make([]bool, 100)
	perfect[40], perfect[80] = true, true
	if r, _ := f.Score(RewardLowFN, perfect); !near(r.Normalized(RewardLowFN), 100, 1e-12) {
		t.Errorf("the perfect detector: %+v, normalised %v", r, r.Normalized(RewardLowFN))
	}
	if _, err := f.Score(Standard, make([]bool, 99)); err == nil || !strings.Contains(err.Error(), "hand: 99 detections for 100 rows") {
		t.Errorf("length mismatch: %v", err)
	}
}

func TestWindowsInProbationDoNotCount(t *testing.T) {
	// Probation is 15 rows: window 2..9 is not scored, 12..20 is.
	f, err := NewFile("p", 100, []Window{{2, 9}, {12, 20}})
	if err != nil {
		t.Fatal(err)
	}
	det := make([]bool, 100)
	det[5], det[16] = true, true
	r, _ := f.Score(Standard, det)
	want := ScaledSigmoid(-5.0/9) / ScaledSigmoid(-1)
	if r.Windows != 1 || r.TP != 1 || r.FP != 0 || !near(r.Score, want, 1e-12) || f.ScoredWindows() != 1 {
		t.Errorf("%+v, want 1 window, 1 TP scoring %v", r, want)
	}
}

func TestNewFileErrors(t *testing.T) {
	f := func(rows int, ws []Window, want string) {
		t.Helper()
		_, err := NewFile("f.csv", rows, ws)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%d rows %v: got %v, want %q", rows, ws, err, want)
		}
	}
	f(0, nil, "f.csv: a file to score needs rows")
	f(10, []Window{{5, 10}}, "window 1 covers rows 5..10, outside the file's rows 0..9")
	f(10, []Window{{5, 4}}, "window 1 covers rows 5..4")
	f(10, []Window{{2, 4}, {4, 6}}, "window 2 (rows 4..6) overlaps or precedes window 1 (rows 2..4)")
}

func TestWindowRows(t *testing.T) {
	ts := []int64{0, 10, 20, 20, 30, 40, 50}
	got, err := WindowRows(ts, [][2]int64{{10, 20}, {25, 45}, {50, 50}})
	if err != nil {
		t.Fatal(err)
	}
	// 10..20 ends at 20's first row; 25..45 starts at 30 and ends at 40.
	want := []Window{{1, 2}, {4, 5}, {6, 6}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("window %d: %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := WindowRows(ts, [][2]int64{{41, 49}}); err == nil || !strings.Contains(err.Error(), "window 1 (41..49 ms) holds no row") {
		t.Errorf("empty window: %v", err)
	}
}

// TestWindowRowsInFileOrder: with a row that steps back in time, windows
// are rows by position, as NAB's sweeper walks the file.
func TestWindowRowsInFileOrder(t *testing.T) {
	// Row 5 steps back to 12, before the window 15..40 starts; rows 6 and
	// 7 (35, 40) are at or before the newest time (40 on row 4).
	ts := []int64{0, 10, 20, 30, 40, 12, 35, 40, 50, 60}
	f := func(limits [][2]int64, want ...Window) {
		t.Helper()
		got, err := WindowRows(ts, limits)
		if err != nil {
			t.Fatalf("%v: %v", limits, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v: %v, want %v", limits, got, want)
		}
	}
	// 20..40: from row 2 to the first 40, row 4; rows 6 and 7 are outside
	// although their times (35, 40) are within the window's.
	f([][2]int64{{20, 40}}, Window{2, 4})
	// 20..35: from row 2 to row 6, where 35 first appears; row 5 is in the
	// window although its 12 is before the window's start, and row 4
	// although its 40 is after the window's end.
	f([][2]int64{{20, 35}}, Window{2, 6})
	// 12..50: starts on row 5 where 12 is, ends on row 8.
	f([][2]int64{{12, 50}}, Window{5, 8})
	// Times that are no row's: from the first row at or after 15 (row 2)
	// to the row before the first one after 37 (row 4's 40): rows 2..3.
	f([][2]int64{{15, 37}}, Window{2, 3})
	// Two windows, in file order.
	f([][2]int64{{0, 10}, {12, 60}}, Window{0, 1}, Window{5, 9})

	// 12..30: 30 is on row 3, before 12's row 5.
	if _, err := WindowRows(ts, [][2]int64{{12, 30}}); err == nil || !strings.Contains(err.Error(), "its end time is first on row 3, before its start on row 5") {
		t.Errorf("an end before its start: %v", err)
	}
	if _, err := WindowRows(ts, [][2]int64{{61, 70}}); err == nil || !strings.Contains(err.Error(), "holds no row") {
		t.Errorf("after the last row: %v", err)
	}
}

// TestSweepMatchesBruteForce checks the incremental sweep against scoring
// every candidate threshold from scratch, on random files.
func TestSweepMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 30 {
		var files []Scores
		for k := range 1 + rng.IntN(4) {
			n := 40 + rng.IntN(200)
			var ws []Window
			for start := 5 + rng.IntN(30); start+3 < n; start += 10 + rng.IntN(60) {
				end := min(start+2+rng.IntN(20), n-1)
				ws = append(ws, Window{start, end})
				start = end
			}
			f, err := NewFile(string(rune('a'+k)), n, ws)
			if err != nil {
				t.Fatal(err)
			}
			sc := make([]float64, n)
			for i := range sc {
				sc[i] = math.Round(rng.Float64()*20) / 10 // ties on purpose
				if rng.IntN(80) == 0 {
					sc[i] = math.Inf(1)
				}
				if rng.IntN(50) == 0 {
					sc[i] = math.NaN()
				}
			}
			files = append(files, Scores{File: f, Scores: sc})
		}
		for _, p := range Profiles() {
			got, err := Sweep(p, files)
			if err != nil {
				t.Fatal(err)
			}
			// Brute force over nothing (NaN), +Inf, and every distinct score, highest first.
			cands := []float64{math.NaN(), math.Inf(1)}
			for v := 2.0; v >= 0; v -= 0.1 {
				cands = append(cands, math.Round(v*10)/10)
			}
			var best Threshold
			for i, th := range cands {
				var tot Result
				for _, fs := range files {
					det := make([]bool, len(fs.Scores))
					for j, v := range fs.Scores {
						det[j] = v >= th
					}
					r, err := fs.File.Score(p, det)
					if err != nil {
						t.Fatal(err)
					}
					tot.Add(r)
				}
				if i == 0 || tot.Score > best.Score+1e-9 {
					best = Threshold{Threshold: th, Result: tot}
				}
			}
			if !near(got.Score, best.Score, 1e-9) || got.TP != best.TP || got.FP != best.FP || got.FN != best.FN || got.Windows != best.Windows {
				t.Errorf("trial %d %s: sweep %+v, brute force %+v", trial, p.Name, got, best)
			}
			// The result reported is the one at the threshold reported.
			var at Result
			for _, fs := range files {
				det := make([]bool, len(fs.Scores))
				for j, v := range fs.Scores {
					det[j] = v >= got.Threshold
				}
				r, _ := fs.File.Score(p, det)
				at.Add(r)
			}
			if !near(at.Score, got.Score, 1e-9) || at.TP != got.TP || at.FP != got.FP || at.FN != got.FN {
				t.Errorf("trial %d %s: at threshold %v the files score %+v, the sweep says %+v", trial, p.Name, got.Threshold, at, got.Result)
			}
		}
	}
}

func TestSweepErrors(t *testing.T) {
	if _, err := Sweep(Standard, nil); err == nil {
		t.Error("no files: no error")
	}
	f, _ := NewFile("x.csv", 10, nil)
	if _, err := Sweep(Standard, []Scores{{File: f, Scores: make([]float64, 9)}}); err == nil || !strings.Contains(err.Error(), "x.csv: 9 scores for 10 rows") {
		t.Errorf("length mismatch: %v", err)
	}
	// Nothing to find: detecting nothing is best (no FP), at NaN; an
	// infinite score is a threshold like any other.
	got, err := Sweep(Standard, []Scores{{File: f, Scores: []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, math.Inf(1)}}})
	if err != nil || !math.IsNaN(got.Threshold) || got.Score != 0 {
		t.Errorf("no windows: %+v, %v", got, err)
	}
}

func BenchmarkSweep(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var files []Scores
	for range 35 {
		n := 4032
		f, _ := NewFile("f", n, []Window{{1500, 1700}, {3000, 3200}})
		sc := make([]float64, n)
		for i := range sc {
			sc[i] = rng.ExpFloat64()
		}
		files = append(files, Scores{File: f, Scores: sc})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sweep(Standard, files); err != nil {
			b.Fatal(err)
		}
	}
}
