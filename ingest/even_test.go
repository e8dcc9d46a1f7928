package ingest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// samplesOf are samples as a CSV file of timestamp,value rows under a
// header holds them: times in unix milliseconds, written as seconds with
// three decimals, from line 2.
func samplesOf(ts []int64, vs []float64) *Samples {
	s := &Samples{Timestamps: ts, Values: vs}
	for i, t := range ts {
		s.Raw = append(s.Raw, fmt.Sprintf("%d.%03d", t/1000, t%1000))
		s.Lines = append(s.Lines, i+2)
	}
	return s
}

// sameValues says whether a and b hold the same values, NaN equal to NaN.
func sameValues(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}

// TestOnGridJitter: samples off their schedule by a little each (a raw
// export of scrapes) are taken at their nearest step of the whole-second
// spacing, with a count and the largest move; one too far off, or two on
// one step, are refused with their lines as a *GridError; an exact grid is
// laid as it is.
func TestOnGridJitter(t *testing.T) {
	const base = 1_700_000_000_000
	offs := []int64{120, -310, 40, 0, 250, -90, 180, -400, 60, 10} // ms off each 15 s point
	var ts []int64
	var vs []float64
	for i, o := range offs {
		if i == 6 {
			continue // a gap
		}
		ts, vs = append(ts, base+int64(i)*15_000+o), append(vs, float64(i))
	}
	r, err := OnGrid("jitter.csv", samplesOf(ts, vs))
	if err != nil {
		t.Fatal(err)
	}
	// The grid starts at the first sample (+120 ms): the others are off it
	// by their offset − 120 ms, at most 520 ms (−400).
	if r.Step != 15*time.Second || r.Start != base+120 || len(r.Values) != 10 || r.Gaps != 1 || r.Snapped != 8 || r.MaxSnap != 520*time.Millisecond {
		t.Fatalf("step %v start %d, %d steps, %d gaps, %d snapped up to %v", r.Step, r.Start, len(r.Values), r.Gaps, r.Snapped, r.MaxSnap)
	}
	for i, v := range r.Values {
		if i == 6 && !math.IsNaN(v) || i != 6 && v != float64(i) {
			t.Errorf("step %d: %g", i, v)
		}
	}

	offGrid := func(err error, step time.Duration) bool {
		var ge *GridError
		var le *LineError
		return errors.As(err, &ge) && ge.Step == step && errors.As(err, &le)
	}
	// 5 s off a 15 s step is more than a quarter of it.
	far := slices.Clone(ts)
	far[4] += 5000
	if _, err := OnGrid("far.csv", samplesOf(far, vs)); err == nil || !offGrid(err, 15*time.Second) ||
		err.Error() != "far.csv:6: timestamp 1700000065.250 is off the grid of the file's step 15s from its first sample by 5.13s, more than 0.25 of a step" {
		t.Errorf("5 s off: %v", err)
	}
	// A sample 1.5 s after the one at 30 s falls on the same step.
	two := slices.Insert(slices.Clone(ts), 3, ts[2]+1500)
	twoV := slices.Insert(slices.Clone(vs), 3, 99)
	if _, err := OnGrid("two.csv", samplesOf(two, twoV)); err == nil || !offGrid(err, 15*time.Second) ||
		err.Error() != "two.csv:5: timestamp 1700000031.540 falls on the same step of 15s as two.csv:4's 1700000030.040" {
		t.Errorf("two on a step: %v", err)
	}
	// A file without lines numbers its samples; without their text, the
	// times are written as unix seconds.
	noLines := samplesOf(far, vs)
	noLines.Lines, noLines.Raw = nil, nil
	if _, err := OnGrid("far.json", noLines); err == nil || !strings.HasPrefix(err.Error(), "far.json: sample 5: timestamp 1700000065.25 is off the grid") {
		t.Errorf("5 s off, without lines: %v", err)
	}
	// An exact grid off the epoch's keeps its first sample and moves none.
	exact, err := OnGrid("exact.csv", samplesOf([]int64{base + 30_000, base + 90_000, base + 210_000}, []float64{1, 2, 3}))
	if err != nil || exact.Step != time.Minute || exact.Start != base+30_000 || exact.Snapped != 0 || exact.Gaps != 1 || !sameValues(exact.Values, []float64{1, 2, math.NaN(), 3}) {
		t.Errorf("exact grid: %+v, %v", exact, err)
	}
	for _, tc := range []struct {
		ts   []int64
		want string
	}{
		{[]int64{base}, "one.csv: 1 sample; at least 2 are needed to know the step"},
		{[]int64{base, base + 60_000, base + 30_000}, "one.csv:4: timestamp 1700000030.000 is before the sample before it; the samples must be in time order"},
		{[]int64{base, base}, "one.csv: the samples are not spaced in time"},
		{[]int64{0, 1000, 2000, 20_000_000_000}, "one.csv: 20000001 steps of 1s between the first and the last sample; too many"},
	} {
		if _, err := OnGrid("one.csv", samplesOf(tc.ts, make([]float64, len(tc.ts)))); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v; want %q", tc.ts, err, tc.want)
		}
	}
}

