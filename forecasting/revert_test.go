package forecasting

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/inferwatch/inferwatch/internal/num"
)

// levelPlusNoise is a random walk (steps of sd walk) seen through white
// noise (sd noise): its first differences are negatively autocorrelated at
// lag 1, the mean reversion the revert model is for.
func levelPlusNoise(n int, seed uint64, walk, noise float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 11))
	y := make([]float64, n)
	level := 500.0
	for i := range y {
		level += walk * rng.NormFloat64()
		y[i] = level + noise*rng.NormFloat64()
	}
	return y
}

// oneStepMAE replays y[fit:] through a model fitted on y[:fit] and returns
// its lead-1 MAE and the naive forecast's.
func oneStepMAE(t *testing.T, m model, y []float64, fit int) (mae, naive float64) {
	t.Helper()
	if err := m.fit(y[:fit]); err != nil {
		t.Fatal(err)
	}
	out := make([]float64, 1)
	for i := fit; i < len(y); i++ {
		m.predict(out)
		mae += math.Abs(y[i] - out[0])
		naive += math.Abs(y[i] - y[i-1])
		m.update(y[i])
	}
	n := float64(len(y) - fit)
	return mae / n, naive / n
}

func TestRevertAgainstNaive(t *testing.T) {
	for _, c := range []struct {
		name        string
		y           []float64
		lo, hi      float64 // bounds on MAE / naive MAE out of sample
		period      int
		wantSeasons bool
	}{
		// Noise around a slow walk: the last value is a poor level, the
		// recent means a better one.
		{"noisy level", levelPlusNoise(3000, 1, 1, 10), 0, 0.85, 1000, false},
		// A pure random walk: nothing reverts, the pulls stay near zero
		// and the forecast near naive.
		{"random walk", levelPlusNoise(3000, 2, 10, 0), 0.98, 1.02, 1000, false},
		// A daily sine with little noise: the profile's slope carries the
		// forecast, far ahead of naive.
		{"daily shape", seasonalShape(10*144, 3), 0, 0.6, 144, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newRevert(c.period, 1)
			fit := len(c.y) * 2 / 3
			mae, naive := oneStepMAE(t, m, c.y, fit)
			if r := mae / naive; r < c.lo || r > c.hi {
				t.Errorf("MAE %.3f, naive %.3f: ratio %.3f, want in [%.2f, %.2f]; coefficients %v", mae, naive, r, c.lo, c.hi, m.coef)
			}
			if m.season != c.wantSeasons {
				t.Errorf("profile regressor %v, want %v", m.season, c.wantSeasons)
			}
		})
	}
}

func seasonalShape(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 5))
	y := make([]float64, n)
	for i := range y {
		y[i] = 200 + 80*math.Sin(2*math.Pi*float64(i)/144) + rng.NormFloat64()
	}
	return y
}

// The streaming forecast after updates is the formula on the raw values,
// with the fitted coefficients and the profile.
func TestRevertPredictFormula(t *testing.T) {
	y := seasonalSeries(4, 9)
	const p, h = 144, 3
	m := newRevert(p, h)
	n := len(y) - 20
	if err := m.fit(y[:n]); err != nil {
		t.Fatal(err)
	}
	if !m.season {
		t.Fatal("four days of history: want the profile regressor")
	}
	for i := n; i < len(y); i++ {
		m.update(y[i])
	}
	last := len(y) - 1
	out := make([]float64, h+2)
	m.predict(out)
	for lead := 1; lead <= len(out); lead++ {
		r := min(lead, h) - 1
		c := m.coef[r*(revertK+1) : (r+1)*(revertK+1)]
		want := y[last]
		for k, w := range revertWindows {
			want += c[k] * (meanOf(y[last-w+1:last+1]) - y[last])
		}
		// The profile was built at the fit: y[n−p+j] has phase j.
		phase := func(i int) int { return ((i-(n-p))%p + p) % p }
		want += c[revertK] * (m.prof[phase(last+lead)] - m.prof[phase(last)])
		if !near(out[lead-1], want, 1e-9) {
			t.Fatalf("lead %d: %g, want %g", lead, out[lead-1], want)
		}
	}
}

func TestRevertNeed(t *testing.T) {
	m := newRevert(144, 10)
	if err := m.fit(make([]float64, m.need()-1)); err == nil {
		t.Fatalf("fit on %d points accepted; need is %d", m.need()-1, m.need())
	}
	y := levelPlusNoise(m.need(), 4, 1, 5)
	if err := m.fit(y); err != nil {
		t.Fatal(err)
	}
	if m.season {
		t.Error("the profile regressor needs two periods")
	}
	out := make([]float64, 10)
	m.predict(out)
	for i, v := range out {
		if !num.Finite(v) || math.Abs(v-y[len(y)-1]) > 100 {
			t.Fatalf("lead %d: %g from a last value of %g", i+1, v, y[len(y)-1])
		}
	}
}

func TestErrWindowBound(t *testing.T) {
	w := newErrWindow(19)
	for i := range 19 {
		w.push(float64(19 - i)) // 1..19
	}
	for _, c := range []struct{ q, want float64 }{
		{0.95, 19}, // ⌈20·0.95⌉ = 19th smallest
		{0.9, 18},  // ⌈18⌉
		{0.05, 1},  // ⌊1⌋
		{0.1, 2},   // ⌊2⌋
		{0.01, 1},  // ⌊0.2⌋ = 0, clamped to the smallest
		{0.999, 19},
	} {
		if got := w.bound(c.q); got != c.want {
			t.Errorf("bound(%g) = %g, want %g", c.q, got, c.want)
		}
	}
	if !math.IsNaN(newErrWindow(5).bound(0.9)) {
		t.Error("bound of an empty window is not NaN")
	}
}
