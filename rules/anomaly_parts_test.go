package rules

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
)

// failingStore is memStore whose failAt-th query (counted from 0) fails,
// as a store timing out on a large request would.
type failingStore struct {
	memStore
	n, failAt int
}

var errPart = errors.New("the store timed out")

func (f *failingStore) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]ingest.Series, error) {
	f.n++
	if f.n-1 == f.failAt {
		f.memStore.mu.Lock()
		f.memStore.calls = append(f.memStore.calls, [2]time.Time{start, end})
		f.memStore.mu.Unlock()
		return nil, errPart
	}
	return f.memStore.QueryRange(ctx, q, start, end, step)
}

func twoSeries() []ingest.Series {
	a := minuteSeries("ttft", 300, map[int]float64{150: 50, 151: 55, 260: 40})
	b := minuteSeries("ttft", 300, map[int]float64{200: 70})
	b.Labels = ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "pod", Value: "p1"}}
	return []ingest.Series{a, b}
}

// TestAnomalyRuleResumesAColdFetch: a first evaluation whose history
// fails after its first part keeps that part; the next evaluation fetches
// from after it, not the whole history again, and reports what an
// evaluation that never failed does.
func TestAnomalyRuleResumesAColdFetch(t *testing.T) {
	now := t0.Add(290 * time.Minute)
	store := &failingStore{memStore: memStore{series: twoSeries()}, failAt: 1}
	out := &recorder{}
	m, err := newTestManager(testOptions{Groups: testGroups(0), Querier: store, Output: out,
		Backfill: 3 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(context.Background()); !errors.Is(err, errPart) {
		t.Fatalf("first evaluation: %v, want the store's error", err)
	}
	calls := store.calls
	if len(calls) != 2 {
		t.Fatalf("first evaluation: %d queries, want the first part and the one that failed", len(calls))
	}
	now = now.Add(time.Minute)
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The first part (60 points) was kept: the next fetch starts after it.
	if got, want := store.calls[2][0], calls[0][1].Add(time.Minute); !got.Equal(want) {
		t.Fatalf("the next evaluation fetches from %v, want %v (after the part kept)", got, want)
	}
	ref := &recorder{}
	m2, err := newTestManager(testOptions{Groups: testGroups(0), Querier: &memStore{series: twoSeries()}, Output: ref,
		Backfill: 3 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(ref.got) < 3 || !reflect.DeepEqual(sortedFindings(out.got), sortedFindings(ref.got)) {
		t.Fatalf("findings after resuming:\n%+v\nwithout a failure:\n%+v", out.got, ref.got)
	}
	// Once the history is whole, evaluations fetch only new points.
	now = now.Add(time.Minute)
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if last := store.calls[len(store.calls)-1]; !last[0].Equal(last[1]) {
		t.Fatalf("a later evaluation fetched %v", last)
	}
}

// sortedFindings orders findings by series, then time.
func sortedFindings(fs []alerting.Finding) []alerting.Finding {
	out := slices.Clone(fs)
	slices.SortFunc(out, func(a, b alerting.Finding) int {
		return cmp.Or(cmp.Compare(a.Series, b.Series), a.WindowEnd.Compare(b.WindowEnd))
	})
	return out
}
