package analysis

import (
	"math"
)

// maxSortedWindow is the most samples a sortedWindow holds: its value order
// is kept as 16-bit slot numbers. A time window that would hold more keeps
// its newest maxSortedWindow samples (45 days at a 1-minute step).
const maxSortedWindow = 1 << 16

// sortedWindow is a sliding window of samples over time, kept both in
// arrival order (a ring of values and a compact queue of timestamps) and in
// value order (the ring slots sorted by value, ties by age). Adding and
// evicting a sample cost a search of O(log n) steps each (side by side
// when one sample replaces another, see bounds2) and a move of 2-byte slot
// numbers; any order statistic is then read in O(1), and the median
// absolute deviation by a search that starts where the previous one ended:
// O(1) steps while the window drifts, O(log n) at worst.
//
// A regular series costs about 10 bytes per sample: 8 for the value and 2
// for its slot in the value order; its timestamps take a few bytes in all
// (see tsQueue). A 1,440-sample window holds 15.3 KiB of heap.
type sortedWindow struct {
	window int64 // span in ms: a sample at t keeps those at or after t−window

	vals []float64 // ring of values, oldest at head
	head int
	n    int
	idx  []uint16 // ring slots in value order (ties: oldest first)
	ts   tsQueue

	madHint [2]int // where the last two kthDistance searches ended, per parity of k
	warmed  uint64 // what warm read, kept so that its loads are not dropped
}

// len returns the number of samples held.
func (w *sortedWindow) len() int { return w.n }

// at returns the i-th smallest value held.
func (w *sortedWindow) at(i int) float64 { return w.vals[w.idx[i]] }

// evictBefore drops the samples older than t − window.
func (w *sortedWindow) evictBefore(t int64) {
	lim := uint64(w.window)
	for w.n > 0 && uint64(t)-uint64(w.ts.oldest()) > lim {
		w.popOldest()
	}
}

// evictFor drops the samples older than t − window, as evictBefore does,
// and returns where x would go in what remains: the upper bound of x. When
// exactly one sample leaves, as on a regular step, the position it leaves
// and the one x will take are searched for together, their loads
// overlapping. Unless hot tells that the window is in cache, it is warmed
// first.
func (w *sortedWindow) evictFor(t int64, x float64, hot bool) int {
	if !hot {
		w.warm()
	}
	lim := uint64(w.window)
	if w.n == 0 || uint64(t)-uint64(w.ts.oldest()) <= lim {
		return w.upperBound(x)
	}
	i, j := w.bounds2(w.vals[w.head], x)
	w.removeOldest(i)
	if w.n > 0 && uint64(t)-uint64(w.ts.oldest()) > lim {
		w.evictBefore(t)
		return w.upperBound(x)
	}
	// j counted the sample that left at i.
	if j > i {
		j--
	}
	return j
}

// warm reads one word of each cache line the window's order and values
// take, before a sample finds them cold: the loads do not depend on each
// other, so the lines arrive together instead of one per step of the
// searches, the move of the order, and the median and MAD that follow.
// Measured for robust when it kept this window, over 10,000 series, in
// batches of 16: 134 → 122 ns a sample at a 240-point window and 358 → 215
// at 1,440; one sample a call: 614 → 400 and 1,373 → 1,132 ns.
func (w *sortedWindow) warm() {
	var sum uint64
	idx := w.idx[:w.n]
	for i := 0; i < len(idx); i += 32 { // 64-byte lines of 2-byte slots
		sum += uint64(idx[i])
	}
	for i := 0; i < len(w.vals); i += 8 {
		sum += math.Float64bits(w.vals[i])
	}
	w.warmed = sum
}

// observeWarm scores a batch of samples through observe, telling it that
// the window is hot in cache (see evictFor) from the second sample on:
// the first finds it cold.
func observeWarm(t []int64, v []float64, out []Result, observe func(t int64, v float64, hot bool) Result) {
	v, out = v[:len(t)], out[:len(t)]
	for i := range t {
		out[i] = observe(t[i], v[i], i > 0)
	}
}

