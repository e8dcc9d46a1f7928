package ingest

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestAverage(t *testing.T) {
	s := &EvenSeries{Start: 1000, Step: time.Minute, Values: []float64{1, 3, 2, math.NaN(), 5, 7, 9}}
	got := s.Average(2)
	// (1+3)/2, (2+NaN)/2, (5+7)/2; the 9 is a tail shorter than two steps.
	if got.Start != 1000 || got.Step != 2*time.Minute || got.Gaps != 1 || len(got.Values) != 3 ||
		got.Values[0] != 2 || !math.IsNaN(got.Values[1]) || got.Values[2] != 6 {
		t.Errorf("Average(2) = %+v; want start 1000, step 2m, values [2 NaN 6], 1 gap", got)
	}
	if got := AverageValues([]float64{1, 2, 3, 4, 5, 6}, 3); !slices.Equal(got, []float64{2, 5}) {
		t.Errorf("AverageValues = %v, want [2 5]", got)
	}
}

// TestAlign: the values of a series at another's steps, NaN before it,
// after it and off its grid.
func TestAlign(t *testing.T) {
	const m = 60_000
	s := &EvenSeries{Start: 10 * m, Step: time.Minute, Values: []float64{1, 2, 3}}
	same := func(got, want []float64) bool {
		return slices.EqualFunc(got, want, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) })
	}
	nan := math.NaN()
	for _, c := range []struct {
		start int64
		n     int
		want  []float64
	}{
		{10 * m, 3, []float64{1, 2, 3}},
		{8 * m, 6, []float64{nan, nan, 1, 2, 3, nan}},
		{11 * m, 1, []float64{2}},
		{10*m + 1000, 2, []float64{nan, nan}},
	} {
		if got := s.Align(c.start, c.n); !same(got, c.want) {
			t.Errorf("Align(%d, %d) = %v, want %v", c.start, c.n, got, c.want)
		}
	}
}

func TestGridNote(t *testing.T) {
	for _, c := range []struct {
		s    EvenSeries
		want string
	}{
		{EvenSeries{Step: time.Minute, Values: make([]float64, 4)}, ""},
		{EvenSeries{Step: time.Minute, Values: make([]float64, 4), Snapped: 3, MaxSnap: 2 * time.Second},
			"note: f.csv: 3 samples up to 2s off the 1m0s grid were taken at their nearest step"},
		{EvenSeries{Step: 5 * time.Minute, Values: make([]float64, 4), Resampled: 9, Crowded: 2},
			"note: f.csv: 9 samples were taken into 4 steps of 5m0s, 2 of which held more than one"},
	} {
		if got := c.s.GridNote("f.csv"); got != c.want {
			t.Errorf("GridNote = %q, want %q", got, c.want)
		}
	}
}
