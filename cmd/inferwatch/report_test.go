package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest/localvm"
	"github.com/inferwatch/inferwatch/report"
)

const reportConfig = `source: {url: %s}
groups:
  - name: g
    rules:
      - {name: r, expr: up}
slos:
  - name: e2e
    objective: 99
    window: 7d
    sli: {latency: {metric: vllm:e2e_request_latency_seconds, threshold: 40s}}
reports:
  - name: daily
    schedule: "0 6 * * *"
    time_zone: Europe/Berlin
    by: [model]
    output_dir: out
    formats: [json, md]
`

func writeReportConfig(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inferwatch.yml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(reportConfig, url)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportUsage(t *testing.T) {
	cfg := writeReportConfig(t, "http://127.0.0.1:1")
	if code, _, stderr := runCmd(t, context.Background(), "report", "--config", cfg); code != 2 || !strings.Contains(stderr, "--name NAME are required") {
		t.Errorf("without --name: %d %q", code, stderr)
	}
	if code, _, stderr := runCmd(t, context.Background(), "report", "--config", cfg, "--name", "weekly"); code != 1 || !strings.Contains(stderr, `no report named "weekly"; the configuration's reports are daily`) {
		t.Errorf("an unknown report: %d %q", code, stderr)
	}
	if code, _, stderr := runCmd(t, context.Background(), "report", "--config", cfg, "--name", "daily", "--at", "yesterday"); code != 2 || !strings.Contains(stderr, `--at "yesterday" is not a time`) {
		t.Errorf("a bad --at: %d %q", code, stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.yml")
	os.WriteFile(bad, []byte(strings.Replace(fmt.Sprintf(reportConfig, "http://127.0.0.1:1"), `"0 6 * * *"`, `"0 6 * * mon-sun-x"`, 1)), 0o644)
	if code, _, stderr := runCmd(t, context.Background(), "check", bad); code != 1 || !strings.Contains(stderr, `bad.yml:13:24: report "daily": schedule "0 6 * * mon-sun-x": the day of week field`) {
		t.Errorf("check of a bad schedule: %d %q", code, stderr)
	}
}

// TestReportCommand makes the report of a past day from the store alone.
func TestReportCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := localvm.Run(t)
	end := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	importFleet(t, vm, fleet.Options{Seed: 1, End: end, Duration: 6 * 24 * time.Hour, Step: time.Minute})
	cfg := writeReportConfig(t, vm.URL())
	code, stdout, stderr := runCmd(t, context.Background(), "report", "--config", cfg, "--name", "daily", "--at", "2026-11-25", "--no-events")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files := strings.Fields(stdout)
	dir := filepath.Join(filepath.Dir(cfg), "out")
	want := []string{filepath.Join(dir, "daily-2026-11-25T0600+0100.json"), filepath.Join(dir, "daily-2026-11-25T0600+0100.md")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("printed %q, want %q", files, want)
	}
	var doc struct {
		Period struct{ Start, End time.Time }
		Models []struct{ Name string }
	}
	b, err := os.ReadFile(files[0])
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if !doc.Period.End.Equal(time.Date(2026, 11, 25, 6, 0, 0, 0, berlin)) || !doc.Period.Start.Equal(time.Date(2026, 11, 24, 6, 0, 0, 0, berlin)) || len(doc.Models) != 3 {
		t.Errorf("period %v – %v, %d models", doc.Period.Start, doc.Period.End, len(doc.Models))
	}
}

// TestStartReports runs the daemon's report scheduler as run wires it:
// with the state of a report made two days ago it makes the one due now at
// start, announces it, and stops when the daemon's context is cancelled.
func TestStartReports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	vm := localvm.Run(t)
	end := time.Now().UTC().Truncate(time.Minute)
	importFleet(t, vm, fleet.Options{Seed: 3, End: end, Duration: 6 * 24 * time.Hour, Step: time.Minute})
	srv := natstest.Start(t)
	path := writeReportConfig(t, vm.URL())
	cfg, _, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(path), "out")
	if err := report.SaveState(dir, "daily", end.Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	set := metrics.NewSet()
	logs := newSyncBuffer()
	logger := slog.New(slog.NewTextHandler(logs, nil))
	client, err := newStoreClient(cfg, set, logger)
	if err != nil {
		t.Fatal(err)
	}
	js, err := natsjs.Connect(context.Background(), natsjs.Options{URL: srv.ClientURL(), Prefix: cfg.NATS.SubjectPrefix, Stream: cfg.NATS.Stream})
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	ctx, cancel := context.WithCancel(context.Background())
	stop, err := startReports(ctx, cfg, srv.ClientURL(), client, js, nil, logger, set)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for i := 0; i < 1200; i++ {
		if e, ok, _ := report.LastEnd(dir, "daily"); ok && e.After(end.Add(-48*time.Hour)) {
			last = e
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	stop()
	if last.IsZero() {
		t.Fatal("the report due at start was not made")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "daily-*.json")); len(files) != 1 {
		t.Errorf("files %q, want the one report due now", files)
	}
	msgs := natstest.Collect(t, srv.ClientURL(), "inferwatch.reports.daily")(1, 10*time.Second)
	if len(msgs) != 1 || msgs[0].Headers().Get("Nats-Msg-Id") == "" {
		t.Errorf("%d announcements on inferwatch.reports.daily", len(msgs))
	}
}
