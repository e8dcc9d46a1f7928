package analysis

import (
	"math"
	"sync"

	"github.com/inferwatch/inferwatch/internal/order"
)

// windowFit is what robust scores a sample against: the median of a window
// and its spread, the larger of 1.4826·MAD and the spread of its central
// 90% (see Robust).
type windowFit struct {
	median, spread float64
}

// fitter fits the median, the MAD and the 5% and 95% quantiles of a sliding
// window by selection (no sort), one fit after another, each guided by
// those before.
//
// Between two fits a fraction of the window changes, and each statistic
// moves a little from where the last fit found it. So a fit leaves zones
// behind: a bracket of values around each order statistic it found, and
// two around m − MAD and m + MAD. The fitter keeps, for each zone, how many
// of the window's values lie below it (updated as samples leave, and as
// they arrive at the next fit) and the ring slots of the values inside it.
// The next fit selects each order statistic among the values of its zone
// alone, when its ranks fall there (a fifth of a 240-sample window for the
// median, a tenth for each tail quantile, less for longer windows), and the
// MAD among the distances from the new median of the values of zones 3
// and 4: the values between those zones are nearer to it than any distance
// in question, and those outside them farther.
//
// When a rank falls outside its zone, the zones are collected anew around
// the last fit, in one pass over the window; when that fails too, the fit
// selects among all the window's values and collects the zones around
// what it finds. The results are exact either way: a zone only decides
// where to select.
type fitter struct {
	fitted bool       // whether last holds a fit
	last   [4]float64 // its Q(0.05), median, Q(0.95) and MAD
	spread float64    // and its spread, the unit of the zones' widths

	// The zones: zone z is [lo[z], hi[z]] (empty when lo > hi), and its
	// slots are slots[end[z−1]:end[z]], in the order their samples
	// arrived; inner is the open range between zones 3 and 4.
	zoned            bool
	lo, hi           [nZones]float64
	innerLo, innerHi float64
	below            [3]int // values of the window below zones 0, 1, 2
	inner            int    // values of the window in the inner range
	slots            []uint16
	end              [nZones]int
	// The window as the zones last saw it: the ring's head and capacity,
	// and how many of its samples the window still holds; those that
	// left are the slots from head0 on.
	head0, cap0, kept, left int
	narrow                  int // zones are collected 2^narrow times narrower (see store)

	// Fits made, those made from zones collected anew, and those made
	// from the whole window (for tests and measurements).
	fits, collects, wholes int
}

// nZones is the number of zones a fitter keeps.
const nZones = 5

// Zone half-widths, in units of the last fit's spread (σ for normal data)
// for a window of 240 samples, and as 1/√n for others, as the statistics'
// own noise goes. Measured on normal noise with a fit every third of the
// window: narrower zones are left more often (at 0.15/0.3/0.15, 37% of
// fits at 240 samples collect anew, against 5% here) and wider ones take
// longer to select in; these cost least, at 240 and 1,440 samples alike.
const (
	zoneMid  = 0.25 // the median
	zoneTail = 0.45 // the 5% and 95% quantiles
	zoneMAD  = 0.25 // m − MAD and m + MAD
)

// maxNarrow is the most a fitter narrows its zones (see store).
const maxNarrow = 4

// maxZoned is the largest ring a fitter keeps zones for: slots are
// 16-bit.
const maxZoned = 1 << 16

// evict tells the fitter that the window's oldest sample, x, has left.
func (f *fitter) evict(x float64) {
	if !f.zoned {
		return
	}
	if f.kept == 0 { // a sample that arrived after the zones were updated
		f.zoned = false
		return
	}
	f.kept--
	f.left++
	f.below[0] -= b2i(x < f.lo[0])
	f.below[1] -= b2i(x < f.lo[1])
	f.below[2] -= b2i(x < f.lo[2])
	f.inner -= b2i(x > f.innerLo) & b2i(x < f.innerHi)
}

// moved tells the fitter that the ring's slots were renumbered.
func (f *fitter) moved() { f.zoned = false }

// fitScratch holds the buffers that fits select in: selection reorders
// what it selects among, so values are copied there first. What a buffer
// held before is never read: the pool carries no state between fits, only
// memory, shared by the fitters of all series.
var fitScratch = sync.Pool{New: func() any { return new(scratch) }}

