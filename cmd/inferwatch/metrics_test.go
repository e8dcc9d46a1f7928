package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localprom"
)

// metricsDaemon runs the daemon against a real VictoriaMetrics holding a
// live series with spikes, with the embedded NATS, an outbox, write-back
// and the exported gauges, and returns its HTTP address once the group has
// evaluated twice and the store requests are on /metrics.
func metricsDaemon(t *testing.T) string {
	t.Helper()
	bin := daemonBinary(t)
	vm := liveVM(t)
	// A sample a second from 11 minutes ago to 3 minutes ahead: each
	// evaluation finds new points, and every 20th second is a spike.
	t0 := time.Now().Truncate(time.Second)
	liveSeries(t, vm, t0.Add(-11*time.Minute), t0.Add(3*time.Minute), func(ts time.Time) float64 {
		if ts.After(t0) && ts.Unix()%20 == 0 {
			return 100
		}
		return 10 + 0.1*float64(ts.Unix()%3)
	})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %[1]s
  evaluation_delay: 0s
nats:
  outbox_dir: %[2]s
  embedded:
    listen: 127.0.0.1:0
writeback:
  url: %[1]s
  batch_deadline: 1s
groups:
  - name: latency
    interval: 1s
    rules:
      - name: ttft_spike
        expr: ttft
        step: 1s
        lookback: 10m
        detector: {name: sigma, k: 4, min_points: 30}
`, vm.URL(), filepath.Join(dir, "outbox"))), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	stderr := newSyncBuffer()
	cmd := exec.Command(bin, "run", "--config", cfg, "--web.listen-address", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	web := servingAddr(t, stderr)
	page := func() string { _, body, _ := get("http://" + web + "/metrics"); return body }
	waitFor(t, "two evaluations and a store request on /metrics", func() bool {
		p := page()
		return counterAtLeast(p, `inferwatch_group_evaluations_total{group="latency"}`, 2) &&
			counterAtLeast(p, `inferwatch_source_request_duration_seconds_count{path="/api/v1/query_range"}`, 1)
	}, func() string { return "stderr:\n" + stderr.String() + "\n/metrics:\n" + page() })
	return web
}

// TestMetricsPagePassesPromtool: the daemon's /metrics, after evaluations,
// is an exposition `promtool check metrics` accepts: every family with its
// help text and type, every histogram with le buckets.
func TestMetricsPagePassesPromtool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics, NATS and the daemon")
	}
	localprom.Need(t, "promtool")
	web := metricsDaemon(t)
	code, page, err := get("http://" + web + "/metrics")
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check := exec.CommandContext(ctx, "promtool", "check", "metrics")
	check.Stdin = bytes.NewReader([]byte(page))
	if out, err := check.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s\n/metrics:\n%s", err, out, page)
	}
}

// TestPrometheusReadsTheDaemonsHistograms: a real Prometheus scraping the
// daemon computes a quantile of its store request durations.
func TestPrometheusReadsTheDaemonsHistograms(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics, NATS, the daemon and Prometheus")
	}
	localprom.Need(t, "prometheus")
	web := metricsDaemon(t)
	prom := localprom.Scrape(t, web, time.Second)
	c, err := ingest.NewClient(ingest.ClientOptions{URL: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	const q = `histogram_quantile(0.9, sum by (le) (rate(inferwatch_source_request_duration_seconds_bucket[1m])))`
	var got []ingest.Series
	waitFor(t, "Prometheus computes "+q, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err = c.Query(ctx, q, time.Now())
		return err == nil && len(got) == 1 && len(got[0].Values) == 1 && !math.IsNaN(got[0].Values[0]) && !math.IsInf(got[0].Values[0], 0)
	}, func() string { return fmt.Sprintf("last answer %+v, error %v", got, err) })
	v := got[0].Values[0]
	if v <= 0 || v > 120 {
		t.Fatalf("%s = %g s, want a duration within the buckets (0, 120]", q, v)
	}
	t.Logf("%s = %g s", q, v)
}
