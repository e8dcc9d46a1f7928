package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules"
)

// TestReplicasSplitAShardedGroup: three daemons on one configuration
// split a group of sixteen series into eight shards by pod. Every series
// spikes twice; between the spikes one daemon is killed, and its shards
// are taken over. Each spike gives one finding, from the shard its pod
// hashes to; no shard is evaluated twice at one tick; and the shards are
// spread over more than one daemon.
func TestReplicasSplitAShardedGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("half a minute of wall-clock time")
	}
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	srv := natstest.Start(t)
	const shards, pods = 8, 16
	cfg := fmt.Sprintf(`source:
  url: %s
  timeout: 2s
  evaluation_delay: 1s
nats:
  url: %s
  lease_ttl: 3s
  heartbeat: 1s
groups:
  - name: fleet
    interval: 2s
    shards: %d
    shard_by: [pod]
    rules:
      - name: load
        expr: load
        step: 1s
        lookback: 2m
        detector: {name: sigma, k: 4, min_points: 30}
`, vm.URL(), srv.ClientURL(), shards)
	file := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(from, to time.Time, v func(time.Time) float64) {
		var ss []ingest.Series
		for p := range pods {
			ss = append(ss, podSeries(fmt.Sprintf("vllm-%d", p), from, to, v))
		}
		importSeries(t, vm, ss...)
	}
	began := time.Now().Truncate(time.Second)
	write(began.Add(-3*time.Minute), began, steady)

	type member struct {
		name string
		log  *syncBuffer
		pid  int
		stop func()
	}
	start := func(name, outbox string) *member {
		log, pid, stop := daemon(t, bin, "run", "--config", file, "--web.listen-address", "127.0.0.1:0",
			"--outbox.dir", outbox, "--log.level", "debug")
		return &member{name: name, log: log, pid: pid, stop: stop}
	}
	outboxes := spreadOutboxes(t, "fleet", shards)
	members := []*member{start("a", outboxes[0]), start("b", outboxes[1]), start("c", outboxes[2])}
	for _, m := range members {
		waitFor(t, m.name+" starts", func() bool { return strings.Contains(m.log.String(), `msg="inferwatch started"`) }, m.log.String)
	}
	t0 := time.Now().Truncate(time.Second)
	if t0.After(began) {
		write(began.Add(time.Second), t0, steady)
	}
	spikes := []int{8, 20} // seconds after t0
	for s := 1; s <= 26; s++ {
		ts := t0.Add(time.Duration(s) * time.Second)
		time.Sleep(time.Until(ts))
		write(ts, ts, func(ts time.Time) float64 {
			if slices.Contains(spikes, s) {
				return 50
			}
			return steady(ts)
		})
		if s == 12 {
			syscall.Kill(members[0].pid, syscall.SIGKILL)
		}
	}

	want := pods * len(spikes)
	findings := readEvents(t, srv.ClientURL(), -1, "inferwatch.findings.>", want)
	for _, m := range members[1:] {
		m.stop()
	}
	logs := func() string {
		var all strings.Builder
		for _, m := range members {
			fmt.Fprintf(&all, "--- %s\n%s", m.name, m.log.String())
		}
		return all.String()
	}
	type key struct{ pod, at string }
	seen := map[key]int{}
	for _, f := range findings {
		var ev struct {
			Data struct {
				Group       string            `json:"group"`
				Labels      map[string]string `json:"labels"`
				WindowStart time.Time         `json:"window_start"`
			} `json:"data"`
		}
		if err := json.Unmarshal(f, &ev); err != nil {
			t.Fatal(err)
		}
		pod := ev.Data.Labels["pod"]
		if want := rules.UnitName("fleet", rules.ShardOf(pod, shards), shards); ev.Data.Group != want {
			t.Errorf("the finding of %s comes from group %q, want its shard %q", pod, ev.Data.Group, want)
		}
		seen[key{pod, ev.Data.WindowStart.Sub(t0).String()}]++
	}
	for p := range pods {
		for _, s := range spikes {
			k := key{fmt.Sprintf("vllm-%d", p), (time.Duration(s) * time.Second).String()}
			if seen[k] != 1 {
				t.Errorf("%s, spike at +%s: %d findings, want 1", k.pod, k.at, seen[k])
			}
		}
	}
	if len(findings) != want {
		t.Errorf("the stream holds %d findings, want %d", len(findings), want)
	}

	// Each shard evaluated at each tick by one member at most; more than
	// one member evaluated shards before the kill.
	ticks := map[string]map[time.Time][]string{}
	before := map[string]bool{}
	for _, m := range members {
		for _, line := range evaluatedRE.FindAllStringSubmatch(m.log.String(), -1) {
			at, err := time.Parse(time.RFC3339Nano, line[2])
			if err != nil {
				t.Fatalf("%s: %v", line[0], err)
			}
			if ticks[line[1]] == nil {
				ticks[line[1]] = map[time.Time][]string{}
			}
			ticks[line[1]][at] = append(ticks[line[1]][at], m.name)
			if at.Before(t0.Add(12 * time.Second)) {
				before[m.name] = true
			}
		}
	}
	var units []string
	for u, byTick := range ticks {
		units = append(units, u)
		for at, who := range byTick {
			if len(who) > 1 {
				t.Errorf("%s evaluated at +%s by %v", u, at.Sub(t0), who)
			}
		}
	}
	slices.Sort(units)
	var wantUnits []string
	for i := range shards {
		wantUnits = append(wantUnits, rules.UnitName("fleet", i, shards))
	}
	if !slices.Equal(units, wantUnits) {
		t.Errorf("evaluated %q, want the shards %q", units, wantUnits)
	}
	// The outboxes are such that the shards weigh most for more than
	// one of the three.
	if len(before) < 2 {
		t.Errorf("only %v evaluated shards before the kill", before)
	}
	if t.Failed() {
		t.Log(logs())
	}
}

// spreadOutboxes picks the outbox directories of three replicas such that
// the shards of group weigh most for more than one of them: a replica's
// name, and so what it owns, follows from its host and its outbox, and
// with names drawn at random all the shards fall on one replica once in
// 3^(shards-1) runs.
func spreadOutboxes(t *testing.T, group string, shards int) [3]string {
	t.Helper()
	host, _ := os.Hostname()
	base := t.TempDir()
	var dirs [3]string
	for i := 0; ; i++ {
		var names []string
		for j := range dirs {
			dirs[j] = filepath.Join(base, fmt.Sprintf("outbox-%d-%d", j, i))
			names = append(names, cluster.MemberName(host, dirs[j]))
		}
		owners := map[string]bool{}
		for s := range shards {
			owners[cluster.Owner(rules.UnitName(group, s, shards), names)] = true
		}
		if len(owners) > 1 {
			return dirs
		}
	}
}
