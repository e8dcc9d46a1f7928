package analysis

import (
	"math"
	"slices"
)

// The summaries Auto keeps of a series' past instead of its samples: a ring
// of time bins with each bin's range and mean (binRing), the most extreme
// bin ranges of the tail test's horizon (extremes), and a thinned sample of
// the horizon for its median and spread (thinWindow). Their size depends on
// the horizon in bins, not on the series' step.

// binRing holds the bins of the last len(rng) bin numbers, bin k spanning
// [k·width, (k+1)·width) ms at slot k mod len(rng): each bin's range of
// samples, rounded outwards to float32 (lo down, hi up, so that "the past
// reached x" is never missed by rounding; lo > hi when the bin is empty),
// and, once it has closed, its mean as its place in the range in 65535ths.
// The newest bin, the one being filled, is kept apart, with its mean
// exact, and enters the ring when it closes: a sample touches no memory of
// the ring. newest is its number.
//
// Each bin also keeps two bits: odd, set when a sample in it scored as an
// incident, which keeps the bin out of the seen-before test, and inc, set
// when the sample was also left out of what defines normal (the tails and
// the phase test; see Auto).
type binRing struct {
	width   int64
	open    [2]float32 // the newest bin's range
	mean    float64    // and mean
	n       int        // and samples
	openInc bool       // and whether it holds an incident's sample
	openOdd bool       // or one that scored as one
	newest  int64
	has     bool
	rng     [][2]float32
	mid     []uint16
	inc     []uint64 // the incident bits, by slot
	odd     []uint64 // the odd bits, by slot (one allocation with inc)
}

func newBinRing(width int64, bins int) binRing {
	r := binRing{width: width, open: emptyBin, rng: make([][2]float32, bins), mid: make([]uint16, bins)}
	words := (bins + 63) / 64
	bits := make([]uint64, 2*words)
	r.inc, r.odd = bits[:words:words], bits[words:]
	for i := range r.rng {
		r.rng[i] = emptyBin
	}
	return r
}

// incident reports whether bin k (the open bin when k is the newest)
// holds an incident's sample; false when it is not held.
func (r *binRing) incident(k int64) bool {
	if !r.has || k > r.newest || k <= r.newest-int64(len(r.rng)) {
		return false
	}
	if k == r.newest {
		return r.openInc
	}
	i := r.slot(k)
	return r.inc[i/64]>>(i%64)&1 == 1
}

// odd reports whether bin k (the open bin when k is the newest) holds a
// sample that scored as an incident, left out of the tails or not.
func (r *binRing) oddBin(k int64) bool {
	if !r.has || k > r.newest || k <= r.newest-int64(len(r.rng)) {
		return false
	}
	if k == r.newest {
		return r.openOdd || r.openInc
	}
	i := r.slot(k)
	return (r.odd[i/64]|r.inc[i/64])>>(i%64)&1 == 1
}

// setIncident sets the incident bit of the closed bin at slot i.
func (r *binRing) setIncident(i int, on bool) { setBit(r.inc, i, on) }

func setBit(bits []uint64, i int, on bool) {
	if on {
		bits[i/64] |= 1 << (i % 64)
	} else {
		bits[i/64] &^= 1 << (i % 64)
	}
}

// normal returns the range of bin k and whether it is held, not empty and
// holds no incident's sample.
func (r *binRing) normal(k int64) (lo, hi float64, ok bool) {
	lo, hi, ok = r.at(k)
	return lo, hi, ok && !r.incident(k)
}

// emptyBin is the range of a bin without samples.
var emptyBin = [2]float32{math.MaxFloat32, -math.MaxFloat32}

// number returns the number of the bin holding t.
func (r *binRing) number(t int64) int64 { return floorDiv(t, r.width) }

// at returns the range of bin k, and false when it is empty or not held.
func (r *binRing) at(k int64) (lo, hi float64, ok bool) {
	if !r.has || k > r.newest || k <= r.newest-int64(len(r.rng)) {
		return 0, 0, false
	}
	x := r.open
	if k != r.newest {
		x = r.rng[r.slot(k)]
	}
	return float64(x[0]), float64(x[1]), x[0] <= x[1]
}

