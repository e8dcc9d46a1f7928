package alertmanager

import "sync"

// queue is a bounded FIFO of encoded alerts for one Alertmanager. When full,
// the oldest are dropped to make room for the newest, as Prometheus'
// notifier does: an Alertmanager that has been away wants the latest state
// of each alert first. It is safe for concurrent use.
type queue struct {
	mu     sync.Mutex
	buf    [][]byte // ring of capacity len(buf)
	head   int      // index of the oldest item
	n      int      // items held
	closed bool     // set by drain: nothing is accepted any more

	// wake has room for one signal: a push after the worker found the
	// queue empty wakes it, further pushes need not.
	wake chan struct{}

	onLen func(n int) // called with the new length, under mu
}

func newQueue(capacity int, onLen func(int)) *queue {
	if onLen == nil {
		onLen = func(int) {}
	}
	q := &queue{buf: make([][]byte, capacity), wake: make(chan struct{}, 1), onLen: onLen}
	onLen(0)
	return q
}

// pushBack appends items, oldest first, dropping the oldest held (and, when
// items alone exceed the capacity, the oldest of items) to make room. It
// returns how many it dropped and whether the queue was closed, in which
// case it takes nothing and dropped is 0.
func (q *queue) pushBack(items [][]byte) (dropped int, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, true
	}
	c := len(q.buf)
	if len(items) > c {
		dropped += len(items) - c
		items = items[len(items)-c:]
	}
	if over := q.n + len(items) - c; over > 0 {
		q.dropFront(over)
		dropped += over
	}
	for _, it := range items {
		q.buf[(q.head+q.n)%c] = it
		q.n++
	}
	q.onLen(q.n)
	if len(items) > 0 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return dropped, false
}

// pushFront puts back a batch that could not be delivered, ahead of what
// arrived meanwhile. It is older than everything held, so when room is
// short its own oldest items are the ones dropped; it returns how many.
// A closed queue still takes it back, so that drain counts it.
func (q *queue) pushFront(batch [][]byte) (dropped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := len(q.buf)
	if room := c - q.n; len(batch) > room {
		dropped = len(batch) - room
		batch = batch[dropped:]
	}
	for i := len(batch) - 1; i >= 0; i-- {
		q.head = (q.head - 1 + c) % c
		q.buf[q.head] = batch[i]
		q.n++
	}
	q.onLen(q.n)
	return dropped
}

// popFront removes and returns up to max of the oldest items.
func (q *queue) popFront(max int) [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := min(max, q.n)
	if k == 0 {
		return nil
	}
	out := make([][]byte, k)
	for i := range out {
		out[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.dropFront(k)
	q.onLen(q.n)
	return out
}

// drain closes the queue to new items and empties it, returning how many
// items it held.
func (q *queue) drain() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	n := q.n
	q.dropFront(n)
	q.onLen(0)
	return n
}

// len is the number of items held.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// dropFront forgets the k oldest items; mu is held and k <= n.
func (q *queue) dropFront(k int) {
	c := len(q.buf)
	for i := 0; i < k; i++ {
		q.buf[(q.head+i)%c] = nil
	}
	q.head = (q.head + k) % c
	q.n -= k
}
