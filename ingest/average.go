package ingest

import (
	"fmt"
	"math"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// Average averages each k steps of s into one (NaN when one of them is).
func (s *EvenSeries) Average(k int) *EvenSeries {
	out := &EvenSeries{Start: s.Start, Step: s.Step * time.Duration(k), Values: AverageValues(s.Values, k)}
	for _, v := range out.Values {
		if !num.Finite(v) {
			out.Gaps++
		}
	}
	return out
}

// AverageValues averages each k values of y into one; a tail shorter
// than k is left out.
func AverageValues(y []float64, k int) []float64 {
	out := make([]float64, 0, len(y)/k)
	for i := 0; i+k <= len(y); i += k {
		sum := 0.0
		for _, v := range y[i : i+k] {
			sum += v
		}
		out = append(out, sum/float64(k))
	}
	return out
}

// Align returns the values of s at n steps of s.Step from start (unix
// milliseconds): s's value of each, NaN where s has none or start is off
// s's grid.
func (s *EvenSeries) Align(start int64, n int) []float64 {
	out := make([]float64, n)
	step := s.Step.Milliseconds()
	for i := range out {
		j := (start - s.Start + int64(i)*step) / step
		out[i] = math.NaN()
		if (start-s.Start)%step == 0 && j >= 0 && j < int64(len(s.Values)) {
			out[i] = s.Values[j]
		}
	}
	return out
}

// GridNote says how the samples of the series named name were laid on
// its grid: how many OnGrid moved to their nearest step, or how many
// Resample took into how many steps; "" when none moved.
func (s *EvenSeries) GridNote(name string) string {
	switch {
	case s.Resampled > 0:
		return fmt.Sprintf("note: %s: %d samples were taken into %d steps of %s, %d of which held more than one", name, s.Resampled, len(s.Values), s.Step, s.Crowded)
	case s.Snapped > 0:
		return fmt.Sprintf("note: %s: %d samples up to %s off the %s grid were taken at their nearest step", name, s.Snapped, s.MaxSnap, s.Step)
	}
	return ""
}
