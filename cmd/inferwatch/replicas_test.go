package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
)

// evaluatedRE reads a daemon's debug line for one group evaluation.
var evaluatedRE = regexp.MustCompile(`msg="group evaluated" group=(\S+) at=(\S+)`)

// TestReplicasShareGroupsOnANATSCluster: three daemons on one
// configuration and a three-node JetStream cluster share six groups,
// whose series spike at known seconds, six times each. Between the
// spikes one daemon is killed (SIGKILL), one stopped (SIGTERM), one added,
// one paused (SIGSTOP) past its lease and resumed, and the NATS server
// leading the stream shut down. Every spike gives one finding and one
// firing and one resolved event, none twice; no group is evaluated twice
// at one tick, by one daemon or two; and no group goes unevaluated for
// long.
func TestReplicasShareGroupsOnANATSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of wall-clock time")
	}
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	nc := natstest.StartCluster(t, 3)
	const groups = 6
	var cfg strings.Builder
	fmt.Fprintf(&cfg, `source:
  url: %s
  timeout: 2s
  evaluation_delay: 1s
nats:
  url: %s
  stream_replicas: 3
  lease_ttl: 3s
  heartbeat: 1s
groups:
`, vm.URL(), nc.URLs())
	for g := range groups {
		fmt.Fprintf(&cfg, `  - name: g%d
    interval: 2s
    rules:
      - name: load
        expr: load{group="g%d"}
        step: 1s
        lookback: 2m
        detector: {name: sigma, k: 4, min_points: 30}
`, g, g)
	}
	file := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(file, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	series := func(g int, from, to time.Time, v func(time.Time) float64) ingest.Series {
		s := podSeries("p", from, to, v)
		s.Labels = append(s.Labels, ingest.Label{Name: "group", Value: fmt.Sprintf("g%d", g)})
		return s
	}
	history := func(from, to time.Time) {
		var ss []ingest.Series
		for g := range groups {
			ss = append(ss, series(g, from, to, steady))
		}
		importSeries(t, vm, ss...)
	}
	began := time.Now().Truncate(time.Second)
	history(began.Add(-3*time.Minute), began)

	type member struct {
		name string
		log  *syncBuffer
		pid  int
		stop func()
	}
	start := func(name string) *member {
		log, pid, stop := daemon(t, bin, "run", "--config", file, "--web.listen-address", "127.0.0.1:0",
			"--outbox.dir", t.TempDir(), "--log.level", "debug")
		return &member{name: name, log: log, pid: pid, stop: stop}
	}
	a, b, c := start("a"), start("b"), start("c")
	members := []*member{a, b, c}
	for _, m := range members {
		waitFor(t, m.name+" starts", func() bool { return strings.Contains(m.log.String(), `msg="inferwatch started"`) }, m.log.String)
	}
	t0 := time.Now().Truncate(time.Second)
	if t0.After(began) {
		history(began.Add(time.Second), t0)
	}

	spikes := []int{10, 18, 25, 34, 42, 52} // seconds after t0
	var d *member
	leader := -1
	for s := 1; s <= 58; s++ {
		ts := t0.Add(time.Duration(s) * time.Second)
		time.Sleep(time.Until(ts))
		var now []ingest.Series
		for g := range groups {
			now = append(now, series(g, ts, ts, func(ts time.Time) float64 {
				if slices.Contains(spikes, s) {
					return 50
				}
				return steady(ts)
			}))
		}
		importSeries(t, vm, now...)
		switch s {
		case 14:
			syscall.Kill(a.pid, syscall.SIGKILL)
		case 21:
			b.stop()
		case 29:
			d = start("d")
			members = append(members, d)
		case 37:
			syscall.Kill(c.pid, syscall.SIGSTOP) // past the 3s lease
		case 43:
			syscall.Kill(c.pid, syscall.SIGCONT)
		case 47:
			leader = nc.StreamLeader("INFERWATCH")
			if leader < 0 {
				t.Fatal("the stream INFERWATCH has no leader")
			}
			nc.Servers[leader].Shutdown()
		}
	}

	// Every spike: one finding, one firing and one resolved event.
	want := groups * len(spikes)
	findings := readEvents(t, nc.URLs(), leader, "inferwatch.findings.>", want)
	alerts := readEvents(t, nc.URLs(), leader, "inferwatch.alerts.>", 2*want)
	addr := servingAddr(t, d.log)
	_, metrics, _ := get("http://" + addr + "/metrics")
	c.stop()
	d.stop()
	logs := func() string {
		var all strings.Builder
		for _, m := range members {
			fmt.Fprintf(&all, "--- %s\n%s", m.name, m.log.String())
		}
		return all.String()
	}
	type key struct{ group, at string }
	seen := map[key]int{}
	for _, f := range findings {
		var ev struct {
			Data struct {
				Group       string    `json:"group"`
				WindowStart time.Time `json:"window_start"`
			} `json:"data"`
		}
		json.Unmarshal(f, &ev)
		seen[key{ev.Data.Group, ev.Data.WindowStart.Sub(t0).String()}]++
	}
	alertSeen := map[key][]string{}
	for _, m := range alerts {
		var ev struct {
			Data alertEvent `json:"data"`
		}
		json.Unmarshal(m, &ev)
		g := regexp.MustCompile(`group="(g\d)"`).FindStringSubmatch(ev.Data.Series)
		if g == nil {
			t.Fatalf("alert event of series %q", ev.Data.Series)
		}
		k := key{g[1], ev.Data.ActiveAt.Sub(t0).String()}
		alertSeen[k] = append(alertSeen[k], ev.Data.Status)
	}
	for g := range groups {
		for _, s := range spikes {
			k := key{fmt.Sprintf("g%d", g), (time.Duration(s) * time.Second).String()}
			if seen[k] != 1 {
				t.Errorf("group %s, spike at +%s: %d findings, want 1", k.group, k.at, seen[k])
			}
			if got := strings.Join(alertSeen[k], " "); got != "firing resolved" {
				t.Errorf("group %s, spike at +%s: alert events %q, want \"firing resolved\"", k.group, k.at, got)
			}
		}
	}
	if len(findings) != want || len(alerts) != 2*want {
		t.Errorf("the stream holds %d findings and %d alert events, want %d and %d", len(findings), len(alerts), want, 2*want)
	}

	// No group evaluated twice at one tick; no gap longer than the
	// takeover after a kill (the lease TTL and a heartbeat) and the
	// stream leader's election allow.
	ticks := map[string]map[time.Time][]string{}
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
		}
	}
	if len(ticks) != groups {
		t.Fatalf("evaluations of %d groups logged, want %d\n%s", len(ticks), groups, logs())
	}
	for g, byTick := range ticks {
		ats := slices.SortedFunc(func(yield func(time.Time) bool) {
			for at := range byTick {
				if !yield(at) {
					return
				}
			}
		}, func(x, y time.Time) int { return x.Compare(y) })
		for i, at := range ats {
			if who := byTick[at]; len(who) > 1 {
				t.Errorf("group %s evaluated at +%s by %v", g, at.Sub(t0), who)
			}
			if i > 0 && at.Before(t0.Add(56*time.Second)) {
				gap := at.Sub(ats[i-1])
				if gap > 12*time.Second {
					t.Errorf("group %s: no evaluation from +%s to +%s", g, ats[i-1].Sub(t0), at.Sub(t0))
				}
				if gap > 2*time.Second {
					t.Logf("group %s: ticks from +%s to +%s not evaluated (%s), then by %v", g, ats[i-1].Sub(t0), at.Sub(t0), gap, byTick[at])
				}
			}
		}
		if first, last := ats[0], ats[len(ats)-1]; first.After(t0.Add(4*time.Second)) || last.Before(t0.Add(54*time.Second)) {
			t.Errorf("group %s evaluated from +%s to +%s", g, first.Sub(t0), last.Sub(t0))
		}
	}
	// c, resumed after its leases were taken, did not evaluate a group
	// between its SIGCONT and taking a lease again: every evaluation of
	// c's after the pause is of a tick no other member evaluated (checked
	// above), and c logged the leases it lost.
	if !strings.Contains(c.log.String(), `msg="group lease lost to another member"`) && !strings.Contains(c.log.String(), `msg="no longer evaluating the group here`) {
		t.Errorf("c did not log losing its leases after its pause\n%s", c.log.String())
	}
	for _, m := range []string{"inferwatch_cluster_members 2", "inferwatch_cluster_leases_taken_total"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("d's /metrics lacks %q", m)
		}
	}
	if t.Failed() {
		t.Log(logs())
	}
}

// readEvents reads what the stream holds on subject, from its start,
// waiting (bounded) until it holds n, through a server other than the one
// shut down (skip).
func readEvents(t *testing.T, urls string, skip int, subject string, n int) [][]byte {
	t.Helper()
	var live []string
	for i, u := range strings.Split(urls, ",") {
		if i != skip {
			live = append(live, u)
		}
	}
	// The stream may have no leader for a while after its leader stopped.
	js := natstest.JetStream(t, strings.Join(live, ","))
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.Stream(ctx, "INFERWATCH")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream INFERWATCH answers no request 30s after its leader stopped: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	collect := natstest.Collect(t, strings.Join(live, ","), subject)
	var out [][]byte
	deadline = time.Now().Add(30 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		for _, m := range collect(n-len(out), time.Second) {
			out = append(out, m.Data())
		}
	}
	// Anything beyond n would be a duplicate: read a little longer.
	for _, m := range collect(n, 2*time.Second) {
		out = append(out, m.Data())
	}
	return out
}
