package forecasting

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestLeadKnots(t *testing.T) {
	f := func(h, stride int, want []int) {
		t.Helper()
		if got := leadKnots(h, stride); !slices.Equal(got, want) {
			t.Errorf("leadKnots(%d, %d) = %v, want %v", h, stride, got, want)
		}
	}
	f(1, 1, []int{1})
	f(5, 1, []int{1, 2, 3, 4, 5})
	f(10, 1, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f(240, 4, []int{1, 4, 8, 12, 20, 32, 48, 72, 108, 164, 240})
	f(8, 2, []int{1, 2, 4, 6, 8})
	f(1, 4, []int{1})
	f(3, 4, []int{1, 3})
	f(6, 4, []int{1, 4, 6})
	f(40, 4, []int{1, 4, 8, 12, 20, 32, 40})
	f(7, 3, []int{1, 3, 6, 7})

	for _, c := range []struct {
		step time.Duration
		want int
	}{{15 * time.Second, 4}, {30 * time.Second, 2}, {45 * time.Second, 1}, {7 * time.Second, 8}, {time.Minute, 1}, {10 * time.Minute, 1}} {
		if got := minuteSteps(c.step); got != c.want {
			t.Errorf("minuteSteps(%v) = %d, want %d", c.step, got, c.want)
		}
	}
}

// A window keeps one origin's error a minute, or fewer where a minute's
// would be more than 360 of them: a day of origins at 1 m keeps one in 4.
func TestOriginStride(t *testing.T) {
	for _, c := range []struct {
		step time.Duration
		size int
		want int
	}{
		{time.Minute, 1440, 4},        // 360 errors
		{30 * time.Second, 2880, 8},   // 360
		{15 * time.Second, 2880, 8},   // 360, where a minute's would be 720
		{10 * time.Second, 2880, 8},   // 360, where a minute's would be 480
		{15 * time.Second, 1000, 4},   // a minute's: 250
		{10 * time.Minute, 200, 1},    // every origin's
		{time.Minute, 360, 1},         // every origin's: 360
		{time.Minute, 361, 2},         // 181
		{5 * time.Second, 65536, 183}, // 359
		{time.Hour, 65536, 183},       // 359
	} {
		if got := originStride(c.step, c.size); got != c.want {
			t.Errorf("originStride(%v, %d) = %d, want %d", c.step, c.size, got, c.want)
		}
	}
}

// Between two knots a lead's bounds, median and RMS are the linear
// interpolation of theirs; at a knot they are its window's own.
func TestTrackerCalibrationBetweenKnots(t *testing.T) {
	k := newTrackerState(nil, 7, calibration{size: 100, stride: 3, minute: 3, dense: 100, keep: 30}, false) // knots 1, 3, 6, 7
	// Lead 3: 1..19; lead 6: 4, 8, …, 76. At level 0.8 (0.1 and 0.9),
	// with 19 errors, the bounds are the 2nd smallest (⌊20·0.1⌋) and the
	// 18th (⌈20·0.9⌉): 2 and 18 at lead 3, 8 and 72 at lead 6; the
	// medians 10 and 40; the RMS √130 (the mean of i² over 1..19 is
	// 19·20·39/6/19 = 130) and 4√130.
	for i := 1; i <= 19; i++ {
		k.win[1].push(float64(i))
		k.win[2].push(float64(4 * i))
	}
	r := math.Sqrt(130)
	f := func(lead int, want leadCalibration) {
		t.Helper()
		got := k.calibration(lead, 0.1, 0.9)
		if got.n != want.n || math.Abs(got.lower-want.lower) > 1e-9 || math.Abs(got.upper-want.upper) > 1e-9 ||
			math.Abs(got.median-want.median) > 1e-9 || math.Abs(got.rmsErr-want.rmsErr) > 1e-6 {
			t.Errorf("lead %d: %+v, want %+v", lead, got, want)
		}
	}
	f(3, leadCalibration{n: 19, lower: 2, upper: 18, median: 10, rmsErr: r})
	f(6, leadCalibration{n: 19, lower: 8, upper: 72, median: 40, rmsErr: 4 * r})
	// Lead 4 is a third of the way from 3 to 6, lead 5 two thirds.
	f(4, leadCalibration{n: 19, lower: 4, upper: 36, median: 20, rmsErr: 2 * r})
	f(5, leadCalibration{n: 19, lower: 6, upper: 54, median: 30, rmsErr: 3 * r})
	// Lead 2, between lead 1 (no errors) and 3, has none to go by.
	if c := k.calibration(2, 0.1, 0.9); c.n != 0 || !math.IsNaN(c.lower) {
		t.Errorf("lead 2 with an empty lead 1: %+v, want no errors and NaN bounds", c)
	}
	// A lead between knots counts the fewer errors of the two.
	k.win[2].push(100)
	k.win[1].thin(2) // 2, 4, …, 18: 9 errors
	if c := k.calibration(4, 0.1, 0.9); c.n != 9 {
		t.Errorf("lead 4 between 9 and 20 errors: n = %d, want 9", c.n)
	}
}

// Thinning keeps every k-th value counting back from the newest but k−1,
// in arrival order, and the window fills and evicts as before after it.
func TestErrWindowThin(t *testing.T) {
	w := newErrWindow(6)
	for _, v := range []float64{1, 2, 3, 4, 5, 6, 7, 8} {
		w.push(v) // holds 3..8, its oldest slot at 2
	}
	w.thin(2)
	check := func(when string, sorted []float64, rms float64) {
		t.Helper()
		var got []float64
		for r := range w.len() {
			got = append(got, w.at(r))
		}
		if !slices.Equal(got, sorted) {
			t.Fatalf("%s: holds %v, want %v", when, got, sorted)
		}
		if math.Abs(w.rms()-rms) > 1e-6 {
			t.Fatalf("%s: rms %g, want %g", when, w.rms(), rms)
		}
	}
	check("after thinning", []float64{3, 5, 7}, math.Sqrt((9+25+49)/3.0))
	for _, v := range []float64{-1, 5, 0} {
		w.push(v)
	}
	check("full again", []float64{-1, 0, 3, 5, 5, 7}, math.Sqrt((1+0+9+25+25+49)/6.0))
	w.push(10) // 3, the oldest, leaves
	check("after an eviction", []float64{-1, 0, 5, 5, 7, 10}, math.Sqrt((1+0+25+25+49+100)/6.0))
	w.push(2) // then the older 5
	check("after a second eviction", []float64{-1, 0, 2, 5, 7, 10}, math.Sqrt((1+0+4+25+49+100)/6.0))
}

// A window takes every origin's error until it is full, then one in two,
// then one in four (the tracker's stride): full, it spans four times as
// many origins as it holds errors.
func TestTrackerScoreStrides(t *testing.T) {
	k := newTrackerState(nil, 1, calibration{size: 4, stride: 4, minute: 1, dense: 4, keep: 2}, false)
	var pushed []int
	for o := range 21 {
		k.score(0, o, float64(o))
		if k.win[0].rankAbove(float32(o)) != k.win[0].rankOf(float32(o)) {
			pushed = append(pushed, o) // the window holds o's error
		}
	}
	// Arrival order: 0 1 2 3 (full); at 4, one in two: 0 2 | 4, then 6
	// (full); at 8, one in four: 0 4 | 8, then 12 (full); 16 and 20
	// evict 0 and 4.
	held := make([]float64, 0, 4)
	for r := range k.win[0].len() {
		held = append(held, k.win[0].at(r))
	}
	if want := []float64{8, 12, 16, 20}; !slices.Equal(held, want) {
		t.Errorf("holds %v, want %v", held, want)
	}
	if want := []int{0, 1, 2, 3, 4, 6, 8, 12, 16, 20}; !slices.Equal(pushed, want) {
		t.Errorf("kept the errors of origins %v, want %v", pushed, want)
	}
	if k.strides[0] != 4 {
		t.Errorf("stride %d, want 4", k.strides[0])
	}
}

// A window is not thinned below keep errors: one of 5 that would keep 2
// of them stays at every origin, evicting the oldest.
func TestTrackerScoreKeeps(t *testing.T) {
	k := newTrackerState(nil, 1, calibration{size: 5, stride: 4, minute: 1, dense: 5, keep: 3}, false)
	for o := range 12 {
		k.score(0, o, float64(o))
	}
	held := make([]float64, 0, 5)
	for r := range k.win[0].len() {
		held = append(held, k.win[0].at(r))
	}
	if want := []float64{7, 8, 9, 10, 11}; !slices.Equal(held, want) || k.strides[0] != 1 {
		t.Errorf("holds %v at stride %d, want %v at stride 1", held, k.strides[0], want)
	}
}

// A window thins once it holds dense errors, then grows to its size at
// the tracker's stride.
func TestTrackerScoreDense(t *testing.T) {
	k := newTrackerState(nil, 1, calibration{size: 6, stride: 4, minute: 4, dense: 4, keep: 2}, false)
	for o := range 29 {
		k.score(0, o, float64(o))
	}
	// 0 1 2 3 (dense); at 4, one in two: 0 2 | 4, then 6; at 8, one in
	// four: 0 4 | 8, then 12, 16, 20 (full), 24 and 28 evict 0 and 4.
	held := make([]float64, 0, 6)
	for r := range k.win[0].len() {
		held = append(held, k.win[0].at(r))
	}
	if want := []float64{8, 12, 16, 20, 24, 28}; !slices.Equal(held, want) || k.strides[0] != 4 {
		t.Errorf("holds %v at stride %d, want %v at stride 4", held, k.strides[0], want)
	}
}

// A window thins at dense errors up to a minute of origins (here 2), and
// beyond it only once full.
func TestTrackerScoreMinute(t *testing.T) {
	k := newTrackerState(nil, 1, calibration{size: 6, stride: 4, minute: 2, dense: 4, keep: 2}, false)
	var pushed []int
	for o := range 29 {
		k.score(0, o, float64(o))
		if k.win[0].rankAbove(float32(o)) != k.win[0].rankOf(float32(o)) {
			pushed = append(pushed, o)
		}
	}
	// 0 1 2 3 (dense); at 4, one in two: 0 2 | 4, then 6, 8, 10 (full);
	// at 12, one in four: 0 4 8 | 12, then 16, 20 (full); 24 and 28
	// evict 0 and 4.
	held := make([]float64, 0, 6)
	for r := range k.win[0].len() {
		held = append(held, k.win[0].at(r))
	}
	if want := []float64{8, 12, 16, 20, 24, 28}; !slices.Equal(held, want) || k.strides[0] != 4 {
		t.Errorf("holds %v at stride %d, want %v at stride 4", held, k.strides[0], want)
	}
	if want := []int{0, 1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 28}; !slices.Equal(pushed, want) {
		t.Errorf("kept the errors of origins %v, want %v", pushed, want)
	}
}