// meanOf returns the mean of bin k, closed, and false when it is empty,
// not held or holds an incident's sample.
func (r *binRing) meanOf(k int64) (float64, bool) {
	lo, hi, ok := r.normal(k)
	if !ok || k == r.newest {
		return 0, false
	}
	return lo + (hi-lo)*float64(r.mid[r.slot(k)])/math.MaxUint16, true
}

func (r *binRing) slot(k int64) int {
	m := k % int64(len(r.rng))
	if m < 0 {
		m += int64(len(r.rng))
	}
	return int(m)
}

// add adds v to the newest bin.
func (r *binRing) add(v float64) {
	x := &r.open
	x[0], x[1] = min(x[0], down32(v)), max(x[1], up32(v))
	r.n++
	r.mean += (v - r.mean) / float64(r.n)
}

// close stores the newest bin, which is done, in the ring, and starts the
// next.
func (r *binRing) close() {
	r.rng[r.slot(r.newest)] = r.open
	r.setIncident(r.slot(r.newest), r.openInc)
	setBit(r.odd, r.slot(r.newest), r.openOdd)
	if r.n > 0 {
		x := r.open
		lo, hi := float64(x[0]), float64(x[1])
		q := 0.0
		if hi > lo {
			q = math.Round((min(hi, max(lo, r.mean)) - lo) / (hi - lo) * math.MaxUint16)
		}
		r.mid[r.slot(r.newest)] = uint16(q)
	}
	r.open, r.mean, r.n, r.openInc, r.openOdd = emptyBin, 0, 0, false, false
}

