package capacity

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/forecasting"
)

func TestDecideReactive(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pol := ReactivePolicy{MinReplicas: 1, MaxReplicas: 6, ScaleDownWindow: 5 * time.Minute}
	// One decision a minute; the load each saw over the last minute.
	f := func(name string, p ReactivePolicy, loads []float64, want []int) {
		t.Helper()
		var st ReactiveState
		got := make([]int, len(loads))
		for i, l := range loads {
			st = DecideReactive(st, l, 10, p, now.Add(time.Duration(i)*time.Minute))
			got[i] = st.Desired
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: desired %v, want %v", name, got, want)
		}
	}
	// ⌈load / capacity⌉ at once on a rise; on a fall the highest
	// recommendation of the last five minutes (the one five minutes old
	// is out of the window).
	f("rise at once, fall after the window", pol, []float64{12, 35, 35, 8, 8, 8, 8, 8, 8}, []int{2, 4, 4, 4, 4, 4, 4, 1, 1})
	f("a fall to the highest in the window", pol, []float64{45, 25, 15, 15, 15, 15, 15, 15}, []int{5, 5, 5, 5, 5, 3, 2, 2})
	f("clamped", pol, []float64{0, 100, math.NaN(), 0}, []int{1, 6, 6, 6})
	f("no window: down at once", ReactivePolicy{MinReplicas: 1}, []float64{35, 8, 20}, []int{4, 1, 2})
	f("a target below the capacity", ReactivePolicy{MinReplicas: 1, Target: 0.8}, []float64{8, 8.1, 16}, []int{1, 2, 2})
}
func TestFleet(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	m := func(n int) time.Time { return at.Add(time.Duration(n) * time.Minute) }
	f := &Fleet{Startup: 3 * time.Minute}
	f.Start(2, m(0))
	var p Provisioning
	// 0–10: 25 req/s on 2 ready replicas of 10: 10 minutes short by 5.
	f.Serve(25, 10, m(0), m(10), &p)
	// Ask for 4 at 10: two start, ready at 13. 10–20 at 35 req/s: short
	// until 13 by 15.
	f.Set(4, m(10))
	if f.Allocated() != 4 || f.Ready(m(12)) != 2 || f.Ready(m(13)) != 4 {
		t.Fatalf("allocated %d, ready %d at 12 and %d at 13", f.Allocated(), f.Ready(m(12)), f.Ready(m(13)))
	}
	f.Serve(35, 10, m(10), m(20), &p)
	// Up to 5 at 20, then down to 3 at 21: the starting one goes first,
	// then the youngest ready one.
	f.Set(5, m(20))
	f.Set(3, m(21))
	if f.Allocated() != 3 || f.Ready(m(21)) != 3 {
		t.Fatalf("after a rise and a fall: allocated %d, ready %d", f.Allocated(), f.Ready(m(21)))
	}
	f.Serve(math.NaN(), 10, m(21), m(25), &p) // an unknown load is paid for, not judged
	want := Provisioning{ReplicaMinutes: 2*10 + 4*10 + 3*4, Minutes: 24, UnknownMinutes: 4, UnderMinutes: 10 + 3, WorstShortfall: 15}
	if p != want {
		t.Errorf("tally %+v, want %+v", p, want)
	}
}

func TestNeeded(t *testing.T) {
	for _, c := range []struct {
		load     float64
		min, max int
		want     int
	}{
		{25, 1, 0, 3},         // ⌈2.5⌉
		{20, 1, 0, 2},         // exactly two replicas' capacity
		{0, 0, 0, 0},          // no load, no minimum
		{0, 2, 0, 2},          // the minimum
		{100, 1, 6, 6},        // the maximum
		{math.NaN(), 0, 0, 1}, // unknown: the minimum, at least one
		{math.NaN(), 3, 0, 3},
	} {
		if got := Needed(c.load, 10, c.min, c.max); got != c.want {
			t.Errorf("Needed(%g, 10, %d, %d) = %d, want %d", c.load, c.min, c.max, got, c.want)
		}
	}
}

// One step a minute from 12:00: the load, a replica's capacity 10 req/s,
// a start-up of two minutes.
var (
	at0  = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	load = Load{Start: at0, Step: time.Minute, Values: []float64{10, 25, 25, 5, math.NaN(), 5}}
)

