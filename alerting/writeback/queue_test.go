package writeback

import (
	"fmt"
	"strings"
	"testing"
)

// mkSeries is a series named key with samples at ts, each valued ts.
func mkSeries(key string, ts ...int64) *series {
	s := &series{key: key}
	for _, t := range ts {
		s.t, s.v = append(s.t, t), append(s.v, float64(t))
	}
	return s
}

// held renders the queue's content as "key:t,t key:t".
func held(q *queue) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var parts []string
	n := 0
	for _, s := range q.items[q.head:] {
		parts = append(parts, fmt.Sprintf("%s:%s", s.key, strings.Trim(fmt.Sprint(s.t), "[]")))
		n += len(s.t)
	}
	if n != q.samples {
		return fmt.Sprintf("count %d, held %d", q.samples, n)
	}
	return strings.Join(parts, " ")
}

func TestQueueDropsOldest(t *testing.T) {
	var lengths []int
	q := newQueue(5, func(n int) { lengths = append(lengths, n) })
	f := func(dropped, want int) {
		t.Helper()
		if dropped != want {
			t.Errorf("dropped %d, want %d", dropped, want)
		}
	}
	d, _ := q.pushBack([]*series{mkSeries("a", 1, 2, 3), mkSeries("b", 1)})
	f(d, 0)
	d, _ = q.pushBack([]*series{mkSeries("c", 1, 2, 3)})
	f(d, 2) // a's 1 and 2
	if got := held(q); got != "a:3 b:1 c:1 2 3" {
		t.Errorf("held %q", got)
	}
	// More than the capacity at once: the oldest of the new go too.
	d, _ = q.pushBack([]*series{mkSeries("d", 1, 2, 3, 4, 5, 6, 7)})
	f(d, 12-5)
	if got := held(q); got != "d:3 4 5 6 7" {
		t.Errorf("held %q", got)
	}
	if got := fmt.Sprint(lengths); got != "[0 4 5 5]" {
		t.Errorf("lengths reported %s", got)
	}
}

func TestQueuePopSplitsAndPushFront(t *testing.T) {
	q := newQueue(10, nil)
	q.pushBack([]*series{mkSeries("a", 1, 2, 3), mkSeries("b", 1, 2, 3, 4)})
	batch := q.popFront(5)
	if got := render(batch); got != "a 1=1 2=2 3=3\nb 1=1 2=2\n" {
		t.Errorf("popped:\n%s", got)
	}
	if got := held(q); got != "b:3 4" {
		t.Errorf("held %q", got)
	}
	// Appending to the popped part must not overwrite what stays queued.
	batch[1].t = append(batch[1].t, 99)
	if got := held(q); got != "b:3 4" {
		t.Errorf("after appending to the popped part, held %q", got)
	}
	batch[1].t = batch[1].t[:2]
	q.pushBack([]*series{mkSeries("c", 1, 2, 3, 4)})
	// 6 held, room for 4 of the 5 put back: the oldest of them goes.
	if d := q.pushFront(batch); d != 1 {
		t.Errorf("pushFront dropped %d, want 1", d)
	}
	if got := held(q); got != "a:2 3 b:1 2 b:3 4 c:1 2 3 4" {
		t.Errorf("held %q", got)
	}
	if n, _ := q.state(); n != 10 {
		t.Errorf("state %d samples, want 10", n)
	}
	if n := q.drain(); n != 10 {
		t.Errorf("drained %d, want 10", n)
	}
	if _, closed := q.pushBack([]*series{mkSeries("x", 1)}); !closed {
		t.Error("a drained queue took more")
	}
}

func TestQueuePushFrontAfterPops(t *testing.T) {
	// Room before the head is reused.
	q := newQueue(100, nil)
	for i := range 8 {
		q.pushBack([]*series{mkSeries(fmt.Sprint(i), 1)})
	}
	a := q.popFront(3)
	q.pushFront(a[1:])
	if got := held(q); got != "1:1 2:1 3:1 4:1 5:1 6:1 7:1" {
		t.Errorf("held %q", got)
	}
}

func TestMerge(t *testing.T) {
	a1, b, a2 := mkSeries("a", 1, 2), mkSeries("b", 1), mkSeries("a", 3)
	got := merge([]*series{a1, b, a2})
	if r := render(got); r != "a 1=1 2=2 3=3\nb 1=1\n" {
		t.Errorf("merged:\n%s", r)
	}
	if len(a1.t) != 2 {
		t.Errorf("merge changed its input: %v", a1.t)
	}
}