// floorDiv is a/b rounded towards −∞, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// down32 is x as a float32 no greater than x, and up32 no smaller; both
// clamp to the finite float32 range.
func down32(x float64) float32 {
	f := float32(max(-math.MaxFloat32, min(math.MaxFloat32, x)))
	if float64(f) > x {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f
}

func up32(x float64) float32 {
	f := float32(max(-math.MaxFloat32, min(math.MaxFloat32, x)))
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// ranked is a bin's extreme value with the bin's number.
type ranked struct {
	v float32
	k int64
}

// extremes keeps, over the closed bins of the last `span` bin numbers, the
// count of non-empty bins and the `keep` highest bin maxima (top, highest
// first) and lowest bin minima (bottom, lowest first): enough to read the
// tail quantiles of the bins' extremes in O(1). A bin enters when it closes
// and leaves span bins later; when one of the kept leaves, the lists are
// rebuilt from the ring, which a bin among the `keep` most extreme of
// hundreds does rarely.
type extremes struct {
	span, keep  int
	n           int // non-empty closed bins in the span
	top, bottom []ranked
}

// insert offers the extremes of bin k.
func (e *extremes) insert(x [2]float32, k int64) {
	e.top = insertRanked(e.top, ranked{x[1], k}, e.keep, func(a, b float32) bool { return a > b })
	e.bottom = insertRanked(e.bottom, ranked{x[0], k}, e.keep, func(a, b float32) bool { return a < b })
}

// insertRanked inserts r into list, ordered by before (ties: the older
// first), keeping at most keep entries.
func insertRanked(list []ranked, r ranked, keep int, before func(a, b float32) bool) []ranked {
	i := len(list)
	for i > 0 && before(r.v, list[i-1].v) {
		i--
	}
	if i >= keep {
		return list
	}
	if len(list) < keep {
		list = append(list, ranked{})
	}
	copy(list[i+1:], list[i:len(list)-1])
	list[i] = r
	return list
}

// remove drops bin k from the lists; it reports whether it was in one.
func (e *extremes) remove(k int64) bool {
	found := false
	if i := slices.IndexFunc(e.top, func(r ranked) bool { return r.k == k }); i >= 0 {
		e.top = slices.Delete(e.top, i, i+1)
		found = true
	}
	if i := slices.IndexFunc(e.bottom, func(r ranked) bool { return r.k == k }); i >= 0 {
		e.bottom = slices.Delete(e.bottom, i, i+1)
		found = true
	}
	return found
}

// quantile returns the q-quantile (type 6, see tailPosition) of
// the maxima (high) or minima of the closed bins and, when open is not
// NaN, of the open bin's extreme open. It is NaN when there is none.
func (e *extremes) quantile(q float64, high bool, open float64) float64 {
	hasOpen := !math.IsNaN(open)
	n := e.n
	if hasOpen {
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	list := e.bottom
	if high {
		list, q = e.top, 1-q
	}
	// The quantile's order statistics, counted from the extreme end: the
	// rank-th and (rank−1)-th.
	i, f := tailPosition(q, n)
	rank := n - 1 - i
	if !high {
		rank = i
	}
	x := rankedAt(list, rank, open, hasOpen, high)
	if f == 0 {
		return x
	}
	var y float64
	if high {
		y = rankedAt(list, rank-1, open, hasOpen, high)
	} else {
		y = rankedAt(list, rank+1, open, hasOpen, high)
	}
	return x + f*(y-x)
}

// tailPosition is where the q-quantile of n values lies among them sorted
// up: between the i-th (from 0) and the next, a share f of the way. It
// reads the k-th smallest of n as the k/(n+1) quantile (Hyndman and Fan's
// type 6, the Weibull plotting position), whose expected coverage is
// exactly k/(n+1): a tail quantile read so covers as much of the
// distribution's tail over few bins as over many. The usual
// interpolation, (k−1)/(n−1) (type 7), reads a tail quantile nearer the
// middle the fewer the values: over a day and a half of 15-minute bins
// (150), the 0.991-quantile it reads is exceeded by 1.5 % of bins on
// average, not 0.9 %, and a young detector alarmed more readily than a
// week-old one. Beyond the extremes the quantile is the extreme.
func tailPosition(q float64, n int) (i int, f float64) {
	h := q*float64(n+1) - 1
	switch {
	case h <= 0:
		return 0, 0
	case h >= float64(n-1):
		return n - 1, 0
	}
	i = int(h)
	return i, h - float64(i)
}

// tailQ is a tail quantile of the bins' extremes prepared for the bin
// being filled, so that a sample reads it without the lists: its value
// while that bin is empty (fixed), and otherwise, with o the bin's extreme
// so far, x(o) + f·(y(o) − x(o)), where x and y clamp o between two of the
// closed bins' values (see rankedAt).
type tailQ struct {
	fixed          float64
	x0, x1, y0, y1 float64
	f              float64
	high           bool
}

// at returns the quantile for the open bin's extreme open (NaN: empty).
func (q *tailQ) at(open float64) float64 {
	if math.IsNaN(open) {
		return q.fixed
	}
	var x, y float64
	if q.high {
		x, y = min(q.x0, max(q.x1, open)), min(q.y0, max(q.y1, open))
	} else {
		x, y = max(q.x0, min(q.x1, open)), max(q.y0, min(q.y1, open))
	}
	if q.f == 0 {
		return x
	}
	return x + q.f*(y-x)
}

// prepare returns the q-quantile of the maxima (high) or minima, as
// quantile reads it, prepared for the open bin.
func (e *extremes) prepare(q float64, high bool) tailQ {
	t := tailQ{fixed: e.quantile(q, high, math.NaN()), high: high}
	n := e.n + 1
	list := e.bottom
	if high {
		list, q = e.top, 1-q
	}
	i, f := tailPosition(q, n)
	t.f = f
	far := math.Inf(-1)
	if !high {
		far = math.Inf(1)
	}
	get := func(i int) float64 {
		if i >= 0 && i < len(list) {
			return float64(list[i].v)
		}
		if i < 0 {
			return -far
		}
		return far
	}
	if high {
		rank := n - 1 - i
		t.x0, t.x1, t.y0, t.y1 = get(rank-1), get(rank), get(rank-2), get(rank-1)
	} else {
		t.x0, t.x1, t.y0, t.y1 = get(i-1), get(i), get(i), get(i+1)
	}
	return t
}

// rankedAt returns the d-th most extreme (from 0) of the list's values and
// open (when hasOpen): the list's d-th when open is not among the first d,
// or open, or the list's (d−1)-th.
func rankedAt(list []ranked, d int, open float64, hasOpen, high bool) float64 {
	far := math.Inf(-1)
	if !high {
		far = math.Inf(1)
	}
	get := func(i int) float64 {
		if i >= 0 && i < len(list) {
			return float64(list[i].v)
		}
		if i < 0 {
			return -far
		}
		return far
	}
	if !hasOpen {
		return get(d)
	}
	if high {
		return min(get(d-1), max(get(d), open))
	}
	return max(get(d-1), min(get(d), open))
}

// thinWindow is a sorted window over time that keeps at most max samples:
// one per slot of stride ms (the first to arrive), the stride doubling,
// from a second, each time the window fills. Over a steady series it holds
// between a half and all of max samples spread evenly over its span,
// whatever the series' step; its median and spread are those of the
// window's samples within the error of a sample of that size.
type thinWindow struct {
	w        sortedWindow
	max      int
	stride   int64
	lastSlot int64
	has      bool
	changed  bool // since the median was last read

	// Where the sample evict was told of goes in the value order, while
	// nothing else has changed the window: add then skips its search.
	at  int
	atT int64
}

func newThinWindow(window int64, max int) thinWindow {
	return thinWindow{w: sortedWindow{window: window}, max: max, stride: 1000, at: -1}
}

// thinStart is the room a thinWindow first takes; it doubles up to max as
// samples come, so a short history takes room for what it holds.
const thinStart = 16

// reserve takes at once the room an empty window's doublings would reach
// for a batch of samples at times t: as many as fall within the window's
// span of the last, at most max. A cold evaluation's batch then allocates
// the window once instead of once per doubling (16, 32, … 256). A window
// holding samples grows as they come: which of them the batch evicts is
// not known here.
func (s *thinWindow) reserve(t []int64) {
	if s.w.n > 0 || len(t) == 0 {
		return
	}
	last := t[len(t)-1]
	from, _ := slices.BinarySearch(t, last-s.w.window)
	need := min(len(t)-from, s.max)
	c := len(s.w.vals)
	if need <= c {
		return
	}
	for c < need {
		c = min(max(thinStart, 2*c), s.max)
	}
	s.w.growTo(c)
}

// evict drops the samples older than t − window, before (t, v) is judged
// and offered to add. When add will keep it, the position v takes is
// searched for beside the one the oldest sample leaves (evictFor), the
// two searches' loads overlapping, and handed to add.
func (s *thinWindow) evict(t int64, v float64) {
	s.at = -1
	n := s.w.n
	if s.has && floorDiv(t, s.stride) == s.lastSlot {
		if n > 0 {
			s.w.evictBefore(t)
		}
	} else {
		s.at, s.atT = s.w.evictFor(t, v, true), t
	}
	s.changed = s.changed || s.w.n != n
}

// add offers (t, v), t after every sample held: the sample evict was
// last told of, or another.
func (s *thinWindow) add(t int64, v float64) {
	at := s.at
	if s.atT != t {
		at = -1
	}
	s.at = -1
	slot := floorDiv(t, s.stride)
	if s.has && slot == s.lastSlot {
		return
	}
	for s.w.n >= s.max {
		s.thin()
		at = -1
		if slot = floorDiv(t, s.stride); slot == s.lastSlot {
			return
		}
	}
	if n := len(s.w.vals); s.w.n == n {
		// Room is renumbered, not reordered: at stays where v goes.
		s.w.growTo(min(max(thinStart, 2*n), s.max))
	}
	s.w.pushAt(t, v, at)
	s.lastSlot, s.has, s.changed = slot, true, true
}

// thin doubles the stride and keeps the first sample of each new slot. It
// runs a few times as the window first fills, rarely after.
func (s *thinWindow) thin() {
	s.stride *= 2
	w := &s.w
	ts := make([]int64, 0, w.n)
	vs := make([]float64, 0, w.n)
	prev := int64(math.MinInt64)
	for i := range w.n {
		t := w.ts.oldest()
		w.ts.pop()
		j := w.head + i
		if j >= len(w.vals) {
			j -= len(w.vals)
		}
		if slot := floorDiv(t, s.stride); slot != prev {
			prev = slot
			ts, vs = append(ts, t), append(vs, w.vals[j])
		}
	}
	w.head, w.n = 0, 0
	w.ts = tsQueue{buf: w.ts.buf}
	for i := range ts {
		w.push(ts[i], vs[i])
	}
	s.lastSlot = prev
	s.changed = true
}
