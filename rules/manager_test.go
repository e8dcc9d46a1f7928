package rules

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// memStore serves query_range from in-memory series, whatever the query,
// and records the ranges asked for. It stands in for a store in unit tests
// of the engine's bookkeeping; the integration tests use a real one.
type memStore struct {
	mu     sync.Mutex
	series []ingest.Series
	calls  [][2]time.Time
	err    error
}

func (m *memStore) QueryRange(_ context.Context, _ string, start, end time.Time, _ time.Duration) ([]ingest.Series, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, [2]time.Time{start, end})
	if m.err != nil {
		return nil, m.err
	}
	var out []ingest.Series
	for _, s := range m.series {
		c := ingest.Series{Labels: s.Labels}
		for i, t := range s.Timestamps {
			if t >= start.UnixMilli() && t <= end.UnixMilli() {
				c.Timestamps = append(c.Timestamps, t)
				c.Values = append(c.Values, s.Values[i])
			}
		}
		if len(c.Timestamps) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// minuteSeries returns n one-minute samples from t0 with a small
// alternating ripple, and the given spikes (index → value).
func minuteSeries(name string, n int, spikes map[int]float64) ingest.Series {
	s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: name}, {Name: "pod", Value: "p0"}}}
	for i := range n {
		v := 10.0 + float64(i%3)*0.1
		if sv, ok := spikes[i]; ok {
			v = sv
		}
		s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(i)*time.Minute).UnixMilli())
		s.Values = append(s.Values, v)
	}
	return s
}

func testGroups(forDur time.Duration) []rulefmt.Group {
	return []rulefmt.Group{{
		Name:     "latency",
		Interval: time.Minute,
		Rules: []rulefmt.Rule{{
			Name:     "ttft",
			Expr:     "ttft",
			Lookback: 30 * time.Minute,
			Step:     time.Minute,
			For:      forDur,
			Kind:     rulefmt.KindAnomaly, Spec: &rulefmt.Detector{Name: "sigma", Params: map[string]string{"k": "3", "min_points": "10"}},
			Labels: map[string]string{"team": "serving"},
		}},
	}}
}

func TestEngineFiresOncePerEpisodeAfterFor(t *testing.T) {
	// Spike at minutes 100..102: with for=1m it fires at 101, once.
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 200, map[int]float64{100: 50, 101: 60, 102: 55})}}
	out := &recorder{}
	now := t0.Add(199 * time.Minute)
	e, err := newTestManager(testOptions{
		Groups: testGroups(time.Minute), Querier: store, Output: out,
		Backfill: 3 * time.Hour, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.got) != 1 {
		t.Fatalf("got %d findings, want 1: %+v", len(out.got), out.got)
	}
	f := out.got[0]
	if want := t0.Add(100 * time.Minute); !f.WindowStart.Equal(want) {
		t.Errorf("window start %v, want %v", f.WindowStart, want)
	}
	if want := t0.Add(101 * time.Minute); !f.WindowEnd.Equal(want) {
		t.Errorf("window end %v, want %v", f.WindowEnd, want)
	}
	// The strangest sample is the first: at minute 101 the window already
	// holds the 50 of minute 100 and is far wider.
	if f.Value != 50 || !f.ValueTime.Equal(t0.Add(100*time.Minute)) {
		t.Errorf("peak value %v at %v, want 50 at minute 100", f.Value, f.ValueTime)
	}
	if f.Score < 100 || f.Upper > 10.5 || f.Lower < 9.7 || f.Expected < 10 || f.Expected > 10.2 {
		t.Errorf("score/band implausible: %+v", f)
	}
	if f.Labels["team"] != "serving" || f.Labels["pod"] != "p0" || f.Series != `ttft{pod="p0"}` {
		t.Errorf("labels %v series %q", f.Labels, f.Series)
	}
	if f.Kind != "anomaly" || f.Rule != "ttft" || f.Group != "latency" || f.Detector != "sigma" || f.Severity != "critical" {
		t.Errorf("identity fields: %+v", f)
	}
}

