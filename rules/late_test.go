package rules

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// visibleStore answers a range query as VictoriaMetrics answers one for a
// series selector, with samples that show a while after their time: the
// point at t is the newest sample in (t−window, t] that shows by now, a
// sample showing lag after its timestamp; the window is one step for a
// one-point range and one and a half steps for longer ones.
type visibleStore struct {
	mu     sync.Mutex
	series []ingest.Series
	lag    time.Duration
	now    func() time.Time
}

func (v *visibleStore) QueryRange(_ context.Context, _ string, start, end time.Time, step time.Duration) ([]ingest.Series, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	shown := v.now().Add(-v.lag).UnixMilli()
	window := step.Milliseconds()
	if start.Before(end) {
		window += window / 2
	}
	var out []ingest.Series
	for _, s := range v.series {
		c := ingest.Series{Labels: s.Labels}
		for t := start.UnixMilli(); t <= end.UnixMilli(); t += step.Milliseconds() {
			k := -1
			for i, ts := range s.Timestamps {
				if ts > t-window && ts <= t && ts <= shown {
					k = i
				}
			}
			if k >= 0 {
				c.Timestamps, c.Values = append(c.Timestamps, t), append(c.Values, s.Values[k])
			}
		}
		if len(c.Timestamps) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// tenSecondSeries is n samples every 10 s from start for pod, around 100,
// with spikes (index → value).
func tenSecondSeries(pod string, start time.Time, n int, spikes map[int]float64) ingest.Series {
	s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "load"}, {Name: "pod", Value: pod}}}
	for i := range n {
		v := 100 + float64(i%7) - 3
		if sv, ok := spikes[i]; ok {
			v = sv
		}
		s.Timestamps = append(s.Timestamps, start.Add(time.Duration(i)*10*time.Second).UnixMilli())
		s.Values = append(s.Values, v)
	}
	return s
}

