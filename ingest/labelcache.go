package ingest

import (
	"hash/maphash"
	"io"
	"sync"
	"time"
)

// labelCache keeps the labels decoded from the "metric" objects of a
// client's responses, by a 128-bit hash of the object's bytes, so that a
// series met again (every cycle, for a daemon) is not decoded again and
// shares one Labels with every earlier answer: VictoriaMetrics and
// Prometheus write a series' labels the same way each time. It holds two
// generations of at most max entries, a generation lasting at most
// labelCacheAge: an entry not met during a whole generation is dropped
// with the older one, so the labels of series that stopped (pods gone)
// are not kept for long.
type labelCache struct {
	seeds [2]maphash.Seed
	now   func() time.Time

	mu       sync.Mutex
	cur, old map[[2]uint64]Labels
	max      int
	born     time.Time // when cur began
}

// labelCacheAge is the longest a generation of the label cache lasts: the
// labels of a series met every evaluation of a group whose interval is
// shorter stay cached, and those of series that stopped go within twice
// that.
const labelCacheAge = 2 * time.Minute

func newLabelCache(max int) *labelCache {
	return &labelCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		cur: map[[2]uint64]Labels{}, max: max, now: time.Now, born: time.Now()}
}

func (lc *labelCache) key(raw []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(lc.seeds[0], raw), maphash.Bytes(lc.seeds[1], raw)}
}

func (lc *labelCache) get(k [2]uint64) (Labels, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.now().Sub(lc.born) >= labelCacheAge {
		lc.rotate()
	}
	if ls, ok := lc.cur[k]; ok {
		return ls, true
	}
	if ls, ok := lc.old[k]; ok {
		lc.add(k, ls)
		return ls, true
	}
	return nil, false
}

func (lc *labelCache) put(k [2]uint64, ls Labels) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.add(k, ls)
}

// add puts an entry in the current generation, starting a new one when
// it is full or old. The caller holds mu.
func (lc *labelCache) add(k [2]uint64, ls Labels) {
	if len(lc.cur) >= lc.max || lc.now().Sub(lc.born) >= labelCacheAge {
		lc.rotate()
	}
	lc.cur[k] = ls
}

// rotate starts a new generation. The caller holds mu.
func (lc *labelCache) rotate() {
	lc.old, lc.cur = lc.cur, make(map[[2]uint64]Labels, len(lc.cur))
	lc.born = lc.now()
}

func (lc *labelCache) len() int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return len(lc.cur) + len(lc.old)
}

// metric reads the "metric" object of a series, its '{' not consumed yet,
// into the series' labels. With a label cache, the object is first
// skipped (validated) and its bytes hashed: labels met before are taken
// from the cache, shared and not to be modified; others are decoded from
// the bytes and cached once the series is committed. The errors are those
// of decoding it directly.
func (d *decoder) metric() bool {
	if d.lc == nil || d.shared != nil || len(d.labels) > d.lcur {
		// No cache, or a second "metric" of one series (not cached).
		if d.shared != nil {
			for _, l := range d.shared {
				d.addLabel(l)
			}
			d.shared = nil
		}
		d.cacheAs = nil
		return d.metricObject()
	}
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return d.fail("expected '{'")
	}
	at := d.off(d.i)
	d.capturing, d.capAt, d.deferred = true, d.i, d.deferred[:0]
	ok := d.skip(0)
	d.capturing = false
	if !ok {
		return false
	}
	raw := d.b[d.capAt:d.i]
	if len(d.deferred) > 0 {
		d.deferred = append(d.deferred, raw...)
		raw = d.deferred
	}
	d.hash = d.lc.key(raw)
	if ls, ok := d.lc.get(d.hash); ok {
		d.shared = ls
		return true
	}
	// Decode the object from its bytes, the window set aside.
	b, i, base, r, rerr := d.b, d.i, d.base, d.r, d.rerr
	d.b, d.i, d.base, d.r, d.rerr = raw, 0, at, nil, io.EOF
	ok = d.metricObject()
	if ok {
		sortLabels(d.labels[d.lcur:])
		d.cacheAs = &d.hash
	}
	d.b, d.i, d.base, d.r, d.rerr = b, i, base, r, rerr
	return ok
}

// metricObject decodes a "metric" object into the labels of the series.
func (d *decoder) metricObject() bool {
	if !d.expect('{') {
		return false
	}
	return d.object(func(name []byte) bool {
		n := d.intern(name)
		vb, ok := d.strBytes()
		if !ok {
			return false
		}
		d.addLabel(Label{Name: n, Value: d.intern(vb)})
		return true
	}) == nil
}
