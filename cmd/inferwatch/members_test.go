package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// TestMembersPrintsWhoOwnsWhat: two daemons on one NATS share two groups;
// inferwatch members prints both and an owner for each group, and a third
// daemon pointed at a daemon's embedded server is refused, saying to use
// an external NATS.
func TestMembersPrintsWhoOwnsWhat(t *testing.T) {
	bin := daemonBinary(t)
	srv := natstest.Start(t)
	file := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`source:
  url: http://127.0.0.1:1
nats:
  url: %s
  lease_ttl: 3s
  heartbeat: 1s
groups:
  - {name: latency, interval: 1m, rules: [{name: r, expr: up}]}
  - {name: dcgm, interval: 1m, rules: [{name: r, expr: up}]}
`, srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	logA, _, stopA := daemon(t, bin, "run", "--config", file, "--web.listen-address", "", "--outbox.dir", t.TempDir())
	logB, _, stopB := daemon(t, bin, "run", "--config", file, "--web.listen-address", "", "--outbox.dir", t.TempDir())
	defer stopA()
	defer stopB()
	for _, l := range []*syncBuffer{logA, logB} {
		waitFor(t, "the daemon joins", func() bool { return strings.Contains(l.String(), `msg="joined the set of members"`) }, l.String)
	}
	var out, errb bytes.Buffer
	owner := regexp.MustCompile(`(?m)^(latency|dcgm)\s+(\S+)\s+\d+s ago$`)
	role := regexp.MustCompile(`(?m)^(incidents)\s+(\S+)\s+\d+s ago$`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		out.Reset()
		errb.Reset()
		if code := runMain(context.Background(), []string{"members", "--config", file}, &out, &errb); code != 0 {
			t.Fatalf("inferwatch members: exit %d: %s", code, errb.String())
		}
		if len(owner.FindAllString(out.String(), -1)) == 2 && role.MatchString(out.String()) && strings.Count(out.String(), "ago") == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inferwatch members does not show two members, an owner per group and the incidents role's holder:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("inferwatch members:\n%s", out.String())
	for _, m := range append(owner.FindAllStringSubmatch(out.String(), -1), role.FindAllStringSubmatch(out.String(), -1)...) {
		if !strings.Contains(out.String(), "\n"+m[2]+" ") && !strings.HasPrefix(out.String(), m[2]) {
			t.Errorf("group %s's owner %s is not among the members:\n%s", m[1], m[2], out.String())
		}
	}

	// A daemon with the embedded server, and another pointed at it.
	emb := filepath.Join(t.TempDir(), "embedded.yml")
	if err := os.WriteFile(emb, []byte(`source:
  url: http://127.0.0.1:1
nats:
  embedded: {listen: 127.0.0.1:0}
groups:
  - {name: latency, interval: 1m, rules: [{name: r, expr: up}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	logE, _, stopE := daemon(t, bin, "run", "--config", emb, "--web.listen-address", "")
	defer stopE()
	var url string
	re := regexp.MustCompile(`msg="embedded NATS server with JetStream started" url=(\S+)`)
	waitFor(t, "the embedded server starts", func() bool {
		m := re.FindStringSubmatch(logE.String())
		if m != nil {
			url = m[1]
		}
		return m != nil && strings.Contains(logE.String(), `msg="joined the set of members"`)
	}, logE.String)
	errb.Reset()
	code := runMain(context.Background(), []string{"run", "--config", emb, "--nats.url", url, "--web.listen-address", "",
		"--outbox.dir", t.TempDir(), "--nats.connect-timeout", "10s"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "is the embedded server of inferwatch member") ||
		!strings.Contains(errb.String(), "several replicas need an external NATS server") {
		t.Errorf("a second daemon on an embedded server: exit %d\n%s", code, errb.String())
	}
}