// Samples that show 3 s late are asked for again and judged a step behind; the spike is reported with its own value.
func TestLateSamplesAreJudged(t *testing.T) {
	start := t0.Add(-2 * time.Hour)
	const history = 2*360 + 30 // two hours, then the evaluations' thirty steps
	now := t0.Add(2170 * time.Millisecond)
	spikeAt := 2*360 + 15
	store := &visibleStore{lag: 3 * time.Second, now: func() time.Time { return now }, series: []ingest.Series{
		tenSecondSeries("a", start, history, map[int]float64{spikeAt: 400}),
		tenSecondSeries("b", start, history, nil),
	}}
	out := &recorder{}
	set := metrics.NewSet()
	m, err := newTestManager(testOptions{Groups: []rulefmt.Group{{Name: "g", Interval: 10 * time.Second, Rules: []rulefmt.Rule{{
		Name: "r", Expr: "load", Step: 10 * time.Second, Lookback: time.Hour, Kind: rulefmt.KindAnomaly,
		Spec: &rulefmt.Detector{Name: "sigma"}}}}},
		Querier: store, Output: out, EvaluationDelay: 2 * time.Second, Now: func() time.Time { return now }, Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var before uint64
	for i := range 25 {
		if err := m.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		scored := set.GetOrCreateCounter("inferwatch_samples_scored_total").Get()
		if i > 3 && scored-before != 2 {
			t.Fatalf("evaluation %d judged %d samples, want 2 (one per series)", i, scored-before)
		}
		before = scored
		now = now.Add(10 * time.Second)
	}
	if len(out.got) != 1 || out.got[0].Labels["pod"] != "a" || out.got[0].Value != 400 ||
		!out.got[0].WindowStart.Equal(start.Add(time.Duration(spikeAt)*10*time.Second)) {
		t.Fatalf("findings %+v, want the spike of pod a", out.got)
	}
	if late := set.GetOrCreateCounter("inferwatch_samples_late_total").Get(); late != 2 {
		t.Errorf("%d samples counted late, want 2 (one a series, before the rule judged a step behind)", late)
	}
	if err := m.Stalled(); err != nil {
		t.Errorf("a rule that judges late is stalled: %v", err)
	}
}

// A rule whose samples show two minutes late judges nothing new and is reported stalled until it judges again.
func TestStalledRuleIsReported(t *testing.T) {
	start := t0.Add(-2 * time.Hour)
	now := t0.Add(2170 * time.Millisecond)
	store := &visibleStore{lag: 2 * time.Minute, now: func() time.Time { return now }, series: []ingest.Series{
		tenSecondSeries("a", start, 2*360+60, nil)}}
	set := metrics.NewSet()
	m, err := newTestManager(testOptions{Groups: []rulefmt.Group{{Name: "g", Interval: 10 * time.Second, Rules: []rulefmt.Rule{{
		Name: "r", Expr: "load", Step: 10 * time.Second, Lookback: time.Hour, Kind: rulefmt.KindAnomaly,
		Spec: &rulefmt.Detector{Name: "sigma"}}}}},
		Querier: store, EvaluationDelay: 2 * time.Second, Now: func() time.Time { return now }, Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	behind := func() float64 {
		return set.GetOrCreateGauge(`inferwatch_rule_samples_behind{group="g",rule="r"}`, nil).Get()
	}
	ctx := context.Background()
	for i := range 4 {
		if err := m.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if i < 3 && (behind() != 0 || m.Stalled() != nil) {
			t.Fatalf("evaluation %d: stalled before the store was asked", i)
		}
		now = now.Add(10 * time.Second)
	}
	if behind() == 0 || m.Stalled() == nil || !strings.Contains(m.Stalled().Error(), "rule g/r has judged nothing since") {
		t.Fatalf("after three quiet evaluations: %v behind, stalled %v", behind(), m.Stalled())
	}
	newest := set.GetOrCreateGauge(`inferwatch_rule_newest_sample_timestamp_seconds{group="g",rule="r"}`, nil).Get()
	// The newest point the store gave: the step after the newest sample
	// shown, filled from it.
	if want := float64(t0.Add(-110*time.Second).UnixMilli()) / 1e3; newest != want {
		t.Errorf("newest sample judged %v, want %v", newest, want)
	}
	// The store catches up: the rule judges again and is no longer stalled.
	store.lag = time.Second
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if behind() != 0 || m.Stalled() != nil {
		t.Errorf("judging again: %v behind, stalled %v", behind(), m.Stalled())
	}
}

// TestWakeUp: a timer that fires an interval or more late (a paused
// process, a clock that jumped) evaluates at the newest tick and counts
// the ticks between as skipped.
func TestWakeUp(t *testing.T) {
	iv, off := 10*time.Second, 3*time.Second
	tick := t0.Add(off)
	for _, c := range []struct {
		now     time.Duration // after tick
		at      time.Duration // after tick
		skipped int
	}{
		{500 * time.Millisecond, 0, 0},
		{9900 * time.Millisecond, 0, 0},
		{10 * time.Second, 10 * time.Second, 1},
		{60300 * time.Millisecond, 60 * time.Second, 6},
	} {
		w := wakeUp(tick, tick.Add(c.now), iv, off)
		if !w.at.Equal(tick.Add(c.at)) || w.skipped != c.skipped {
			t.Errorf("woken %v after the tick: at +%v, %d skipped; want +%v, %d", c.now, w.at.Sub(tick), w.skipped, c.at, c.skipped)
		}
	}
}

// A series that ends on a spike resolves as absent after resolve_after_absent; its return with a spike is a new episode.
func TestAbsentSeriesResolves(t *testing.T) {
	a := minuteSeries("ttft", 100, map[int]float64{99: 50}) // ends on a spike at minute 99
	back := minuteSeries("ttft", 160, map[int]float64{150: 70})
	a.Timestamps, a.Values = append(a.Timestamps, back.Timestamps[130:]...), append(a.Values, back.Values[130:]...)
	store := &memStore{series: []ingest.Series{a}}
	out := &recorder{}
	now := t0.Add(95 * time.Minute)
	m, err := newTestManager(testOptions{Groups: testGroups(0), Querier: store, Output: out, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ; now.Before(t0.Add(160 * time.Minute)); now = now.Add(time.Minute) {
		n := len(out.alerts)
		if err := m.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, d := range out.alerts[n:] {
			got = append(got, fmt.Sprintf("%s@%d", d.Status, int(d.Time.Sub(t0)/time.Minute)))
		}
	}
	if strings.Join(got, " ") != "firing@99 resolved@104 firing@150 resolved@151" {
		t.Fatalf("alerts %v", got)
	}
	r := out.alerts[1]
	if r.Reason != alerting.ReasonAbsent || r.LastValue != 50 || r.LastSeenAt == nil || !r.LastSeenAt.Equal(t0.Add(99*time.Minute)) {
		t.Errorf("resolved: reason %q, last %v at %v", r.Reason, r.LastValue, r.LastSeenAt)
	}
	if !out.alerts[2].ActiveAt.Equal(t0.Add(150 * time.Minute)) {
		t.Errorf("the spike after the series came back: active at %v, want minute 150", out.alerts[2].ActiveAt)
	}
}

// A burst of 500 short-lived series is forgotten within forget_after of its last point, each one counted.
func TestChurnIsForgotten(t *testing.T) {
	var series []ingest.Series
	for i := range 20 {
		s := minuteSeries("ttft", 240, nil)
		s.Labels = ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "pod", Value: fmt.Sprintf("steady-%d", i)}}
		series = append(series, s)
	}
	for i := range 500 {
		s := minuteSeries("ttft", 125, nil)
		s.Labels = ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "pod", Value: fmt.Sprintf("burst-%d", i)}}
		s.Timestamps, s.Values = s.Timestamps[120:], s.Values[120:] // minutes 120 to 124
		series = append(series, s)
	}
	set := metrics.NewSet()
	now := t0.Add(100 * time.Minute)
	m, err := newTestManager(testOptions{Groups: testGroups(0), Querier: &memStore{series: series},
		Now: func() time.Time { return now }, Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	tracked := func() float64 { return set.GetOrCreateGauge("inferwatch_series_tracked", nil).Get() }
	peak := 0.0
	for ; now.Before(t0.Add(230 * time.Minute)); now = now.Add(time.Minute) {
		if err := m.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, tracked())
		min := int(now.Sub(t0) / time.Minute)
		switch {
		case min < 120 && tracked() != 20:
			t.Fatalf("minute %d: %v tracked before the burst, want 20", min, tracked())
		case min > 124+20+1 && tracked() != 20:
			t.Fatalf("minute %d: %v tracked, want the steady 20 again within forget_after of the burst's end", min, tracked())
		}
	}
	if peak != 520 {
		t.Errorf("peak %v tracked, want 520", peak)
	}
	if f := set.GetOrCreateCounter("inferwatch_series_forgotten_total").Get(); f != 500 {
		t.Errorf("%d forgotten, want the 500 of the burst", f)
	}
}