// scratch is a fit's working memory: values to select among, and the
// zones' slots as they are rebuilt.
type scratch struct {
	vals  []float64
	slots []uint16
}

// ringRange returns the ring vals' n values from head on as two segments.
func ringRange(vals []float64, head, n int) (a, b []float64) {
	a = vals[head:min(head+n, len(vals))]
	return a, vals[:n-len(a)]
}

// fit returns the fit of the n values held by the ring vals from head on:
// at least one, none NaN.
func (f *fitter) fit(vals []float64, head, n int) windowFit {
	f.fits++
	s := fitScratch.Get().(*scratch)
	defer fitScratch.Put(s)
	if cap(s.vals) < n {
		s.vals = make([]float64, n)
	}
	if cap(s.slots) < nZones*n {
		s.slots = make([]uint16, nZones*n)
	}
	var (
		m, d float64
		q    [2]float64
		ok   bool
	)
	if f.zoned && len(vals) == f.cap0 && f.advance(vals, head, n, s.slots) {
		m, q, d, ok = f.pick(vals, n, s.vals)
	}
	if !ok && f.fitted && f.collect(vals, head, n, f.last, f.spread, s.slots) {
		m, q, d, ok = f.pick(vals, n, s.vals)
		f.collects += b2i(ok)
	}
	if !ok {
		f.wholes++
		a, b := ringRange(vals, head, n)
		m, q, d = whole(a, b, n, s.vals)
	}
	fit := spreadFit(m, d, q, n)
	f.fitted, f.last, f.spread = true, [4]float64{q[0], m, q[1], d}, fit.spread
	if !ok {
		f.collect(vals, head, n, f.last, f.spread, s.slots)
	}
	return fit
}

// collect sets the zones around the statistics st of a fit with spread sp
// and collects their slots and counts from the window, in one pass; it
// reports false, leaving the fitter without zones, when it cannot (a
// spread of 0 or too large for brackets, a ring too large for 16-bit
// slots). out holds nZones·n slots.
func (f *fitter) collect(vals []float64, head, n int, st [4]float64, sp float64, out []uint16) bool {
	f.zoned = false
	if len(vals) > maxZoned || !(sp > 0) || sp == math.MaxFloat64 {
		return false
	}
	unit := sp * math.Sqrt(240/float64(n)) / float64(int(1)<<f.narrow)
	ht, hm, hd := zoneTail*unit, zoneMid*unit, zoneMAD*unit
	q0, m, q1, d := st[0], st[1], st[2], st[3]
	f.lo = [nZones]float64{q0 - ht, m - hm, q1 - ht, m - d - hd, m + d - hd}
	f.hi = [nZones]float64{q0 + ht, m + hm, q1 + ht, m - d + hd, m + d + hd}
	f.innerLo, f.innerHi = f.hi[3], f.lo[4]
	if !(f.hi[3] < f.lo[4]) { // zones 3 and 4 meet: one zone, no inner range
		f.hi[3] = f.hi[4]
		f.lo[4], f.hi[4] = math.Inf(1), math.Inf(-1)
		f.innerLo, f.innerHi = 0, 0
	}
	l0, l1, l2, l3, l4 := f.lo[0], f.lo[1], f.lo[2], f.lo[3], f.lo[4]
	h0, h1, h2, h3, h4 := f.hi[0], f.hi[1], f.hi[2], f.hi[3], f.hi[4]
	il, ih := f.innerLo, f.innerHi
	z0, z1, z2, z3, z4 := out[:n], out[n:2*n], out[2*n:3*n], out[3*n:4*n], out[4*n:5*n]
	var c0, c1, c2, ci, g0, g1, g2, g3, g4 int
	a, b := ringRange(vals, head, n)
	for _, sg := range [2]struct {
		v    []float64
		base int
	}{{a, head}, {b, 0}} {
		for i, x := range sg.v {
			sl := uint16(sg.base + i)
			c0 += b2i(x < l0)
			c1 += b2i(x < l1)
			c2 += b2i(x < l2)
			ci += b2i(x > il) & b2i(x < ih)
			z0[g0] = sl
			g0 += b2i(x >= l0) & b2i(x <= h0)
			z1[g1] = sl
			g1 += b2i(x >= l1) & b2i(x <= h1)
			z2[g2] = sl
			g2 += b2i(x >= l2) & b2i(x <= h2)
			z3[g3] = sl
			g3 += b2i(x >= l3) & b2i(x <= h3)
			z4[g4] = sl
			g4 += b2i(x >= l4) & b2i(x <= h4)
		}
	}
	var ends [nZones]int
	o := 0
	for z, g := range [nZones]int{g0, g1, g2, g3, g4} {
		o += copy(out[o:], out[z*n:z*n+g])
		ends[z] = o
	}
	f.below, f.inner = [3]int{c0, c1, c2}, ci
	f.head0, f.cap0, f.kept, f.left = head, len(vals), n, 0
	return f.store(out[:o], ends, n)
}

