package analysis

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/analysis/nab"
)

// TestNABLeaveOneCategoryOut tunes Auto on three NAB categories and scores
// the fourth, for each category: first the tail test's parameters (with the
// phase test at its defaults), then the phase test's (with the tail test at
// its defaults, and the phase test off as the first choice, so that it
// must earn its place on the three categories). It is slow: run it with
// INFERWATCH_NAB_TUNE=1. The phase test's held-out score on each real
// category must not fall below Auto's without it.
func TestNABLeaveOneCategoryOut(t *testing.T) {
	if os.Getenv("INFERWATCH_NAB_TUNE") == "" {
		t.Skip("set INFERWATCH_NAB_TUNE=1 to run the tuning check")
	}
	files := loadNAB(t)
	auto := func(points int, c AutoConfig) func() Detector {
		return func() Detector {
			return &stepWindow{points: points, build: func(w int64) Detector {
				c := c
				c.Window = w
				return NewAuto(c)
			}}
		}
	}

	var tail []string
	var tailRuns []nabRun
	for _, pts := range []int{1000, 2000, 3000} {
		for _, k := range []float64{2.5, 3, 3.5} {
			for _, p := range []float64{0.003, 0.01} {
				for _, div := range []int64{0, 96, 48, 24, 12} {
					c := AutoConfig{K: k, P: p, Refractory: 30, Period: DefaultSeasonalPeriod}
					if div == 0 {
						c.Period = -1 // no past-period tests
					} else {
						c.Tolerance = DefaultSeasonalPeriod / div
					}
					tail = append(tail, fmt.Sprintf("points=%d K=%g P=%g tolerance=%dmin", pts, k, p, c.Tolerance/60_000))
					tailRuns = append(tailRuns, runNAB(files, auto(pts, c)))
				}
			}
		}
	}
	def := runNAB(files, newDefault("auto"))
	leaveOneCategoryOut(t, files, tail, tailRuns, def, nil)

	phase := []string{"phase test off"}
	phaseRuns := []nabRun{runNAB(files, auto(DefaultAutoPoints, AutoConfig{PhaseK: -1}))}
	for _, k := range []float64{3, 4, 5, 6, 8} {
		for _, fit := range []float64{0.3, 0.5, 0.7, 1} {
			c := AutoConfig{PhaseK: k, PhaseFit: fit}
			phase = append(phase, fmt.Sprintf("phase K=%g fit=%g", k, fit))
			phaseRuns = append(phaseRuns, runNAB(files, auto(DefaultAutoPoints, c)))
		}
	}
	leaveOneCategoryOut(t, files, phase, phaseRuns, def, &phaseRuns[0])
}

// leaveOneCategoryOut picks, for each category with windows, the run that
// scores best on the other categories (the first of equals) and prints its
// score on the held-out one beside that of the defaults. With off given, a
// held-out real category must not score below off's.
func leaveOneCategoryOut(t *testing.T, files []nabFile, names []string, runs []nabRun, def nabRun, off *nabRun) {
	t.Helper()
	var cats []string
	for _, f := range files {
		if len(f.file.Windows()) > 0 && !slices.Contains(cats, f.category) {
			cats = append(cats, f.category)
		}
	}
	for _, out := range cats {
		var in, held []int
		for i, f := range files {
			if f.category == out {
				held = append(held, i)
			} else {
				in = append(in, i)
			}
		}
		best, bestScore := 0, math.Inf(-1)
		for i := range runs {
			if s := runs[i].score(t, files, in, nab.Standard).own.Normalized(nab.Standard); s > bestScore {
				best, bestScore = i, s
			}
		}
		got := runs[best].score(t, files, held, nab.Standard).own
		d := def.score(t, files, held, nab.Standard).own
		line := fmt.Sprintf("left out %-22s tuned: %s (%.2f on the rest) → %.2f (TP %d FP %d FN %d) on it; defaults → %.2f (TP %d FP %d FN %d)",
			out, names[best], bestScore, got.Normalized(nab.Standard), got.TP, got.FP, got.FN, d.Normalized(nab.Standard), d.TP, d.FP, d.FN)
		if off != nil {
			o := off.score(t, files, held, nab.Standard).own
			line += fmt.Sprintf("; phase test off → %.2f (TP %d FP %d FN %d)", o.Normalized(nab.Standard), o.TP, o.FP, o.FN)
			if strings.HasPrefix(out, "real") && got.Normalized(nab.Standard) < o.Normalized(nab.Standard) {
				t.Errorf("left out %s: the phase test tuned without it scores %.2f on it, below %.2f without the test", out, got.Normalized(nab.Standard), o.Normalized(nab.Standard))
			}
		}
		fmt.Println(line)
	}
}

// newDefault returns what a rule naming the detector without a window or
// parameters gets.
func newDefault(name string) func() Detector {
	f, err := Build(Spec{Name: name})
	if err != nil {
		panic(err)
	}
	return f
}

// TestNABDetectors scores every detector's default on NAB, under every
// profile, at its own decisions and at the best threshold. Its own
// decisions must be sane: a positive standard score and no more than a
// thousand false positives over the subset's 127,756 rows.
func TestNABDetectors(t *testing.T) {
	files := loadNAB(t)
	for _, n := range Names() {
		run := runNAB(files, newDefault(n))
		for _, p := range nab.Profiles() {
			r := run.score(t, files, nil, p)
			t.Logf("%-10s %s", n, r)
			if n == "sigma" || p != nab.Standard {
				continue // sigma is the plain k-sigma test, without floors
			}
			if got := r.own.Normalized(p); got <= 0 || r.own.FP > 1000 {
				t.Errorf("%s at its own decisions: %.1f on the standard profile with %d false positives, want > 0 and ≤ 1000", n, got, r.own.FP)
			}
		}
	}
}

// TestNABAutoPhaseRealFiles checks Auto's phase test file by file on NAB's
// real series, where the past days predict too little for it to judge:
// with it, no real file may score lower or have more false positives than
// without it. The changes it makes are logged.
func TestNABAutoPhaseRealFiles(t *testing.T) {
	files := loadNAB(t)
	with := runNAB(files, newDefault("auto"))
	without := runNAB(files, func() Detector {
		return &stepWindow{points: DefaultAutoPoints, build: func(w int64) Detector {
			return NewAuto(AutoConfig{Window: w, PhaseK: -1})
		}}
	})
	var fpWith, fpWithout int
	for i, f := range files {
		w, err := f.file.Score(nab.Standard, with.det[i])
		if err != nil {
			t.Fatal(err)
		}
		o, err := f.file.Score(nab.Standard, without.det[i])
		if err != nil {
			t.Fatal(err)
		}
		if w != o {
			t.Logf("%-55s raw %6.2f → %6.2f  TP %d→%d FP %d→%d FN %d→%d", f.name, o.Score, w.Score, o.TP, w.TP, o.FP, w.FP, o.FN, w.FN)
		}
		if !strings.HasPrefix(f.category, "real") {
			continue
		}
		fpWith += w.FP
		fpWithout += o.FP
		if w.Score < o.Score || w.FP > o.FP {
			t.Errorf("%s: the phase test lowers the score %.2f → %.2f, false positives %d → %d", f.name, o.Score, w.Score, o.FP, w.FP)
		}
	}
	t.Logf("false positives on the real files: %d without the phase test, %d with it", fpWithout, fpWith)
}
