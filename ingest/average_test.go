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
