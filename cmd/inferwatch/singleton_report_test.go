package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest/localvm"
	"github.com/inferwatch/inferwatch/report"
)

// TestReplicasMakeAScheduledReportOnce: three replicas on one NATS, each
// with its own output directory, all behind on the daily report (its last
// was two days ago), catch up at start: one of them makes the report and
// announces it, the others leave it to that one.
func TestReplicasMakeAScheduledReportOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics, NATS and three daemons")
	}
	bin, vm, end := reportFleet(t)
	srv := natstest.Start(t)
	const replicas = 3
	dirs, _, _, all := startReportReplicas(t, bin, vm.URL(), srv.ClientURL(), end, replicas)
	made := func() (n int) {
		for _, d := range dirs {
			if e, ok, _ := report.LastEnd(d, "daily"); ok && e.After(end.Add(-48*time.Hour)) {
				n++
			}
		}
		return n
	}
	// Each replica either makes the report or leaves it to another.
	refused := func() int { return strings.Count(all(), `msg="another replica makes this report"`) }
	waitFor(t, "every replica's decision", func() bool { return made()+refused() == replicas }, all)
	time.Sleep(time.Second) // a report made after a refusal would show now
	if n := made(); n != 1 {
		t.Errorf("%d replicas made the report due at start, want one\n%s", n, all())
	}
	var files []string
	for _, d := range dirs {
		f, _ := filepath.Glob(filepath.Join(d, "daily-*.json"))
		files = append(files, f...)
	}
	if len(files) != 1 {
		t.Errorf("report files %q, want one", files)
	}
	if got := refused(); got != replicas-1 {
		t.Errorf("%d replicas logged leaving the report to another, want %d\n%s", got, replicas-1, all())
	}
	msgs := natstest.Collect(t, srv.ClientURL(), "inferwatch.reports.daily")(2, 5*time.Second)
	if len(msgs) != 1 {
		t.Errorf("%d announcements on inferwatch.reports.daily, want one", len(msgs))
	}
}

// reportGate stands between the daemons and VictoriaMetrics and holds the
// reports' queries (those of the fleet's vllm: series) until it is opened;
// the rules' queries (up) pass.
type reportGate struct {
	proxy *httputil.ReverseProxy
	open  chan struct{}
	held  atomic.Int64
}

func newReportGate(t *testing.T, target string) (*reportGate, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &reportGate{proxy: httputil.NewSingleHostReverseProxy(u), open: make(chan struct{})}
	return g, serveLoopback(t, g)
}

func (g *reportGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, _ := url.ParseQuery(string(body))
	if q := r.URL.Query().Get("query") + form.Get("query"); strings.Contains(q, "vllm:") {
		g.held.Add(1)
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
	}
	g.proxy.ServeHTTP(w, r)
}

// TestReplicasMakeAScheduledReportWhoseClaimantDied: three replicas on
// one NATS catch up on the daily report at start; the one that claims it
// is killed (SIGKILL) while its report's queries are held, before it
// writes it. Once its heartbeat has lapsed for the lease TTL, one of the
// two others takes the claim over, logs it naming the dead member, and
// makes the report; the third follows the new claim until it is made:
// one report file, one announcement.
func TestReplicasMakeAScheduledReportWhoseClaimantDied(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics, NATS and three daemons")
	}
	bin, vm, end := reportFleet(t)
	gate, source := newReportGate(t, vm.URL())
	srv := natstest.Start(t)
	const replicas = 3
	dirs, logs, pids, all := startReportReplicas(t, bin, source, srv.ClientURL(), end, replicas)
	count := func(msg string) int { return strings.Count(all(), `msg="`+msg+`"`) }
	waitFor(t, "one claim and two followers", func() bool {
		return count("this replica makes the report") == 1 && count("another replica makes this report") == replicas-1
	}, all)
	claimant := -1
	for i, l := range logs {
		if strings.Contains(l.String(), `msg="this replica makes the report"`) {
			claimant = i
		}
	}
	m := regexp.MustCompile(`msg="joined the set of members" member=(\S+)`).FindStringSubmatch(logs[claimant].String())
	if m == nil {
		t.Fatalf("replica %d does not log its member name\n%s", claimant, all())
	}
	dead := m[1]
	waitFor(t, "the claimant's report queries held", func() bool { return gate.held.Load() > 0 }, all)
	if err := syscall.Kill(pids[claimant], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	close(gate.open)

	takeover := `msg="the replica that claimed the report left the set without making it; this replica takes the report over" report=daily period_end=`
	waitFor(t, "a takeover, the report made and the claim followed to its end", func() bool {
		return strings.Count(all(), takeover) == 1 && count("the replica that claimed the report made it") == 1
	}, all)
	taken := regexp.MustCompile(`time=(\S+) level=INFO ` + regexp.QuoteMeta(takeover) + `\S+ member=` + regexp.QuoteMeta(dead) + `\n`).FindStringSubmatch(all())
	if taken == nil {
		t.Errorf("the takeover does not name the dead member %s\n%s", dead, all())
	} else if at, err := time.Parse(time.RFC3339Nano, taken[1]); err == nil {
		t.Logf("the report was taken over %s after the SIGKILL", at.Sub(killed).Round(10*time.Millisecond))
	}
	var files []string
	for i, d := range dirs {
		f, _ := filepath.Glob(filepath.Join(d, "daily-*.json"))
		if i == claimant && len(f) > 0 {
			t.Errorf("the killed claimant wrote %q", f)
		}
		files = append(files, f...)
	}
	if len(files) != 1 {
		t.Errorf("report files %q, want one\n%s", files, all())
	}
	msgs := natstest.Collect(t, srv.ClientURL(), "inferwatch.reports.daily")(2, 5*time.Second)
	if len(msgs) != 1 {
		t.Errorf("%d announcements on inferwatch.reports.daily, want one", len(msgs))
	}
}

