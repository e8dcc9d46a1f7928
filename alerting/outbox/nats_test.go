package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/alerting/outbox"
)

func startNATS(t *testing.T, addr, store string) *natsjs.Embedded {
	t.Helper()
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: addr, StoreDir: store})
	if err != nil {
		t.Fatalf("starting NATS on %s: %v", addr, err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

func connectNATS(t *testing.T, url string, set *metrics.Set) *natsjs.JetStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	j, err := natsjs.Connect(ctx, natsjs.Options{URL: url, Metrics: set,
		AckTimeout: 150 * time.Millisecond, MaxPublishRetries: 2, ConnectBackoffMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// TestOutboxAcrossANATSOutageAndACrash: NATS stops in the middle of a batch
// of 1,000 findings; the Publisher is dropped without Close, as a SIGKILL
// would; NATS comes back, and a new Publisher on the same outbox delivers
// the rest. The stream then holds every finding exactly once: expected,
// received and duplicated are N, N and 0 (JetStream drops as a duplicate
// a replayed finding it had stored without the acknowledgement arriving).
func TestOutboxAcrossANATSOutageAndACrash(t *testing.T) {
	const n = 1000
	// NATS comes back on the port the kernel chose for its first start.
	store, dir := t.TempDir(), t.TempDir()
	srv := startNATS(t, "127.0.0.1:0", store)
	addr := srv.Addr()
	set1 := metrics.NewSet()
	j1 := connectNATS(t, srv.ClientURL(), set1)
	ob1, err := outbox.Open(outbox.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p1, err := alerting.NewPublisher(alerting.PublisherOptions{Output: j1, Outbox: ob1, Metrics: set1})
	if err != nil {
		t.Fatal(err)
	}

	// A watcher stops the server when it sees the 100th finding, while
	// the publisher is working through the batch.
	watch, err := nats.Connect(srv.ClientURL(), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	var stop sync.Once
	stopped := make(chan struct{})
	seen := 0
	if _, err := watch.Subscribe("inferwatch.findings.>", func(*nats.Msg) {
		if seen++; seen == 100 {
			stop.Do(func() { go func() { srv.Shutdown(); close(stopped) }() })
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	fs := make([]alerting.Finding, n)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range fs {
		fs[i] = alerting.Finding{Kind: "anomaly", Group: "vllm", Rule: "ttft", Detector: "sigma",
			Labels: map[string]string{"pod": fmt.Sprintf("p%d", i)}, Series: fmt.Sprintf(`ttft{pod="p%d"}`, i),
			WindowStart: t0, WindowEnd: t0, Value: 9, Score: 3, Severity: "critical"}
	}
	if err := p1.Send(context.Background(), alerting.Batch{Findings: fs}); err == nil {
		t.Fatal("no error from a batch during which NATS stopped")
	}
	<-stopped
	kept := ob1.Len()
	if kept == 0 || kept >= n || kept != p1.Pending() {
		t.Fatalf("the outbox holds %d findings, the publisher %d pending; want some of %d", kept, p1.Pending(), n)
	}
	// p1 is dropped without Close; the kernel keeps what it wrote to the
	// outbox, and closing the outbox releases its lock for the new start.
	ob1.Close()

	srv2 := startNATS(t, addr, store)
	set2 := metrics.NewSet()
	j2 := connectNATS(t, srv2.ClientURL(), set2)
	ob2, err := outbox.Open(outbox.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer ob2.Close()
	p2, err := alerting.NewPublisher(alerting.PublisherOptions{Output: j2, Outbox: ob2, Metrics: set2})
	if err != nil {
		t.Fatal(err)
	}
	if p2.Pending() != kept {
		t.Fatalf("the new publisher has %d pending, want the %d kept", p2.Pending(), kept)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if left, err := p2.Close(ctx); left != 0 || err != nil {
		t.Fatalf("Close after NATS is back = %d, %v", left, err)
	}
	if ob2.Len() != 0 {
		t.Fatalf("the outbox still holds %d", ob2.Len())
	}

	info := func() *jetstream.StreamInfo {
		js := natstest.JetStream(t, srv2.ClientURL())
		s, err := js.Stream(ctx, "INFERWATCH")
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo()
	}()
	count := map[string]int{}
	for _, msg := range natstest.Collect(t, srv2.ClientURL(), "inferwatch.>")(n+10, 5*time.Second) {
		count[msg.Headers().Get(jetstream.MsgIDHeader)]++
	}
	received, duplicated := 0, 0
	for _, f := range fs {
		if c := count[alerting.FindingID(f)]; c > 0 {
			received++
			duplicated += c - 1
		}
	}
	t.Logf("expected %d, received %d, duplicated %d; stream holds %d; %d kept across the restart, %d of them dropped by JetStream as duplicates",
		n, received, duplicated, info.State.Msgs, kept,
		set2.GetOrCreateCounter(`inferwatch_events_duplicate_total{kind="finding"}`).Get())
	if received != n || duplicated != 0 || info.State.Msgs != n || len(count) != n {
		t.Fatalf("expected / received / duplicated = %d / %d / %d, stream holds %d messages with %d ids; want %d / %d / 0",
			n, received, duplicated, info.State.Msgs, len(count), n, n)
	}
}
