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
	"github.com/inferwatch/inferwatch/ingest/localvm"
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
	vm := localvm.Run(t, "-search.latencyOffset=0s", "-search.disableCache")
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