func TestLoad(t *testing.T) {
	if got := load.At(2); !got.Equal(at0.Add(2 * time.Minute)) {
		t.Errorf("At(2) = %v", got)
	}
	if load.Peak(0) != 25 || load.Peak(3) != 5 || (Load{Values: []float64{math.NaN()}}).Peak(0) != 0 {
		t.Errorf("peaks %g, %g", load.Peak(0), load.Peak(3))
	}
}

func TestForesight(t *testing.T) {
	// From step 1, each step carries the peak of itself and the two after
	// it (the start-up): 25, 25, 5, 5, 5 → 3, 3, 1, 1, 1. Step 4's
	// unknown load does not count.
	if got := Foresight(load, 1, 10, 2*time.Minute, 1, 0); !slices.Equal(got, []int{3, 3, 1, 1, 1}) {
		t.Errorf("foresight %v", got)
	}
	if got := Foresight(load, 1, 10, 2*time.Minute, 1, 2); !slices.Equal(got, []int{2, 2, 1, 1, 1}) {
		t.Errorf("foresight clamped to 2: %v", got)
	}
	// A stretch whose load is unknown keeps the replicas asked for before.
	gap := Load{Start: at0, Step: time.Minute, Values: []float64{30, math.NaN(), math.NaN()}}
	if got := Foresight(gap, 0, 10, 0, 1, 0); !slices.Equal(got, []int{3, 3, 3}) {
		t.Errorf("foresight over a gap %v", got)
	}
}

func TestReactive(t *testing.T) {
	// Each step decides on the step before: 10, 25, 25, 5, NaN → 1, 3, 3;
	// then 5 asks for 1, but step 3's 3 is inside the two-minute window
	// (step 2's is not); the unknown load keeps 3.
	p := ReactivePolicy{MinReplicas: 1, ScaleDownWindow: 2 * time.Minute}
	if got := Reactive(load, 1, 1, 10, p); !slices.Equal(got, []int{1, 3, 3, 3, 3}) {
		t.Errorf("reactive %v", got)
	}
}

func TestServe(t *testing.T) {
	// One replica serves at step 1; the ask for 3 at step 1 serves from
	// step 3, so steps 1 and 2 are short 25 − 10 = 15 req/s; back to 1 at
	// step 3; step 4's load is unknown. Paid: 3 + 3 + 1 + 1 + 1.
	got := Serve(load, 1, []int{3, 3, 1, 1, 1}, 1, 10, 2*time.Minute)
	want := Provisioning{ReplicaMinutes: 9, Minutes: 5, UnknownMinutes: 1, UnderMinutes: 2, WorstShortfall: 15, Changes: 2}
	if got != want {
		t.Errorf("served %+v, want %+v", got, want)
	}
	// Three serving from the start: never short, one change.
	got = Serve(load, 1, []int{3, 3, 1, 1, 1}, 3, 10, 2*time.Minute)
	want = Provisioning{ReplicaMinutes: 9, Minutes: 5, UnknownMinutes: 1, Changes: 1}
	if got != want {
		t.Errorf("served from 3 %+v, want %+v", got, want)
	}
}

