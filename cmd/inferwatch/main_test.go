package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

const exampleConfig = "../../examples/inferwatch.yml"

func TestCheckAcceptsTheExampleConfig(t *testing.T) {
	code, out, errOut := runCmd(t, context.Background(), "check", "--config", exampleConfig)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "valid: 4 groups, 8 rules") {
		t.Fatalf("stdout %q", out)
	}
}

func TestCheckAcceptsEachGoodConfig(t *testing.T) {
	files, err := filepath.Glob("../../testdata/config/*.good.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no good configs found: %v", err)
	}
	for _, f := range append(files, "../../examples/presets.yml") {
		if code, _, errOut := runCmd(t, context.Background(), "check", "--config", f); code != 0 {
			t.Errorf("%s: exit %d:\n%s", f, code, errOut)
		}
	}
}

// TestExampleConfigSaysWhichLabelsItUses: the configuration a user copies
// groups by the generated fleet's model label, which the demo needs; it
// says so, and names vLLM's own label, model_name.
func TestExampleConfigSaysWhichLabelsItUses(t *testing.T) {
	b, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(b), "\nsource:")
	for _, want := range []string{"`model`", "`model_name`", "examples/fleet"} {
		if !strings.Contains(head, want) {
			t.Errorf("the header of %s does not name %s:\n%s", exampleConfig, want, head)
		}
	}
}

// TestExamplesListenWhereTheDefaultDoes: the example configurations put
// the embedded NATS where the default does, off NATS' standard 4222, so
// that the demo never collides with a NATS server already on the host.
func TestExamplesListenWhereTheDefaultDoes(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples %v: %v", files, err)
	}
	for _, f := range files {
		cfg, err := rulefmt.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.NATS.Embedded.Listen; got != natsjs.DefaultEmbeddedListen {
			t.Errorf("%s: the embedded NATS listens on %s, want the default %s", f, got, natsjs.DefaultEmbeddedListen)
		}
	}
}

func TestCheckRejectsEachBadConfigWithALineNumber(t *testing.T) {
	files, err := filepath.Glob("../../testdata/config/*.bad.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad configs found: %v", err)
	}
	for _, f := range files {
		code, _, errOut := runCmd(t, context.Background(), "check", "--config", f)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", f, code)
		}
		if !strings.Contains(errOut, filepath.Base(f)+":") {
			t.Errorf("%s: the error does not name the file and line:\n%s", f, errOut)
		}
	}
}

func TestCheckReportsDetectorErrorsAtTheDetector(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.yml")
	cfg := `source:
  url: http://127.0.0.1:8428
groups:
  - name: g
    rules:
      - name: a
        expr: up
        detector: {name: sigma, k: abc}
      - name: b
        expr: up
        detector: nosuch
`
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, context.Background(), "check", "--config", file)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"x.yml:8:", `rule "a"`, "abc", "x.yml:11:", `rule "b"`, "nosuch"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"nosuch"}, {"check"}, {"run"}, {"run", "--config", exampleConfig, "--backfill", "soon"}} {
		if code, _, _ := runCmd(t, context.Background(), args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

func TestRunOnceFailsOnAnUnreachableStoreAndNamesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := natstest.Start(t)
	code, _, errOut := runCmd(t, context.Background(), "run", "--config", exampleConfig, "--once",
		"--source.url", "http://127.0.0.1:1", "--nats.url", srv.ClientURL(), "--web.listen-address", "")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{"127.0.0.1:1", "rule=ttft_mean", "rule=gpu_util", "connection refused"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestRunGivesUpOnNATSAfterTheConnectTimeoutAndSaysSo(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for connection retries")
	}
	code, _, errOut := runCmd(t, context.Background(), "run", "--config", exampleConfig, "--once",
		"--nats.url", "nats://127.0.0.1:1", "--nats.connect-timeout", "2s", "--web.listen-address", "")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(errOut, "127.0.0.1:1") || !strings.Contains(strings.ToLower(errOut), "retry") {
		t.Fatalf("stderr does not say it retried NATS:\n%s", errOut)
	}
}

// TestEndToEnd backfills a generated week of a fleet into a real
// VictoriaMetrics, runs the daemon once over it with a real NATS server,
// and checks what a subscriber receives against the injected incidents.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	ctx := context.Background()
	end := fleetEnd(t, time.Time{})
	vm, f := backfillFleet(t, end)

	srv, nc := natsClient(t)
	args := []string{"run", "--config", exampleConfig, "--once", "--backfill", fleetBackfill(end),
		"--source.url", vm.URL(), "--nats.url", srv.ClientURL(), "--web.listen-address", ""}
	findings, events := runOnceCollecting(t, nc, args...)
	for _, ev := range events {
		for _, k := range []string{"specversion", "id", "source", "type", "time", "datacontenttype", "data"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("event lacks %q: %v", k, ev)
			}
		}
	}

	var quiet []string
	for _, m := range f.Models {
		if m.Quiet {
			quiet = append(quiet, m.Name)
		}
	}
	if len(quiet) == 0 {
		t.Fatal("the fleet has no quiet model to check against")
	}
	for _, fd := range findings {
		for _, q := range quiet {
			if fd.Labels["model"] == q {
				t.Errorf("finding on the quiet model %s: %s %s at %v (score %.2f)", q, fd.Rule, fd.Series, fd.WindowEnd, fd.Score)
			}
		}
	}
	checkLatencySpikesFound(t, f, findings, "ttft_mean", "e2e_latency_mean")
	// The GPU saturation is found by the correlation rule on its pod, the
	// throughput decay by the decay rule on its model.
	for _, inc := range f.Incidents {
		var rule string
		var after time.Duration
		switch inc.Kind {
		case "gpu_saturation_jitter":
			rule, after = "gpu_saturation_latency_jitter", time.Hour
		case "throughput_decay":
			rule, after = "decode_throughput_decay", 24*time.Hour
		default:
			continue
		}
		found := false
		for _, fd := range findings {
			if fd.Rule != rule || fd.Labels["model"] != inc.Model || (inc.Pod != "" && fd.Labels["pod"] != inc.Pod) {
				continue
			}
			if fd.WindowEnd.After(inc.Start) && fd.WindowEnd.Before(inc.End.Add(after)) {
				found = true
				if fd.Details == nil {
					t.Errorf("%s finding without details", rule)
				}
			}
		}
		if !found {
			t.Errorf("%s on %s %s %v–%v: no %s finding", inc.Kind, inc.Model, inc.Pod, inc.Start, inc.End, rule)
		}
	}

	// Running again over the same data re-publishes the same findings;
	// JetStream drops them by their message id, so the stream keeps one of each.
	if code, _, errOut := runCmd(t, ctx, args...); code != 0 {
		t.Fatalf("second run exited %d:\n%s", code, errOut)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "INFERWATCH")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("inferwatch.findings.>"))
	if err != nil {
		t.Fatal(err)
	}
	held := uint64(0)
	for _, n := range info.State.Subjects {
		held += n
	}
	if int(held) != len(findings) {
		t.Fatalf("stream holds %d findings after two runs, want the %d distinct ones", held, len(findings))
	}
	t.Logf("%d findings for %d incidents; stream holds %d after a second run", len(findings), len(f.Incidents), held)
}

