package alerting

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// fakeOutput records what it is given; fail decides, per call (1-based),
// whether that publish fails and how.
type fakeOutput struct {
	mu    sync.Mutex
	calls int
	got   []Event
	subj  []string
	fail  func(call int, ev Event) error
	// block, when set, holds each publish until it is closed.
	block chan struct{}
	// entered receives once per publish that started.
	entered chan struct{}
}

func (o *fakeOutput) PublishEvent(_ context.Context, subject string, ev Event) error {
	if o.entered != nil {
		o.entered <- struct{}{}
	}
	if o.block != nil {
		<-o.block
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.fail != nil {
		if err := o.fail(o.calls, ev); err != nil {
			return err
		}
	}
	o.got = append(o.got, ev)
	o.subj = append(o.subj, subject)
	return nil
}

func (o *fakeOutput) ids() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ids []string
	for _, ev := range o.got {
		ids = append(ids, ev.ID)
	}
	return ids
}

func pubFinding(pod string, minute int) Finding {
	end := time.Date(2026, 11, 1, 0, minute, 0, 0, time.UTC)
	return Finding{Kind: "anomaly", Group: "g", Rule: "r", Detector: "sigma", Labels: map[string]string{"pod": pod},
		Series: fmt.Sprintf(`ttft{pod=%q}`, pod), WindowStart: end, WindowEnd: end, Value: 9, Score: 3, Severity: "critical"}
}

func newTestPublisher(t *testing.T, out Output, set *metrics.Set, maxPending int) *Publisher {
	t.Helper()
	p, err := NewPublisher(PublisherOptions{Output: out, Metrics: set, MaxPending: maxPending})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func metricsPage(set *metrics.Set) string {
	var b strings.Builder
	set.WritePrometheus(&b)
	return b.String()
}

// TestPublisherKeepsFindingsTheOutputDidNotTake: the output takes the first
// finding and fails on the second; the two it did not take are kept, said
// so, and delivered with the next batch, each once, in order.
func TestPublisherKeepsFindingsTheOutputDidNotTake(t *testing.T) {
	out := &fakeOutput{fail: func(call int, _ Event) error {
		if call == 2 {
			return errors.New("broker unavailable")
		}
		return nil
	}}
	set := metrics.NewSet()
	p := newTestPublisher(t, out, set, 0)
	fs := []Finding{pubFinding("p0", 1), pubFinding("p1", 2), pubFinding("p2", 3)}
	err := p.Send(context.Background(), Batch{Findings: fs})
	if err == nil || !strings.Contains(err.Error(), "publishing finding 2 of 3") || !strings.Contains(err.Error(), "2 findings kept") {
		t.Fatalf("err = %v, want it to say finding 2 failed and 2 are kept", err)
	}
	if p.Pending() != 2 || !strings.Contains(metricsPage(set), "inferwatch_findings_pending 2") {
		t.Fatalf("pending %d, metrics:\n%s", p.Pending(), metricsPage(set))
	}
	if err := p.Send(context.Background(), Batch{}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range fs {
		want = append(want, FindingID(f))
	}
	if got := out.ids(); strings.Join(got, " ") != strings.Join(want, " ") || p.Pending() != 0 {
		t.Fatalf("delivered %v, want %v, each once; pending %d", got, want, p.Pending())
	}
}

// TestPublisherDropsWhatTheOutputRejects: a finding the output can never
// take is dropped, counted and logged, and the ones behind it are not held
// up by it.
func TestPublisherDropsWhatTheOutputRejects(t *testing.T) {
	out := &fakeOutput{fail: func(_ int, ev Event) error {
		if strings.Contains(string(ev.Data), `"p1"`) {
			return fmt.Errorf("bad subject: %w", ErrRejected)
		}
		return nil
	}}
	set := metrics.NewSet()
	p := newTestPublisher(t, out, set, 0)
	if err := p.Send(context.Background(), Batch{Findings: []Finding{pubFinding("p0", 1), pubFinding("p1", 2), pubFinding("p2", 3)}}); err != nil {
		t.Fatal(err)
	}
	bad := pubFinding("x", 4)
	bad.Kind = "not.a.token"
	if err := p.Send(context.Background(), Batch{Findings: []Finding{bad}}); err != nil {
		t.Fatal(err)
	}
	if n := len(out.ids()); n != 2 || p.Pending() != 0 ||
		!strings.Contains(metricsPage(set), `inferwatch_findings_dropped_total{reason="rejected"} 2`) {
		t.Fatalf("delivered %d, pending %d, metrics:\n%s", n, p.Pending(), metricsPage(set))
	}
}

// TestPublisherDropsForecastsAndScaleSignalsThatFail: they are not kept —
// the next evaluation's supersede them — but counted, and the findings of
// the same batch are kept.
func TestPublisherDropsForecastsAndScaleSignalsThatFail(t *testing.T) {
	failing := true
	out := &fakeOutput{fail: func(int, Event) error {
		if failing {
			return errors.New("no ack")
		}
		return nil
	}}
	set := metrics.NewSet()
	p := newTestPublisher(t, out, set, 0)
	origin := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	b := Batch{
		Findings:  []Finding{pubFinding("p0", 1)},
		Forecasts: []ForecastData{{Group: "g", Rule: "fc", Series: "{}", Origin: origin}},
		Scales:    []ScaleData{{Group: "g", Rule: "sc", Target: "{}", Time: origin}, {Group: "g", Rule: "sc", Target: "{}", Time: origin.Add(time.Minute)}},
	}
	if err := p.Send(context.Background(), b); err == nil {
		t.Fatal("no error from a failing output")
	}
	page := metricsPage(set)
	if p.Pending() != 1 || !strings.Contains(page, `inferwatch_events_dropped_total{kind="forecast"} 1`) ||
		!strings.Contains(page, `inferwatch_events_dropped_total{kind="scale"} 2`) {
		t.Fatalf("pending %d, metrics:\n%s", p.Pending(), page)
	}
	failing = false
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.ids()) != 1 || out.subj[0] != "inferwatch.findings.anomaly" {
		t.Fatalf("after the output is back: %v on %v", out.ids(), out.subj)
	}
}

func TestPublisherBoundsWhatItKeeps(t *testing.T) {
	out := &fakeOutput{fail: func(int, Event) error { return errors.New("down") }}
	set := metrics.NewSet()
	p := newTestPublisher(t, out, set, 2)
	for i := range 5 {
		p.Send(context.Background(), Batch{Findings: []Finding{pubFinding("p0", i)}})
	}
	if p.Pending() != 2 || !strings.Contains(metricsPage(set), `inferwatch_findings_dropped_total{reason="overflow"} 3`) {
		t.Fatalf("pending %d, metrics:\n%s", p.Pending(), metricsPage(set))
	}
	out.fail = nil
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The newest are kept.
	if got, want := out.ids(), []string{FindingID(pubFinding("p0", 3)), FindingID(pubFinding("p0", 4))}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("kept %v, want the newest %v", got, want)
	}
}

