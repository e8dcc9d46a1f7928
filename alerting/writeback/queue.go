package writeback

import (
	"sync"
	"time"
)

// queue is a bounded FIFO of series waiting to be written, bounded in
// samples. When full, the oldest samples are dropped to make room for the
// newest: a store that has been away wants the recent past first. It is
// safe for concurrent use.
type queue struct {
	mu      sync.Mutex
	items   []*series // items[head:] are held, oldest first
	head    int
	samples int // samples held
	cap     int
	closed  bool // set by drain: nothing is accepted any more

	// wake has room for one signal: a push after the worker found the
	// queue short of a batch wakes it, further pushes need not.
	wake chan struct{}

	onLen func(samples int) // called with the new length, under mu
}

func newQueue(capacity int, onLen func(int)) *queue {
	if onLen == nil {
		onLen = func(int) {}
	}
	q := &queue{cap: capacity, wake: make(chan struct{}, 1), onLen: onLen}
	onLen(0)
	return q
}

// pushBack appends ss, oldest first, then drops the oldest samples held
// (the oldest of ss when ss alone exceed the capacity) until the queue is
// within its capacity. It returns how many samples it dropped and whether
// the queue was closed, in which case it takes nothing.
func (q *queue) pushBack(ss []*series) (dropped int, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, true
	}
	n := 0
	for _, s := range ss {
		if len(s.t) == 0 {
			continue
		}
		q.items = append(q.items, s)
		q.samples += len(s.t)
		n++
	}
	if over := q.samples - q.cap; over > 0 {
		q.dropOldest(over)
		dropped = over
	}
	q.onLen(q.samples)
	if n > 0 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return dropped, false
}

// pushFront puts back series that could not be written, ahead of what
// arrived meanwhile: they are older than everything held, so when room is
// short their own oldest samples are the ones dropped; it returns how many.
// A closed queue still takes them back, so that drain counts them.
func (q *queue) pushFront(ss []*series) (dropped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	total := 0
	for _, s := range ss {
		total += len(s.t)
	}
	room := q.cap - q.samples
	skip := max(total-room, 0) // the oldest samples of ss that do not fit
	dropped = skip
	var keep []*series
	for _, s := range ss {
		switch {
		case skip >= len(s.t):
			skip -= len(s.t)
			continue
		case skip > 0:
			s.t, s.v = s.t[skip:], s.v[skip:]
			skip = 0
		}
		keep = append(keep, s)
	}
	if len(keep) > 0 {
		if q.head >= len(keep) {
			q.head -= len(keep)
			copy(q.items[q.head:], keep)
		} else {
			q.items = append(keep, q.items[q.head:]...)
			q.head = 0
		}
		for _, s := range keep {
			q.samples += len(s.t)
		}
	}
	q.onLen(q.samples)
	return dropped
}

// popFront removes and returns the oldest series holding up to max
// samples in all, splitting the last one taken when it holds more than
// the room left: its newer samples stay at the front.
func (q *queue) popFront(max int) []*series {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*series
	n := 0
	for q.head < len(q.items) && n < max {
		s := q.items[q.head]
		if room := max - n; len(s.t) > room {
			part := &series{key: s.key, labels: s.labels, t: s.t[:room:room], v: s.v[:room:room], at: s.at}
			s.t, s.v = s.t[room:], s.v[room:]
			out = append(out, part)
			n += room
			break
		}
		out = append(out, s)
		n += len(s.t)
		q.items[q.head] = nil
		q.head++
	}
	q.samples -= n
	q.compact()
	q.onLen(q.samples)
	return out
}

// state is the number of samples held and when the oldest was queued.
func (q *queue) state() (samples int, oldest time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head < len(q.items) {
		oldest = q.items[q.head].at
	}
	return q.samples, oldest
}

// drain closes the queue to new series and empties it, returning how many
// samples it held.
func (q *queue) drain() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	n := q.samples
	clear(q.items)
	q.items, q.head, q.samples = q.items[:0], 0, 0
	q.onLen(0)
	return n
}

// dropOldest forgets the k oldest samples; mu is held and k <= samples.
func (q *queue) dropOldest(k int) {
	q.samples -= k
	for k > 0 {
		s := q.items[q.head]
		if len(s.t) > k {
			s.t, s.v = s.t[k:], s.v[k:]
			break
		}
		k -= len(s.t)
		q.items[q.head] = nil
		q.head++
	}
	q.compact()
}

// compact moves the held items to the start of the slice once the space
// before them outgrows them; mu is held.
func (q *queue) compact() {
	if q.head == 0 || q.head < len(q.items)-q.head {
		return
	}
	n := copy(q.items, q.items[q.head:])
	clear(q.items[n:])
	q.items, q.head = q.items[:n], 0
}