// A claim's process is live while a live member of its name started when
// the claim says; a member of that name started since (the process
// restarted) is another process; a claim without a start time names any
// process of its member.
func TestClaimantLive(t *testing.T) {
	started := time.Date(2026, 12, 6, 5, 0, 0, 1, time.UTC)
	live := func(name string) (cluster.Info, bool) {
		return cluster.Info{Name: name, Started: started}, name == "a"
	}
	f := func(c natsjs.Claimant, want bool) {
		t.Helper()
		if got := claimantLive(live, c); got != want {
			t.Errorf("claimantLive(%+v) = %v, want %v", c, got, want)
		}
	}
	f(natsjs.Claimant{Member: "a", Started: started}, true)
	f(natsjs.Claimant{Member: "a", Started: started.In(time.FixedZone("CET", 3600))}, true)
	f(natsjs.Claimant{Member: "a", Started: started.Add(-time.Hour)}, false)
	f(natsjs.Claimant{Member: "a"}, true)
	f(natsjs.Claimant{Member: "b", Started: started}, false)
	f(natsjs.Claimant{Member: "b"}, false)
}

// reportFleet builds the daemon and starts VictoriaMetrics holding six
// days of the generated fleet up to end, this minute.
func reportFleet(t *testing.T) (bin string, vm *localvm.VM, end time.Time) {
	t.Helper()
	bin = daemonBinary(t)
	vm = liveVM(t)
	end = time.Now().UTC().Truncate(time.Minute)
	importFleet(t, vm, fleet.Options{Seed: 3, End: end, Duration: 6 * 24 * time.Hour, Step: time.Minute})
	return bin, vm, end
}

// startReportReplicas starts n daemons on the NATS server at natsURL whose
// reports read the store at source, each in a directory of its own whose
// report output holds the daily report of two days before end, and
// returns their output directories, logs and process ids, and their logs
// together. They stop at the test's cleanup.
func startReportReplicas(t *testing.T, bin, source, natsURL string, end time.Time, n int) (dirs []string, logs []*syncBuffer, pids []int, all func() string) {
	t.Helper()
	cfg := strings.Replace(fmt.Sprintf(reportConfig, source), "groups:", fmt.Sprintf("nats: {url: %s, lease_ttl: 3s, heartbeat: 1s}\ngroups:", natsURL), 1)
	for range n {
		dir := t.TempDir()
		file := filepath.Join(dir, "inferwatch.yml")
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		if err := report.SaveState(out, "daily", end.Add(-48*time.Hour)); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, out)
		log, pid, _ := daemon(t, bin, "run", "--config", file, "--web.listen-address", "127.0.0.1:0",
			"--outbox.dir", filepath.Join(dir, "outbox"))
		logs = append(logs, log)
		pids = append(pids, pid)
	}
	all = func() string {
		var b strings.Builder
		for i, l := range logs {
			fmt.Fprintf(&b, "--- replica %d\n%s", i, l.String())
		}
		return b.String()
	}
	return dirs, logs, pids, all
}
