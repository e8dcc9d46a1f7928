package analysis

import (
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/inferwatch/inferwatch/analysis/nab"
)

// TestNABLeaveOneCategoryOut tunes Auto on three NAB categories and scores
// the fourth, for each category. It is slow and prints rather than checks:
// run it with INFERWATCH_NAB_TUNE=1.
func TestNABLeaveOneCategoryOut(t *testing.T) {
	if os.Getenv("INFERWATCH_NAB_TUNE") == "" {
		t.Skip("set INFERWATCH_NAB_TUNE=1 to run the tuning check")
	}
	files := loadNAB(t)
	type cfg struct {
		points int
		c      AutoConfig
	}
	var grid []cfg
	for _, pts := range []int{1000, 2000, 3000} {
		for _, k := range []float64{2.5, 3, 3.5} {
			for _, p := range []float64{0.003, 0.01} {
				for _, div := range []int64{0, 96, 48, 24, 12} {
					c := AutoConfig{K: k, P: p, Refractory: 30, Period: DefaultSeasonalPeriod}
					if div == 0 {
						c.Period = -1
					} else {
						c.Tolerance = DefaultSeasonalPeriod / div
					}
					grid = append(grid, cfg{pts, c})
				}
			}
		}
	}
	runs := make([]nabRun, len(grid))
	for i, g := range grid {
		runs[i] = runNAB(files, func() Detector {
			return &stepWindow{points: g.points, build: func(w int64) Detector {
				c := g.c
				c.Window = w
				return NewAuto(c)
			}}
		})
	}
	def := runNAB(files, newDefault("auto"))
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
		for gi := range grid {
			if s := runs[gi].score(t, files, in, nab.Standard).own.Normalized(nab.Standard); s > bestScore {
				best, bestScore = gi, s
			}
		}
		g := grid[best]
		fmt.Printf("left out %-22s tuned: points=%d K=%g P=%g tolerance=%dmin (%.1f on the rest) → %.1f on %s; defaults → %.1f\n",
			out, g.points, g.c.K, g.c.P, g.c.Tolerance/60_000, bestScore,
			runs[best].score(t, files, held, nab.Standard).own.Normalized(nab.Standard), out,
			def.score(t, files, held, nab.Standard).own.Normalized(nab.Standard))
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
