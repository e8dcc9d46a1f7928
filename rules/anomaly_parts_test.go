package rules

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"math"
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

// partStore is memStore handing each range over as *ingest.Client does:
// time chunks of chunk points, oldest first, and within a chunk one part
// per series, the chunk's last part with Done. Its failAt-th part (counted
// from 1; 0: none) is an error instead.
type partStore struct {
	memStore
	chunk  int
	failAt int
	parts  int
	ranges int
}

func (p *partStore) QueryRangeParts(ctx context.Context, q string, start, end time.Time, step time.Duration) iter.Seq2[ingest.Part, error] {
	return func(yield func(ingest.Part, error) bool) {
		p.ranges++
		for lo := start; !lo.After(end); lo = lo.Add(time.Duration(p.chunk) * step) {
			hi := lo.Add(time.Duration(p.chunk-1) * step)
			if hi.After(end) {
				hi = end
			}
			got, _ := p.memStore.QueryRange(ctx, q, lo, hi, step)
			for i := range got {
				p.parts++
				if p.parts == p.failAt {
					yield(ingest.Part{}, errPart)
					return
				}
				part := ingest.Part{Series: got[i : i+1]}
				if i == len(got)-1 {
					part.Done = hi
				}
				if !yield(part, nil) {
					return
				}
			}
		}
	}
}

// TestAnomalyRuleJudgesPartsAsTheyArrive: a store that hands a range over
// in time chunks and series shards gives the findings and scores that the
// same range fetched whole gives, and a first evaluation that fails part
// of the way goes on after the last whole chunk.
func TestAnomalyRuleJudgesPartsAsTheyArrive(t *testing.T) {
	now := t0.Add(290 * time.Minute)
	eval := func(q Querier, times int) (*recorder, error) {
		t.Helper()
		out := &recorder{}
		m, err := newTestManager(testOptions{Groups: testGroups(0), Querier: q, Output: out, Scores: ScoresEvery,
			Backfill: 3 * time.Hour, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		for range times {
			err = m.RunOnce(context.Background())
		}
		return out, err
	}
	whole, err := eval(&memStore{series: twoSeries()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ps := &partStore{memStore: memStore{series: twoSeries()}, chunk: 25}
	parts, err := eval(ps, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ps.parts < 10 {
		t.Fatalf("%d parts: the test needs a range in many", ps.parts)
	}
	if len(whole.got) < 3 || !reflect.DeepEqual(sortedFindings(parts.got), sortedFindings(whole.got)) {
		t.Fatalf("findings from parts:\n%+v\nfrom the whole range:\n%+v", parts.got, whole.got)
	}
	if !sameScores(parts.scores, whole.scores) {
		t.Fatalf("scores from parts differ from the whole range's")
	}

	// Failing at the 7th part (chunk 4, its first series): the first
	// evaluation fails; the second goes on and ends where the whole one did.
	fs := &partStore{memStore: memStore{series: twoSeries()}, chunk: 25, failAt: 7}
	resumed, err := eval(fs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if fs.ranges < 2 {
		t.Fatalf("%d ranges asked for", fs.ranges)
	}
	if !reflect.DeepEqual(sortedFindings(resumed.got), sortedFindings(whole.got)) {
		t.Fatalf("findings after resuming:\n%+v\nwithout a failure:\n%+v", resumed.got, whole.got)
	}
}

// sameScores compares scores with NaN (a detector not yet ready) equal
// to NaN.
func sameScores(a, b []alerting.Scores) bool {
	same := func(x, y []float64) bool {
		return slices.EqualFunc(x, y, func(p, q float64) bool { return p == q || math.IsNaN(p) && math.IsNaN(q) })
	}
	return slices.EqualFunc(a, b, func(x, y alerting.Scores) bool {
		return x.Series == y.Series && reflect.DeepEqual(x.Labels, y.Labels) && slices.Equal(x.T, y.T) &&
			same(x.Value, y.Value) && same(x.Score, y.Score) && same(x.Expected, y.Expected) && same(x.Lower, y.Lower) && same(x.Upper, y.Upper)
	})
}
