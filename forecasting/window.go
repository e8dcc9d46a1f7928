package forecasting

import (
	"math"
	"sort"
)

// errWindow keeps the last n values in arrival order and in sorted order,
// so that a quantile is O(1) and a push moves only the values between the
// old and the new value's ranks. Its arrays grow as it fills, up to n: a
// forecaster with little history has made few errors.
type errWindow struct {
	ring   []float64
	sorted []float64
	pos    int
	n      int
	sumSq  float64 // running sum of squares, recomputed once per n pushes
	pushes int
}

func newErrWindow(n int) *errWindow { return &errWindow{n: n} }

// grown returns s with room for one more value: its capacity doubles, from
// 16 up to n.
func grown(s []float64, n int) []float64 {
	if len(s) < cap(s) {
		return s
	}
	g := make([]float64, len(s), min(max(2*cap(s), 16), n))
	copy(g, s)
	return g
}

func (w *errWindow) len() int { return len(w.sorted) }

func (w *errWindow) push(x float64) {
	if w.pushes++; w.pushes >= w.n {
		// A running sum drifts by rounding: start it afresh.
		w.pushes, w.sumSq = 0, 0
		for _, v := range w.ring {
			w.sumSq += v * v
		}
	}
	w.sumSq += x * x
	if len(w.ring) < w.n {
		w.ring = append(grown(w.ring, w.n), x)
		w.sorted = grown(w.sorted, w.n)
		j := sort.SearchFloat64s(w.sorted, x)
		w.sorted = append(w.sorted, 0)
		copy(w.sorted[j+1:], w.sorted[j:])
		w.sorted[j] = x
		return
	}
	old := w.ring[w.pos]
	w.sumSq -= old * old
	w.ring[w.pos] = x
	if w.pos++; w.pos == w.n {
		w.pos = 0
	}
	s := w.sorted
	i := sort.SearchFloat64s(s, old) // s[i] == old
	j := sort.SearchFloat64s(s, x)
	switch {
	case j > i:
		// x goes after old: shift (i, j) one left.
		copy(s[i:j-1], s[i+1:j])
		s[j-1] = x
	default:
		// x goes at or before old: shift [j, i) one right.
		copy(s[j+1:i+1], s[j:i])
		s[j] = x
	}
}

// quantile returns the q-quantile by linear interpolation between order
// statistics (type 7); NaN when empty.
func (w *errWindow) quantile(q float64) float64 {
	n := len(w.sorted)
	if n == 0 {
		return math.NaN()
	}
	h := q * float64(n-1)
	i := int(h)
	if i >= n-1 {
		return w.sorted[n-1]
	}
	return w.sorted[i] + (h-float64(i))*(w.sorted[i+1]-w.sorted[i])
}

// bound returns the split-conformal bound at level q of the window: the
// ⌈(n+1)q⌉-th smallest value for an upper bound (q ≥ 0.5) and the
// ⌊(n+1)q⌋-th for a lower one, clamped to the window. With n exchangeable
// errors, a new one falls at or below the upper bound (at or above the
// lower) with probability at least q (1 − q), where the interpolated
// quantile falls short of it by about 1/n. NaN when empty.
func (w *errWindow) bound(q float64) float64 {
	n := len(w.sorted)
	if n == 0 {
		return math.NaN()
	}
	var k int
	if q >= 0.5 {
		k = int(math.Ceil(float64(n+1) * q))
	} else {
		k = int(math.Floor(float64(n+1) * q))
	}
	return w.sorted[min(max(k, 1), n)-1]
}

// rms returns the root mean square of the values; NaN when empty.
func (w *errWindow) rms() float64 {
	if len(w.ring) == 0 {
		return math.NaN()
	}
	return math.Sqrt(max(w.sumSq, 0) / float64(len(w.ring)))
}