// bounds2 returns the lower bound of a and the upper bound of b, by two
// searches run side by side without branches (on values in random order
// half of a binary search's branches are mispredicted). They search four
// ways rather than two: each step reads three positions, independent of
// each other, and keeps the quarter that holds the bound, so a 240-point
// window takes four dependent steps instead of eight. The chain of
// dependent loads is what the search waits on: measured when robust kept
// this window, it scored a sample of a 240-point window in ~104 ns this
// way and ~125 by branch-free halving. A window just warmed (see warm) is
// searched this way too: a binary search with branches, which speculates
// down the predicted path, measured slower there (360 ns a sample against
// 323, one sample a call, 240 points).
//
// The quarter [lo, lo+ln] holding a bound shrinks from ln+1 candidates to
// ⌈(ln+1)/4⌉; positions past the end read the last value, which keeps
// the count of values below the bound exact up to the window's end, and
// the result is cut to n.
func (w *sortedWindow) bounds2(a, b float64) (lo, up int) {
	n := w.n
	vals, idx := w.vals, w.idx[:n]
	last := n - 1
	at := func(i int) float64 { return vals[idx[min(i, last)]] }
	for ln := n; ln > 4; {
		s := (ln + 4) >> 2
		pa, pb := lo+s-1, up+s-1
		ca := b2i(at(pa) < a) + b2i(at(pa+s) < a) + b2i(at(pa+2*s) < a)
		cb := b2i(at(pb) <= b) + b2i(at(pb+s) <= b) + b2i(at(pb+2*s) <= b)
		lo += ca * s
		up += cb * s
		ln = s - 1
	}
	ca := b2i(at(lo) < a) + b2i(at(lo+1) < a) + b2i(at(lo+2) < a) + b2i(at(lo+3) < a)
	cb := b2i(at(up) <= b) + b2i(at(up+1) <= b) + b2i(at(up+2) <= b) + b2i(at(up+3) <= b)
	return min(lo+ca, n), min(up+cb, n)
}

// b2i is 1 for true and 0 for false, compiled to a SETcc.
func b2i(c bool) int {
	var i int
	if c {
		i = 1
	}
	return i
}

// popOldest drops the oldest sample.
func (w *sortedWindow) popOldest() {
	// The oldest of equal values sorts first: the lower bound of v.
	w.removeOldest(w.lowerBound(w.vals[w.head]))
}

// removeOldest drops the oldest sample, which sorts at position i.
func (w *sortedWindow) removeOldest(i int) {
	copy(w.idx[i:], w.idx[i+1:w.n])
	w.head++
	if w.head == len(w.vals) {
		w.head = 0
	}
	w.n--
	w.ts.pop()
	if w.n == 0 {
		w.head = 0
	}
}

// clear drops every sample.
func (w *sortedWindow) clear() {
	w.head, w.n = 0, 0
	w.ts = tsQueue{buf: w.ts.buf}
}

// push adds (t, v); t must be after every timestamp held and v finite.
func (w *sortedWindow) push(t int64, v float64) {
	w.pushAt(t, v, -1)
}

// pushAt is push for a v whose upper bound in the window is known to be
// i; i < 0 when it is not.
func (w *sortedWindow) pushAt(t int64, v float64, i int) {
	if w.n == maxSortedWindow {
		w.popOldest()
		i = -1
	}
	if w.n == len(w.vals) {
		w.grow(t)
	}
	slot := w.head + w.n
	if slot >= len(w.vals) {
		slot -= len(w.vals)
	}
	w.vals[slot] = v
	// The newest of equal values sorts last: the upper bound of v.
	if i < 0 {
		i = w.upperBound(v)
	}
	copy(w.idx[i+1:w.n+1], w.idx[i:w.n])
	w.idx[i] = uint16(slot)
	w.n++
	w.ts.push(t)
}

// lowerBound returns the first position whose value is ≥ v.
func (w *sortedWindow) lowerBound(v float64) int {
	return w.lowerBoundIn(v, 0, w.n)
}

// lowerBoundIn returns the first position in [lo, hi] whose value is ≥ v,
// or hi, knowing that those before lo are < v and those from hi on ≥ v.
// The loop has a fixed number of steps for a given length, and its one
// branch is speculated: measured faster than a branch-free form, whose
// chain of dependent loads and integer conversions is longer.
func (w *sortedWindow) lowerBoundIn(v float64, lo, hi int) int {
	n := hi - lo
	if n <= 0 {
		return lo
	}
	vals, idx := w.vals, w.idx[lo:hi]
	base := 0
	for n > 1 {
		half := n >> 1
		if vals[idx[base+half]] < v {
			base += half
		}
		n -= half
	}
	if vals[idx[base]] < v {
		base++
	}
	return lo + base
}

