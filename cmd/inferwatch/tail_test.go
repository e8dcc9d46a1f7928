package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// tailBatch is a known set of events of every type: findings with a full
// band, a one-sided band and none; an alert pending, firing and resolved;
// a forecast with a fallback; scale signals with and without the observed
// replicas and the previous decision.
func tailBatch() alerting.Batch {
	at := time.Date(2026, 11, 25, 14, 34, 0, 0, time.UTC)
	pod := map[string]string{"pod": "p0", "team": "serving"}
	qwen := map[string]string{"model": "qwen2.5-32b-instruct"}
	b := alerting.Batch{Group: "latency", At: at}
	b.Findings = []alerting.Finding{
		{Kind: "anomaly", Group: "latency", Rule: "ttft_spike", Detector: "sigma", Labels: pod, Series: `ttft{pod="p0"}`,
			WindowStart: at.Add(-2 * time.Minute), WindowEnd: at, Value: 50, ValueTime: at.Add(-time.Minute),
			Expected: 10.31, Lower: 9.712, Upper: 10.91, Score: 41.23, Severity: "critical"},
		{Kind: "anomaly", Group: "capacity", Rule: "request_rate", Detector: "robust", Labels: qwen, Series: `{model="qwen2.5-32b-instruct"}`,
			WindowStart: at, WindowEnd: at, Value: 0.25, ValueTime: at,
			Expected: 6.892, Lower: 5.715, Upper: math.Inf(1), Score: 1.4, Severity: "warning"},
		{Kind: "correlation", Group: "saturation", Rule: "gpu_saturation_latency_jitter", Detector: "correlate", Labels: pod, Series: `{pod="p0"}`,
			WindowStart: at.Add(-90 * time.Minute), WindowEnd: at, Value: 0.8312, ValueTime: at,
			Expected: math.NaN(), Lower: math.NaN(), Upper: math.NaN(), Score: 1.662, Severity: "warning",
			Details: map[string]any{"pearson": 0.8312, "p_value": 1e-12, "n": 120}},
	}
	alert := alerting.AlertData{Status: alerting.StatusPending, Group: "latency", Rule: "ttft_spike", Kind: "anomaly", Detector: "sigma",
		Series: `ttft{pod="p0"}`, Labels: pod, Severity: "critical", ActiveAt: at.Add(-2 * time.Minute), LastAnomalousAt: at.Add(-2 * time.Minute),
		Time: at.Add(-2 * time.Minute), Value: 48.5, ValueTime: at.Add(-2 * time.Minute), Expected: 10.31, Lower: 9.712, Upper: 10.91, Score: 39.8,
		Summary: `latency/ttft_spike: ttft{pod="p0"} anomalous`, Description: "…"}
	b.Alerts = append(b.Alerts, alert)
	alert.Status, alert.FiredAt, alert.Time, alert.LastAnomalousAt = alerting.StatusFiring, &at, at, at
	alert.Value, alert.ValueTime, alert.Score = 50, at.Add(-time.Minute), 41.23
	b.Alerts = append(b.Alerts, alert)
	resolved := at.Add(1*time.Hour + 30*time.Minute)
	alert.Status, alert.ResolvedAt, alert.Time = alerting.StatusResolved, &resolved, resolved
	b.Alerts = append(b.Alerts, alert)
	b.Forecasts = []alerting.ForecastData{{Group: "forecasting", Rule: "request_rate", Labels: qwen, Series: `{model="qwen2.5-32b-instruct"}`,
		Origin: at, LastValue: 6.891, StepSeconds: 60, HorizonSeconds: 600, Model: "auto", Level: 0.9,
		Points: []alerting.ForecastPoint{
			{Time: at.Add(5 * time.Minute), Mean: 7.4, Lower: 6.5, Upper: 8.3},
			{Time: at.Add(10 * time.Minute), Mean: 7.123, Lower: 6.2, Upper: 8.04}},
		Peak: 7.4, PeakTime: at.Add(5 * time.Minute), UpperPeak: 8.3, GapsFilled: 0,
		Accuracy: alerting.ForecastAccuracy{LeadSeconds: 600, N: 1000, MAE: 0.18, Coverage: 0.9, NaiveMAE: 0.2}},
		{Group: "forecasting", Rule: "request_rate", Labels: map[string]string{"model": "llama-3.1-8b"}, Series: `{model="llama-3.1-8b"}`,
			Origin: at, LastValue: 12, StepSeconds: 60, HorizonSeconds: 120, Model: "naive", Fallback: "auto needs 1d of history", Level: 0.8,
			Points: []alerting.ForecastPoint{{Time: at.Add(time.Minute), Mean: 12, Lower: alerting.JSONFloat(math.NaN()), Upper: alerting.JSONFloat(math.NaN())},
				{Time: at.Add(2 * time.Minute), Mean: 12, Lower: alerting.JSONFloat(math.NaN()), Upper: alerting.JSONFloat(math.NaN())}},
			Peak: 12, PeakTime: at.Add(time.Minute), UpperPeak: alerting.JSONFloat(math.NaN()),
			Accuracy: alerting.ForecastAccuracy{MAE: alerting.JSONFloat(math.NaN()), Coverage: alerting.JSONFloat(math.NaN()), NaiveMAE: alerting.JSONFloat(math.NaN())}}}
	previous := 2
	b.Scales = []alerting.ScaleData{
		{Group: "forecasting", Rule: "vllm-qwen-32b", Target: `{model="qwen2.5-32b-instruct"}`, Labels: qwen, Time: at,
			DesiredReplicas: 3, PreviousDesiredReplicas: &previous, CurrentReplicas: 2, CurrentKnown: true, PredictedLoad: 17.2, PredictedUpper: 19.9,
			CapacityPerReplica: 7, Tier: 3, Reason: "Forecast peak 19.9 req/s (upper 20.6) by 14:44 UTC needs 3 replicas at 7 req/s each: new decision 3, up from the previous decision 2.",
			ValidUntil: at.Add(10 * time.Minute), ForecastModel: "auto"},
		{Group: "forecasting", Rule: "vllm-llama-8b", Target: `{model="llama-3.1-8b"}`, Labels: map[string]string{"model": "llama-3.1-8b"}, Time: at.Add(time.Minute),
			DesiredReplicas: 1, PredictedLoad: alerting.JSONFloat(math.NaN()), PredictedUpper: alerting.JSONFloat(math.NaN()), CapacityPerReplica: 7, Tier: 0,
			Reason:     "With nothing to act on, the 1 replica counted stands: new decision 1, the first (observed replicas unknown, counted as 1; no forecast yet: tiers 1 and 2 only).",
			ValidUntil: at.Add(11 * time.Minute)},
	}
	return b
}