// TestResample: samples in any order, a time repeated among them, are
// taken into steps aligned on multiples of the step since the epoch: the
// mean of each step's samples (their sum with sum set), an empty step a
// gap.
func TestResample(t *testing.T) {
	// 1700000100 is a multiple of 300.
	s := samplesOf(
		[]int64{1700000100_000, 1700000390_000, 1700001000_000, 1700000710_000, 1700000710_000, 1700001605_000},
		[]float64{10, 20, 60, 30, 50, 70}) // steps 0, 0 (290 s in), 3, 2, 2, 5
	for _, tc := range []struct {
		sum  bool
		want []float64
	}{
		{false, []float64{15, math.NaN(), 40, 60, math.NaN(), 70}},
		{true, []float64{30, math.NaN(), 80, 60, math.NaN(), 70}},
	} {
		r, err := Resample("uneven.csv", s, 5*time.Minute, tc.sum)
		if err != nil {
			t.Fatal(err)
		}
		if r.Start != 1_700_000_100_000 || r.Step != 5*time.Minute || r.Gaps != 2 || r.Resampled != 6 || r.Crowded != 2 || !sameValues(r.Values, tc.want) {
			t.Errorf("sum %v: start %d step %v, %v, %d gaps, %d samples, %d crowded; want %v", tc.sum, r.Start, r.Step, r.Values, r.Gaps, r.Resampled, r.Crowded, tc.want)
		}
	}
	// A step's bounds are the epoch's multiples, not the first sample's.
	r, err := Resample("off.csv", samplesOf([]int64{1700000290_000, 1700000310_000, 1700000590_000}, []float64{1, 3, 5}), 5*time.Minute, false)
	if err != nil || r.Start != 1_700_000_100_000 || !slices.Equal(r.Values, []float64{2, 5}) {
		t.Errorf("off the epoch's grid: %+v, %v; want from 1700000100, [2 5]", r, err)
	}
	// Samples that are not finite count as none.
	r, err = Resample("nan.csv", samplesOf([]int64{0, 1000, 60_000}, []float64{math.NaN(), 4, math.Inf(1)}), time.Minute, false)
	if err != nil || r.Gaps != 1 || !sameValues(r.Values, []float64{4, math.NaN()}) {
		t.Errorf("NaN and +Inf: %+v, %v", r, err)
	}
	if _, err := Resample("empty.csv", &Samples{}, time.Minute, false); err == nil || err.Error() != "empty.csv: no sample to resample" {
		t.Errorf("no samples: %v", err)
	}
	if _, err := Resample("a.csv", s, time.Microsecond, false); err == nil || !strings.Contains(err.Error(), "a step is at least 1ms") {
		t.Errorf("a step of 1µs: %v", err)
	}
}

