package forecasting

import (
	"github.com/inferwatch/inferwatch/internal/order"

	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestBaselinesHandComputed(t *testing.T) {
	// Period 3, history 1 2 3 4 5 6 10, three leads.
	y := []float64{1, 2, 3, 4, 5, 6, 10}
	f := func(name string, want []float64) {
		t.Helper()
		m, err := newModel(name, 3, 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.fit(y); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := make([]float64, len(want))
		m.predict(got)
		for i := range want {
			if !near(got[i], want[i], 1e-12) {
				t.Fatalf("%s: lead %d = %g, want %g (all %v)", name, i+1, got[i], want[i], got)
			}
		}
	}
	f(ModelNaive, []float64{10, 10, 10})
	f(ModelSeasonalNaive, []float64{5, 6, 10})
	// y(t)=10, y(t−3)=4: 10 + (5−4), 10 + (6−4), 10 + (10−4).
	f(ModelSeasonalStep, []float64{11, 12, 16})
	f(ModelDrift, []float64{11.5, 13, 14.5}) // slope (10−1)/6
	f(ModelMean, []float64{7, 7, 7})         // (5+6+10)/3

	// One update each: append 7.
	g := func(name string, want []float64) {
		t.Helper()
		m, _ := newModel(name, 3, 4)
		if err := m.fit(y); err != nil {
			t.Fatal(err)
		}
		m.update(7)
		got := make([]float64, len(want))
		m.predict(got)
		for i := range want {
			if !near(got[i], want[i], 1e-12) {
				t.Fatalf("%s after update: lead %d = %g, want %g (all %v)", name, i+1, got[i], want[i], got)
			}
		}
	}
	g(ModelNaive, []float64{7, 7, 7, 7})
	g(ModelSeasonalNaive, []float64{6, 10, 7, 6}) // leads past the period wrap
	// y(t)=7, y(t−3)=5: 7+(6−5), 7+(10−5), 7+(7−5); lead 4 is lead 1 plus
	// a whole period's change 7−5.
	g(ModelSeasonalStep, []float64{8, 12, 9, 10})
	g(ModelDrift, []float64{7 + 6.0/7, 7 + 12.0/7, 7 + 18.0/7, 7 + 24.0/7}) // slope (7−1)/7
	g(ModelMean, []float64{23.0 / 3, 23.0 / 3, 23.0 / 3, 23.0 / 3})
}

func TestHoltWintersOneStep(t *testing.T) {
	// Additive, period 2, trend, fixed parameters, on 10 20 12 22.
	// Initial state from the data (two periods): level = mean(10, 20) = 15,
	// trend = (mean(12, 22) − 15)/2 = 1, season = the average shape of the
	// two periods, each relative to its mean: −5 and +5 (a period this
	// short is not smoothed).
	m := &holtWinters{kind: seasonAdditive, p: 2, trend: true,
		par: HWParams{Alpha: 0.5, Beta: 0.1, Gamma: 0.2, Phi: 1}}
	x := []float64{10, 20, 12, 22}
	start := m.init(x)
	if start != 2 || m.level != 15 || m.slope != 1 {
		t.Fatalf("init: start %d level %g slope %g, want 2 15 1", start, m.level, m.slope)
	}
	if m.season[0] != -5 || m.season[1] != 5 {
		t.Fatalf("init season %v, want [−5 5]", m.season)
	}
	// Observe 12:
	//   ŷ  = 15 + 1 − 5                 = 11
	//   l' = 0.5(12 + 5) + 0.5(16)       = 16.5
	//   b' = 0.1(16.5 − 15) + 0.9(1)     = 1.05
	//   s' = 0.2(12 − 16.5) + 0.8(−5)    = −4.9
	yhat := m.step(12)
	want := []struct {
		name      string
		got, want float64
	}{
		{"forecast", yhat, 11},
		{"level", m.level, 16.5},
		{"trend", m.slope, 1.05},
		{"season", m.season[0], -4.9},
	}
	for _, w := range want {
		if !near(w.got, w.want, 1e-12) {
			t.Errorf("%s = %.12g, want %.12g", w.name, w.got, w.want)
		}
	}
	if m.pos != 1 {
		t.Errorf("season position %d, want 1", m.pos)
	}
	// Lead 1 and 2 from here: l + b + s[1], l + 2b + s[0].
	out := make([]float64, 2)
	m.predict(out)
	if !near(out[0], m.level+m.slope+m.season[1], 1e-12) || !near(out[1], m.level+2*m.slope+m.season[0], 1e-12) {
		t.Errorf("predict %v", out)
	}

	// Multiplicative, no trend: ŷ = l·s; l' = α y/s + (1−α) l; s' = γ y/l' + (1−γ) s.
	mm := &holtWinters{kind: seasonMultiplicative, p: 2, par: HWParams{Alpha: 0.5, Gamma: 0.2, Phi: 1},
		level: 10, season: []float64{0.5, 1.5}}
	yhat = mm.step(6)
	if !near(yhat, 5, 1e-12) || !near(mm.level, 0.5*12+0.5*10, 1e-12) || !near(mm.season[0], 0.2*6/11+0.8*0.5, 1e-12) {
		t.Errorf("multiplicative step: ŷ %g level %g season %g", yhat, mm.level, mm.season[0])
	}
}

func TestHoltWintersFitRecoversSeason(t *testing.T) {
	// A clean additive season with noise: the fitted model forecasts the
	// season, beating the naive forecast by far.
	rng := rand.New(rand.NewPCG(3, 4))
	p := 24
	y := make([]float64, 10*p)
	for i := range y {
		y[i] = 100 + 30*math.Sin(2*math.Pi*float64(i)/float64(p)) + rng.NormFloat64()
	}
	m, _ := newModel(ModelHWAddDamped, p, 1)
	if err := m.fit(y[:9*p]); err != nil {
		t.Fatal(err)
	}
	var e, en float64
	out := make([]float64, 1)
	for i := 9 * p; i < len(y); i++ {
		m.predict(out)
		e += math.Abs(y[i] - out[0])
		en += math.Abs(y[i] - y[i-1])
		m.update(y[i])
	}
	if e > 0.5*en {
		t.Fatalf("Holt–Winters MAE sum %.1f, naive %.1f: want at most half", e, en)
	}
}

// The window's ranks match a sort of its last n values (as the halves it
// keeps), ties included, while it fills and once it is full, and its
// arrays grow with it.
func TestErrWindowMatchesSort(t *testing.T) {
	f := func(n int, draw func(rng *rand.Rand) float64) {
		t.Helper()
		rng := rand.New(rand.NewPCG(uint64(n), 2))
		w := newErrWindow(n)
		var all []float64
		for i := range 8 * n {
			v := draw(rng)
			w.push(v)
			all = append(all, float64(toHalf(float32(v)).f()))
			last := all[max(0, len(all)-n):]
			s := append([]float64(nil), last...)
			sort.Float64s(s)
			if w.len() != len(s) {
				t.Fatalf("n %d push %d: %d values, want %d", n, i, w.len(), len(s))
			}
			for j := range s {
				if w.at(j) != s[j] {
					t.Fatalf("n %d push %d: rank %d is %g, want %g (window %v)", n, i, j, w.at(j), s[j], s)
				}
			}
			if c := cap(w.ring); c > len(s)+len(s)/4+16 || c > n || cap(w.order) != c {
				t.Fatalf("n %d push %d: capacity %d (order %d) for %d values", n, i, c, cap(w.order), len(s))
			}
		}
		s := append([]float64(nil), all[len(all)-n:]...)
		sort.Float64s(s)
		if q, want := w.quantile(0.5), (s[(n-1)/2]+s[n/2])/2; n%2 == 0 && q != want {
			t.Fatalf("n %d: median %g, want %g", n, q, want)
		}
		var ss float64
		for _, v := range w.ring {
			ss += float64(v.f()) * float64(v.f())
		}
		if got, want := w.rms(), math.Sqrt(ss/float64(n)); !near(got, want, 1e-9) {
			t.Fatalf("n %d: rms %g, want %g", n, got, want)
		}
	}
	f(50, func(rng *rand.Rand) float64 { return math.Round(rng.NormFloat64() * 5) }) // ties on purpose
	f(1, func(rng *rand.Rand) float64 { return rng.NormFloat64() })
	f(2, func(rng *rand.Rand) float64 { return float64(rng.IntN(2)) })
	f(33, func(rng *rand.Rand) float64 { return float64(rng.IntN(3) - 1) }) // mostly ties
	f(200, func(rng *rand.Rand) float64 { return rng.ExpFloat64() })
	f(97, func(rng *rand.Rand) float64 { return float64(rng.IntN(9)) })
	f(64, func(rng *rand.Rand) float64 { return math.Round(rng.NormFloat64() * 20) })

	// Room reserved for a known count of values is all they take.
	w := newErrWindow(100)
	w.push(3)
	w.reserve(30)
	for i := range 29 {
		w.push(float64(i % 4))
	}
	if c := cap(w.ring); c != 30 || cap(w.order) != 30 || w.at(0) != 0 || w.at(29) != 3 {
		t.Fatalf("reserved 30: capacity %d (order %d), smallest %g, largest %g", c, cap(w.order), w.at(0), w.at(29))
	}
	if w.reserve(500); cap(w.ring) != 100 || w.len() != 30 {
		t.Fatalf("reserved 500 of 100: capacity %d, %d values", cap(w.ring), w.len())
	}
}

func TestMedianBySelection(t *testing.T) {
	for _, c := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{3}, 3}, {[]float64{2, 1}, 1.5}, {[]float64{5, 1, 4, 2, 3}, 3},
		{[]float64{1, 1, 1, 2}, 1}, {[]float64{9, 8, 7, 6, 5, 4}, 6.5},
	} {
		if got := order.Median(append([]float64(nil), c.x...)); got != c.want {
			t.Errorf("order.Median(%v) = %g, want %g", c.x, got, c.want)
		}
	}
	if !math.IsNaN(order.Median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

func TestUnknownModel(t *testing.T) {
	_, err := New(Options{Step: time.Minute, Model: "arima"})
	if err == nil || !strings.Contains(err.Error(), `unknown forecasting model "arima"`) || !strings.Contains(err.Error(), "hw_additive") {
		t.Fatalf("error %v, want one naming the model and the choices", err)
	}
	for _, o := range []Options{{}, {Step: time.Minute, Level: 1.5}, {Step: time.Minute, Horizon: -1}, {Step: 13 * time.Hour},
		{Step: time.Minute, CalibrationSize: maxErrWindow + 1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// A half is a float32's high 16 bits, rounded to the nearest, ties to an
// even significand, by hand.
func TestToHalf(t *testing.T) {
	for _, c := range []struct{ x, want float32 }{
		{0, 0},
		{1, 1},
		{3, 3},               // 1.1₂ × 2
		{-1.5, -1.5},         // exact
		{1.001, 1},           // nearer 1 than 1 + 2⁻⁷
		{1.005, 1 + 1.0/128}, // nearer 1 + 2⁻⁷
		{-1.005, -(1 + 1.0/128)},
		{1 + 1.0/256, 1},           // a tie: to the even significand, 1
		{1 + 3.0/256, 1 + 2.0/128}, // a tie: to the even one above
		{0.1, 0.10009765625},       // float32 0x3DCCCCCD: 0x3DCC.CCCD rounds to 0x3DCD
		{255.5, 256},               // 255.5 needs 9 bits; a tie, to 256
		{math.MaxFloat32, math.Float32frombits(0x7f7f0000)}, // up would be +Inf
		{float32(math.Inf(1)), float32(math.Inf(1))},
	} {
		if got := toHalf(c.x).f(); got != c.want {
			t.Errorf("toHalf(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if got := toHalf(float32(math.NaN())).f(); !math.IsNaN(float64(got)) {
		t.Errorf("toHalf(NaN) = %g", got)
	}
	// Within 2⁻⁸ of x.
	rng := rand.New(rand.NewPCG(7, 7))
	for range 10000 {
		x := float32(rng.NormFloat64() * math.Pow(10, rng.Float64()*12-6))
		if h := toHalf(x).f(); math.Abs(float64(h-x)) > math.Abs(float64(x))/256 {
			t.Fatalf("toHalf(%g) = %g", x, h)
		}
	}
}
