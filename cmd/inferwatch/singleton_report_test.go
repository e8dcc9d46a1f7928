package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/examples/fleet"
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
	bin := daemonBinary(t)
	vm := liveVM(t)
	end := time.Now().UTC().Truncate(time.Minute)
	importFleet(t, vm, fleet.Options{Seed: 3, End: end, Duration: 6 * 24 * time.Hour, Step: time.Minute})
	srv := natstest.Start(t)
	cfg := strings.Replace(fmt.Sprintf(reportConfig, vm.URL()), "groups:", fmt.Sprintf("nats: {url: %s, lease_ttl: 3s, heartbeat: 1s}\ngroups:", srv.ClientURL()), 1)
	const replicas = 3
	var dirs []string
	var logs []*syncBuffer
	for range replicas {
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
		log, _, stop := daemon(t, bin, "run", "--config", file, "--web.listen-address", "127.0.0.1:0",
			"--outbox.dir", filepath.Join(dir, "outbox"))
		defer stop()
		logs = append(logs, log)
	}
	all := func() string {
		var b strings.Builder
		for i, l := range logs {
			fmt.Fprintf(&b, "--- replica %d\n%s", i, l.String())
		}
		return b.String()
	}
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
