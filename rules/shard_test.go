package rules

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Each value lies in exactly one shard, the same in every process and
// release (the table), the shards share the values about evenly, and a
// shard more moves only values to the new shard, about their share.
func TestShardOf(t *testing.T) {
	for value, want := range map[string]int{"vllm-0": 2, "vllm-1": 6, "": 1, "tgi-7f9c": 0} {
		if got := ShardOf(value, 8); got != want {
			t.Errorf("ShardOf(%q, 8) = %d, want %d: the assignment must not change between releases", value, got, want)
		}
	}
	const values = 20000
	for _, n := range []int{1, 2, 3, 8, 64} {
		counts := make([]int, n)
		moved := 0
		for i := range values {
			v := fmt.Sprintf("pod-%d", i)
			s := ShardOf(v, n)
			if s < 0 || s >= n {
				t.Fatalf("ShardOf(%q, %d) = %d, out of range", v, n, s)
			}
			counts[s]++
			if s2 := ShardOf(v, n+1); s2 != s {
				if s2 != n {
					t.Fatalf("going from %d to %d shards moved %q from shard %d to %d, not to the new shard", n, n+1, v, s, s2)
				}
				moved++
			}
		}
		for s, c := range counts {
			// within five standard deviations of a fair share
			if want := values / n; math.Abs(float64(c-want)) > 5*math.Sqrt(float64(want)) {
				t.Errorf("%d shards: shard %d holds %d of %d values, want about %d", n, s, c, values, want)
			}
		}
		if want := values / (n + 1); math.Abs(float64(moved-want)) > 5*math.Sqrt(float64(want)) {
			t.Errorf("going from %d to %d shards moved %d of %d values, want about %d", n, n+1, moved, values, want)
		}
	}
}

// The query of a shard adds one exact matcher to each selector, and the
// queries of the shards together select every series once.
func TestShardQueries(t *testing.T) {
	f := func(query string, values []string, maxLen int, want ...string) {
		t.Helper()
		got, err := ShardQueries(query, "pod", values, maxLen)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ShardQueries(%q, %q):\n got %q\nwant %q", query, values, got, want)
		}
		for _, q := range got {
			if _, err := metricsql.Parse(q); err != nil {
				t.Errorf("%q does not parse: %v", q, err)
			}
		}
	}
	f("ttft", nil, 1000)
	f("ttft", []string{"a", "b"}, 1000, `ttft{pod=~"a|b"}`)
	f(`rate(x{job="v"}[5m]) / rate(y{job="v"}[5m])`, []string{"a.1"}, 1000,
		`rate(x{job="v",pod=~"a\\.1"}[5m]) / rate(y{job="v",pod=~"a\\.1"}[5m])`)
	f(`{a="1" or b="2"}`, []string{"p", ""}, 1000, `{a="1",pod=~"p|" or b="2",pod=~"p|"}`)
	f("ttft", []string{"aaaa", "bbbb", "cccc", "dddd"}, 22, `ttft{pod=~"aaaa|bbbb"}`, `ttft{pod=~"cccc|dddd"}`)
	f("ttft", []string{"aaaa", "bbbb", "cccc"}, 17, `ttft{pod=~"aaaa"}`, `ttft{pod=~"bbbb"}`, `ttft{pod=~"cccc"}`)
	if _, err := ShardQueries("ttft", "pod", []string{"a-very-long-pod-name"}, 20); err == nil || !strings.Contains(err.Error(), "longer than 20") {
		t.Errorf("a value too long for any query: err %v", err)
	}

	// Every series of a selector in the query of exactly one shard.
	var series []ingest.Labels
	var values []string
	for i := range 300 {
		v := fmt.Sprintf("vllm-%d.ns", i)
		values = append(values, v)
		series = append(series, ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "pod", Value: v}})
	}
	series = append(series, ingest.Labels{{Name: "__name__", Value: "ttft"}})
	seen := map[string]int{}
	for shard := range 5 {
		qs, err := ShardQueries("ttft", "pod", ShardValues(values, shard, 5), 512)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if len(q) > 512 {
				t.Errorf("query of %d bytes, over 512", len(q))
			}
			sel, err := ingest.ParseSelector(q)
			if err != nil {
				t.Fatal(err)
			}
			for _, ls := range series {
				if sel.Matches(ls) {
					seen[ls.String()]++
				}
			}
		}
	}
	for _, ls := range series {
		if seen[ls.String()] != 1 {
			t.Errorf("series %s is selected by %d shard queries, want 1", ls, seen[ls.String()])
		}
	}
}

