package analysis

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/inferwatch/inferwatch/analysis/families"
)

// TestStudentQuantile: Hill's approximation agrees with the closed form at
// ν = 2, t = (1 − 2p)/√(2p(1 − p)), within 6·10⁻⁴, and with gonum's
// quantile (an inverse of the incomplete beta function) within 10⁻⁴ from
// ν = 3.
func TestStudentQuantile(t *testing.T) {
	for _, p := range []float64{0.1, 0.01, 0.003, 0.001, 1e-4, 1e-6} {
		want := (1 - 2*p) / math.Sqrt(2*p*(1-p))
		if got := studentQuantile(p, 2); math.Abs(got/want-1) > 6e-4 {
			t.Errorf("ν 2, p %g: %.6f, want %.6f", p, got, want)
		}
		for _, nu := range []float64{3, 3.3075, 7.5, 36, 367, 10_000} {
			want := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(1 - p)
			tol := 1e-4
			if p >= 0.1 {
				tol = 2e-4 // Hill's series is looser near the middle
			}
			if got := studentQuantile(p, nu); math.Abs(got/want-1) > tol {
				t.Errorf("ν %g, p %g: %.8f, want %.8f", nu, p, got, want)
			}
		}
	}
}

// TestYoungWidth checks the widening against values computed by hand:
// at n = 5 the degrees of freedom are held at 2, where t has a closed
// form.
func TestYoungWidth(t *testing.T) {
	// n = 5, P = 0.009: α = 0.003, ν = max(2, 0.3675·4) = 2,
	// t_2(0.997) = 0.994/√(2·0.003·0.997) = 12.851777,
	// Φ⁻¹(0.997) = 2.747781, √(1 + π/10) = 1.146368:
	// 12.851777/2.747781·1.146368 = 5.361718.
	if got := youngWidth(5, 0.009); math.Abs(got-5.361718) > 5.361718*6e-4 {
		t.Errorf("youngWidth(5) = %.6f, want 5.3617", got)
	}
	// n = 10: ν = 0.3675·9 = 3.3075; t_ν(0.997) from gonum.
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 3.3075}.Quantile(0.997)
	want := tq / 2.747781 * math.Sqrt(1+math.Pi/20)
	if got := youngWidth(10, 0.009); math.Abs(got/want-1) > 1e-5 {
		t.Errorf("youngWidth(10) = %.6f, want %.6f", got, want)
	}
	// From many samples it is 1 + (z² + 1)/(4ν) + π/(4n) to first order,
	// z = Φ⁻¹(0.997): at n = 10,001, ν = 3675, 1 + 8.5503/14700 + 0.0000785.
	if got, want := youngWidth(10_001, 0.009), 1+(2.747781*2.747781+1)/(4*3675)+math.Pi/(4*10_001); math.Abs(got-want) > 2e-6 {
		t.Errorf("youngWidth(10001) = %.7f, want %.7f", got, want)
	}
	t.Logf("youngWidth at n 10, 100, 1000, 10000: %.3f %.3f %.4f %.5f",
		youngWidth(10, 0.009), youngWidth(100, 0.009), youngWidth(1000, 0.009), youngWidth(10000, 0.009))
	// It falls as n grows and tends to 1.
	prev := math.Inf(1)
	for n := int64(1); n < 1_000_000; n = n*5/4 + 1 {
		w := youngWidth(n, 0.009)
		if !(w < prev) || w < 1 {
			t.Fatalf("youngWidth(%d) = %v after %v", n, w, prev)
		}
		prev = w
	}
	if prev > 1.0001 {
		t.Errorf("youngWidth at a million samples is %v, want about 1", prev)
	}
}

var (
	youngBurst = flag.Int("young.burst", 2000, "how many new series of each noise shape and step TestAutoYoungBurst judges")
	youngOld   = flag.Int("young.old", 200, "how many series of each noise shape and step TestAutoYoungBurst judges on their fourth day")
)

// burstAges are the bounds of the age classes, in samples, that
// TestAutoYoungBurst counts alarms in: from the first sample auto judges
// (its 11th) to four hours at a minute's step.
var burstAges = []int{10, 12, 15, 20, 30, 45, 60, 90, 120, 180, 240}

// bandAges are the ages at which TestAutoYoungBurst reads how far the band
// reaches above the median, in the series' units (the noise's standard
// deviation is 5 for Gaussian noise, 8.7 for t₃ of scale 5, 2 for counts).
var bandAges = []int{10, 60, 239}

