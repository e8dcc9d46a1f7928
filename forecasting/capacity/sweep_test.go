package capacity

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestEfficientAndShortAtCost(t *testing.T) {
	sweep := []Point{{100, 50}, {120, 30}, {110, 60}, {150, 10}, {140, 35}, {160, 10}}
	if got, want := Efficient(sweep), []Point{{100, 50}, {120, 30}, {150, 10}}; !slices.Equal(got, want) {
		t.Errorf("efficient %v, want %v", got, want)
	}
	for _, c := range []struct {
		cost, want float64
		ok         bool
	}{
		{100, 50, true},
		{130, 30 - 20.0/3, true}, // a third of the way from 120 to 150
		{150, 10, true},
		{160, 10, false}, // past the last efficient point
		{90, 0, false},
	} {
		got, ok := ShortAtCost(sweep, c.cost)
		if ok != c.ok || ok && math.Abs(got-c.want) > 1e-12 {
			t.Errorf("short at cost %v: %v %v, want %v %v", c.cost, got, ok, c.want, c.ok)
		}
	}
	if r := RatioAtCost(Point{130, 14}, sweep); math.Abs(r-0.6) > 1e-12 {
		t.Errorf("ratio at cost %v, want 0.6 (14 against 23⅓)", r)
	}
	if r := RatioAtCost(Point{170, 0}, sweep); !math.IsNaN(r) {
		t.Errorf("ratio outside the sweep %v, want NaN", r)
	}
}

func TestBootstrapRatio(t *testing.T) {
	// Three identical days: every resample sums to 30/3 for the policy,
	// 27/9 and 36/3 for the sweep, whose frontier at 30 is short 7.
	days := []Point{{10, 1}, {10, 1}, {10, 1}}
	reactive := [][]Point{{{9, 3}, {12, 1}}, {{9, 3}, {12, 1}}, {{9, 3}, {12, 1}}}
	lo, hi, n := BootstrapRatio(days, reactive, 200, 1, 0.9)
	if math.Abs(lo-3.0/7) > 1e-12 || math.Abs(hi-3.0/7) > 1e-12 || n != 200 {
		t.Errorf("identical days: [%v, %v] from %d, want 3/7 from 200", lo, hi, n)
	}
	// Days that differ: the interval holds the whole sample's ratio, and
	// the same seed gives the same interval.
	days = []Point{{10, 0}, {10, 2}, {10, 1}, {10, 3}}
	reactive = [][]Point{{{8, 4}, {12, 1}}, {{8, 5}, {12, 2}}, {{8, 3}, {12, 1}}, {{8, 6}, {12, 2}}}
	whole := RatioAtCost(Point{40, 6}, []Point{{32, 18}, {48, 6}})
	lo, hi, _ = BootstrapRatio(days, reactive, 500, 7, 0.9)
	lo2, hi2, _ := BootstrapRatio(days, reactive, 500, 7, 0.9)
	if !(lo < whole && whole < hi) || lo != lo2 || hi != hi2 {
		t.Errorf("interval [%v, %v] (again [%v, %v]), whole-sample ratio %v", lo, hi, lo2, hi2, whole)
	}
	if q := quantileSorted([]float64{1, 2, 3, 4}, 0.05); math.Abs(q-1.15) > 1e-12 {
		t.Errorf("0.05-quantile of 1..4 = %v, want 1.15", q)
	}
}

func TestCrossover(t *testing.T) {
	m := func(n float64) time.Duration { return time.Duration(n * float64(time.Minute)) }
	ups := []time.Duration{m(1), m(3), m(5), m(10)}
	f := func(name string, ratios []float64, want time.Duration, below, ok bool) {
		t.Helper()
		at, b, o := Crossover(ups, ratios)
		if o != ok || b != below || ok && (at-want).Abs() > time.Millisecond {
			t.Errorf("%s: %v below=%v ok=%v, want %v %v %v", name, at, b, o, want, below, ok)
		}
	}
	// 1.08 at 3 minutes, 0.87 at 5: 1 is 0.08/0.21 of the way.
	f("between 3 and 5 minutes", []float64{1.29, 1.08, 0.87, 0.64}, m(3+2*0.08/0.21), false, true)
	f("wins everywhere", []float64{0.5, 0.6, 0.55, 0.4}, m(1), true, true)
	f("loses at the last", []float64{1.2, 0.9, 0.95, 1.1}, 0, false, false)
	f("a ratio not known", []float64{1.2, math.NaN(), 0.9, 0.8}, 0, false, false)
}
