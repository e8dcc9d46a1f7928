package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// ReplayOptions configure Replay. Groups and Querier are required.
type ReplayOptions struct {
	// Groups are the rule groups, as rulefmt reads them.
	Groups []rulefmt.Group
	// Querier holds the series the rules query: a *MemoryStore, or a store.
	Querier Querier
	// From is the first evaluation time and To the last; the clock steps
	// by Step between them. Step 0 evaluates once, at From.
	From, To time.Time
	Step     time.Duration
	// Backfill makes the first evaluation of each rule also report what
	// it finds in this much history, as `inferwatch run --backfill` does.
	Backfill time.Duration
	// Scores asks the anomaly and window rules for their scores (see
	// ManagerOptions.Scores).
	Scores ScorePoints
	// Lifecycle configures the alert lifecycle the rules' observations
	// run through.
	Lifecycle alerting.LifecycleOptions
	// Rewrite, when set, rewrites the forecast each scale rule decides
	// on: it is called with the scale rule's group and name and a copy of
	// its forecast rule's forecast of a series, which it may change, and
	// the rule then reads the peaks of what it left. A what-if replay
	// asks with it what the scale rule would do on another forecast.
	Rewrite func(group, rule string, fc *forecasting.Forecast)
	// Logger receives what the manager logs, the rules' notes among them
	// (warnings); nil discards it.
	Logger *slog.Logger
}

// Replay runs rule groups over recorded series as the daemon would have
// run them, as vmalert's replay does: a Manager evaluates every group at
// each time of a stepped clock, the rules keep their warm-up and state
// from one evaluation to the next, and what they find goes through the
// alert lifecycle. The offline commands judge and replay files with it, so
// what they report is what the daemon's rules do.
//
// It evaluates the groups at each time of the clock, in order, and
// hands each group's batch of every evaluation to each, once the alert
// lifecycle has processed it (findings and alert events added), in the
// order of the groups. It stops at the first evaluation that fails, at
// the first error each returns, or when ctx is done. A group with shards
// is replayed whole, as one group: one process judges all its series.
func Replay(ctx context.Context, o ReplayOptions, each func(alerting.Batch) error) error {
	switch {
	case o.Querier == nil:
		return errors.New("rules: ReplayOptions needs a Querier")
	case !o.To.IsZero() && o.To.Before(o.From):
		return fmt.Errorf("rules: a replay from %s to %s ends before it starts", o.From.UTC().Format(time.RFC3339), o.To.UTC().Format(time.RFC3339))
	case o.Step <= 0 && !o.To.Equal(o.From) && !o.To.IsZero():
		return errors.New("rules: a replay over a span needs a Step")
	}
	groups, err := Build(unsharded(o.Groups))
	if err != nil {
		return err
	}
	col := &batches{}
	var now time.Time
	m, err := NewManager(ManagerOptions{
		Querier:      o.Querier,
		Sink:         &alerting.Pipeline{Lifecycle: alerting.NewLifecycle(o.Lifecycle), Receivers: []alerting.Receiver{col}},
		Backfill:     o.Backfill,
		Scores:       o.Scores,
		SummaryEvery: -1,
		Now:          func() time.Time { return now },
		Logger:       o.Logger,
	}, groups)
	if err != nil {
		return err
	}
	m.rewrite = o.Rewrite
	order := make(map[string]int, len(groups))
	for i, g := range groups {
		order[g.Name()] = i
	}
	for now = o.From; ; now = now.Add(o.Step) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("replay interrupted at %s: %w", now.UTC().Format(time.RFC3339), err)
		}
		col.got = col.got[:0]
		if err := m.RunOnce(ctx); err != nil {
			return fmt.Errorf("evaluating at %s: %w", now.UTC().Format(time.RFC3339), err)
		}
		// The groups are evaluated at once; their batches go on in the
		// groups' order.
		slices.SortStableFunc(col.got, func(a, b alerting.Batch) int { return order[a.Group] - order[b.Group] })
		for _, b := range col.got {
			if err := each(b); err != nil {
				return err
			}
		}
		if o.Step <= 0 || now.Add(o.Step).After(o.To) {
			return nil
		}
	}
}

// batches keeps the batches of one evaluation of the groups.
type batches struct {
	mu  sync.Mutex
	got []alerting.Batch
}

func (c *batches) Send(_ context.Context, b alerting.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, b)
	return nil
}

// MemoryStore is a store in memory for Replay: the series each query
// returns, as a recording holds them. It answers a range query as a
// Prometheus-compatible store answers a query on the step grid, each point
// the newest sample of the step before it, with the samples in
// (start − step, end], each at its own time: consecutive ranges on the
// step's grid, as the rules ask for, return every sample once. A query it
// holds no series for is an error naming it. Queries may run concurrently;
// Add may be called between evaluations.
type MemoryStore struct {
	mu      sync.RWMutex
	byQuery map[string][]*ingest.Series
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{byQuery: map[string][]*ingest.Series{}} }

// Add adds samples to the series of query with these labels, after those
// it holds (t ascending, each after the series' newest).
func (s *MemoryStore) Add(query string, labels ingest.Labels, t []int64, v []float64) error {
	if len(t) != len(v) {
		return fmt.Errorf("rules: %d timestamps and %d values for %s", len(t), len(v), labels)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ser *ingest.Series
	for _, x := range s.byQuery[query] {
		if x.Labels.String() == labels.String() {
			ser = x
			break
		}
	}
	if ser == nil {
		ser = &ingest.Series{Labels: labels}
		s.byQuery[query] = append(s.byQuery[query], ser)
	}
	for i, ti := range t {
		if n := len(ser.Timestamps); n > 0 && ti <= ser.Timestamps[n-1] {
			return fmt.Errorf("rules: a sample of %s at %d ms is not after the newest, at %d ms", labels, ti, ser.Timestamps[n-1])
		}
		ser.Timestamps = append(ser.Timestamps, ti)
		ser.Values = append(ser.Values, v[i])
	}
	return nil
}

// QueryRange returns the samples of query's series in (start − step, end].
func (s *MemoryStore) QueryRange(_ context.Context, query string, start, end time.Time, step time.Duration) ([]ingest.Series, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	held, ok := s.byQuery[query]
	if !ok {
		return nil, fmt.Errorf("the replay's store holds no series for the query %q", query)
	}
	from, to := start.Add(-step).UnixMilli(), end.UnixMilli()
	var out []ingest.Series
	for _, ser := range held {
		lo := sort.Search(len(ser.Timestamps), func(i int) bool { return ser.Timestamps[i] > from })
		hi := sort.Search(len(ser.Timestamps), func(i int) bool { return ser.Timestamps[i] > to })
		if lo >= hi {
			continue
		}
		// A copy: a rule cleans what it is given in place.
		out = append(out, ingest.Series{Labels: ser.Labels, Timestamps: slices.Clone(ser.Timestamps[lo:hi]), Values: slices.Clone(ser.Values[lo:hi])})
	}
	return out, nil
}
