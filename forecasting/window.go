package forecasting

import (
	"cmp"
	"math"
	"slices"
)

// maxErrWindow is the most values an errWindow keeps: its order holds
// ring slots as uint16.
const maxErrWindow = 1 << 16

// errWindow keeps the last n values in arrival order (ring) and the ring's
// slots in the order of their values (order, ties oldest first), so that a
// quantile is O(1) and a push moves only the slots between the old and the
// new value's ranks. A value is kept as a half (see toHalf): its quantiles
// bound intervals, which their sampling error moves by far more than the
// 0.4 % a half may, and 4 bytes a value (where float64 and a sorted
// copy would take 16) is what a forecast series holds most of. Both grow
// as the window fills, up to n: a forecaster with little history has made
// few errors.
type errWindow struct {
	ring   []half
	order  []uint16 // ring[order[r]] is the value of rank r
	pos    int      // the oldest slot, once full
	n      int
	sumSq  float64 // running sum of squares, recomputed once per n pushes
	pushes int
}

// newErrWindow returns a window of up to n values, 1 ≤ n ≤ maxErrWindow.
func newErrWindow(n int) *errWindow {
	if n < 1 || n > maxErrWindow {
		panic("forecasting: error window size out of range")
	}
	return &errWindow{n: n}
}

// grown returns s with room for one more element, its capacity growing by
// an eighth (and 16) up to n: at most an eighth of it is spare once it
// holds more than 128, and a push copies nine elements on average.
func grown[E any](s []E, n int) []E {
	if len(s) < cap(s) {
		return s
	}
	g := make([]E, len(s), min(cap(s)+cap(s)/8+16, n))
	copy(g, s)
	return g
}

// reserve makes room for c values in all (at most n), so that a window
// whose count of coming values is known grows once.
func (w *errWindow) reserve(c int) {
	if c = min(c, w.n); c > cap(w.ring) {
		w.ring = append(make([]half, 0, c), w.ring...)
		w.order = append(make([]uint16, 0, c), w.order...)
	}
}

func (w *errWindow) len() int { return len(w.order) }

// full tells whether the window holds its n values.
func (w *errWindow) full() bool { return len(w.ring) == w.n }

// thin keeps one value in every k, the newest kept being the k-th newest
// (so a value that arrives next continues the spacing); the window then
// fills again before it evicts.
func (w *errWindow) thin(k int) {
	m := len(w.ring)
	var kept []half
	for age := k - 1; age < m; age += k {
		// The value of that age, from the newest back.
		kept = append(kept, w.ring[(w.pos+m-1-age)%m])
	}
	slices.Reverse(kept) // oldest first, as slots fill
	w.ring = append(w.ring[:0], kept...)
	w.pos = 0
	w.order = w.order[:len(kept)]
	for i := range w.order {
		w.order[i] = uint16(i)
	}
	// Stable: of equal values the oldest (lowest slot) first.
	slices.SortStableFunc(w.order, func(a, b uint16) int { return cmp.Compare(w.ring[a].f(), w.ring[b].f()) })
	w.pushes, w.sumSq = 0, 0
	for _, v := range w.ring {
		w.sumSq += float64(v.f()) * float64(v.f())
	}
}

// at returns the value of rank r (the r+1-th smallest).
func (w *errWindow) at(r int) float64 { return float64(w.ring[w.order[r]].f()) }