// store keeps the zones' slots, unless they are more than the window's n
// samples (a short window, or values bunched on the statistics), which
// would cost as much memory as the ring itself: then the zones are
// collected narrower the next time, down to a sixteenth, and wider again
// once they hold less than 40% of the window.
func (f *fitter) store(slots []uint16, ends [nZones]int, n int) bool {
	if len(slots) > n {
		f.zoned, f.slots = false, nil
		f.narrow = min(f.narrow+1, maxNarrow)
		return false
	}
	if 5*len(slots) < 2*n && f.narrow > 0 {
		f.narrow--
	}
	if cap(f.slots) < len(slots) {
		f.slots = make([]uint16, 0, len(slots)+len(slots)/8+8)
	}
	f.slots, f.end, f.zoned = append(f.slots[:0], slots...), ends, true
	return true
}

// advance brings the zones up to the window the ring holds now: the slots
// of the samples that left, a prefix of each zone's, are dropped, and the
// samples that arrived are counted and added; it reports false, leaving
// the fitter without zones, when store refuses them. out holds nZones·n
// slots.
func (f *fitter) advance(vals []float64, head, n int, out []uint16) bool {
	added := n - f.kept
	first := head + f.kept // the ring position of the first arrival
	if first >= len(vals) {
		first -= len(vals)
	}
	a, b := ringRange(vals, first, added)
	var ends [nZones]int
	o, start := 0, 0
	for z := range nZones {
		zs := f.slots[start:f.end[z]]
		start = f.end[z]
		k := 0
		for ; k < len(zs); k++ {
			rel := int(zs[k]) - f.head0
			if rel < 0 {
				rel += f.cap0
			}
			if rel >= f.left {
				break
			}
		}
		o += copy(out[o:], zs[k:])
		lo, hi := f.lo[z], f.hi[z]
		for i, x := range a {
			out[o] = uint16(first + i)
			o += b2i(x >= lo) & b2i(x <= hi)
		}
		for i, x := range b {
			out[o] = uint16(i)
			o += b2i(x >= lo) & b2i(x <= hi)
		}
		ends[z] = o
	}
	l0, l1, l2, il, ih := f.lo[0], f.lo[1], f.lo[2], f.innerLo, f.innerHi
	c0, c1, c2, ci := f.below[0], f.below[1], f.below[2], f.inner
	for _, seg := range [2][]float64{a, b} {
		for _, x := range seg {
			c0 += b2i(x < l0)
			c1 += b2i(x < l1)
			c2 += b2i(x < l2)
			ci += b2i(x > il) & b2i(x < ih)
		}
	}
	f.below, f.inner = [3]int{c0, c1, c2}, ci
	f.head0, f.kept, f.left = head, n, 0
	return f.store(out[:o], ends, n)
}

