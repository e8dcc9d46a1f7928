package alertmanager

import (
	"slices"
	"testing"
)

func items(names ...string) [][]byte {
	out := make([][]byte, len(names))
	for i, n := range names {
		out[i] = []byte(n)
	}
	return out
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func TestQueue(t *testing.T) {
	var lengths []int
	q := newQueue(3, func(n int) { lengths = append(lengths, n) })
	check := func(got [][]byte, want ...string) {
		t.Helper()
		if !slices.Equal(strs(got), want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("got %q, want %q", strs(got), want)
		}
	}
	push := func(wantDropped int, names ...string) {
		t.Helper()
		d, closed := q.pushBack(items(names...))
		if d != wantDropped || closed {
			t.Fatalf("pushBack(%q): dropped %d closed %v, want dropped %d", names, d, closed, wantDropped)
		}
	}

	push(0, "a", "b")
	push(1, "c", "d") // drops a
	check(q.popFront(10), "b", "c", "d")
	check(q.popFront(10))

	// More than the capacity in one call keeps the newest.
	push(2, "1", "2", "3", "4", "5")
	check(q.popFront(2), "3", "4")

	// A batch put back goes ahead of what came meanwhile; when room is
	// short its own oldest are dropped.
	push(0, "6")
	if d := q.pushFront(items("3", "4")); d != 1 {
		t.Fatalf("pushFront dropped %d, want 1", d)
	}
	check(q.popFront(10), "4", "5", "6")

	// Wrap around the ring many times.
	for i := range 10 {
		push(0, string(rune('a'+i)))
		check(q.popFront(1), string(rune('a'+i)))
	}

	push(0, "x", "y")
	if n := q.drain(); n != 2 {
		t.Fatalf("drain returned %d, want 2", n)
	}
	if d, closed := q.pushBack(items("z")); d != 0 || !closed {
		t.Fatalf("pushBack after drain: dropped %d closed %v, want 0 true", d, closed)
	}
	if q.len() != 0 {
		t.Fatalf("len %d after drain", q.len())
	}
	if last := lengths[len(lengths)-1]; last != 0 {
		t.Fatalf("length gauge ends at %d, want 0", last)
	}
}

func TestQueueWakesOnce(t *testing.T) {
	q := newQueue(4, nil)
	q.pushBack(items("a"))
	q.pushBack(items("b")) // must not block on the full wake channel
	<-q.wake
	select {
	case <-q.wake:
		t.Fatal("two wake-ups queued for two pushes")
	default:
	}
}
