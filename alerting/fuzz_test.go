package alerting

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// FuzzDecodeEvent: any bytes decode to a valid event or an error, and an
// event that decodes encodes and decodes again to the same.
func FuzzDecodeEvent(f *testing.F) {
	ev, _ := NewFindingEvent(pubFinding("p0", 1), "")
	b, _ := json.Marshal(ev)
	f.Add(b)
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"t","time":"2026-01-01T00:00:00Z","data":{}}`))
	f.Add([]byte(`{"specversion":"0.3"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := DecodeEvent(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("a decoded event does not encode: %v", err)
		}
		ev2, err := DecodeEvent(again)
		if err != nil || ev2.ID != ev.ID || ev2.Type != ev.Type || !ev2.Time.Equal(ev.Time) {
			t.Fatalf("round trip: %+v vs %+v (%v)", ev, ev2, err)
		}
	})
}

// FuzzRestore: a state bucket holding anything never crashes the restore,
// and what is restored is consistent.
func FuzzRestore(f *testing.F) {
	store := &memStore{}
	l := NewLifecycle(LifecycleOptions{Store: store})
	l.Process(context.Background(), batchOf(point{0, true, 3}, point{1, true, 3}))
	for _, v := range store.m {
		f.Add(v)
	}
	f.Add([]byte(`{"v":1,"key":"g\u0000r\u0000s","alert":{"State":2}}`))
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := NewLifecycle(LifecycleOptions{Store: &memStore{m: map[string][]byte{"k": b}}})
		n, err := l.Restore(context.Background(), 0)
		if err != nil || n > 1 {
			t.Fatalf("restore: %d, %v", n, err)
		}
		// Whatever was restored goes through an evaluation.
		l.Process(context.Background(), &Batch{Group: "g", At: time.Unix(1e9, 0)})
		for _, a := range l.Firing() {
			if a.Status != StatusFiring {
				t.Fatalf("firing %+v", a)
			}
		}
	})
}
