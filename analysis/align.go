package analysis

import (
	"fmt"
	"math"
	"slices"

	"github.com/inferwatch/inferwatch/internal/num"
)

// Align puts two series on a common time grid so they can be compared point
// by point.
//
// Timestamps are in the same unit as step (inferwatch uses unix
// milliseconds). The grid is the multiples of step: a sample at time ts
// falls into the bucket [k·step, (k+1)·step) with k = ⌊ts/step⌋, and the
// bucket is labelled by its start k·step. Within a bucket the finite samples
// of a series are averaged (the mean, not the last value), so a series
// sampled finer than step is averaged into the coarser buckets and a series
// sampled at step keeps its values unchanged. NaN, ±Inf and staleness
// markers are dropped before averaging; a bucket with no finite sample does
// not exist.
//
// The result is the inner join: the buckets present in both series, in
// ascending order, with x and y the two averages. Inputs need not be sorted.
//
// Align panics when step ≤ 0 or when a series' timestamps and values differ
// in length: both are programming errors.
func Align(xt []int64, xv []float64, yt []int64, yv []float64, step int64) (t []int64, x, y []float64) {
	at, ax := Resample(xt, xv, step)
	bt, by := Resample(yt, yv, step)
	n := min(len(at), len(bt))
	t = make([]int64, 0, n)
	x = make([]float64, 0, n)
	y = make([]float64, 0, n)
	for i, j := 0, 0; i < len(at) && j < len(bt); {
		switch {
		case at[i] < bt[j]:
			i++
		case at[i] > bt[j]:
			j++
		default:
			t = append(t, at[i])
			x = append(x, ax[i])
			y = append(y, by[j])
			i++
			j++
		}
	}
	return t, x, y
}

// Resample averages the finite samples of one series into the buckets of
// width step described at Align and returns the non-empty buckets in
// ascending order, each labelled by its start. Inputs need not be sorted.
// It panics when step ≤ 0 or the lengths of ts and vs differ.
func Resample(ts []int64, vs []float64, step int64) (t []int64, v []float64) {
	if step <= 0 {
		panic(fmt.Sprintf("analysis.Resample: step must be > 0, got %d", step))
	}
	if len(ts) != len(vs) {
		panic(fmt.Sprintf("analysis.Resample: %d timestamps but %d values", len(ts), len(vs)))
	}
	order := make([]int, 0, len(ts))
	for i, x := range vs {
		if num.Finite(x) {
			order = append(order, i)
		}
	}
	if !slices.IsSortedFunc(order, func(a, b int) int { return cmpInt64(ts[a], ts[b]) }) {
		slices.SortStableFunc(order, func(a, b int) int { return cmpInt64(ts[a], ts[b]) })
	}
	for k := 0; k < len(order); {
		b := bucketStart(ts[order[k]], step)
		sum, n := 0.0, 0
		for ; k < len(order) && bucketStart(ts[order[k]], step) == b; k++ {
			sum += vs[order[k]]
			n++
		}
		t = append(t, b)
		v = append(v, sum/float64(n))
	}
	return t, v
}

// bucketStart is ⌊ts/step⌋·step, also for negative ts.
func bucketStart(ts, step int64) int64 {
	q := ts / step
	if ts%step != 0 && ts < 0 {
		q--
	}
	return q * step
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// finite returns the finite values of xs in a new slice.
func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if num.Finite(x) {
			out = append(out, x)
		}
	}
	return out
}

// meanFinite is the mean of the finite values of xs and how many there were;
// NaN when there are none.
func meanFinite(xs []float64) (float64, int) {
	sum, n := 0.0, 0
	for _, x := range xs {
		if num.Finite(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}