// A group with shards becomes one group per shard with the rules that
// judge each series alone, and one named after it with those that run
// whole: a forecast summing its series and the scale rule reading it.
func TestBuildShards(t *testing.T) {
	cfg, err := rulefmt.Parse([]byte(`source: {url: http://127.0.0.1:8428}
groups:
  - name: latency
    shards: 3
    shard_by: [pod]
    rules:
      - {name: ttft, expr: 'rate(ttft_sum[5m]) / rate(ttft_count[5m])'}
      - name: traffic
        forecast: {expr: requests, history: 6h, period: 1h, sum_by: [model]}
      - name: per_pod
        forecast: {expr: requests, history: 6h, period: 1h}
      - name: rate
        forecast: {expr: load, history: 6h, period: 1h}
      - name: deploy
        scale: {forecast: rate, on: [model], replicas: replicas, capacity_per_replica: 10, hold: 0s}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Groups[0]
	groups, err := Build([]rulefmt.Group{g})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range groups {
		var rs []string
		for _, r := range x.Rules() {
			rs = append(rs, r.Name())
		}
		_, label, index, count, ok := x.Shard()
		got = append(got, fmt.Sprintf("%s %v %s %d/%d: %s", x.Name(), ok, label, index, count, strings.Join(rs, " ")))
	}
	want := []string{
		"latency false  0/0: traffic rate deploy",
		"latency:shard-1-of-3 true pod 0/3: ttft per_pod",
		"latency:shard-2-of-3 true pod 1/3: ttft per_pod",
		"latency:shard-3-of-3 true pod 2/3: ttft per_pod",
	}
	if !slices.Equal(got, want) {
		t.Errorf("units:\n got %q\nwant %q", got, want)
	}
	other := rulefmt.Group{Name: "latency:shard-2-of-3", Interval: time.Minute, Rules: g.Rules[:1]}
	if _, err := Build([]rulefmt.Group{g, other}); err == nil || !strings.Contains(err.Error(), `the name "latency:shard-2-of-3" is taken by group "latency" and by group "latency:shard-2-of-3"`) {
		t.Errorf("a group named as another's shard: err %v", err)
	}
}

// podStore is a store in memory that answers selectors as a store does:
// the series whose labels match, and the values of a label among them.
type podStore struct {
	series []ingest.Series

	mu      sync.Mutex
	queries []string
}

func (s *podStore) match(query string) (*ingest.Selector, error) {
	s.mu.Lock()
	s.queries = append(s.queries, query)
	s.mu.Unlock()
	return ingest.ParseSelector(query)
}

func (s *podStore) QueryRange(_ context.Context, query string, start, end time.Time, _ time.Duration) ([]ingest.Series, error) {
	sel, err := s.match(query)
	if err != nil {
		return nil, err
	}
	var out []ingest.Series
	for _, ser := range s.series {
		if !sel.Matches(ser.Labels) {
			continue
		}
		c := ingest.Series{Labels: ser.Labels}
		for i, t := range ser.Timestamps {
			if t >= start.UnixMilli() && t <= end.UnixMilli() {
				c.Timestamps = append(c.Timestamps, t)
				c.Values = append(c.Values, ser.Values[i])
			}
		}
		if len(c.Timestamps) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *podStore) LabelValues(_ context.Context, name, match string, _, _ time.Time) ([]string, error) {
	sel, err := s.match(match)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, ser := range s.series {
		if v := ser.Labels.Get(name); v != "" && sel.Matches(ser.Labels) {
			set[v] = true
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// unitLeases holds the leases of the groups it is given.
type unitLeases map[string]bool

func (l unitLeases) Acquire(group string) (uint64, func(), bool) {
	return 1, func() {}, l[group]
}

// scoresSink keeps the series each batch scored.
type scoresSink struct {
	mu     sync.Mutex
	series map[string]string // series → group
	twice  []string
}

func (s *scoresSink) Send(_ context.Context, b alerting.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range b.Scores {
		if g, dup := s.series[sc.Series]; dup && g != b.Group {
			s.twice = append(s.twice, sc.Series)
		}
		s.series[sc.Series] = b.Group
	}
	return nil
}

// Three members, each holding the leases of some shards of a group: each
// evaluates only its shards, reads only their series from the store, and
// every series is judged by exactly one of them.
func TestManagerEvaluatesOnlyLeasedShards(t *testing.T) {
	store := &podStore{}
	for i := range 40 {
		s := minuteSeries("ttft", 60, nil)
		s.Labels = ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "pod", Value: fmt.Sprintf("vllm-%d", i)}}
		store.series = append(store.series, s)
	}
	cfg := testGroups(0)
	cfg[0].Shards, cfg[0].ShardBy = 5, []string{"pod"}
	now := t0.Add(59 * time.Minute)
	leases := []unitLeases{{}, {}, {}}
	for i := range 5 {
		leases[i%3][UnitName("latency", i, 5)] = true
	}
	var sinks []*scoresSink
	for _, l := range leases {
		groups, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sink := &scoresSink{series: map[string]string{}}
		sinks = append(sinks, sink)
		m, err := NewManager(ManagerOptions{Querier: store, Sink: sink, Leases: l, Scores: ScoresNewest,
			Backfill: time.Hour, Now: func() time.Time { return now }}, groups)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range m.Groups() {
			m.evalHeld(context.Background(), g, now)
		}
	}
	judged := map[string]int{}
	for i, s := range sinks {
		if len(s.twice) > 0 {
			t.Errorf("member %d judged %q in two of its shards", i, s.twice)
		}
		for ser, g := range s.series {
			judged[ser]++
			if !leases[i][g] {
				t.Errorf("member %d judged %s in %s, whose lease it does not hold", i, ser, g)
			}
		}
	}
	for _, ser := range store.series {
		if key := ser.Labels.String(); judged[key] != 1 {
			t.Errorf("%s judged by %d members, want 1", key, judged[key])
		}
	}
	if len(sinks[0].series) == 0 || len(sinks[0].series) == len(store.series) {
		t.Errorf("member 0, with 2 of 5 shards, judged %d of %d series", len(sinks[0].series), len(store.series))
	}
	for _, q := range store.queries {
		if !strings.Contains(q, `pod=~`) && q != "ttft" {
			t.Errorf("the store was asked %q, which is not one shard's", q)
		}
	}
}

// A replay judges a group with shards whole, over a store that cannot
// list a label's values.
func TestReplayShardedGroupWhole(t *testing.T) {
	cfg := testGroups(0)
	cfg[0].Shards, cfg[0].ShardBy = 4, []string{"pod"}
	store := NewMemoryStore()
	s := minuteSeries("ttft", 60, map[int]float64{50: 80})
	if err := store.Add("ttft", s.Labels, s.Timestamps, s.Values); err != nil {
		t.Fatal(err)
	}
	groups := map[string]bool{}
	findings := 0
	err := Replay(context.Background(), ReplayOptions{Groups: cfg, Querier: store, From: t0.Add(59 * time.Minute), Backfill: time.Hour},
		func(b alerting.Batch) error {
			groups[b.Group] = true
			findings += len(b.Findings)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if !groups["latency"] || len(groups) != 1 || findings != 1 {
		t.Errorf("replayed groups %v with %d findings, want latency alone with 1", groups, findings)
	}
}