// publishTailBatch publishes tailBatch under prefix on the server at url,
// as the daemon does (the stream is created as the daemon creates it), and
// returns the messages' bodies in the order they were published.
func publishTailBatch(t *testing.T, url, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	js, err := natsjs.Connect(ctx, natsjs.Options{URL: url, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	pub, err := alerting.NewPublisher(alerting.PublisherOptions{Output: js, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	b := tailBatch()
	if err := pub.Send(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// What the publisher encoded, in its order: findings, alerts,
	// forecasts, scale signals.
	var bodies []string
	add := func(ev alerting.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(body))
	}
	for _, f := range b.Findings {
		add(alerting.NewFindingEvent(f, ""))
	}
	for _, d := range b.Alerts {
		add(alerting.NewAlertEvent(d, ""))
	}
	for _, d := range b.Forecasts {
		add(alerting.NewForecastEvent(d, ""))
	}
	for _, d := range b.Scales {
		add(alerting.NewScaleEvent(d, ""))
	}
	return bodies
}

// golden compares got with testdata/golden/name, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -run %s -update rewrites it):\ngot:\n%s\nwant:\n%s", path, t.Name(), got, want)
	}
}

// tailCmd runs tail with a bound on how long it may take, so a test that
// expected more events than came fails instead of hanging.
func tailCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, stdout, stderr = runCmd(t, ctx, append([]string{"tail"}, args...)...)
	if ctx.Err() != nil {
		t.Fatalf("tail %q did not stop by itself; stdout:\n%s\nstderr:\n%s", args, stdout, stderr)
	}
	return code, stdout, stderr
}

// TestTailPrintsWhatWasPublished publishes a known set of events on a
// real NATS server and replays them with tail --since: for people, one
// line each, as the golden file; with --json, each envelope exactly as
// stored, one a line; with --subject, only those.
func TestTailPrintsWhatWasPublished(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := natstest.Start(t)
	bodies := publishTailBatch(t, srv.ClientURL(), "inferwatch")
	n := fmt.Sprint(len(bodies))

	code, out, errOut := tailCmd(t, "--nats.url", srv.ClientURL(), "--since", "1h", "--count", n)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	golden(t, "tail.txt", out)
	// The help's examples are lines tail prints.
	examples := 0
	for _, l := range strings.Split(tailHelp, "\n") {
		if strings.HasPrefix(l, "  2026-") {
			examples++
			if !strings.Contains(out, strings.TrimPrefix(l, "  ")+"\n") {
				t.Errorf("the help's example %q is not what tail prints:\n%s", l, out)
			}
		}
	}
	if examples == 0 {
		t.Error("the help shows no example line")
	}

	code, out, errOut = tailCmd(t, "--nats.url", srv.ClientURL(), "--since", "1h", "--count", n, "--color", "always")
	if code != 0 || errOut != "" {
		t.Fatalf("--color always: exit %d, stderr:\n%s", code, errOut)
	}
	golden(t, "tail-color.txt", out)

	code, out, errOut = tailCmd(t, "--nats.url", srv.ClientURL(), "--since", "2000-01-01T00:00:00Z", "--count", n, "--json")
	if code != 0 || errOut != "" {
		t.Fatalf("--json: exit %d, stderr:\n%s", code, errOut)
	}
	if want := strings.Join(bodies, "\n") + "\n"; out != want {
		t.Errorf("--json printed\n%s\nwant the envelopes as stored:\n%s", out, want)
	}

	f := func(want string, args ...string) {
		t.Helper()
		code, out, errOut := tailCmd(t, append([]string{"--nats.url", srv.ClientURL(), "--since", "1h"}, args...)...)
		if code != 0 || out != want {
			t.Errorf("tail %q: exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", args, code, out, want, errOut)
		}
	}
	f(`2026-11-25T14:32:00Z  pending     critical  latency/ttft_spike  ttft{pod="p0"}  48.5 above 9.712…10.91 (expected 10.31), score 39.8
2026-11-25T14:34:00Z  firing      critical  latency/ttft_spike  ttft{pod="p0"}  50 above 9.712…10.91 (expected 10.31), score 41.23, for 2m
2026-11-25T16:04:00Z  resolved    critical  latency/ttft_spike  ttft{pod="p0"}  50 above 9.712…10.91 (expected 10.31), score 41.23, for 1h32m
`, "--subject", "inferwatch.alerts.>", "--count", "3")
	f(`2026-11-25T14:34:00Z  scale                 forecasting/vllm-qwen-32b  {model="qwen2.5-32b-instruct"}  desired 3 (observed 2, previous 2), tier 3. Forecast peak 19.9 req/s (upper 20.6) by 14:44 UTC needs 3 replicas at 7 req/s each: new decision 3, up from the previous decision 2.
2026-11-25T14:35:00Z  scale                 forecasting/vllm-llama-8b  {model="llama-3.1-8b"}  desired 1 (observed unknown, first decision), tier 0. With nothing to act on, the 1 replica counted stands: new decision 1, the first (observed replicas unknown, counted as 1; no forecast yet: tiers 1 and 2 only).
`, "--subject", "inferwatch.scale.*", "--count", "2")
	// Two filters; --json keeps the stream's order.
	code, out, _ = tailCmd(t, "--nats.url", srv.ClientURL(), "--since", "1h", "--count", "3", "--json",
		"--subject", "inferwatch.findings.correlation", "--subject", "inferwatch.forecasts.>")
	if want := strings.Join([]string{bodies[2], bodies[6], bodies[7]}, "\n") + "\n"; code != 0 || out != want {
		t.Errorf("two subjects: exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
}

// TestTailFollows: after the replay, tail goes on printing what is
// published; without --since it prints only what is published after it
// started.
func TestTailFollows(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := natstest.Start(t)
	bodies := publishTailBatch(t, srv.ClientURL(), "inferwatch")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := natsjs.Connect(ctx, natsjs.Options{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	later := tailBatch().Scales[0]
	three := 3
	later.Time, later.DesiredReplicas, later.PreviousDesiredReplicas, later.Tier = later.Time.Add(time.Hour), 5, &three, 1
	later.Reason = "GPU memory use at 93 % (above 80 %) needs 5 replicas: new decision 5, up from the previous decision 3."
	ev, err := alerting.NewScaleEvent(later, "")
	if err != nil {
		t.Fatal(err)
	}
	const laterLine = `2026-11-25T15:34:00Z  scale                 forecasting/vllm-qwen-32b  {model="qwen2.5-32b-instruct"}  desired 5 (observed 2, previous 3), tier 1. GPU memory use at 93 % (above 80 %) needs 5 replicas: new decision 5, up from the previous decision 3.` + "\n"

	type result struct {
		code int
		err  string
	}
	start := func(out *syncBuffer, args ...string) chan result {
		done := make(chan result, 1)
		go func() {
			errb := newSyncBuffer()
			code := runMain(ctx, append([]string{"tail", "--nats.url", srv.ClientURL()}, args...), out, errb)
			done <- result{code, errb.String()}
		}()
		return done
	}
	wait := func(done chan result, out *syncBuffer) {
		t.Helper()
		select {
		case r := <-done:
			if r.code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.err)
			}
		case <-ctx.Done():
			t.Fatalf("tail did not stop; stdout:\n%s", out.String())
		}
	}

	// Replay, then follow.
	out := newSyncBuffer()
	done := start(out, "--since", "1h", "--count", fmt.Sprint(len(bodies)+1))
	waitFor(t, "the replay", func() bool { return strings.Count(out.String(), "\n") == len(bodies) }, out.String)
	if err := js.PublishEvent(ctx, "inferwatch.scale.vllm-qwen-32b", ev); err != nil {
		t.Fatal(err)
	}
	wait(done, out)
	lines := strings.SplitAfter(out.String(), "\n")
	if got := lines[len(bodies)]; got != laterLine {
		t.Errorf("the event published after the replay: %q, want %q", got, laterLine)
	}

	// Live only: the stream's earlier events are not printed. The event
	// is published once tail's consumer exists (the earlier tail's may
	// linger: the server removes it once it is inactive).
	st, err := natstest.JetStream(t, srv.ClientURL()).Stream(ctx, "INFERWATCH")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := info.State.Consumers
	out = newSyncBuffer()
	done = start(out, "--count", "1")
	waitFor(t, "tail's consumer", func() bool {
		info, err := st.Info(ctx)
		return err == nil && info.State.Consumers > before
	}, out.String)
	later.Time = later.Time.Add(time.Hour)
	ev, err = alerting.NewScaleEvent(later, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := js.PublishEvent(ctx, "inferwatch.scale.vllm-qwen-32b", ev); err != nil {
		t.Fatal(err)
	}
	wait(done, out)
	if want := strings.Replace(laterLine, "15:34", "16:34", 1); out.String() != want {
		t.Errorf("without --since: %q, want only the new event %q", out.String(), want)
	}
}

// TestTailTakesTheConfigsNATS: --config gives the URL (with its
// credentials), the prefix and the stream; without a URL, the embedded
// server's listen address.
func TestTailTakesTheConfigsNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := natstest.Start(t)
	bodies := publishTailBatch(t, srv.ClientURL(), "acme.inference")
	dir := t.TempDir()
	config := func(name, nats string) string {
		t.Helper()
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(`source:
  url: http://127.0.0.1:8428
nats:
`+nats+`
groups:
  - name: g
    rules:
      - name: r
        expr: up
`), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	// The user and password are the embedded server's: it takes any.
	u := strings.Replace(srv.ClientURL(), "nats://", "nats://tail:hunter2@", 1)
	withURL := config("url.yml", "  url: "+u+"\n  subject_prefix: acme.inference")
	embedded := config("embedded.yml", "  subject_prefix: acme.inference\n  embedded:\n    listen: "+srv.Addr())
	want := strings.Join(bodies, "\n") + "\n"
	for _, file := range []string{withURL, embedded} {
		code, out, errOut := tailCmd(t, "--config", file, "--since", "1h", "--count", fmt.Sprint(len(bodies)), "--json")
		if code != 0 || out != want {
			t.Errorf("--config %s: exit %d, stdout:\n%s\nstderr:\n%s", filepath.Base(file), code, out, errOut)
		}
	}
	// --nats.stream and the subject filter apply over the config.
	code, _, errOut := tailCmd(t, "--config", withURL, "--nats.stream", "INFERWATCH", "--count", "1")
	if code != 1 || !strings.Contains(errOut, "no stream INFERWATCH; stream ACME_INFERENCE holds acme.inference.>") ||
		strings.Contains(errOut, "hunter2") || !strings.Contains(errOut, "tail:xxxxx@") {
		t.Errorf("an unknown stream: exit %d, stderr:\n%s", code, errOut)
	}
	code, out, errOut := tailCmd(t, "--config", embedded, "--since", "1h", "--count", "1", "--subject", "acme.inference.alerts.*.*")
	if code != 0 || !strings.HasPrefix(out, "2026-11-25T14:32:00Z  pending ") {
		t.Errorf("--subject over --config: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestTailErrorsSayWhatToCheck: an unreachable server is named with its
// password hidden; a missing stream says how to create it or which exists;
// a filter outside the stream is refused; usage errors exit 2.
func TestTailErrorsSayWhatToCheck(t *testing.T) {
	f := func(wantCode int, want []string, args ...string) {
		t.Helper()
		code, out, errOut := tailCmd(t, args...)
		if code != wantCode || out != "" {
			t.Errorf("tail %q: exit %d (want %d), stdout %q", args, code, wantCode, out)
		}
		for _, w := range want {
			if !strings.Contains(errOut, w) {
				t.Errorf("tail %q: stderr lacks %q:\n%s", args, w, errOut)
			}
		}
		if strings.Contains(errOut, "hunter2") {
			t.Errorf("tail %q: the password is printed:\n%s", args, errOut)
		}
	}
	f(2, []string{"--color", "auto, always or never"}, "--color", "rainbow")
	f(2, []string{"--count -1"}, "--count", "-1")
	f(2, []string{`"soon" is neither a duration`}, "--since", "soon")
	f(2, []string{`--subject "inferwatch..alerts"`}, "--subject", "inferwatch..alerts")
	f(2, []string{"must start with nats://"}, "--nats.url", "http://127.0.0.1:4222")
	f(2, []string{"unexpected argument"}, "inferwatch.>")
	f(1, []string{"nats://tail:xxxxx@127.0.0.1:1", "connection refused", "--nats.url"},
		"--nats.url", "nats://tail:hunter2@127.0.0.1:1")
	dir := t.TempDir()
	file := filepath.Join(dir, "free-port.yml")
	if err := os.WriteFile(file, []byte("source: {url: http://127.0.0.1:8428}\nnats: {embedded: {listen: 127.0.0.1:0}}\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f(1, []string{"free-port.yml", "picks a free port", "--nats.url"}, "--config", file)
	f(1, []string{"cannot reach NATS at nats://127.0.0.1:1", "(from --nats.url)"}, "--config", file, "--nats.url", "nats://127.0.0.1:1")

	if testing.Short() {
		return
	}
	srv := natstest.Start(t)
	f(1, []string{"has no stream INFERWATCH yet", "inferwatch run", "nats stream add INFERWATCH --subjects 'inferwatch.>'"},
		"--nats.url", srv.ClientURL())
	publishTailBatch(t, srv.ClientURL(), "inferwatch")
	f(1, []string{"no stream OTHER, nor one holding other.>; its streams: INFERWATCH"},
		"--nats.url", srv.ClientURL(), "--nats.subject-prefix", "other")
	f(1, []string{"--subject other.>", "stream INFERWATCH", "holds only inferwatch.>"},
		"--nats.url", srv.ClientURL(), "--subject", "other.>")
}

func TestTailExplainsItself(t *testing.T) {
	code, out, _ := runCmd(t, context.Background(), "tail", "--help")
	for _, want := range []string{"Usage: inferwatch tail", "--since", "--count", "--json", "--subject", "-color", "-config", "-nats.url", "-nats.stream", "Exit status"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("tail --help: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
	if code, out, _ := runCmd(t, context.Background(), "--help"); code != 0 || !strings.Contains(out, "inferwatch tail") {
		t.Errorf("the usage does not list tail:\n%s", out)
	}
}

func TestTailFormats(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{{50, "50"}, {12.158333, "12.16"}, {0.000123456, "0.0001235"}, {12345.6, "12346"}, {-3, "-3"}, {math.NaN(), "—"}, {math.Inf(-1), "—"}, {1e20, "1e+20"}} {
		if got := fmtNumber(c.x); got != c.want {
			t.Errorf("fmtNumber(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

// TestTailAuthenticatesAsTheDaemon: against a server that wants a user
// and password, tail takes them from the configuration, the embedded
// server's when it has no url and the nats section's otherwise; wrong
// ones are refused with where they came from, never printed.
func TestTailAuthenticatesAsTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir(),
		User: "inferwatch", Password: "hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx := context.Background()
	js, err := natsjs.Connect(ctx, natsjs.Options{URL: srv.ClientURL(), Auth: natsjs.Auth{User: "inferwatch", Password: "hunter2"}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := alerting.NewScaleEvent(tailBatch().Scales[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if err := js.PublishEvent(ctx, "inferwatch.scale.vllm-qwen-32b", ev); err != nil {
		t.Fatal(err)
	}
	js.Close()
	dir := t.TempDir()
	config := func(name, nats string) string {
		t.Helper()
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte("source: {url: http://127.0.0.1:8428}\nnats:\n"+nats+"\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	embedded := config("embedded.yml", "  embedded: {listen: '"+srv.Addr()+"', user: inferwatch, password: hunter2}")
	external := config("external.yml", "  url: "+srv.ClientURL()+"\n  user: inferwatch\n  password_file: "+pw)
	wrong := config("wrong.yml", "  url: "+srv.ClientURL()+"\n  user: inferwatch\n  password: hunter3")
	const want = `2026-11-25T14:34:00Z  scale                 forecasting/vllm-qwen-32b  {model="qwen2.5-32b-instruct"}  desired 3 (observed 2, previous 2), tier 3. Forecast peak 19.9 req/s (upper 20.6) by 14:44 UTC needs 3 replicas at 7 req/s each: new decision 3, up from the previous decision 2.` + "\n"
	for _, file := range []string{embedded, external} {
		if code, out, errOut := tailCmd(t, "--config", file, "--since", "1h", "--count", "1"); code != 0 || out != want {
			t.Errorf("--config %s: exit %d, stdout %q, stderr:\n%s", filepath.Base(file), code, out, errOut)
		}
	}
	code, _, errOut := tailCmd(t, "--config", wrong, "--count", "1")
	if code != 1 || !strings.Contains(errOut, "refused") || !strings.Contains(errOut, "the credentials in the nats section of "+wrong) ||
		strings.Contains(errOut, "hunter") {
		t.Errorf("wrong password: exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = tailCmd(t, "--nats.url", srv.ClientURL(), "--count", "1")
	if code != 1 || !strings.Contains(errOut, "refused") || !strings.Contains(errOut, "(from --nats.url)") {
		t.Errorf("no credentials: exit %d, stderr:\n%s", code, errOut)
	}
}