// TestSumParts: the parts of a sum are laid on one grid, each 0 outside
// its own range; parts on other steps, or off each other's grid beyond
// the jitter OnGrid takes, are refused as a *GridError.
func TestSumParts(t *testing.T) {
	// Resampled parts share the epoch's grid: the first part's steps 0
	// and 1, the second's steps 1 and 2.
	a, err := Resample("a.csv", samplesOf([]int64{1700000130_000, 1700000170_000, 1700000420_000}, []float64{1, 3, 5}), 5*time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Resample("b.csv", samplesOf([]int64{1700000599_000, 1700000777_000}, []float64{10, 20}), 5*time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	total, parts, err := SumParts([]string{"a.csv", "b.csv"}, []*EvenSeries{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if total.Start != 1_700_000_100_000 || !slices.Equal(total.Values, []float64{2, 15, 20}) || total.Resampled != 5 || total.Crowded != 1 ||
		!slices.Equal(parts[0], []float64{2, 5, 0}) || !slices.Equal(parts[1], []float64{0, 10, 20}) {
		t.Errorf("a sum of uneven parts: start %d, %v = %v (%d samples, %d crowded); want 1700000100, [2 15 20]",
			total.Start, total.Values, parts, total.Resampled, total.Crowded)
	}

	// Parts whose first samples are off each other by jitter are summed on
	// the first part's grid.
	const base = 1_700_000_000_000
	var ts, shifted []int64
	var vs []float64
	for i, o := range []int64{120, -310, 40, 0, 250, -90, 180, -400, 60, 10} {
		ts, vs = append(ts, base+int64(i)*15_000+o), append(vs, float64(i))
		shifted = append(shifted, ts[i]-200)
	}
	j1, err1 := OnGrid("j1.csv", samplesOf(ts, vs))
	j2, err2 := OnGrid("j2.csv", samplesOf(shifted, vs))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	sum, parts, err := SumParts([]string{"j1.csv", "j2.csv"}, []*EvenSeries{j1, j2})
	if err != nil || len(parts) != 2 || sum.Start != base+120 || len(sum.Values) != 10 || sum.Values[3] != 6 || sum.Snapped != 18 || j2.Start != base-80 {
		t.Errorf("a sum of jittered parts: %+v, %v", sum, err)
	}

	minute := &EvenSeries{Start: base, Step: time.Minute, Values: []float64{1, 2, 3}}
	for _, tc := range []struct {
		part *EvenSeries
		want string
		step time.Duration
	}{
		{&EvenSeries{Start: base, Step: 2 * time.Minute, Values: []float64{1, 2, 3, 3}},
			"b.csv: step 2m0s differs from the step 1m0s of a.csv; the parts of a sum must share one", 2 * time.Minute},
		{&EvenSeries{Start: base + 30_000, Step: time.Minute, Values: []float64{1, 2}},
			"b.csv: its samples are off the grid of a.csv (first samples 1700000030 and 1700000000, step 1m0s)", time.Minute},
	} {
		_, _, err := SumParts([]string{"a.csv", "b.csv"}, []*EvenSeries{minute, tc.part})
		var ge *GridError
		if err == nil || err.Error() != tc.want || !errors.As(err, &ge) || ge.Step != tc.step {
			t.Errorf("%+v: %v; want %q, a grid error at %v", tc.part, err, tc.want, tc.step)
		}
	}
}

func TestCommonSpacing(t *testing.T) {
	for _, tc := range []struct {
		ts   []int64
		unit int64
		want int64
	}{
		{nil, 1, 0},
		{[]int64{5}, 1, 0},
		{[]int64{5, 5, 5}, 1, 0},
		{[]int64{0, 10, 20, 25, 35}, 1, 10},
		{[]int64{0, 10, 15, 25, 30}, 1, 5}, // 10 and 5 twice each: the smaller
		{[]int64{0, 14_980, 30_020, 45_000}, 1000, 15_000},
	} {
		if got := CommonSpacing(tc.ts, tc.unit); got != tc.want {
			t.Errorf("CommonSpacing(%v, %d) = %d, want %d", tc.ts, tc.unit, got, tc.want)
		}
	}
}

// A gauge sampled when it changed, averaged into 5-minute steps aligned on
// the epoch's multiples of five minutes.
func ExampleResample() {
	s := &Samples{
		Timestamps: []int64{1_700_000_100_000, 1_700_000_160_000, 1_700_000_700_000},
		Values:     []float64{4, 6, 9},
	}
	r, err := Resample("gauge.csv", s, 5*time.Minute, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(time.UnixMilli(r.Start).UTC().Format(time.RFC3339), r.Step, r.Values, r.Gaps)
	// Output: 2023-11-14T22:15:00Z 5m0s [5 NaN 9] 1
}
