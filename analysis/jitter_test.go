package analysis_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/inferwatch/inferwatch/analysis"
)

// A 3 s window at 1 s spacing holds the current sample and the two before
// it: (t−3000, t]. At t=3000 the window holds 10, 12, 11 (mean 11,
// s = √((1+1+0)/2) = 1); at t=4000 it holds 12, 11, 20 (mean 43/3,
// s = √((4/9+100/9+289/9)/2) = 4.9329). With type-7 quartiles the IQR of
// 10, 11, 12 is 11.5 − 10.5 = 1 and that of 11, 12, 20 is 16 − 11.5 = 4.5.
func ExampleRollingStd() {
	t := []int64{1000, 2000, 3000, 4000}
	v := []float64{10, 12, 11, 20}
	fmt.Printf("%.4f\n", analysis.RollingStd(t, v, 3000, 2))
	fmt.Printf("%.4f\n", analysis.RollingIQR(t, v, 3000, 3))
	// Output:
	// [NaN 1.4142 1.0000 4.9329]
	// [NaN NaN 1.0000 4.5000]
}

func ExampleTailSpread() {
	p99 := []float64{2.5, 1.75, math.NaN()}
	p50 := []float64{0.5, 0.25, 0.5}
	fmt.Println(analysis.TailSpread(p99, p50))
	// Output:
	// [2 1.5 NaN]
}

// naiveWindow returns the finite values with t in (t[i]−w, t[i]].
func naiveWindow(t []int64, v []float64, i int, w int64) []float64 {
	var out []float64
	for j := 0; j <= i; j++ {
		if t[j] > t[i]-w && !math.IsNaN(v[j]) && !math.IsInf(v[j], 0) {
			out = append(out, v[j])
		}
	}
	return out
}

// TestRollingAgainstNaive compares the streaming computations with a
// direct one per window, on irregular timestamps (with gaps and repeats),
// non-finite values and a large offset that would expose rounding drift.
func TestRollingAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := 3000
	ts := make([]int64, n)
	vs := make([]float64, n)
	var now int64
	for i := range ts {
		switch rng.IntN(10) {
		case 0:
			now += 20_000 // a gap longer than the window
		case 1: // a repeated timestamp
		default:
			now += int64(500 + rng.IntN(1000))
		}
		ts[i] = now
		vs[i] = 1e6 + rng.ExpFloat64()*50
		if rng.IntN(30) == 0 {
			vs[i] = math.NaN()
		}
	}
	const window = 10_000
	std := analysis.RollingStd(ts, vs, window, 3)
	iqr := analysis.RollingIQR(ts, vs, window, 3)
	for i := range ts {
		w := naiveWindow(ts, vs, i, window)
		wantStd, wantIQR := math.NaN(), math.NaN()
		if len(w) >= 3 && !math.IsNaN(vs[i]) {
			m := 0.0
			for _, x := range w {
				m += x
			}
			m /= float64(len(w))
			ss := 0.0
			for _, x := range w {
				ss += (x - m) * (x - m)
			}
			wantStd = math.Sqrt(ss / float64(len(w)-1))
			slices.Sort(w)
			q := func(p float64) float64 {
				h := float64(len(w)-1) * p
				lo := int(h)
				return w[lo] + (h-float64(lo))*(w[min(lo+1, len(w)-1)]-w[lo])
			}
			wantIQR = q(0.75) - q(0.25)
		}
		if math.IsNaN(wantStd) != math.IsNaN(std[i]) || math.Abs(std[i]-wantStd) > 1e-6*max(1, wantStd) {
			t.Fatalf("RollingStd[%d] = %v, want %v (window of %d)", i, std[i], wantStd, len(w))
		}
		if math.IsNaN(wantIQR) != math.IsNaN(iqr[i]) || math.Abs(iqr[i]-wantIQR) > 1e-9 {
			t.Fatalf("RollingIQR[%d] = %v, want %v", i, iqr[i], wantIQR)
		}
	}
}

func TestRollingPanics(t *testing.T) {
	f := func(name string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		fn()
	}
	f("descending", func() { analysis.RollingStd([]int64{2, 1}, []float64{1, 1}, 10, 2) })
	f("window 0", func() { analysis.RollingIQR([]int64{1}, []float64{1}, 0, 2) })
	f("lengths", func() { analysis.TailSpread([]float64{1}, nil) })
}

func BenchmarkRollingStd(b *testing.B) {
	n := 10_080 // a week of minutes
	ts := make([]int64, n)
	vs := make([]float64, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range ts {
		ts[i] = int64(i) * 60_000
		vs[i] = rng.ExpFloat64()
	}
	for b.Loop() {
		analysis.RollingStd(ts, vs, 60*60_000, 2)
	}
}
