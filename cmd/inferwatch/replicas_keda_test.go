package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/keda"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
)

// TestReplicasServeEveryTargetToKEDA: two replicas share a scale rule's
// group and another; KEDA behind a Service asks either of them, so each
// serves the rule's target with the same signal, the one that does not
// own the group from the stream. The owner's /metrics exports the gauge,
// the other's does not.
func TestReplicasServeEveryTargetToKEDA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two daemons")
	}
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	srv := natstest.Start(t)
	now := time.Now().Truncate(time.Minute)
	load := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "load"}, {Name: "model", Value: "m"}}}
	replicas := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "replicas"}, {Name: "model", Value: "m"}}}
	for ts := now.Add(-4 * time.Hour); !ts.After(now); ts = ts.Add(time.Minute) {
		hour := 2 * math.Pi * float64(ts.Unix()%3600) / 3600
		load.Timestamps = append(load.Timestamps, ts.UnixMilli())
		load.Values = append(load.Values, 30+10*math.Sin(hour))
		replicas.Timestamps = append(replicas.Timestamps, ts.UnixMilli())
		replicas.Values = append(replicas.Values, 2)
	}
	importSeries(t, vm, load, replicas)
	cfg := fmt.Sprintf(`source: {url: %s}
nats: {url: %s, lease_ttl: 3s, heartbeat: 1s}
groups:
  - name: serving
    interval: 2s
    rules:
      - name: rate
        forecast: {expr: load, step: 1m, history: 3h, period: 1h}
      - name: deploy
        scale: {forecast: rate, on: [model], replicas: replicas, capacity_per_replica: 10, hold: 0s}
  - name: other
    interval: 2s
    rules:
      - name: level
        expr: load
        step: 1m
        lookback: 1h
`, vm.URL(), srv.ClientURL())
	file := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	type replica struct {
		log  *syncBuffer
		addr string
	}
	var rs []replica
	for range 2 {
		log, _, stop := daemon(t, bin, "run", "--config", file, "--web.listen-address", "127.0.0.1:0", "--outbox.dir", t.TempDir())
		t.Cleanup(stop)
		rs = append(rs, replica{log: log, addr: servingAddr(t, log)})
	}
	signal := func(r replica) (keda.Signal, bool) {
		code, body, err := get("http://" + r.addr + keda.PathPrefix + "targets/deploy")
		if err != nil || code != 200 {
			return keda.Signal{}, false
		}
		var l keda.List
		if json.Unmarshal([]byte(body), &l) != nil || len(l.Targets) != 1 {
			return keda.Signal{}, false
		}
		return l.Targets[0], true
	}
	show := func() string {
		_, a, _ := get("http://" + rs[0].addr + keda.PathPrefix + "targets/deploy")
		_, b, _ := get("http://" + rs[1].addr + keda.PathPrefix + "targets/deploy")
		return "served: " + a + "\n" + b
	}
	var a, b keda.Signal
	waitFor(t, "both replicas serve the target's newest signal", func() bool {
		var oka, okb bool
		a, oka = signal(rs[0])
		b, okb = signal(rs[1])
		return oka && okb && a.Time.Equal(b.Time)
	}, show)
	if a.DesiredReplicas != b.DesiredReplicas || a.Target != b.Target || a.Group != "serving" || a.DesiredReplicas < 1 {
		t.Errorf("the replicas serve %+v and %+v", a, b)
	}
	exported := 0
	for _, r := range rs {
		_, body, err := get("http://" + r.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "inferwatch_scale_desired_replicas{") && strings.Contains(line, `rule="deploy"`) {
				exported++
			}
		}
	}
	if exported != 1 {
		t.Errorf("%d replicas export the scale gauge, want 1 (its group's owner)", exported)
	}
}

// TestReplicaResolvesWhatARemovedGroupLeft: a replica fires an alert in
// group g0 and stops; a replica started with a configuration without g0
// holds no g0 alert in memory, and resolves the one left in the state
// bucket, once, as its rule removed.
func TestReplicaResolvesWhatARemovedGroupLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two daemons")
	}
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	srv := natstest.Start(t)
	now := time.Now().Truncate(time.Second)
	spiked := func(ts time.Time) float64 {
		if ts.After(now.Add(-5 * time.Second)) {
			return 50
		}
		return steady(ts)
	}
	importSeries(t, vm, podSeries("p", now.Add(-3*time.Minute), now, spiked))
	group := func(name string) string {
		return fmt.Sprintf(`  - name: %s
    interval: 2s
    rules:
      - name: load
        expr: load
        step: 1s
        lookback: 2m
        detector: {name: sigma, k: 4, min_points: 30}
`, name)
	}
	write := func(groups ...string) string {
		file := filepath.Join(t.TempDir(), "cfg.yml")
		body := fmt.Sprintf("source: {url: %s, evaluation_delay: 1s}\nnats: {url: %s, lease_ttl: 3s, heartbeat: 1s}\ngroups:\n%s",
			vm.URL(), srv.ClientURL(), strings.Join(groups, ""))
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	collect := natstest.Collect(t, srv.ClientURL(), "inferwatch.alerts.>")
	firing := func(evs []alertEvent) bool { return strings.Contains(statuses(evs, "p"), "firing") }
	log, _, stop := daemon(t, bin, "run", "--config", write(group("g0")), "--web.listen-address", "", "--outbox.dir", t.TempDir(),
		"--backfill", "1m")
	waitFor(t, "the first replica starts", func() bool { return strings.Contains(log.String(), `msg="inferwatch started"`) }, log.String)
	evs := alertEvents(t, collect, nil, firing)
	stop()
	if !firing(evs) {
		t.Fatalf("no alert fired: %q\n%s", statuses(evs, "p"), log.String())
	}
	log, _, stop = daemon(t, bin, "run", "--config", write(group("g1")), "--web.listen-address", "", "--outbox.dir", t.TempDir())
	t.Cleanup(stop)
	resolved := func(evs []alertEvent) bool { return strings.Contains(statuses(evs, "p"), "resolved") }
	evs = alertEvents(t, collect, evs, resolved)
	if got := statuses(evs, "p"); !strings.HasSuffix(got, "firing resolved(rule_removed)") || strings.Count(got, "resolved") != 1 {
		t.Fatalf("events %q, want the firing alert resolved once as its rule removed\n%s", got, log.String())
	}
}
