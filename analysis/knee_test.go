package analysis_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/analysis"
)

// y = 1 − e^(−x) on [0, 5]. Scaled to the unit square, the difference
// curve (1 − e^(−x))/(1 − e^(−5)) − x/5 is largest where its derivative
// e^(−x)/(1 − e^(−5)) − 1/5 vanishes: x = ln(5·(1 − e^(−5))) = 1.6162, so
// on a grid of 0.1 the knee is x = 1.6, y = 1 − e^(−1.6) = 0.7981, with
// strength 0.7981/(1 − e^(−5)) − 1.6/5 = 0.4835.
func ExampleKneedle() {
	var x, y []float64
	for i := range 51 {
		v := float64(i) / 10
		x = append(x, v)
		y = append(y, 1-math.Exp(-v))
	}
	k, err := analysis.Kneedle(x, y)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("knee at concurrency %.4f, qps %.4f (%s, strength %.4f)\n", k.Concurrency, k.QPS, k.Method, k.Strength)
	// Output:
	// knee at concurrency 1.6000, qps 0.7981 (kneedle, strength 0.4835)
}

// y = x³ − 6x² + 9x + 1 has y” = 6x − 12, zero at x = −b/(3a) = 2, where
// y = 8 − 24 + 18 + 1 = 3. The least-squares fit of an exact cubic is the
// cubic itself.
func ExampleCubicInflection() {
	var x, y []float64
	for i := range 6 {
		v := float64(i)
		x = append(x, v)
		y = append(y, v*v*v-6*v*v+9*v+1)
	}
	k, err := analysis.CubicInflection(x, y)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("inflection at x=%.4f y=%.4f inside=%t\n", k.Concurrency, k.QPS, k.Inside)
	// Output:
	// inflection at x=2.0000 y=3.0000 inside=true
}

// TestFindKneeNoisy measures a saturating replica, QPS = 1000·(1 −
// e^(−c/16)), three times at each concurrency 1…128 with 3 % noise. The
// continuous Kneedle knee on [1, 128] is at c = −16·ln(16·Δy/(127·1000))
// = 34.2 with Δy = 1000·(e^(−1/16) − e^(−8)); binning and smoothing keep
// the estimate near it.
func TestFindKneeNoisy(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	var c, q []float64
	for rep := range 3 {
		for i := 1; i <= 128; i++ {
			v := 1000 * (1 - math.Exp(-float64(i)/16))
			c = append(c, float64(i))
			q = append(q, v*(1+0.03*rng.NormFloat64()))
			if rep == 0 && i%50 == 0 {
				c = append(c, math.NaN()) // a broken scrape
				q = append(q, 5)
			}
		}
	}
	k, err := analysis.FindKnee(c, q, analysis.KneeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if k.Method != analysis.KneeKneedle || k.Concurrency < 29 || k.Concurrency > 40 || !k.Inside {
		t.Errorf("knee %+v, want kneedle near concurrency 34", k)
	}
	want := 1000 * (1 - math.Exp(-k.Concurrency/16))
	if math.Abs(k.QPS-want) > 0.03*want {
		t.Errorf("QPS at knee %v, the curve gives %v", k.QPS, want)
	}
	kc, err := analysis.FindKnee(c, q, analysis.KneeConfig{Method: analysis.KneeCubic})
	if err != nil {
		t.Fatal(err)
	}
	if kc.Method != analysis.KneeCubic {
		t.Errorf("cubic knee reports method %q", kc.Method)
	}
}

func TestCubicInflectionOutside(t *testing.T) {
	// y = 0.001x³ − x² + 20x is concave on [0, 10]; its inflection is at
	// x = 1/0.003 = 333.3, far outside the data.
	var x, y []float64
	for i := range 11 {
		v := float64(i)
		x = append(x, v, v) // duplicates weigh twice in the fit
		y = append(y, 0.001*v*v*v-v*v+20*v, 0.001*v*v*v-v*v+20*v)
	}
	k, err := analysis.CubicInflection(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if k.Inside || math.Abs(k.Concurrency-1000.0/3) > 1e-6 {
		t.Errorf("knee %+v, want x = 333.33 outside the data", k)
	}
}

func TestKneeErrors(t *testing.T) {
	line := func(f func(float64) float64) (x, y []float64) {
		for i := range 20 {
			x = append(x, float64(i))
			y = append(y, f(float64(i)))
		}
		return x, y
	}
	f := func(name string, x, y []float64, c analysis.KneeConfig, noKnee bool, want string) {
		t.Helper()
		_, err := analysis.FindKnee(x, y, c)
		if err == nil || errors.Is(err, analysis.ErrNoKnee) != noKnee || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q (ErrNoKnee: %t)", name, err, want, noKnee)
		}
	}
	x, y := line(func(v float64) float64 { return 3 * v })
	f("straight line", x, y, analysis.KneeConfig{}, true, "does not bend")
	x, y = line(func(v float64) float64 { return v * v })
	f("convex", x, y, analysis.KneeConfig{Smooth: 1}, true, "does not bend")
	x, y = line(func(float64) float64 { return 7 })
	f("flat", x, y, analysis.KneeConfig{}, true, "flat")
	f("exact cubic term 0", x, y, analysis.KneeConfig{Method: analysis.KneeCubic}, true, "no inflection")
	f("two points", []float64{1, 2}, []float64{1, 2}, analysis.KneeConfig{}, true, "at least 3")
	f("lengths", []float64{1}, nil, analysis.KneeConfig{}, false, "1 concurrency values but 0 QPS")
	f("method", x, y, analysis.KneeConfig{Method: "spline"}, false, `unknown method "spline"`)
	f("smooth", x, y, analysis.KneeConfig{Smooth: -1}, false, "smoothing width")
	f("cubic needs 4", []float64{1, 2, 2, 3}, []float64{1, 2, 2, 3}, analysis.KneeConfig{Method: analysis.KneeCubic}, false, "4 distinct")
}