// TestEveryCommandExplainsItself: --help on every command exits 0 with a
// usage line and text on stdout, not a bare flag list, and the top-level
// usage lists every command.
func TestEveryCommandExplainsItself(t *testing.T) {
	for _, cmd := range [][]string{{"check"}, {"run"}, {"tail"}, {"detect"}, {"backtest", "nab"}, {"backtest", "scale"},
		{"correlate"}, {"decay"}, {"knee"}, {"forecast"}, {"report"}} {
		code, out, errOut := runCmd(t, context.Background(), append(cmd, "--help")...)
		name := "inferwatch " + strings.Join(cmd, " ")
		if code != 0 || !strings.HasPrefix(out, "Usage: "+name) || len(strings.Split(out, "\n")) < 8 {
			t.Errorf("%s --help: exit %d, stdout:\n%s\nstderr:\n%s", name, code, out, errOut)
		}
		if !strings.Contains(usage, "\n  "+name+" ") {
			t.Errorf("the usage text does not list %s", name)
		}
	}
}

// TestRunHelpNamesWhatTheListenerServes: --web.listen-address's help
// names every path the HTTP listener serves.
func TestRunHelpNamesWhatTheListenerServes(t *testing.T) {
	_, out, _ := runCmd(t, context.Background(), "run", "--help")
	_, help, _ := strings.Cut(out, "\n  -web.listen-address ")
	help, _, _ = strings.Cut(help, "\n  -")
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/keda/v1/"} {
		if !strings.Contains(help, path) {
			t.Errorf("--web.listen-address's help lacks %s:%s", path, help)
		}
	}
}

// TestCheckTakesFilesAsArguments: check FILE [FILE...] as well as
// --config FILE; one invalid file fails the whole check and every file is
// reported.
func TestCheckTakesFilesAsArguments(t *testing.T) {
	code, out, errOut := runCmd(t, context.Background(), "check", exampleConfig, "../../examples/presets.yml")
	if code != 0 || strings.Count(out, "valid:") != 2 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, context.Background(), "check", "../../testdata/config/no-groups.bad.yaml", exampleConfig)
	if code != 1 || !strings.Contains(out, "inferwatch.yml: valid") || !strings.Contains(errOut, "no-groups.bad.yaml:") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestSecretsAreNeverPrinted: a password or token given in a URL, by flag
// or in the file, appears nowhere in what the daemon and check print; the
// flags go through the file's checks.
func TestSecretsAreNeverPrinted(t *testing.T) {
	const secret = "hunter2"
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yml")
	if err := os.WriteFile(cfg, []byte("source: {url: 'http://bob:"+secret+"@127.0.0.1:1/?token="+secret+"'}\n"+
		"groups: [{name: g, rules: [{name: r, expr: up}]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", cfg}, "must not hold credentials"},
		{[]string{"run", "--config", exampleConfig, "--once", "--web.listen-address", "",
			"--source.url", "http://bob:" + secret + "@127.0.0.1:1"}, "must not hold credentials"},
		{[]string{"run", "--config", exampleConfig, "--once", "--web.listen-address", "",
			"--source.url", "http://bob:" + secret + "@[::1"}, "is not a URL"},
		{[]string{"run", "--config", exampleConfig, "--once", "--web.listen-address", "",
			"--source.url", "http://127.0.0.1:1/?token=" + secret}, "token=xxxxx"},
		{[]string{"run", "--config", exampleConfig, "--once", "--web.listen-address", "", "--nats.connect-timeout", "1s",
			"--nats.url", "nats://bob:" + secret + "@127.0.0.1:1"}, "nats://bob:xxxxx@127.0.0.1:1"},
	} {
		code, out, errOut := runCmd(t, context.Background(), c.args...)
		if code == 0 || strings.Contains(out+errOut, secret) || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d; want a failure saying %q and no secret; stdout:\n%s\nstderr:\n%s", c.args, code, c.want, out, errOut)
		}
	}
}