// upperBound returns the first position whose value is > v.
func (w *sortedWindow) upperBound(v float64) int {
	n := w.n
	if n == 0 {
		return 0
	}
	vals, idx := w.vals, w.idx[:n]
	base := 0
	for n > 1 {
		half := n >> 1
		if vals[idx[base+half]] <= v {
			base += half
		}
		n -= half
	}
	if vals[idx[base]] <= v {
		base++
	}
	return base
}

// grow enlarges the full ring before t is added, as Sigma's does (see
// ringRoom), to at most maxSortedWindow samples. Slots are renumbered as
// the ring is unwrapped.
func (w *sortedWindow) grow(t int64) {
	w.growTo(min(ringRoom(len(w.vals), w.ts.oldest(), t, uint64(w.window)), maxSortedWindow))
}

// growTo enlarges the ring to c > len(w.vals) slots, renumbering them as
// the ring is unwrapped.
func (w *sortedWindow) growTo(c int) {
	n := len(w.vals)
	nv := make([]float64, c)
	k := copy(nv, w.vals[w.head:])
	copy(nv[k:], w.vals[:w.head])
	ni := make([]uint16, c)
	for i, s := range w.idx[:w.n] {
		a := int(s) - w.head
		if a < 0 {
			a += n
		}
		ni[i] = uint16(a)
	}
	w.vals, w.idx, w.head = nv, ni, 0
}

// ringRoom returns the capacity that a full ring of n samples, the oldest
// at oldest, grows to before a sample at t is added: 8 when it is empty,
// else a sixteenth more, or what the density of the samples held predicts
// a span of reach ms will hold, but at most twice as much. Sigma's window,
// the sorted window and Auto's history grow by it.
func ringRoom(n int, oldest, t int64, reach uint64) int {
	if n == 0 {
		return 8
	}
	c := n + n/16 + 1
	span := float64(uint64(t) - uint64(oldest))
	if need := math.Floor(float64(n)*float64(reach)/span) + 1; need > float64(c) {
		c = int(min(need, float64(2*n)))
	}
	return c
}

// median returns the median of the values held; the window must not be
// empty.
func (w *sortedWindow) median() float64 {
	n := w.n
	if n&1 == 1 {
		return w.at(n / 2)
	}
	a, b := w.at(n/2-1), w.at(n/2)
	return a/2 + b/2
}

// quantile returns the q-quantile (0 ≤ q ≤ 1) of the values held, by
// linear interpolation between order statistics (type 7, as R and numpy);
// the window must not be empty.
func (w *sortedWindow) quantile(q float64) float64 {
	h := q * float64(w.n-1)
	i := int(h)
	if i >= w.n-1 {
		return w.at(w.n - 1)
	}
	f := h - float64(i)
	a, b := w.at(i), w.at(i+1)
	return a + f*(b-a)
}

// mad returns the median of |x − med| over the values held, for med their
// median. The distances below and above med form two sorted sequences; the
// middle order statistics of their union are found by a search that starts
// where the previous one ended (the window moves little from one sample to
// the next), in O(1) steps when it has not moved far and O(log n) at worst.
func (w *sortedWindow) mad(med float64) float64 {
	n := w.n
	// p, the first position ≥ med, is n/2 but for ties at the median.
	p := n / 2
	if p > 0 && w.at(p-1) >= med {
		p = w.lowerBoundIn(med, 0, p-1)
	}
	if n&1 == 1 {
		d, _ := w.kthDistance(med, p, n/2, false)
		return d
	}
	a, b := w.kthDistance(med, p, n/2-1, true)
	return a/2 + b/2
}