func TestScaleErrors(t *testing.T) {
	nan := math.NaN()
	fc := forecasting.Forecast{Model: "naive", Origin: 3000, Step: time.Second, Level: 0.9,
		Mean: []float64{10, 12, 9, 8}, Lower: []float64{6, 8, 5, 4}, Upper: []float64{14, 18, 13, 24},
		Peak: 12, PeakLead: 2, UpperPeak: 24}
	// The forecast is made for steps 3 to 6 (its origin is step 3's start):
	// the load at 3 and 4 is known, 5 is missing and 6 lies past the end.
	l := Load{Start: time.UnixMilli(0), Step: time.Second, Values: []float64{0, 0, 0, 11, 20, nan}}
	f := func(scale float64, mean, lower, upper []float64, peak float64, lead int, upperPeak float64) {
		t.Helper()
		c := fc
		c.Mean, c.Lower, c.Upper = slices.Clone(fc.Mean), slices.Clone(fc.Lower), slices.Clone(fc.Upper)
		ScaleErrors(&c, l, scale)
		if !slices.Equal(c.Mean, mean) || !slices.Equal(c.Lower, lower) || !slices.Equal(c.Upper, upper) ||
			c.Peak != peak || c.PeakLead != lead || c.UpperPeak != upperPeak || c.Model != "naive" || c.Origin != 3000 {
			t.Errorf("×%g: %+v\nwant mean %v, lower %v, upper %v, peak %g at lead %d, upper peak %g", scale, c, mean, lower, upper, peak, lead, upperPeak)
		}
	}
	// ×0.5 at step 3: 11 + 0.5·(10 − 11) = 10.5, 11 + 0.5·(6 − 11) = 8.5,
	// 11 + 0.5·(14 − 11) = 12.5; at step 4: 16, 14, 19; at 5 and 6 the
	// bounds halve their distance to the mean: 7 and 11, 6 and 16.
	f(0.5, []float64{10.5, 16, 9, 8}, []float64{8.5, 14, 7, 6}, []float64{12.5, 19, 11, 16}, 16, 2, 19)
	f(0, []float64{11, 20, 9, 8}, []float64{11, 20, 9, 8}, []float64{11, 20, 9, 8}, 20, 2, 20)
	f(1, fc.Mean, fc.Lower, fc.Upper, 12, 2, 24)
	// The upper end at a plan level moves as Upper does: ×0.5, 11 + 0.5·5,
	// 20 + 0.5·2, and toward the mean where the load is not known: 9 +
	// 0.5·6, 8 + 0.5·20.
	c := fc
	c.Mean, c.Lower, c.Upper = slices.Clone(fc.Mean), slices.Clone(fc.Lower), slices.Clone(fc.Upper)
	c.Plans = []forecasting.PlanUpper{{Level: 0.95, Upper: []float64{16, 22, 15, 28}}}
	ScaleErrors(&c, l, 0.5)
	if want := []float64{13.5, 21, 12, 18}; !slices.Equal(c.Plans[0].Upper, want) {
		t.Errorf("×0.5: plan upper %v, want %v", c.Plans[0].Upper, want)
	}
}

func TestCompare(t *testing.T) {
	p := func(rm, under float64) Point { return Point{ReplicaMinutes: rm, UnderMinutes: under} }
	for _, tc := range []struct {
		name               string
		forecast, reactive []Point
		want               Frontier
	}{
		{
			// Within 100 replica-minutes: forecasts 1 (short 30) and 2
			// (short 40); 1 is short least. Short at most forecast 0's 5
			// minutes: reactive 2 and 3 (both 5): 2 is cheaper. Within
			// forecast 0's 120 replica-minutes: reactive 0 and 1; 1 is
			// short least.
			name:     "both within",
			forecast: []Point{p(120, 5), p(100, 30), p(95, 40)},
			reactive: []Point{p(100, 50), p(115, 20), p(130, 5), p(140, 5)},
			want:     Frontier{ForecastWithin: 1, CheapestForecast: -1, ReactiveWithin: 2, LeastShortReactive: -1, ReactiveAtCost: 1},
		},
		{
			// Equal minutes short: the cheaper wins.
			name:     "tie on minutes short",
			forecast: []Point{p(99, 30), p(97, 30)},
			reactive: []Point{p(100, 50), p(105, 30), p(115, 20)},
			want:     Frontier{ForecastWithin: 1, CheapestForecast: -1, ReactiveWithin: 1, LeastShortReactive: -1, ReactiveAtCost: -1},
		},
		{
			name:     "none within",
			forecast: []Point{p(120, 5), p(110, 30)},
			reactive: []Point{p(100, 50), p(115, 20)},
			want:     Frontier{ForecastWithin: -1, CheapestForecast: 1, ReactiveWithin: -1, LeastShortReactive: 1, ReactiveAtCost: 1},
		},
	} {
		if got := Compare(tc.forecast, tc.reactive); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestAtCost(t *testing.T) {
	p := func(rm, under float64) Point { return Point{ReplicaMinutes: rm, UnderMinutes: under} }
	for _, c := range []struct {
		points []Point
		i      int
		within bool
	}{
		{[]Point{p(130, 5), p(110, 30)}, 1, false},           // none within 100: the cheapest
		{[]Point{p(120, 4), p(100, 20), p(95, 20)}, 2, true}, // short alike: the cheaper
		{[]Point{p(101, 0), p(99, 10)}, 1, true},             // within beats short less
		{[]Point{p(110, 3), p(110, 1)}, 0, false},            // the earliest of equal cost
		{nil, -1, false},
	} {
		if i, within := AtCost(c.points, 100); i != c.i || within != c.within {
			t.Errorf("AtCost(%v, 100) = %d, %t; want %d, %t", c.points, i, within, c.i, c.within)
		}
	}
}