// pick finds the statistics of the window of n values from the zones; ok
// is false when a rank falls outside its zone. w holds n values.
func (f *fitter) pick(vals []float64, n int, w []float64) (m float64, q [2]float64, d float64, ok bool) {
	zone := func(z int) []uint16 {
		if z == 0 {
			return f.slots[:f.end[0]]
		}
		return f.slots[f.end[z-1]:f.end[z]]
	}
	// stat returns the order statistic of rank r and, when next is set,
	// that of rank r+1, from zone z.
	stat := func(z, r int, next bool) (x, y float64, ok bool) {
		sl := zone(z)
		i := r - f.below[z]
		if i < 0 || i+b2i(next) >= len(sl) {
			return 0, 0, false
		}
		v := w[:len(sl)]
		for j, k := range sl {
			v[j] = vals[k]
		}
		x, y = pair(v, i, next)
		return x, y, true
	}
	mid, even := (n-1)/2, n&1 == 0
	x, y, ok := stat(1, mid, even)
	if !ok {
		return 0, q, 0, false
	}
	m = x
	if even {
		m = x/2 + y/2
	}
	if n >= 2 {
		for j, p := range [2]float64{tailP, 1 - tailP} {
			h := p * float64(n-1)
			i := int(h)
			x, y, ok := stat(2*j, i, true)
			if !ok {
				return 0, q, 0, false
			}
			q[j] = x + (h-float64(i))*(y-x)
		}
	}
	// The MAD. Values of the inner range are nearer to m than dIn, those
	// outside zones 3 and 4 farther than dOut, each bound rounded as the
	// distances are; the distances of the zones' values between the two
	// are selected among, those below dIn counted.
	dIn, dOut := 0.0, min(m-f.lo[3], f.hi[3]-m)
	if f.lo[4] <= f.hi[4] {
		dIn, dOut = max(m-f.innerLo, f.innerHi-m), min(m-f.lo[3], f.hi[4]-m)
	}
	nb, nd := f.inner, 0
	for _, k := range f.slots[f.end[2]:f.end[4]] {
		dx := math.Abs(vals[k] - m)
		nb += b2i(dx < dIn)
		w[nd] = dx
		nd += b2i(dx >= dIn) & b2i(dx <= dOut)
	}
	i := mid - nb
	if i < 0 || i+b2i(even) >= nd {
		return 0, q, 0, false
	}
	d, d1 := pair(w[:nd], i, even)
	if even {
		d = d/2 + d1/2
	}
	return m, q, d, true
}

// whole is fit by selection among all the window's values, a then b; w
// holds n values.
func whole(a, b []float64, n int, w []float64) (m float64, q [2]float64, d float64) {
	w = w[:n]
	copy(w[copy(w, a):], b)
	mid, even := (n-1)/2, n&1 == 0
	m = order.SelectIn(w, 0, n, mid)
	if even {
		m = m/2 + order.Min(w[mid+1:])/2
	}
	if n >= 2 {
		q = [2]float64{quantileAround(w, mid, tailP), quantileAround(w, mid, 1-tailP)}
	}
	for i, x := range w {
		w[i] = math.Abs(x - m)
	}
	d, d1 := pair(w, mid, even)
	if even {
		d = d/2 + d1/2
	}
	return m, q, d
}

// spreadFit returns the fit of a window of n values with median m, MAD d
// and 5% and 95% quantiles q.
func spreadFit(m, d float64, q [2]float64, n int) windowFit {
	s := madScale * d
	if n >= 2 {
		s = max(s, (q[1]-q[0])/tailSigmas)
	}
	if math.IsInf(s, 0) || math.IsNaN(s) { // opposite extremes
		s = math.MaxFloat64
	}
	return windowFit{median: m, spread: s}
}

// quantileAround returns the q-quantile (0 ≤ q < 1) of w, at least two
// values (type 7, as sortedWindow.quantile), where selectIn has put the
// order statistic mid in place: it selects on q's side of mid only, and
// leaves w[mid] where it is.
func quantileAround(w []float64, mid int, q float64) float64 {
	n := len(w)
	h := q * float64(n-1)
	i := int(h)
	var x, y float64
	switch {
	case i < mid:
		x = order.SelectIn(w, 0, mid, i)
		y = w[mid]
		if i+1 < mid {
			y = order.Min(w[i+1 : mid])
		}
	case i == mid:
		x, y = w[mid], order.Min(w[mid+1:])
	default:
		x = order.SelectIn(w, mid+1, n, i)
		y = order.Min(w[i+1:])
	}
	return x + (h-float64(i))*(y-x)
}

// pair returns the order statistic of rank r of v and, when next is set,
// that of rank r+1 (which must exist); v is reordered.
func pair(v []float64, r int, next bool) (x, y float64) {
	x = order.SelectIn(v, 0, len(v), r)
	if next {
		y = order.Min(v[r+1:])
	}
	return x, y
}