// kthDistance returns the k-th smallest (from 0) of |x − med|, where the
// values below position p are < med and the others ≥ med, and, when next
// is set, the (k+1)-th as well (which must exist).
func (w *sortedWindow) kthDistance(med float64, p, k int, next bool) (kth, after float64) {
	la, lb := p, w.n-p
	vals, idx := w.vals, w.idx[:w.n]
	// a(i) = med − at(p−1−i), increasing in i; b(j) = at(p+j) − med,
	// increasing in j. Take i of the k+1 smallest from a and k+1−i from
	// b: the answer is the smallest i in [lo, hi] for which b's last
	// taken is not above a's first left out (take(i) false).
	take := func(i int) bool {
		j := k + 1 - i
		return j > 0 && vals[idx[p+j-1]]-med > med-vals[idx[p-1-i]]
	}
	lo, hi := max(0, k+1-lb), min(k+1, la)
	h := &w.madHint[k&1]
	g := min(max(*h, lo), hi)
	switch {
	case g-2 >= lo && g+1 < hi && take(g-2) && !take(g+1):
		// The answer has moved by at most one from the previous one, as
		// it mostly does: count it out without branches.
		lo = g - 1 + b2i(take(g-1)) + b2i(take(g))
		hi = lo
	case g < hi && take(g):
		// Gallop from the previous answer to a bracket, then bisect it.
		lo = g + 1
		for step := 1; lo < hi; step *= 2 {
			if !take(min(lo+step-1, hi-1)) {
				hi = min(lo+step-1, hi-1)
				break
			}
			lo = min(lo+step, hi)
		}
	default:
		hi = g
		for step := 1; lo < hi; step *= 2 {
			if take(max(hi-step, lo)) {
				lo = max(hi-step, lo) + 1
				break
			}
			hi = max(hi-step, lo)
		}
	}
	for lo < hi {
		i := int(uint(lo+hi) >> 1)
		if take(i) {
			lo = i + 1
		} else {
			hi = i
		}
	}
	*h = lo
	i, j := lo, k+1-lo
	kth = math.Inf(-1)
	if i > 0 {
		kth = med - vals[idx[p-i]]
	}
	if j > 0 {
		kth = max(kth, vals[idx[p+j-1]]-med)
	}
	if next {
		after = math.Inf(1)
		if i < la {
			after = med - vals[idx[p-1-i]]
		}
		if j < lb {
			after = min(after, vals[idx[p+j]]-med)
		}
	}
	return kth, after
}

// stepWindow makes a detector whose window is given in samples rather than
// in time, for a series whose step is not known: it holds back the first
// samples until it has seen stepProbe intervals, takes the smallest as the
// series' step, builds the detector for that step (a window of so many
// steps), replays the held samples into it and from then on passes every
// sample through. The held samples are not scored (their results are not
// Ready).
type stepWindow struct {
	build func(step int64) Detector
	d     Detector
	held  []point
}

// stepProbe is how many intervals a stepWindow measures before it decides
// the step.
const stepProbe = 4

func (s *stepWindow) Observe(t int64, v float64) Result {
	if s.d != nil {
		return s.d.Observe(t, v)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || (len(s.held) > 0 && t <= s.held[len(s.held)-1].t) {
		return notReady()
	}
	s.held = append(s.held, point{t, v})
	if len(s.held) <= stepProbe {
		return notReady()
	}
	step := uint64(math.MaxInt64)
	for i := 1; i < len(s.held); i++ {
		step = min(step, uint64(s.held[i].t)-uint64(s.held[i-1].t))
	}
	s.d = s.build(int64(min(step, math.MaxInt64)))
	var r Result
	for _, p := range s.held {
		r = s.d.Observe(p.t, p.v)
	}
	s.held = nil
	return r
}

// ObserveBatch scores a run of samples, as many Observe calls do; once the
// step is decided, through the detector's own ObserveBatch when it has one.
func (s *stepWindow) ObserveBatch(t []int64, v []float64, out []Result) {
	v, out = v[:len(t)], out[:len(t)]
	i := 0
	for ; i < len(t) && s.d == nil; i++ {
		out[i] = s.Observe(t[i], v[i])
	}
	if b, ok := s.d.(BatchDetector); ok {
		b.ObserveBatch(t[i:], v[i:], out[i:])
		return
	}
	for ; i < len(t); i++ {
		out[i] = s.d.Observe(t[i], v[i])
	}
}

var _ BatchDetector = (*stepWindow)(nil)

// point is one sample of a series.
type point struct {
	t int64
	v float64
}

// windowSpread returns the larger of two normal-consistent spreads of the
// window w with median m: 1.4826·MAD and that of its central 90% (see
// Robust).
func windowSpread(w *sortedWindow, m float64) float64 {
	s := madScale * w.mad(m)
	if w.len() >= 2 {
		s = max(s, (w.quantile(1-tailP)-w.quantile(tailP))/tailSigmas)
	}
	if math.IsInf(s, 0) || math.IsNaN(s) { // opposite extremes
		s = math.MaxFloat64
	}
	return s
}
