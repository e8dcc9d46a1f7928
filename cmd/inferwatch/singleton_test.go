package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/incidentrole"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
)

// splitOutboxes picks an outbox directory for each of two replicas such
// that, of the two of them, the first owns group g0 and the second g1 (a
// replica's name, and so what it owns, follows from its host and its
// outbox), and returns the directories and the names.
func splitOutboxes(t *testing.T) (dirs, names [2]string) {
	t.Helper()
	host, _ := os.Hostname()
	base := t.TempDir()
	for i := 0; i < 1000; i++ {
		for j := range 2 {
			dirs[j] = filepath.Join(base, fmt.Sprintf("outbox-%d-%d", j, i))
			names[j] = cluster.MemberName(host, dirs[j])
		}
		set := names[:]
		if cluster.Owner("g0", set) == names[0] && cluster.Owner("g1", set) == names[1] {
			return dirs, names
		}
	}
	t.Fatal("no outboxes split g0 and g1 between two replicas")
	return
}

// TestReplicasMakeOneIncident: two replicas on one NATS, g0 (pod p0's
// latency) owned by one and g1 (pod p1's) by the other. Both pods of model
// m1 spike: one incident opens with the alerts of both groups, as one
// process makes it. The replica that makes the incidents is killed
// (SIGKILL) during the spike: the other takes its group and the incidents
// role, restores the incident, and resolves it once the latency clears;
// no second incident opens, and none is lost.
func TestReplicasMakeOneIncident(t *testing.T) {
	if testing.Short() {
		t.Skip("forty seconds of wall-clock time")
	}
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	srv := natstest.Start(t)
	file := filepath.Join(t.TempDir(), "cfg.yml")
	var cfg strings.Builder
	fmt.Fprintf(&cfg, `source:
  url: %s
  timeout: 2s
  evaluation_delay: 1s
nats:
  url: %s
  lease_ttl: 3s
  heartbeat: 1s
incidents:
  gap: 2s
groups:
`, vm.URL(), srv.ClientURL())
	for g := range 2 {
		fmt.Fprintf(&cfg, `  - name: g%d
    interval: 1s
    rules:
      - name: ttft_spike
        expr: ttft{pod="p%d"}
        step: 1s
        lookback: 10m
        detector: {name: sigma, k: 4, min_points: 30}
        for: 2s
        labels: {signal: latency}
`, g, g)
	}
	if err := os.WriteFile(file, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(from, to time.Time, v func(time.Time) float64) {
		t.Helper()
		for _, pod := range []string{"p0", "p1"} {
			s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "model", Value: "m1"}, {Name: "pod", Value: pod}}}
			for ts := from; !ts.After(to); ts = ts.Add(time.Second) {
				s.Timestamps = append(s.Timestamps, ts.UnixMilli())
				s.Values = append(s.Values, v(ts))
			}
			importSeries(t, vm, s)
		}
	}
	began := time.Now().Truncate(time.Second)
	write(began.Add(-11*time.Minute), began, steady)

	dirs, names := splitOutboxes(t)
	holder := cluster.Owner(incidentrole.Role, names[:])
	type replica struct {
		name string
		log  *syncBuffer
		pid  int
		stop func()
	}
	var rs [2]*replica
	for i := range 2 {
		log, pid, stop := daemon(t, bin, "run", "--config", file, "--web.listen-address", "127.0.0.1:0",
			"--outbox.dir", dirs[i], "--log.level", "debug")
		rs[i] = &replica{name: names[i], log: log, pid: pid, stop: stop}
	}
	logs := func() string {
		var all strings.Builder
		for _, r := range rs {
			fmt.Fprintf(&all, "--- %s\n%s", r.name, r.log.String())
		}
		return all.String()
	}
	for _, r := range rs {
		waitFor(t, r.name+" makes its group's evaluations", func() bool { return strings.Contains(r.log.String(), `msg="group evaluated"`) }, logs)
	}
	waitFor(t, "a replica makes the incidents", func() bool {
		return strings.Contains(logs(), `msg="this replica makes the incidents of the set now"`)
	}, logs)

	t0 := time.Now().Truncate(time.Second)
	if t0.After(began) {
		write(began.Add(time.Second), t0, steady)
	}
	var killed, kept *replica
	for _, r := range rs {
		if r.name == holder {
			killed = r
		} else {
			kept = r
		}
	}
	// holds reports whether r holds the incidents role now, by its log.
	holds := func(r *replica) bool {
		l := r.log.String()
		gained := strings.LastIndex(l, `msg="this replica makes the incidents of the set now"`)
		return gained >= 0 && gained > strings.LastIndex(l, `msg="another replica makes the incidents of the set now"`)
	}
	keptBefore := 0
	for s := 1; s <= 36; s++ {
		ts := t0.Add(time.Duration(s) * time.Second)
		time.Sleep(time.Until(ts))
		v := steady
		if s >= 5 && s <= 18 {
			v = func(time.Time) float64 { return 50 }
		}
		write(ts, ts, v)
		if s == 11 {
			if !holds(killed) {
				t.Fatalf("%s, the replica the incidents role weighs most for, does not make the incidents:\n%s", killed.name, logs())
			}
			syscall.Kill(killed.pid, syscall.SIGKILL)
			keptBefore = len(kept.log.String())
		}
	}

	var got []alerting.IncidentData
	collect := natstest.Collect(t, srv.ClientURL(), "inferwatch.incidents.>")
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, m := range collect(100, time.Second) {
			got = append(got, eventData[alerting.IncidentData](t, m, alerting.IncidentEventType))
		}
		if n := len(got); n > 0 && got[n-1].Status == alerting.IncidentResolved || time.Now().After(deadline) {
			break
		}
	}
	kept.stop()
	var lines []string
	ids := map[string]bool{}
	opened := 0
	for _, d := range got {
		ids[d.ID] = true
		if d.Status == alerting.IncidentOpened {
			opened++
		}
		var groups []string
		for _, m := range d.Members {
			groups = append(groups, m.Group)
		}
		lines = append(lines, fmt.Sprintf("%s %s %s %v", d.Status, d.ID, d.Unit, groups))
	}
	show := strings.Join(lines, "\n")
	if opened != 1 || len(ids) != 1 {
		t.Fatalf("%d incidents opened, %d ids, want one:\n%s\n%s", opened, len(ids), show, logs())
	}
	last := got[len(got)-1]
	if last.Status != alerting.IncidentResolved || last.Unit != "model=m1" {
		t.Fatalf("the incident's last event is %s of %s, want it resolved:\n%s\n%s", last.Status, last.Unit, show, logs())
	}
	var groups []string
	for _, m := range last.Members {
		groups = append(groups, m.Group)
	}
	slices.Sort(groups)
	if !slices.Equal(groups, []string{"g0", "g1"}) || !slices.Equal(last.Where["pod"], []string{"p0", "p1"}) {
		t.Errorf("the incident holds the alerts of groups %v, pods %v, want both:\n%s", groups, last.Where["pod"], show)
	}
	if after := kept.log.String()[keptBefore:]; !strings.Contains(after, `msg="this replica makes the incidents of the set now"`) || !strings.Contains(after, `msg="role taken" role=incidents`) {
		t.Errorf("%s did not log taking the incidents role after %s was killed:\n%s", kept.name, killed.name, kept.log.String())
	}
	if t.Failed() {
		t.Log(show)
	}
}
