package alerting

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting/outbox"
)

// fakeOutput records what it is given; fail decides, per call (1-based),
// whether that publish fails and how.
type fakeOutput struct {
	mu    sync.Mutex
	calls int
	got   []Event
	subj  []string
	// failed holds the events whose publish failed, in order.
	failed []Event
	fail   func(call int, ev Event) error
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
			o.failed = append(o.failed, ev)
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

// openOutbox opens an outbox in dir, closed when the test ends.
func openOutbox(t *testing.T, dir string) *outbox.Outbox {
	t.Helper()
	ob, err := outbox.Open(outbox.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ob.Close() })
	return ob
}

func newOutboxPublisher(t *testing.T, out Output, set *metrics.Set, ob Outbox, maxPending int) *Publisher {
	t.Helper()
	p, err := NewPublisher(PublisherOptions{Output: out, Metrics: set, MaxPending: maxPending, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func findingIDs(fs ...Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, FindingID(f))
	}
	return ids
}

// down fails every publish from call `from` on, as an outage would.
func down(from int) func(int, Event) error {
	return func(call int, _ Event) error {
		if call >= from {
			return errors.New("nats: no responders available for request")
		}
		return nil
	}
}

// TestPublisherOutboxSurvivesACrash: the output fails in the middle of a
// batch and stays down for the next one; the Publisher is then dropped
// without Close, as a SIGKILL would (the kernel keeps what was written to
// the outbox; closing the outbox only releases its lock). A new Publisher
// on the same outbox delivers what the first did not, before anything
// new: every finding once, in order. Forecasts never enter the outbox.
func TestPublisherOutboxSurvivesACrash(t *testing.T) {
	dir := t.TempDir()
	ob := openOutbox(t, dir)
	out1 := &fakeOutput{fail: down(3)}
	p1 := newOutboxPublisher(t, out1, metrics.NewSet(), ob, 0)
	var fs []Finding
	for i := range 8 {
		fs = append(fs, pubFinding(fmt.Sprintf("p%d", i), i))
	}
	fc := ForecastData{Group: "g", Rule: "fc", Series: "{}", Origin: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	if err := p1.Send(context.Background(), Batch{Findings: fs[:5], Forecasts: []ForecastData{fc}}); err == nil {
		t.Fatal("no error from an output that went down")
	}
	if err := p1.Send(context.Background(), Batch{Findings: fs[5:]}); err == nil {
		t.Fatal("no error from an output that is down")
	}
	if got, want := out1.ids(), findingIDs(fs[:2]...); !slices.Equal(got, want) {
		t.Fatalf("before the outage: delivered %v, want %v", got, want)
	}
	if ob.Len() != 6 || p1.Pending() != 6 {
		t.Fatalf("outbox holds %d, publisher %d pending; want the 6 findings not delivered", ob.Len(), p1.Pending())
	}
	ob.Close() // p1 is dropped without Close

	ob2 := openOutbox(t, dir)
	out2 := &fakeOutput{}
	set := metrics.NewSet()
	p2 := newOutboxPublisher(t, out2, set, ob2, 0)
	if p2.Pending() != 6 || !strings.Contains(metricsPage(set), "inferwatch_findings_pending 6") {
		t.Fatalf("the new publisher has %d pending, want the 6 kept", p2.Pending())
	}
	late := pubFinding("late", 30)
	if err := p2.Send(context.Background(), Batch{Findings: []Finding{late}}); err != nil {
		t.Fatal(err)
	}
	if got, want := out2.ids(), findingIDs(append(fs[2:], late)...); !slices.Equal(got, want) {
		t.Fatalf("after the restart: delivered %v, want the kept ones first, then the new one: %v", got, want)
	}
	if got := append(out1.ids(), out2.ids()...); !slices.Equal(got, findingIDs(append(fs, late)...)) {
		t.Fatalf("across the crash: delivered %v, want every finding once, in order", got)
	}
	for i, s := range out2.subj {
		want, err := NewFindingEvent(append(fs[2:], late)[i], "")
		if err != nil {
			t.Fatal(err)
		}
		if s != "inferwatch.findings.anomaly" || out2.got[i].Type != want.Type {
			t.Fatalf("replayed event %d on %s with type %s, want %s", i, s, out2.got[i].Type, want.Type)
		}
	}
	// The replayed event is the one first offered, field for field.
	a, b := out2.got[0], out1.failed[0]
	if a.ID != b.ID || a.Source != b.Source || a.Type != b.Type || a.Subject != b.Subject || !a.Time.Equal(b.Time) ||
		a.SpecVersion != b.SpecVersion || a.DataContentType != b.DataContentType || !slices.Equal(a.Data, b.Data) {
		t.Fatalf("the replayed event changed:\n%+v\nwant\n%+v", a, b)
	}
	if ob2.Len() != 0 || p2.Pending() != 0 {
		t.Fatalf("after delivery the outbox holds %d, the publisher %d", ob2.Len(), p2.Pending())
	}
}

// TestPublisherCloseKeepsFindingsInTheOutbox: Close during an outage says
// how many findings it keeps, and the next start delivers them; after
// Close, Send is refused. Without an outbox Close says they are lost.
func TestPublisherCloseKeepsFindingsInTheOutbox(t *testing.T) {
	dir := t.TempDir()
	ob := openOutbox(t, dir)
	p := newOutboxPublisher(t, &fakeOutput{fail: down(1)}, metrics.NewSet(), ob, 0)
	fs := []Finding{pubFinding("p0", 1), pubFinding("p1", 2), pubFinding("p2", 3)}
	p.Send(context.Background(), Batch{Findings: fs})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kept, err := p.Close(ctx)
	if kept != 3 || err == nil || !strings.Contains(err.Error(), "3 findings not published are kept in the outbox for the next start") {
		t.Fatalf("Close = %d, %v; want 3 kept in the outbox", kept, err)
	}
	if err := p.Send(context.Background(), Batch{Findings: fs}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if err := p.Flush(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	if kept, err := p.Close(ctx); kept != 3 || err != nil {
		t.Fatalf("second Close = %d, %v", kept, err)
	}
	ob.Close()

	ob2 := openOutbox(t, dir)
	out := &fakeOutput{}
	p2 := newOutboxPublisher(t, out, metrics.NewSet(), ob2, 0)
	if kept, err := p2.Close(ctx); kept != 0 || err != nil {
		t.Fatalf("Close with the output back = %d, %v", kept, err)
	}
	if got := out.ids(); !slices.Equal(got, findingIDs(fs...)) || ob2.Len() != 0 {
		t.Fatalf("delivered at the next start: %v, outbox holds %d", got, ob2.Len())
	}

	noBox := newTestPublisher(t, &fakeOutput{fail: down(1)}, metrics.NewSet(), 0)
	noBox.Send(context.Background(), Batch{Findings: fs})
	if kept, err := noBox.Close(ctx); kept != 3 || err == nil || !strings.Contains(err.Error(), "3 findings not published are lost") {
		t.Fatalf("Close without an outbox = %d, %v", kept, err)
	}
}

// TestPublisherOutboxDoesNotReplayRejected: a finding the output rejected
// for good is acknowledged as dropped, at once and when it is replayed.
func TestPublisherOutboxDoesNotReplayRejected(t *testing.T) {
	dir := t.TempDir()
	ob := openOutbox(t, dir)
	fs := []Finding{pubFinding("p0", 1), pubFinding("bad", 2), pubFinding("p2", 3), pubFinding("p3", 4)}
	out := &fakeOutput{fail: func(call int, ev Event) error {
		switch {
		case ev.ID == FindingID(fs[1]):
			return fmt.Errorf("stream refused it: %w", ErrRejected)
		case call >= 3:
			return errors.New("down")
		}
		return nil
	}}
	p := newOutboxPublisher(t, out, metrics.NewSet(), ob, 0)
	p.Send(context.Background(), Batch{Findings: fs})
	if ob.Len() != 2 {
		t.Fatalf("the outbox holds %d, want the 2 not delivered and not rejected", ob.Len())
	}
	ob.Close()

	// At the next start the output rejects one of the two replayed.
	ob2 := openOutbox(t, dir)
	out2 := &fakeOutput{fail: func(_ int, ev Event) error {
		if ev.ID == FindingID(fs[2]) {
			return fmt.Errorf("stream refused it: %w", ErrRejected)
		}
		return nil
	}}
	set := metrics.NewSet()
	p2 := newOutboxPublisher(t, out2, set, ob2, 0)
	if err := p2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := out2.ids(); !slices.Equal(got, findingIDs(fs[3])) || ob2.Len() != 0 ||
		!strings.Contains(metricsPage(set), `inferwatch_findings_dropped_total{reason="rejected"} 1`) {
		t.Fatalf("delivered %v, outbox holds %d, metrics:\n%s", got, ob2.Len(), metricsPage(set))
	}
	ob2.Close()
	ob3 := openOutbox(t, dir)
	if ob3.Len() != 0 {
		t.Fatalf("a third start finds %d findings", ob3.Len())
	}
}

// TestPublisherOutboxBounds: findings the publisher drops for its
// MaxPending bound leave the outbox too, and a start with more kept than
// MaxPending takes the newest, saying how many it dropped; a record that
// is no finding is dropped and counted.
func TestPublisherOutboxBounds(t *testing.T) {
	dir := t.TempDir()
	ob := openOutbox(t, dir)
	set := metrics.NewSet()
	p := newOutboxPublisher(t, &fakeOutput{fail: down(1)}, set, ob, 3)
	var fs []Finding
	for i := range 5 {
		fs = append(fs, pubFinding("p0", i))
		p.Send(context.Background(), Batch{Findings: fs[i:]})
	}
	if ob.Len() != 3 || p.Pending() != 3 {
		t.Fatalf("outbox %d, pending %d; want the 3 newest", ob.Len(), p.Pending())
	}
	if _, err := ob.Append([]byte("not a finding")); err != nil {
		t.Fatal(err)
	}
	ob.Close()

	ob2 := openOutbox(t, dir)
	set2 := metrics.NewSet()
	out := &fakeOutput{}
	p2 := newOutboxPublisher(t, out, set2, ob2, 2)
	page := metricsPage(set2)
	if p2.Pending() != 2 || ob2.Len() != 2 ||
		!strings.Contains(page, `inferwatch_findings_dropped_total{reason="overflow"} 1`) ||
		!strings.Contains(page, `inferwatch_findings_dropped_total{reason="rejected"} 1`) {
		t.Fatalf("pending %d, outbox %d, metrics:\n%s", p2.Pending(), ob2.Len(), page)
	}
	if err := p2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := out.ids(); !slices.Equal(got, findingIDs(fs[3:]...)) {
		t.Fatalf("delivered %v, want the newest two", got)
	}
}

// failingOutbox fails every call, as a full or broken disk would.
type failingOutbox struct{}

func (failingOutbox) Append(...[]byte) (uint64, error) {
	return 0, errors.New("no space left on device")
}
func (failingOutbox) Ack(...uint64) error { return errors.New("no space left on device") }
func (failingOutbox) Replay(func(uint64, []byte) error) error {
	return nil
}

// TestPublisherOutboxFails: findings the outbox cannot take are still
// published, from memory; Send says they were not kept and the failures
// are counted.
func TestPublisherOutboxFails(t *testing.T) {
	out := &fakeOutput{}
	set := metrics.NewSet()
	p := newOutboxPublisher(t, out, set, failingOutbox{}, 0)
	err := p.Send(context.Background(), Batch{Findings: []Finding{pubFinding("p0", 1), pubFinding("p1", 2)}})
	if err == nil || !strings.Contains(err.Error(), "kept in memory only") || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Send = %v", err)
	}
	if len(out.ids()) != 2 || !strings.Contains(metricsPage(set), `inferwatch_outbox_failures_total{op="append"} 2`) {
		t.Fatalf("delivered %d, metrics:\n%s", len(out.ids()), metricsPage(set))
	}
}

// BenchmarkPublisherCycle: a cycle of 1,000 findings through a Publisher
// to an output that takes them at once, without and with an outbox.
func BenchmarkPublisherCycle(b *testing.B) {
	fs := make([]Finding, 1000)
	for i := range fs {
		fs[i] = pubFinding(fmt.Sprintf("pod-%d", i), i%60)
	}
	ev, _ := NewFindingEvent(fs[0], "")
	rec, _ := encodeStored(item{subject: FindingSubject(DefaultSubjectPrefix, "anomaly"), ev: ev, class: ClassFinding})
	run := func(b *testing.B, ob Outbox) {
		p, err := NewPublisher(PublisherOptions{Output: discardOutput{}, Outbox: ob})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := p.Send(context.Background(), Batch{Findings: fs}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("memory", func(b *testing.B) { run(b, nil) })
	b.Run("outbox", func(b *testing.B) {
		ob, err := outbox.Open(outbox.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer ob.Close()
		run(b, ob)
		b.ReportMetric(float64(len(rec)), "record-bytes")
	})
}

type discardOutput struct{}

func (discardOutput) PublishEvent(context.Context, string, Event) error { return nil }

// TestPublisherCloseStopsAtItsDeadline: a publish that hangs does not hold
// Close past its context; the finding in flight counts as kept.
func TestPublisherCloseStopsAtItsDeadline(t *testing.T) {
	ob := openOutbox(t, t.TempDir())
	out := &fakeOutput{block: make(chan struct{}), entered: make(chan struct{}, 4)}
	p := newOutboxPublisher(t, out, metrics.NewSet(), ob, 0)
	sent := make(chan error, 1)
	go func() { sent <- p.Send(context.Background(), Batch{Findings: []Finding{pubFinding("p0", 1)}}) }()
	<-out.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	kept, err := p.Close(ctx)
	if kept != 1 || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "kept in the outbox") {
		t.Fatalf("Close = %d, %v; want 1 kept and the deadline", kept, err)
	}
	if ob.Len() != 1 {
		t.Fatalf("the outbox holds %d", ob.Len())
	}
	close(out.block)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if ob.Len() != 0 {
		t.Fatalf("once the publish in flight finished, the outbox holds %d", ob.Len())
	}
}

// TestPublisherOutboxConcurrentSends: groups hand over batches at once;
// every finding is delivered once and the outbox ends empty.
func TestPublisherOutboxConcurrentSends(t *testing.T) {
	ob := openOutbox(t, t.TempDir())
	out := &fakeOutput{}
	p := newOutboxPublisher(t, out, metrics.NewSet(), ob, 0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if err := p.Send(context.Background(), Batch{Findings: []Finding{pubFinding(fmt.Sprintf("g%d", g), i)}}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range out.ids() {
		seen[id]++
	}
	if len(seen) != 200 || len(out.ids()) != 200 || ob.Len() != 0 || p.Pending() != 0 {
		t.Fatalf("%d delivered, %d distinct, outbox %d, pending %d", len(out.ids()), len(seen), ob.Len(), p.Pending())
	}
}

// TestPublisherOutboxKeepsAlertEvents: alert events are kept as findings
// are, and replayed on their own subject; forecasts are not kept.
func TestPublisherOutboxKeepsAlertEvents(t *testing.T) {
	dir := t.TempDir()
	ob := openOutbox(t, dir)
	p := newOutboxPublisher(t, &fakeOutput{fail: down(1)}, metrics.NewSet(), ob, 0)
	at := time.Date(2026, 11, 1, 0, 5, 0, 0, time.UTC)
	alert := AlertData{Status: StatusFiring, Group: "g", Rule: "r", Kind: "anomaly", Detector: "sigma",
		Series: `ttft{pod="p0"}`, Labels: map[string]string{"pod": "p0"}, Severity: "critical",
		ActiveAt: at, FiredAt: &at, LastAnomalousAt: at, Time: at}
	fc := ForecastData{Group: "g", Rule: "fc", Series: "{}", Origin: at}
	p.Send(context.Background(), Batch{Findings: []Finding{pubFinding("p0", 1)}, Alerts: []AlertData{alert}, Forecasts: []ForecastData{fc}})
	if ob.Len() != 2 {
		t.Fatalf("the outbox holds %d, want the finding and the alert event", ob.Len())
	}
	ob.Close()
	ob2 := openOutbox(t, dir)
	out := &fakeOutput{}
	p2 := newOutboxPublisher(t, out, metrics.NewSet(), ob2, 0)
	if err := p2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, err := NewAlertEvent(alert, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.got) != 2 || out.got[1].ID != want.ID || out.subj[1] != AlertSubject(DefaultSubjectPrefix, "g", "r") {
		t.Fatalf("replayed %v on %v, want the finding then alert %s", out.ids(), out.subj, want.ID)
	}
}

// TestAsyncSendNeverWaitsOnTheBroker: with Async, Send returns while the
// output is stuck; the failure is reported by the next Send, and Close
// gives up at its deadline, keeping what it could not publish.
func TestAsyncSendNeverWaitsOnTheBroker(t *testing.T) {
	out := &fakeOutput{block: make(chan struct{}), entered: make(chan struct{}, 16),
		fail: func(int, Event) error { return errors.New("no ack") }}
	p, err := NewPublisher(PublisherOptions{Output: out, Async: true})
	if err != nil {
		t.Fatal(err)
	}
	returned := make(chan error, 1)
	go func() { returned <- p.Send(context.Background(), Batch{Findings: []Finding{pubFinding("p0", 1)}}) }()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatalf("first Send: %v", err)
		}
	case <-time.After(10 * time.Second): // only to fail instead of hanging
		t.Fatal("an Async Send waited for the broker")
	}
	<-out.entered
	close(out.block) // the broker answers: the publish fails
	deadline := time.Now().Add(10 * time.Second)
	var got error
	for got == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		got = p.Send(context.Background(), Batch{})
	}
	if got == nil || !strings.Contains(got.Error(), "no ack") {
		t.Fatalf("the failure was not reported by a later Send: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if kept, err := p.Close(ctx); kept != 1 || err == nil {
		t.Fatalf("Close kept %d, %v", kept, err)
	}
}
