package natsjs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

func finding(kind, pod string, end time.Time) alerting.Finding {
	return alerting.Finding{
		Kind:        kind,
		Group:       "vllm",
		Rule:        "queue-depth",
		Detector:    "sigma",
		Labels:      map[string]string{"__name__": "vllm:num_requests_waiting", "model": "m1", "pod": pod},
		Series:      fmt.Sprintf(`vllm:num_requests_waiting{model="m1",pod=%q}`, pod),
		WindowStart: end.Add(-90 * time.Second),
		WindowEnd:   end,
		Value:       40,
		ValueTime:   end.Add(-30 * time.Second),
		Expected:    4,
		Lower:       1,
		Upper:       7,
		Score:       6.5,
		Severity:    "warning",
	}
}

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// connect opens the output with short timeouts and closes it at the end.
func connect(t *testing.T, o natsjs.Options) *natsjs.JetStream {
	t.Helper()
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	if o.AckTimeout == 0 {
		o.AckTimeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	j, err := natsjs.Connect(ctx, o)
	if err != nil {
		t.Fatalf("ConnectJetStream: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func counter(s *metrics.Set, name string) uint64 { return s.GetOrCreateCounter(name).Get() }

// The self-metrics of findings, by name as /metrics shows them.
const (
	publishedFindings  = `inferwatch_events_published_total{kind="finding"}`
	duplicateFindings  = `inferwatch_events_duplicate_total{kind="finding"}`
	findingRetries     = `inferwatch_publish_retries_total{kind="finding"}`
	findingFailures    = `inferwatch_publish_failures_total{kind="finding"}`
	rejectedFindings   = `inferwatch_findings_dropped_total{reason="rejected"}`
	defaultSource      = "/inferwatch"
	testSubjectsPrefix = "inferwatch"
)

// publisher publishes through j as the daemon does: findings in order,
// kept while the stream does not acknowledge them.
func publisher(t testing.TB, j *natsjs.JetStream, set *metrics.Set, source string) *alerting.Publisher {
	t.Helper()
	p, err := alerting.NewPublisher(alerting.PublisherOptions{Output: j, Source: source, Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// publish sends fs and returns how many of them are no longer pending.
func publish(ctx context.Context, p *alerting.Publisher, fs []alerting.Finding) (int, error) {
	before := p.Pending()
	err := p.Send(ctx, alerting.Batch{Findings: fs})
	return before + len(fs) - p.Pending(), err
}

// streamInfo reads the stream's state through a separate connection.
func streamInfo(t *testing.T, url, stream string) *jetstream.StreamInfo {
	t.Helper()
	js := natstest.JetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return s.CachedInfo()
}

func TestPublishReadBack(t *testing.T) {
	srv := natstest.Start(t)
	set := metrics.NewSet()
	j := connect(t, natsjs.Options{URL: srv.ClientURL(), Metrics: set})
	p := publisher(t, j, set, "/inferwatch/test")

	fs := []alerting.Finding{
		finding("anomaly", "p0", t0),
		finding("anomaly", "p1", t0.Add(time.Minute)),
		finding("forecast_breach", "p0", t0.Add(2*time.Minute)),
	}
	fs[1].Lower = math.Inf(-1) // one-sided band: encoded as null
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := publish(ctx, p, fs)
	if err != nil || n != len(fs) {
		t.Fatalf("Publish = %d, %v; want %d, nil", n, err, len(fs))
	}

	collect := natstest.Collect(t, srv.ClientURL(), "inferwatch.findings.>")
	msgs := collect(len(fs), 5*time.Second)
	if len(msgs) != len(fs) {
		t.Fatalf("read %d messages, want %d", len(msgs), len(fs))
	}
	if more := collect(1, 200*time.Millisecond); len(more) != 0 {
		t.Errorf("read %d messages more than published", len(more))
	}
	for i, m := range msgs {
		f := fs[i]
		if want := "inferwatch.findings." + f.Kind; m.Subject() != want {
			t.Errorf("message %d subject %q, want %q", i, m.Subject(), want)
		}
		if got := m.Headers().Get("Content-Type"); got != "application/cloudevents+json" {
			t.Errorf("message %d Content-Type %q", i, got)
		}
		if got := m.Headers().Get(jetstream.MsgIDHeader); got != alerting.FindingID(f) {
			t.Errorf("message %d Nats-Msg-Id %q, want %q", i, got, alerting.FindingID(f))
		}
		// Decode the envelope strictly, as a CloudEvents consumer would.
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatalf("message %d: %v: %s", i, err, m.Data())
		}
		attr := func(name string) string {
			var s string
			if err := json.Unmarshal(ev[name], &s); err != nil {
				t.Errorf("message %d attribute %s = %s: %v", i, name, ev[name], err)
			}
			return s
		}
		for name, want := range map[string]string{
			"specversion":     "1.0",
			"id":              alerting.FindingID(f),
			"source":          "/inferwatch/test",
			"type":            "io.inferwatch.finding.v1",
			"subject":         f.Series,
			"time":            f.WindowEnd.UTC().Format(time.RFC3339Nano),
			"datacontenttype": "application/json",
		} {
			if got := attr(name); got != want {
				t.Errorf("message %d %s = %q, want %q", i, name, got, want)
			}
		}
		if len(ev) != 8 {
			t.Errorf("message %d has %d attributes, want 8: %s", i, len(ev), m.Data())
		}
		var got alerting.Finding
		if err := json.Unmarshal(ev["data"], &got); err != nil {
			t.Fatalf("message %d data: %v", i, err)
		}
		want := f
		if math.IsInf(want.Lower, 0) {
			if !bytes.Contains(ev["data"], []byte(`"lower":null`)) {
				t.Errorf("message %d: -Inf lower not encoded as null: %s", i, ev["data"])
			}
			want.Lower = math.NaN() // null reads back as undefined
		}
		if !equalFinding(got, want) {
			t.Errorf("message %d data\n got %+v\nwant %+v", i, got, want)
		}
	}
	for name, want := range map[string]uint64{
		publishedFindings: 3,
		duplicateFindings: 0,
		findingRetries:    0,
		findingFailures:   0,
	} {
		if got := counter(set, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// sameFloat is ==, with NaN the same as NaN.
func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func equalFinding(a, b alerting.Finding) bool {
	if len(a.Labels) != len(b.Labels) {
		return false
	}
	for k, v := range a.Labels {
		if b.Labels[k] != v {
			return false
		}
	}
	return a.Kind == b.Kind && a.Group == b.Group && a.Rule == b.Rule && a.Detector == b.Detector &&
		a.Series == b.Series && a.WindowStart.Equal(b.WindowStart) && a.WindowEnd.Equal(b.WindowEnd) &&
		a.Value == b.Value && a.ValueTime.Equal(b.ValueTime) && a.Expected == b.Expected &&
		sameFloat(a.Lower, b.Lower) && a.Upper == b.Upper && a.Score == b.Score && a.Severity == b.Severity
}

func TestPublishDuplicate(t *testing.T) {
	srv := natstest.Start(t)
	set := metrics.NewSet()
	j := connect(t, natsjs.Options{URL: srv.ClientURL(), Metrics: set})
	p := publisher(t, j, set, "")
	ctx := context.Background()

	f := finding("anomaly", "p0", t0)
	again := finding("anomaly", "p0", t0)
	again.Score, again.Value = 9, 55 // a later evaluation of the same window
	for i, batch := range [][]alerting.Finding{{f}, {again}, {f, again}} {
		if n, err := publish(ctx, p, batch); err != nil || n != len(batch) {
			t.Fatalf("batch %d: Publish = %d, %v", i, n, err)
		}
	}
	if info := streamInfo(t, srv.ClientURL(), "INFERWATCH"); info.State.Msgs != 1 {
		t.Errorf("stream holds %d messages, want 1", info.State.Msgs)
	}
	if got := natstest.Collect(t, srv.ClientURL(), "inferwatch.>")(2, 500*time.Millisecond); len(got) != 1 {
		t.Errorf("subscriber saw %d messages, want 1", len(got))
	}
	if got := counter(set, publishedFindings); got != 4 {
		t.Errorf("published_total = %d, want 4", got)
	}
	if got := counter(set, duplicateFindings); got != 3 {
		t.Errorf("duplicate_total = %d, want 3", got)
	}
}

func TestStreamUpdate(t *testing.T) {
	srv := natstest.Start(t)
	js := natstest.JetStream(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Operators created the stream with another window, an age limit and an
	// extra subject; inferwatch changes the window and keeps the rest.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       "INFERWATCH",
		Subjects:   []string{"inferwatch.>", "legacy.findings"},
		Storage:    jetstream.FileStorage,
		Duplicates: time.Minute,
		MaxAge:     48 * time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	connect(t, natsjs.Options{URL: srv.ClientURL(), DuplicateWindow: 10 * time.Minute})
	info := streamInfo(t, srv.ClientURL(), "INFERWATCH")
	if info.Config.Duplicates != 10*time.Minute || info.Config.MaxAge != 48*time.Hour ||
		strings.Join(info.Config.Subjects, " ") != "inferwatch.> legacy.findings" {
		t.Errorf("stream config after update: duplicates %v, max age %v, subjects %v",
			info.Config.Duplicates, info.Config.MaxAge, info.Config.Subjects)
	}

	// A stream of that name over other subjects gains ours.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.x"}}); err != nil {
		t.Fatal(err)
	}
	connect(t, natsjs.Options{URL: srv.ClientURL(), Prefix: "acme", Stream: "OTHER"})
	info = streamInfo(t, srv.ClientURL(), "OTHER")
	if strings.Join(info.Config.Subjects, " ") != "other.x acme.>" || info.Config.Duplicates != 24*time.Hour {
		t.Errorf("stream OTHER: subjects %v, duplicates %v", info.Config.Subjects, info.Config.Duplicates)
	}

	// A window longer than the stream keeps messages cannot work: say so.
	_, err := natsjs.Connect(ctx, natsjs.Options{URL: srv.ClientURL(), DuplicateWindow: 72 * time.Hour})
	if err == nil || !strings.Contains(err.Error(), "stream INFERWATCH keeps messages for 48h0m0s, less than the duplicate window 72h0m0s") {
		t.Errorf("window beyond max age: err = %v", err)
	}
	// Another stream already owns the subjects: the server's reason is kept.
	_, err = natsjs.Connect(ctx, natsjs.Options{URL: srv.ClientURL(), Stream: "SECOND"})
	if err == nil || !strings.Contains(err.Error(), "creating or updating stream SECOND over inferwatch.>") ||
		!strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlapping stream: err = %v", err)
	}
}

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestConnectWaitsForNATS(t *testing.T) {
	addr := freePort(t)
	url := "nats://" + addr
	var logs lockedBuffer
	set := metrics.NewSet()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		j   *natsjs.JetStream
		err error
	}
	done := make(chan result, 1)
	go func() {
		j, err := natsjs.Connect(ctx, natsjs.Options{
			URL: url, ConnectBackoffMax: 300 * time.Millisecond, Metrics: set,
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		done <- result{j, err}
	}()

	time.Sleep(1500 * time.Millisecond)
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: addr, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)

	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("ConnectJetStream did not return after the server started")
	}
	if r.err != nil {
		t.Fatalf("ConnectJetStream: %v", r.err)
	}
	t.Cleanup(func() { _ = r.j.Close() })
	if !strings.Contains(logs.String(), "NATS unreachable at start; retrying with backoff") ||
		!strings.Contains(logs.String(), "url="+url) || !strings.Contains(logs.String(), "wait=") {
		t.Errorf("logs do not report the retries with URL and wait:\n%s", logs.String())
	}
	if got := counter(set, "inferwatch_nats_connect_retries_total"); got < 2 {
		t.Errorf("connect retries = %d, want at least 2", got)
	}
	n, err := publish(ctx, publisher(t, r.j, set, ""), []alerting.Finding{finding("anomaly", "p0", t0)})
	if err != nil || n != 1 {
		t.Fatalf("Publish = %d, %v", n, err)
	}
	if got := natstest.Collect(t, url, "inferwatch.findings.anomaly")(1, 2*time.Second); len(got) != 1 {
		t.Errorf("read %d messages, want 1", len(got))
	}
}

func TestConnectGivesUp(t *testing.T) {
	url := "nats://user:hunter2@" + freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err := natsjs.Connect(ctx, natsjs.Options{URL: url})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "gave up after") ||
		!strings.Contains(err.Error(), "nats://user:xxxxx@127.0.0.1") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v, want a deadline error naming the redacted URL", err)
	}
}

func TestPublishServerStopsMidway(t *testing.T) {
	addr := freePort(t)
	store := t.TempDir()
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: addr, StoreDir: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	set := metrics.NewSet()
	j := connect(t, natsjs.Options{URL: srv.ClientURL(), Metrics: set,
		AckTimeout: 150 * time.Millisecond, MaxPublishRetries: 2, ConnectBackoffMax: 100 * time.Millisecond})
	p := publisher(t, j, set, "")

	// A watcher stops the server when it sees the third finding, while the
	// publisher is still working through the batch.
	watch, err := nats.Connect(srv.ClientURL(), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	var stop sync.Once
	stopped := make(chan struct{})
	seen := 0
	if _, err := watch.Subscribe("inferwatch.findings.>", func(*nats.Msg) {
		if seen++; seen == 3 {
			stop.Do(func() { go func() { srv.Shutdown(); close(stopped) }() })
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}

	fs := make([]alerting.Finding, 1000)
	for i := range fs {
		fs[i] = finding("anomaly", fmt.Sprintf("p%d", i), t0)
	}
	ctx := context.Background()
	n, err := publish(ctx, p, fs)
	<-stopped
	if err == nil || n >= len(fs) || n < 2 {
		t.Fatalf("Publish = %d, %v; want 2 ≤ n < %d and an error", n, err, len(fs))
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("publishing finding %d of %d", n+1, len(fs))) ||
		!strings.Contains(err.Error(), "no ack after 3 attempts") || errors.Is(err, alerting.ErrRejected) {
		t.Errorf("error does not say which finding failed and why: %v", err)
	}
	if got := counter(set, findingRetries); got != 2 {
		t.Errorf("retries = %d, want 2", got)
	}
	if got := counter(set, findingFailures); got != 1 {
		t.Errorf("failures = %d, want 1", got)
	}
	if got := p.Pending(); got != len(fs)-n {
		t.Errorf("pending = %d, want %d", got, len(fs)-n)
	}
	if got := counter(set, publishedFindings); got != uint64(n) {
		t.Errorf("published_total = %d, want %d", got, n)
	}

	t.Logf("published %d of %d before the server stopped: %v", n, len(fs), err)

	// The caller kept fs[n:]; once NATS is back, publishing them completes
	// the stream without loss or duplicates.
	srv2, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: addr, StoreDir: store})
	if err != nil {
		t.Fatalf("restarting NATS on %s: %v", addr, err)
	}
	t.Cleanup(srv2.Shutdown)
	var try int
	for ; try < 50 && p.Pending() > 0; try++ { // until the client has reconnected
		err = p.Flush(ctx)
	}
	t.Logf("republished after restart in %d calls", try)
	if p.Pending() > 0 {
		t.Fatalf("after restart, %d findings still unpublished: %v", p.Pending(), err)
	}
	info := streamInfo(t, srv2.ClientURL(), "INFERWATCH")
	if info.State.Msgs != uint64(len(fs)) {
		t.Errorf("stream holds %d messages, want %d", info.State.Msgs, len(fs))
	}
	ids := map[string]bool{}
	for _, msg := range natstest.Collect(t, srv2.ClientURL(), "inferwatch.>")(len(fs), 5*time.Second) {
		ids[msg.Headers().Get(jetstream.MsgIDHeader)] = true
	}
	for i, f := range fs {
		if !ids[alerting.FindingID(f)] {
			t.Errorf("finding %d missing from the stream", i)
			break
		}
	}
}

func TestPublishRejects(t *testing.T) {
	srv := natstest.Start(t)
	set := metrics.NewSet()
	j := connect(t, natsjs.Options{URL: srv.ClientURL(), Metrics: set})
	ctx := context.Background()

	var logs lockedBuffer
	p, err := alerting.NewPublisher(alerting.PublisherOptions{Output: j, Metrics: set, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	fs := []alerting.Finding{finding("anomaly", "p0", t0), finding("bad.kind", "p1", t0), finding("anomaly", "p2", t0)}
	n, err := publish(ctx, p, fs)
	if n != 3 || err != nil || counter(set, publishedFindings) != 2 || counter(set, rejectedFindings) != 1 ||
		!strings.Contains(logs.String(), `kind \"bad.kind\" is not a single NATS subject token`) {
		t.Errorf("Publish = %d, %v, published %d, rejected %d; want the bad kind dropped, counted and logged, the others published\n%s",
			n, err, counter(set, publishedFindings), counter(set, rejectedFindings), logs.String())
	}
	if got := counter(set, findingRetries); got != 0 {
		t.Errorf("a rejected finding was retried %d times", got)
	}

	ev, err := alerting.NewFindingEvent(fs[0], "")
	if err != nil {
		t.Fatal(err)
	}
	for subject, want := range map[string]string{
		"elsewhere.signals": `subject "elsewhere.signals" is outside the stream's subjects inferwatch.>`,
		"inferwatch.*":      `token 2 ("*")`,
		"inferwatch":        "outside the stream's subjects",
	} {
		if err := j.PublishEvent(ctx, subject, ev); !errors.Is(err, alerting.ErrRejected) || !strings.Contains(err.Error(), want) {
			t.Errorf("PublishEvent(%q) = %v, want a rejection containing %q", subject, err, want)
		}
	}
	bad := ev
	bad.ID = ""
	if err := j.PublishEvent(ctx, "inferwatch.signals.scale", bad); !errors.Is(err, alerting.ErrRejected) {
		t.Errorf("PublishEvent without id = %v, want a rejection", err)
	}
}

func TestPublishEvent(t *testing.T) {
	srv := natstest.Start(t)
	j := connect(t, natsjs.Options{URL: srv.ClientURL()})
	ev := alerting.Event{
		SpecVersion: "1.0", ID: "scale-1", Source: "/inferwatch", Type: "io.inferwatch.scale.up",
		Time: t0, DataContentType: "application/json", Data: json.RawMessage(`{"replicas":3}`),
	}
	ctx := context.Background()
	for range 2 {
		if err := j.PublishEvent(ctx, "inferwatch.signals.scale", ev); err != nil {
			t.Fatal(err)
		}
	}
	msgs := natstest.Collect(t, srv.ClientURL(), "inferwatch.signals.>")(2, 500*time.Millisecond)
	if len(msgs) != 1 {
		t.Fatalf("read %d messages, want 1 (the second publish is a duplicate)", len(msgs))
	}
	var got alerting.Event
	if err := json.Unmarshal(msgs[0].Data(), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "scale-1" || got.Type != ev.Type || string(got.Data) != `{"replicas":3}` || !got.Time.Equal(t0) ||
		msgs[0].Headers().Get(jetstream.MsgIDHeader) != "scale-1" {
		t.Errorf("read back %+v", got)
	}
}

func TestCloseThenPublish(t *testing.T) {
	srv := natstest.Start(t)
	set := metrics.NewSet()
	ctx := context.Background()
	j, err := natsjs.Connect(ctx, natsjs.Options{URL: srv.ClientURL(), Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	p := publisher(t, j, set, "")
	if _, err := publish(ctx, p, []alerting.Finding{finding("anomaly", "p0", t0)}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	n, err := publish(ctx, p, []alerting.Finding{finding("anomaly", "p1", t0)})
	if n != 0 || !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("Publish after Close = %d, %v; want 0 and the connection-closed error", n, err)
	}
	if got := counter(set, findingRetries); got != 0 {
		t.Errorf("publishing on a closed connection was retried %d times", got)
	}
}

func BenchmarkPublish(b *testing.B) {
	srv := natstest.Start(b)
	ctx := context.Background()
	j, err := natsjs.Connect(ctx, natsjs.Options{URL: srv.ClientURL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = j.Close() })
	p := publisher(b, j, nil, "")
	batch := make([]alerting.Finding, 100)
	i := 0
	for b.Loop() {
		for k := range batch {
			batch[k] = finding("anomaly", fmt.Sprintf("p%d", k), t0.Add(time.Duration(i)*time.Second))
		}
		i++
		if n, err := publish(ctx, p, batch); err != nil || n != len(batch) {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "findings/s")
}

// TestStreamLimits: a stream inferwatch creates is bounded by age and
// size, so the per-cycle forecasts do not grow it without end; limits
// given later are applied to it.
func TestStreamLimits(t *testing.T) {
	srv := natstest.Start(t)
	connect(t, natsjs.Options{URL: srv.ClientURL()})
	info := streamInfo(t, srv.ClientURL(), "INFERWATCH")
	if info.Config.MaxAge != natsjs.DefaultStreamMaxAge || info.Config.MaxBytes != natsjs.DefaultStreamMaxBytes ||
		info.Config.Storage != jetstream.FileStorage || info.Config.Discard != jetstream.DiscardOld {
		t.Fatalf("new stream: max age %v, max bytes %d, storage %v, discard %v", info.Config.MaxAge, info.Config.MaxBytes, info.Config.Storage, info.Config.Discard)
	}
	connect(t, natsjs.Options{URL: srv.ClientURL(), MaxAge: 72 * time.Hour, MaxBytes: 64 << 20})
	info = streamInfo(t, srv.ClientURL(), "INFERWATCH")
	if info.Config.MaxAge != 72*time.Hour || info.Config.MaxBytes != 64<<20 {
		t.Fatalf("after setting limits: max age %v, max bytes %d", info.Config.MaxAge, info.Config.MaxBytes)
	}
	ctx := context.Background()
	if _, err := natsjs.Connect(ctx, natsjs.Options{URL: srv.ClientURL(), MaxAge: time.Hour}); err == nil ||
		!strings.Contains(err.Error(), "less than the duplicate window 24h0m0s") {
		t.Fatalf("max age below the duplicate window: %v", err)
	}
}