func TestEngineForSuppressesSinglePointBlips(t *testing.T) {
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 200, map[int]float64{100: 50})}}
	out := &recorder{}
	e, err := newTestManager(testOptions{
		Groups: testGroups(time.Minute), Querier: store, Output: out,
		Backfill: 3 * time.Hour, Now: func() time.Time { return t0.Add(199 * time.Minute) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.got) != 0 {
		t.Fatalf("a one-point blip fired with for=1m: %+v", out.got)
	}
}

func TestEngineFetchesOnlyNewPoints(t *testing.T) {
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 300, map[int]float64{250: 80, 251: 90})}}
	out := &recorder{}
	now := t0.Add(200 * time.Minute)
	e, err := newTestManager(testOptions{
		Groups: testGroups(0), Querier: store, Output: out,
		EvaluationDelay: 30 * time.Second,
		Now:             func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	// First evaluation: end is now−delay truncated to the step (minute 199),
	// and the range starts a lookback before the reported interval.
	first := store.calls[0]
	if want := t0.Add(199 * time.Minute); !first[1].Equal(want) {
		t.Fatalf("first end %v, want %v", first[1], want)
	}
	if want := t0.Add((199 - 1 - 30) * time.Minute); !first[0].Equal(want) {
		t.Fatalf("first start %v, want %v", first[0], want)
	}
	for i := 1; i <= 60; i++ {
		now = t0.Add(time.Duration(200+i) * time.Minute)
		if err := e.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		c := store.calls[i]
		if want := t0.Add(time.Duration(199+i) * time.Minute); !c[0].Equal(want) || !c[1].Equal(want) {
			t.Fatalf("cycle %d fetched %v..%v, want only the new point %v", i, c[0], c[1], want)
		}
	}
	if len(out.got) != 1 || !out.got[0].WindowEnd.Equal(t0.Add(250*time.Minute)) {
		t.Fatalf("want one finding at minute 250, got %+v", out.got)
	}
}

func TestEngineStoreFailureIsReportedAndCounted(t *testing.T) {
	store := &memStore{err: errors.New(`query_range http://127.0.0.1:1/api/v1/query_range: connection refused`)}
	e, err := newTestManager(testOptions{
		Groups: testGroups(0), Querier: store, Output: &recorder{},
		Now: func() time.Time { return t0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	err = e.RunOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), `group "latency" rule "ttft"`) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("want an error naming the group, rule and URL, got %v", err)
	}
	var b strings.Builder
	e.o.Metrics.WritePrometheus(&b)
	for _, want := range []string{
		`inferwatch_rule_evaluation_failures_total{group="latency",rule="ttft"} 1`,
		`inferwatch_group_evaluation_failures_total{group="latency"} 1`,
		`inferwatch_group_evaluations_total{group="latency"} 1`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestNewEngineRejectsUnknownDetectorWithPosition(t *testing.T) {
	g := testGroups(0)
	g[0].Rules[0].Spec = &rulefmt.Detector{Name: "nosuch"}
	g[0].Rules[0].SpecPos = rulefmt.Pos{File: "x.yml", Line: 9, Column: 7}
	_, err := newTestManager(testOptions{Groups: g, Querier: &memStore{}, Output: &recorder{}})
	if err == nil || !strings.Contains(err.Error(), "x.yml:9:7") || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("want an error at x.yml:9:7 naming the detector, got %v", err)
	}
}

func TestNextTickIsAlignedAndStable(t *testing.T) {
	iv := time.Minute
	off := groupOffset("latency", iv)
	if off != groupOffset("latency", iv) || off < 0 || off >= iv {
		t.Fatalf("offset %v not stable or out of range", off)
	}
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(off)
	if got := nextTick(at, iv, off); !got.Equal(at.Add(iv)) {
		t.Fatalf("from a tick the next is one interval later: got %v", got)
	}
	if got := nextTick(at.Add(-time.Nanosecond), iv, off); !got.Equal(at) {
		t.Fatalf("just before a tick the next is that tick: got %v", got)
	}
	if groupOffset("a", iv) == groupOffset("b", iv) && groupOffset("c", iv) == groupOffset("d", iv) {
		t.Fatalf("offsets do not spread groups")
	}
}

func TestRunSkipsAndCountsMissedTicks(t *testing.T) {
	// A store that takes 2.5 intervals per evaluation: the ticks in between
	// are skipped and counted, not queued.
	iv := 40 * time.Millisecond
	g := testGroups(0)
	g[0].Interval = iv
	g[0].Rules[0].Step = 10 * time.Millisecond
	g[0].Rules[0].Lookback = time.Second
	store := &slowStore{delay: 100 * time.Millisecond}
	e, err := newTestManager(testOptions{Groups: g, Querier: store, Output: &recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 450*time.Millisecond)
	defer cancel()
	e.Run(ctx)
	var b strings.Builder
	e.o.Metrics.WritePrometheus(&b)
	if !strings.Contains(b.String(), `inferwatch_group_missed_iterations_total{group="latency"}`) ||
		strings.Contains(b.String(), `inferwatch_group_missed_iterations_total{group="latency"} 0`) {
		t.Fatalf("no missed ticks counted:\n%s", b.String())
	}
	if n := store.n(); n > 6 {
		t.Fatalf("%d evaluations in 450ms with 100ms each: ticks were queued", n)
	}
}

type slowStore struct {
	mu    sync.Mutex
	delay time.Duration
	count int
}

func (s *slowStore) QueryRange(ctx context.Context, _ string, _, _ time.Time, _ time.Duration) ([]ingest.Series, error) {
	s.mu.Lock()
	s.count++
	s.mu.Unlock()
	time.Sleep(s.delay)
	return nil, nil
}

func (s *slowStore) n() int { s.mu.Lock(); defer s.mu.Unlock(); return s.count }

func TestEngineMinDevIgnoresTinyDeviationsOnFlatSeries(t *testing.T) {
	// A near-flat series (ripple 0.1) with a step of +0.5 at minute 100:
	// far outside 3σ, but below a min_dev of 1 — and a real jump of +5 at
	// minute 150 that is above it.
	s := minuteSeries("ttft", 200, map[int]float64{100: 10.6, 150: 15})
	for _, tc := range []struct {
		minDev float64
		want   []time.Time
	}{
		{0, []time.Time{t0.Add(100 * time.Minute), t0.Add(150 * time.Minute)}},
		{1, []time.Time{t0.Add(150 * time.Minute)}},
	} {
		g := testGroups(0)
		g[0].Rules[0].MinDev = tc.minDev
		out := &recorder{}
		e, err := newTestManager(testOptions{
			Groups: g, Querier: &memStore{series: []ingest.Series{s}}, Output: out,
			Backfill: 3 * time.Hour, Now: func() time.Time { return t0.Add(199 * time.Minute) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		var got []time.Time
		for _, f := range out.got {
			got = append(got, f.WindowEnd)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("min_dev %v: findings at %v, want %v", tc.minDev, got, tc.want)
		}
	}
}

// A reload keeps the state of unchanged rules, starts changed ones afresh and unregisters the metrics of groups gone.
func TestUpdateKeepsTheStateOfUnchangedRules(t *testing.T) {
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 300, nil)}}
	now := t0.Add(200 * time.Minute)
	set := metrics.NewSet()
	groups := func(lookback time.Duration, extra bool) []rulefmt.Group {
		g := testGroups(0)
		g[0].Rules = append(g[0].Rules, g[0].Rules[0])
		g[0].Rules[1].Name, g[0].Rules[1].Lookback = "ttft_changed", lookback
		if extra {
			g = append(g, rulefmt.Group{Name: "old", Interval: time.Minute, Rules: []rulefmt.Rule{g[0].Rules[0]}})
		}
		return g
	}
	m, err := newTestManager(testOptions{Groups: groups(30*time.Minute, true), Querier: store, Now: func() time.Time { return now }, Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	built, err := Build(groups(20*time.Minute, false))
	if err != nil {
		t.Fatal(err)
	}
	if kept := m.Update(built); kept != 1 {
		t.Fatalf("kept %d rules, want 1 (ttft)", kept)
	}
	store.calls = nil
	now = now.Add(time.Minute)
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if len(store.calls) != 2 {
		t.Fatalf("%d queries, want 2", len(store.calls))
	}
	spans := []time.Duration{store.calls[0][1].Sub(store.calls[0][0]), store.calls[1][1].Sub(store.calls[1][0])}
	slices.Sort(spans)
	if spans[0] != 0 || spans[1] != 21*time.Minute {
		t.Errorf("query spans %v: want the kept rule to fetch its one new point and the changed one its lookback and an interval", spans)
	}
	page := metricsPage(set)
	if strings.Contains(page, `group="old"`) || !strings.Contains(page, `inferwatch_rule_evaluation_failures_total{group="latency",rule="ttft_changed"}`) {
		t.Errorf("metrics after the reload:\n%s", page)
	}
}

// TestNamesThatReachMetricsKeepThePageParseable: a group or rule name with
// a tab, a quote or U+2028 must not break the /metrics page.
func TestNamesThatReachMetricsKeepThePageParseable(t *testing.T) {
	g := testGroups(0)
	g[0].Name = "lat\tency \"p\u2028\""
	set := metrics.NewSet()
	m, err := newTestManager(testOptions{Groups: g, Querier: &memStore{}, Now: func() time.Time { return t0 }, Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(metricsPage(set)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, metricsPage(set))
	}
	found := false
	for _, mt := range fams["inferwatch_group_evaluations_total"].GetMetric() {
		for _, l := range mt.GetLabel() {
			found = found || (l.GetName() == "group" && l.GetValue() == g[0].Name)
		}
	}
	if !found {
		t.Errorf("the group's name did not come back from the page:\n%s", metricsPage(set))
	}
}

func metricsPage(set *metrics.Set) string {
	var b strings.Builder
	set.WritePrometheus(&b)
	return b.String()
}

// TestScoresArePassedOnPointByPoint: asked for them, an anomaly rule hands
// over each new point's score, expected value and band, the same figures
// its findings report.
func TestScoresArePassedOnPointByPoint(t *testing.T) {
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 200, map[int]float64{150: 50})}}
	out := &recorder{}
	now := t0.Add(199 * time.Minute)
	m, err := newTestManager(testOptions{Groups: testGroups(0), Querier: store, Output: out, Scores: ScoresEvery,
		Backfill: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.scores) != 1 || len(out.got) != 1 {
		t.Fatalf("%d scores, %d findings", len(out.scores), len(out.got))
	}
	s, f := out.scores[0], out.got[0]
	// The first fetch reaches a lookback (30m) before the reported hour,
	// both ends included.
	if len(s.T) != 91 || s.Series != f.Series || s.Labels["team"] != "serving" || s.Kind != "anomaly" {
		t.Fatalf("scores of %s: %d points, labels %v", s.Series, len(s.T), s.Labels)
	}
	i := slices.Index(s.T, f.ValueTime.UnixMilli())
	if i < 0 || s.Score[i] != f.Score || s.Expected[i] != f.Expected || s.Lower[i] != f.Lower || s.Upper[i] != f.Upper || s.Value[i] != 50 {
		t.Fatalf("scores at the finding's peak differ from the finding: %v %v %v %v %v vs %+v", s.Value[i], s.Score[i], s.Expected[i], s.Lower[i], s.Upper[i], f)
	}
	if !math.IsNaN(s.Score[0]) {
		t.Errorf("the first point, before the detector is ready, scores %v, want NaN", s.Score[0])
	}
	now = now.Add(time.Minute)
	out.scores = nil
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.scores) != 0 {
		t.Errorf("a cycle without new points handed over %d scores", len(out.scores))
	}
}

// TestReadingsArePassedOn: an anomaly rule hands on the levels of the
// points it reports, the highest of each five minutes with its time,
// anomalous or not, and nothing of a cycle without new points.
func TestReadingsArePassedOn(t *testing.T) {
	series := minuteSeries("ttft", 200, map[int]float64{150: 50, 152: 4})
	store := &memStore{series: []ingest.Series{series}}
	out := &recorder{}
	now := t0.Add(199 * time.Minute)
	m, err := newTestManager(testOptions{Groups: testGroups(0), Querier: store, Output: out, Backfill: time.Hour, Now: func() time.Time { return now },
		Readings: readFilter{rules: []string{"ttft"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.readings) != 1 {
		t.Fatalf("%d readings, want one series", len(out.readings))
	}
	r := out.readings[0]
	if r.Rule != "ttft" || r.Labels["team"] != "serving" || r.Labels["pod"] != "p0" || r.Group != "latency" {
		t.Errorf("readings of %s %s %v", r.Group, r.Rule, r.Labels)
	}
	// The reported hour is minutes 139 to 199, both ends included: spans
	// of minutes 135-139 (of which only 139), 140-144, …, 195-199. The
	// values cycle 10, 10.1, 10.2 by minute: each span's highest is its
	// first minute with i%3 == 2, and the span of 150 holds the spike.
	var wantT []int64
	var wantV []float64
	for span := 135; span < 200; span += 5 {
		best := max(span, 139)
		for i := best; i < span+5; i++ {
			if series.Values[i] > series.Values[best] {
				best = i
			}
		}
		wantT, wantV = append(wantT, series.Timestamps[best]), append(wantV, series.Values[best])
	}
	if !slices.Equal(r.T, wantT) || !slices.Equal(r.V, wantV) {
		t.Errorf("readings %v %v,\nwant %v %v", r.T, r.V, wantT, wantV)
	}
	if len(r.V) < 4 || r.V[3] != 50 || r.T[3] != t0.Add(150*time.Minute).UnixMilli() {
		t.Errorf("the span of the spike reads %v", r.V)
	}
	now = now.Add(time.Minute)
	out.readings = nil
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.readings) != 0 {
		t.Errorf("a cycle without new points handed on %d readings", len(out.readings))
	}
}

// readFilter reads the levels of rules, and of series with labels.
type readFilter struct{ rules, labels []string }

func (f readFilter) Reads(rule string, _ map[string]string) bool {
	return slices.Contains(f.rules, rule)
}
func (f readFilter) ChangeLabels() []string { return f.labels }

// TestReadingsOfWhatIsAskedOnly: a rule hands on the levels of its
// series only when asked for the rule's, or for series that carry a
// change label; without a filter, none.
func TestReadingsOfWhatIsAskedOnly(t *testing.T) {
	versioned := minuteSeries("ttft", 200, nil)
	versioned.Labels = append(versioned.Labels, ingest.Label{Name: "version", Value: "v2"})
	plain := minuteSeries("ttft", 200, nil)
	plain.Labels[len(plain.Labels)-1].Value = "p1"
	for _, tc := range []struct {
		name string
		f    ReadingFilter
		want int
	}{
		{"no filter", nil, 0},
		{"another rule", readFilter{rules: []string{"gpu"}}, 0},
		{"the rule", readFilter{rules: []string{"ttft"}}, 2},
		{"a change label", readFilter{labels: []string{"image", "version"}}, 1},
	} {
		out := &recorder{}
		m, err := newTestManager(testOptions{Groups: testGroups(0), Querier: &memStore{series: []ingest.Series{versioned, plain}}, Output: out,
			Now: func() time.Time { return t0.Add(199 * time.Minute) }, Readings: tc.f})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(out.readings) != tc.want {
			t.Errorf("%s: readings of %d series, want %d", tc.name, len(out.readings), tc.want)
		}
	}
}

// TestNewestScoresOnly: asked for each series' newest score, as the
// gauges need, an evaluation over a long history hands over one point per
// series, the newest, with the figures ScoresEvery gives for it.
func TestNewestScoresOnly(t *testing.T) {
	run := func(sp ScorePoints) alerting.Scores {
		t.Helper()
		store := &memStore{series: []ingest.Series{minuteSeries("ttft", 200, map[int]float64{199: 50})}}
		out := &recorder{}
		m, err := newTestManager(testOptions{Groups: testGroups(0), Querier: store, Output: out, Scores: sp,
			Backfill: time.Hour, Now: func() time.Time { return t0.Add(199 * time.Minute) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(out.scores) != 1 {
			t.Fatalf("%d scores, want one series", len(out.scores))
		}
		return out.scores[0]
	}
	every, newest := run(ScoresEvery), run(ScoresNewest)
	n := len(every.T) - 1
	if len(newest.T) != 1 || len(newest.Value) != 1 || len(newest.Score) != 1 || len(newest.Expected) != 1 || len(newest.Lower) != 1 || len(newest.Upper) != 1 {
		t.Fatalf("newest only: %d points (%+v), want 1", len(newest.T), newest)
	}
	if newest.T[0] != every.T[n] || newest.Value[0] != 50 || newest.Score[0] != every.Score[n] ||
		newest.Expected[0] != every.Expected[n] || newest.Lower[0] != every.Lower[n] || newest.Upper[0] != every.Upper[n] {
		t.Errorf("newest %+v differs from the last of every point: t %d v %v score %v", newest, every.T[n], every.Value[n], every.Score[n])
	}
	if math.IsNaN(newest.Score[0]) || newest.Score[0] < 1 {
		t.Errorf("the newest point, the spike, scores %v", newest.Score[0])
	}

	// Before the detector is ready every score is NaN: the newest point
	// is kept all the same; once one has a score, a later point without
	// one does not replace it.
	var s alerting.Scores
	addScore(&s, 1, 1, analysis.Result{}, ScoresNewest)
	addScore(&s, 2, 2, analysis.Result{}, ScoresNewest)
	if len(s.T) != 1 || s.T[0] != 2 || !math.IsNaN(s.Score[0]) {
		t.Fatalf("unscored points: %+v, want the newest, t=2, NaN", s)
	}
	addScore(&s, 3, 3, analysis.Result{Ready: true, Score: 0.5}, ScoresNewest)
	addScore(&s, 4, 4, analysis.Result{}, ScoresNewest)
	if len(s.T) != 1 || s.T[0] != 3 || s.Score[0] != 0.5 {
		t.Fatalf("after a scored point: %+v, want t=3 score 0.5", s)
	}
}

// TestBackfillReplaysTheAlertLifecycle: an anomaly that started and ended
// inside the backfilled range yields its pending, firing and resolved
// events at their own times, as if the daemon had been running.
func TestBackfillReplaysTheAlertLifecycle(t *testing.T) {
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 200, map[int]float64{100: 50, 101: 60, 102: 55})}}
	out := &recorder{}
	now := t0.Add(199 * time.Minute)
	m, err := newTestManager(testOptions{Groups: testGroups(time.Minute), Querier: store, Output: out,
		Backfill: 3 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range out.alerts {
		got = append(got, fmt.Sprintf("%s@%d", a.Status, int(a.Time.Sub(t0)/time.Minute)))
	}
	if want := "pending@100 firing@101 resolved@103"; strings.Join(got, " ") != want {
		t.Fatalf("alert events %q, want %q", strings.Join(got, " "), want)
	}
	r := out.alerts[2]
	if !r.ActiveAt.Equal(t0.Add(100*time.Minute)) || !r.FiredAt.Equal(t0.Add(101*time.Minute)) ||
		r.ResolvedAt == nil || !r.ResolvedAt.Equal(t0.Add(103*time.Minute)) || r.Labels["team"] != "serving" {
		t.Errorf("resolved event %+v", r)
	}
}