// rankAbove returns the number of values at most x: the rank a new x takes,
// after the values equal to it.
func (w *errWindow) rankAbove(x float32) int {
	lo, hi := 0, len(w.order)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if w.ring[w.order[m]].f() <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// rankOf returns the number of values below x: the rank of the oldest
// value equal to x.
func (w *errWindow) rankOf(x float32) int {
	lo, hi := 0, len(w.order)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if w.ring[w.order[m]].f() < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (w *errWindow) push(x64 float64) {
	h := toHalf(float32(x64))
	x := h.f()
	if w.pushes++; w.pushes >= w.n {
		// A running sum drifts by rounding: start it afresh.
		w.pushes, w.sumSq = 0, 0
		for _, v := range w.ring {
			w.sumSq += float64(v.f()) * float64(v.f())
		}
	}
	w.sumSq += float64(x) * float64(x)
	if len(w.ring) < w.n {
		j := w.rankAbove(x)
		slot := uint16(len(w.ring))
		w.ring = append(grown(w.ring, w.n), h)
		w.order = append(grown(w.order, w.n), 0)
		copy(w.order[j+1:], w.order[j:])
		w.order[j] = slot
		return
	}
	// The oldest value leaves: it is the oldest of those equal to it,
	// the first of them in order.
	old := w.ring[w.pos].f()
	w.sumSq -= float64(old) * float64(old)
	i := w.rankOf(old) // order[i] == pos
	j := w.rankAbove(x)
	o, slot := w.order, uint16(w.pos)
	switch {
	case j > i:
		// x goes after old: shift (i, j) one left.
		copy(o[i:j-1], o[i+1:j])
		o[j-1] = slot
	default:
		// x goes before old: shift [j, i) one right.
		copy(o[j+1:i+1], o[j:i])
		o[j] = slot
	}
	w.ring[w.pos] = h
	if w.pos++; w.pos == w.n {
		w.pos = 0
	}
}

// quantile returns the q-quantile by linear interpolation between order
// statistics (type 7); NaN when empty.
func (w *errWindow) quantile(q float64) float64 {
	n := len(w.order)
	if n == 0 {
		return math.NaN()
	}
	h := q * float64(n-1)
	i := int(h)
	if i >= n-1 {
		return w.at(n - 1)
	}
	lo, hi := w.at(i), w.at(i+1)
	return lo + (h-float64(i))*(hi-lo)
}

// bound returns the split-conformal bound at level q of the window: the
// ⌈(n+1)q⌉-th smallest value for an upper bound (q ≥ 0.5) and the
// ⌊(n+1)q⌋-th for a lower one, clamped to the window. With n exchangeable
// errors, a new one falls at or below the upper bound (at or above the
// lower) with probability at least q (1 − q), where the interpolated
// quantile falls short of it by about 1/n. NaN when empty.
func (w *errWindow) bound(q float64) float64 {
	n := len(w.order)
	if n == 0 {
		return math.NaN()
	}
	var k int
	if q >= 0.5 {
		k = int(math.Ceil(float64(n+1) * q))
	} else {
		k = int(math.Floor(float64(n+1) * q))
	}
	return w.at(min(max(k, 1), n) - 1)
}

// rms returns the root mean square of the values; NaN when empty.
func (w *errWindow) rms() float64 {
	if len(w.ring) == 0 {
		return math.NaN()
	}
	return math.Sqrt(max(w.sumSq, 0) / float64(len(w.ring)))
}

// half is a float32 kept in its high 16 bits (bfloat16: its sign, its
// exponent and 7 bits of its significand), 2 bytes where a float32 takes 4.
type half uint16

// toHalf returns x as a half, rounded to the nearest (ties to an even
// significand): within 2⁻⁸ (0.4 %) of x, and no more above than below, so
// the quantiles of errors kept as halves are not pushed either way. NaN
// and ±Inf stay what they are; a magnitude beyond the largest finite half
// keeps that one.
func toHalf(x float32) half {
	b := math.Float32bits(x)
	if b&0x7f800000 == 0x7f800000 { // NaN or ±Inf
		return half(b >> 16)
	}
	r := b + 0x7fff + (b>>16)&1
	if r&0x7f800000 == 0x7f800000 { // rounding up would make it infinite
		return half(b >> 16)
	}
	return half(r >> 16)
}

// f returns h as a float32.
func (h half) f() float32 { return math.Float32frombits(uint32(h) << 16) }
