package analysis

import (
	"fmt"
	"os"
	"slices"
	"testing"
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
		for _, k := range []float64{2.5, 3, 3.5, 4} {
			for _, p := range []float64{0.003, 0.005, 0.01} {
				for _, ref := range []int{30, 100} {
					grid = append(grid, cfg{pts, AutoConfig{K: k, P: p, Refractory: ref}})
				}
			}
		}
	}
	dets := make([][][]bool, len(grid))
	for i, g := range grid {
		dets[i] = runNAB(files, func() Detector {
			return &stepWindow{points: g.points, build: func(w int64) Detector {
				c := g.c
				c.Window = w
				return NewAuto(c)
			}}
		})
	}
	var cats []string
	for _, f := range files {
		if len(f.windows) > 0 && !slices.Contains(cats, f.category) {
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
		pick := func(idx []int, det [][]bool) nabResult {
			fs := make([]nabFile, len(idx))
			ds := make([][]bool, len(idx))
			for j, i := range idx {
				fs[j], ds[j] = files[i], det[i]
			}
			return scoreNAB(fs, ds)
		}
		best, bestScore := 0, -1e9
		for gi := range grid {
			if s := pick(in, dets[gi]).total["standard"]; s > bestScore {
				best, bestScore = gi, s
			}
		}
		g := grid[best]
		fmt.Printf("left out %-22s tuned: points=%d K=%g P=%g refractory=%d (%.1f on the rest) → %.1f on %s; defaults → %.1f\n",
			out, g.points, g.c.K, g.c.P, g.c.Refractory, bestScore, pick(held, dets[best]).total["standard"], out,
			pick(held, runNAB(files, newDefaultAuto)).total["standard"])
	}
}

// newDefaultAuto is what a rule naming auto without a window or parameters
// gets.
func newDefaultAuto() Detector {
	f, err := Build(Spec{Name: "auto"})
	if err != nil {
		panic(err)
	}
	return f()
}
