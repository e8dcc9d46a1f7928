package rules

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// barrierStore answers once want requests are in flight together (or
// after 30 s, noting that they never were), and records the most in
// flight at once.
type barrierStore struct {
	memStore
	want           int32
	inflight, most atomic.Int32
	arrived        atomic.Int32
	release        chan struct{}
	timedOut       atomic.Bool
}

func (b *barrierStore) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]ingest.Series, error) {
	n := b.inflight.Add(1)
	defer b.inflight.Add(-1)
	for m := b.most.Load(); n > m && !b.most.CompareAndSwap(m, n); m = b.most.Load() {
	}
	if b.arrived.Add(1) == b.want {
		close(b.release)
	}
	select {
	case <-b.release:
	case <-time.After(30 * time.Second):
		b.timedOut.Store(true)
	}
	return b.memStore.QueryRange(ctx, q, start, end, step)
}

// discardSink takes every batch.
type discardSink struct{}

func (discardSink) Send(context.Context, alerting.Batch) error { return nil }

func threeRules() []rulefmt.Group {
	g := testGroups(0)
	r := g[0].Rules[0]
	for _, name := range []string{"b", "c"} {
		r2 := r
		r2.Name = name
		g[0].Rules = append(g[0].Rules, r2)
	}
	return g
}

// TestGroupRulesFetchConcurrently: the rules of a group are in flight
// together, up to the bound. (One after another, the store would wait in
// vain for the others.)
func TestGroupRulesFetchConcurrently(t *testing.T) {
	f := func(limit int, want int32) {
		t.Helper()
		store := &barrierStore{memStore: memStore{series: []ingest.Series{minuteSeries("ttft", 100, nil)}}, want: want, release: make(chan struct{})}
		groups, err := Build(threeRules())
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager(ManagerOptions{Querier: store, Sink: discardSink{}, MaxConcurrentRules: limit,
			Now: func() time.Time { return t0.Add(99 * time.Minute) }}, groups)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if store.timedOut.Load() || store.most.Load() != want {
			t.Fatalf("bound %d: at most %d in flight (waited in vain: %v), want %d", limit, store.most.Load(), store.timedOut.Load(), want)
		}
	}
	f(4, 3)
	f(2, 2)
}
