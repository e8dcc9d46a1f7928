package ingest

import (
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
