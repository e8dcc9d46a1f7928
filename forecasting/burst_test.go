package forecasting

import (
	"math"
	"testing"
)

func TestBurstLoad(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name      string
		ys        []float64
		ref, lead int
		q, want   float64
	}{
		// Means of two up to i = 1, 2, 3: 1, 1.5, 1.5; the samples a step
		// later 2, 1, 4; misses 1, −0.5/√1.5, 2.5/√1.5. The newest mean is
		// 2.5.
		{"median", []float64{1, 1, 2, 1, 4}, 2, 1, 0.5, 2.5 + 1*math.Sqrt(2.5)},
		{"between order statistics", []float64{1, 1, 2, 1, 4}, 2, 1, 0.75, 2.5 + (1+0.5*(2.5/math.Sqrt(1.5)-1))*math.Sqrt(2.5)},
		// At a lead of 2: means up to i = 1, 2 (1, 1.5), samples 1, 4:
		// misses 0 and 2.5/√1.5.
		{"lead 2", []float64{1, 1, 2, 1, 4}, 2, 2, 0.5, 2.5 + 0.5*(2.5/math.Sqrt(1.5))*math.Sqrt(2.5)},
		// Only the mean up to i = 3 is whole.
		{"a gap", []float64{1, nan, 2, 1, 4}, 2, 1, 0.5, 2.5 + 2.5/math.Sqrt(1.5)*math.Sqrt(2.5)},
		// The mean of zero up to i = 1 gives no miss; up to i = 2, 3 the
		// means are 1 and 1.5, the misses 0 and 2.5/√1.5.
		{"zero mean", []float64{0, 0, 2, 1, 4}, 2, 1, 0.5, 2.5 + 0.5*(2.5/math.Sqrt(1.5))*math.Sqrt(2.5)},
		// A bound below zero is zero: the misses are −1/√2 and −1 (the
		// means of 0 give none), their median −0.854, and 0.5 − 0.854·√0.5
		// is below zero.
		{"at least zero", []float64{2, 1, 0, 0, 0.5}, 1, 1, 0.5, 0},
		{"newest with a gap", []float64{1, 1, 2, nan, 4}, 2, 1, 0.5, nan},
		{"too short", []float64{1, 2}, 2, 1, 0.5, nan},
		{"q out of range", []float64{1, 1, 2, 1, 4}, 2, 1, 1, nan},
		{"ref out of range", []float64{1, 1, 2, 1, 4}, 0, 1, 0.5, nan},
	}
	for _, c := range cases {
		got := BurstLoad(c.ys, nil, c.ref, c.lead, c.q)
		if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-c.want) > 1e-12) {
			t.Errorf("%s: BurstLoad = %v, want %v", c.name, got, c.want)
		}
	}
}

// The load a period before guesses where its bound has been lower on
// average over the steps both guesses cover. On ys = 1, 1, 2, 1, 4 (means
// of two 1, 1.5, 1.5 before the loads 2, 1, 4) the recent mean's misses
// are 1, −0.5/√1.5 and 2.5/√1.5, their median 1: its bounds sum to
// 1 + 1.5 + 1.5 + 1·(1 + 2√1.5) = 7.449.
func TestBurstLoadSeason(t *testing.T) {
	nan := math.NaN()
	ys := []float64{1, 1, 2, 1, 4}
	recent := 2.5 + math.Sqrt(2.5)
	cases := []struct {
		name   string
		season []float64
		want   float64
	}{
		// A season that repeats the loads misses by 0: its bounds sum to
		// 7 < 7.449, and the bound is the load a period before the step to
		// come, 5.
		{"repeats", []float64{nan, nan, 2, 1, 4, 5}, 5},
		// Loads a period before of 4, 0, 1 miss by −2, 1/√1.5, 3/√1.5: the
		// median 1/√1.5 makes bounds summing to 5 + 3.449/√1.5 = 7.816.
		{"does not repeat", []float64{nan, nan, 4, 0, 1, 5}, recent},
		// Covering one of the three steps is too few.
		{"too few", []float64{nan, nan, nan, nan, 4, 5}, recent},
		{"wrong length", []float64{2, 1, 4, 5}, recent},
	}
	for _, c := range cases {
		got := BurstLoad(ys, c.season, 2, 1, 0.5)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: BurstLoad = %v, want %v", c.name, got, c.want)
		}
	}
}