// TestPublisherDoesNotHoldALockWhileTheOutputWorks: while a publish waits on
// a slow broker, a /metrics scrape answers, and another group's evaluation
// hands its batch over and returns; the publish in flight takes that batch
// too once the broker answers.
func TestPublisherDoesNotHoldALockWhileTheOutputWorks(t *testing.T) {
	out := &fakeOutput{block: make(chan struct{}), entered: make(chan struct{}, 16)}
	set := metrics.NewSet()
	p := newTestPublisher(t, out, set, 0)
	first := make(chan error, 1)
	go func() { first <- p.Send(context.Background(), Batch{Findings: []Finding{pubFinding("p0", 1)}}) }()
	<-out.entered // the output is now working on the first finding

	done := make(chan string, 1)
	go func() { done <- metricsPage(set) }()
	second := make(chan error, 1)
	go func() { second <- p.Send(context.Background(), Batch{Findings: []Finding{pubFinding("p1", 2)}}) }()
	const bound = 10 * time.Second // only to fail instead of hanging
	select {
	case page := <-done:
		if !strings.Contains(page, "inferwatch_findings_pending 1") && !strings.Contains(page, "inferwatch_findings_pending 2") {
			t.Errorf("scrape during a slow publish:\n%s", page)
		}
	case <-time.After(bound):
		t.Fatal("a /metrics scrape waited for the broker")
	}
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(bound):
		t.Fatal("a second evaluation's Send waited for the broker")
	}
	if p.Pending() != 2 {
		t.Errorf("pending %d while the broker is slow, want 2", p.Pending())
	}
	close(out.block)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := out.ids(); len(got) != 2 || got[0] != FindingID(pubFinding("p0", 1)) || got[1] != FindingID(pubFinding("p1", 2)) || p.Pending() != 0 {
		t.Fatalf("delivered %v, pending %d", got, p.Pending())
	}
}