// TestAutoYoungBurst: a burst of new series of plain noise (Gaussian,
// Student's t with 3 degrees of freedom, Poisson counts, Laplace,
// lognormal; at 15 s and 1 m), each judged by a new detector from its
// first samples, as a rule judges a new pod. Of Gaussian noise, counts
// and the Laplace tail, the young series alarm on no larger a share of
// their samples 10 to 239 than series of the same noise on their fourth
// day (200 series, or -young.old); of the heavier tails, t₃ and lognormal, on at most
// 1.5 times as large a share (five times before the band allowed for heavy
// tails, 1.6 before the bin being filled counted by its share). With -v it prints the alarms that start at each age;
// -young.burst sets the series of each shape and step (50,000 for
// docs/figures.md).
func TestAutoYoungBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("judges three million samples")
	}
	n := *youngBurst
	var b strings.Builder
	for _, shape := range families.NoiseShapes {
		for _, step := range []int64{15_000, 60_000} {
			rng := rand.New(rand.NewPCG(uint64(step), 46))
			draw := families.NoiseSource(shape, rng)
			young := make([]int, len(burstAges)) // alarms starting, by age class
			hits, judged := 0, 0
			widths := make([][]float64, len(bandAges)) // Upper − Expected
			for range n {
				a := NewAuto(AutoConfig{Step: step})
				prev := false
				for i := range burstAges[len(burstAges)-1] {
					r := a.Observe(int64(i)*step, draw())
					alarm := r.Score >= 1
					if k := slices.Index(bandAges, i); k >= 0 && !math.IsNaN(r.Upper) {
						widths[k] = append(widths[k], r.Upper-r.Expected)
					}
					if i >= burstAges[0] {
						judged++
						if alarm {
							hits++
						}
						if alarm && !prev {
							young[sort.SearchInts(burstAges, i+1)-1]++
						}
					}
					prev = alarm
				}
			}
			perDay := int(86_400_000 / step)
			oldHits, oldJudged := 0, 0
			for range *youngOld {
				a := NewAuto(AutoConfig{Step: step})
				for i := range 4 * perDay {
					alarm := a.Observe(int64(i)*step, draw()).Score >= 1
					if i >= 3*perDay {
						oldJudged++
						if alarm {
							oldHits++
						}
					}
				}
			}
			ry, ro := float64(hits)/float64(judged), float64(oldHits)/float64(oldJudged)
			fmt.Fprintf(&b, "%-11s %3ds: %d new series, alarms on %.2e of their samples 10–239 (the fourth day: %.2e); alarms starting at ages",
				shape, step/1000, n, ry, ro)
			for k := range young[:len(young)-1] {
				fmt.Fprintf(&b, " %d–%d: %d", burstAges[k], burstAges[k+1]-1, young[k])
			}
			b.WriteString("; the median Upper − Expected at age")
			for k, w := range widths {
				slices.Sort(w)
				fmt.Fprintf(&b, " %d: %.2f", bandAges[k], w[len(w)/2])
			}
			b.WriteString("\n")
			bound := 1.0
			if shape == families.HeavyTailed || shape == families.LogNormal {
				bound = 1.5
			}
			if ry > bound*ro {
				t.Errorf("%s at %ds: young series alarm on %.2e of their samples, old ones on %.2e (at most %g times as many)", shape, step/1000, ry, ro, bound)
			}
		}
	}
	t.Logf("auto on a burst of new series:\n%s", b.String())
}

// TestOpenShare checks the open bin's share of a bin's samples against
// counts made by hand, with bins of 15 minutes and samples every 15 s
// (60 to a bin).
func TestOpenShare(t *testing.T) {
	f := func(start int64, samples int, want float64) {
		t.Helper()
		a := NewAuto(AutoConfig{Step: 15_000})
		for i := range samples {
			a.Observe(start+int64(i)*15_000, 100+float64(i%7))
		}
		if got := a.openShare(a.held); math.Abs(got-want) > 1e-12 {
			t.Errorf("%d samples from %d ms: share %v, want %v", samples, start, got, want)
		}
	}
	// No bin has closed: 30 of the 60 a bin's width holds at the step.
	f(0, 30, 0.5)
	// One closed bin of 60, then 10 in the open one: 10/60.
	f(0, 70, 1.0/6)
	// From 10 minutes into a bin: 20 samples close it, 60 the next, and
	// 15 are in the open one: the closed bins hold 80/2 = 40 on average,
	// and the open one 15/40.
	f(600_000, 95, 0.375)
	// An open bin that holds more than the closed ones' average counts
	// as one bin, not more: 59 against 40.
	f(600_000, 139, 1)
}
