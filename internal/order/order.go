// Package order holds the order statistics the statistics packages share:
// selection of the k-th smallest value in O(n) expected time without
// sorting, and the median and quantiles built on it. It is a leaf: pure
// functions over slices, no state, importing nothing of inferwatch, so that
// analysis and forecasting can both use one implementation.
package order

import "math"

// SelectIn rearranges v[lo:hi] so that v[k] holds the value that sorting
// it would put there, everything in v[lo:k] is ≤ that value and everything
// in v[k+1:hi] ≥ it, and returns it: quickselect, O(hi−lo) expected steps.
// The values must not be NaN; lo ≤ k < hi.
//
// The partition moves every value whichever side it belongs to, counting
// those below the pivot without a branch: on values in random order half
// of a partition's branches would be mispredicted. Pivots are medians of
// three, ties of a pivot are gathered when they would leave a split
// lopsided (so a window mostly on one value costs O(n) too), and ranges of
// up to 8 values are finished by insertion.
func SelectIn(v []float64, lo, hi, k int) float64 {
	hi-- // inclusive from here on
	for hi-lo >= 8 {
		m := int(uint(lo+hi) >> 1)
		if v[m] < v[lo] {
			v[m], v[lo] = v[lo], v[m]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[m] {
			v[hi], v[m] = v[m], v[hi]
		}
		// v[lo] ≤ v[m] ≤ v[hi]: partition v[lo+1:hi−1] around p = v[m],
		// parked at hi−1.
		p := v[m]
		v[m], v[hi-1] = v[hi-1], v[m]
		s := lo + 1
		for i := lo + 1; i < hi-1; i++ {
			x := v[i]
			v[i] = v[s]
			v[s] = x
			s += b2i(x < p)
		}
		v[s], v[hi-1] = v[hi-1], v[s]
		switch {
		case k < s:
			hi = s - 1
		case k > s && 4*(hi-s) > 3*(hi-lo):
			// Most values went right: they may be ties of p (a window
			// mostly on one value), which this partition cannot split.
			// Gather those equal to p after it, and go on past them.
			e := s + 1
			for i := s + 1; i <= hi; i++ {
				x := v[i]
				v[i] = v[e]
				v[e] = x
				e += b2i(!(p < x))
			}
			if k < e {
				return p
			}
			lo = e
		case k > s:
			lo = s + 1
		default:
			return v[k]
		}
	}
	for i := lo + 1; i <= hi; i++ {
		x := v[i]
		j := i
		for ; j > lo && v[j-1] > x; j-- {
			v[j] = v[j-1]
		}
		v[j] = x
	}
	return v[k]
}

// Median returns the median of v, which must not hold NaN, by selection
// (it reorders v): the middle value, or the mean of the two middle values
// of an even count; NaN when v is empty.
func Median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	hi := SelectIn(v, 0, n, n/2)
	if n%2 == 1 {
		return hi
	}
	// SelectIn left the values below rank n/2 before it.
	return (Max(v[:n/2]) + hi) / 2
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of v, which must be non-empty
// and hold no NaN, by linear interpolation between order statistics (the
// definition of R's type 7 and NumPy's default: h = (n−1)·q, the value at
// rank ⌊h⌋ plus (h−⌊h⌋) times the step to the next one). It reorders v.
func Quantile(v []float64, q float64) float64 {
	n := len(v)
	h := float64(n-1) * q
	lo := max(0, min(int(math.Floor(h)), n-1))
	a := SelectIn(v, 0, n, lo)
	frac := h - float64(lo)
	if frac == 0 || lo == n-1 {
		return a
	}
	// After selection v[lo+1:] holds the values ≥ a: the next order
	// statistic is their minimum.
	return a + frac*(Min(v[lo+1:])-a)
}

// Min returns the smallest of v, which must not be empty.
func Min(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = min(m, x)
	}
	return m
}

// Max returns the largest of v, which must not be empty.
func Max(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}

// b2i is 1 for true and 0 for false, compiled to a SETcc.
func b2i(c bool) int {
	var i int
	if c {
		i = 1
	}
	return i
}
