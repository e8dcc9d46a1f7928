package keda

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/tidwall/gjson"

	"github.com/inferwatch/inferwatch/alerting"
)

var t0 = time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)

// clock is a settable clock, safe for the servers' goroutines.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// signal builds the scale signal of rule's target labels at time at,
// valid for ten minutes.
func signal(rule string, labels map[string]string, at time.Time, desired int) alerting.ScaleData {
	return alerting.ScaleData{Group: "g", Rule: rule, Target: identity(labels), Labels: labels, Time: at,
		DesiredReplicas: desired, CurrentReplicas: 2, CurrentKnown: true,
		PredictedLoad: alerting.JSONFloat(6.5 * float64(desired)), PredictedUpper: alerting.JSONFloat(7 * float64(desired)),
		CapacityPerReplica: 7, Tier: 3, Reason: "forecast", ValidUntil: at.Add(10 * time.Minute)}
}

func newSignals(t *testing.T, o Options) (*Signals, *clock) {
	t.Helper()
	c := &clock{now: t0}
	if o.Now == nil {
		o.Now = c.Now
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, c
}

// serveHTTP serves h on a listener on 127.0.0.1 and returns its base URL.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(PathPrefix, h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	return resp.StatusCode, b
}

// valueAt reads valueLocation from body as KEDA's metrics-api scaler does
// (format json): a GJSON path that must lead to a number.
func valueAt(t *testing.T, body []byte, valueLocation string) float64 {
	t.Helper()
	r := gjson.GetBytes(body, valueLocation)
	if r.Type != gjson.Number {
		t.Fatalf("valueLocation %q is %s, not a number, in %s", valueLocation, r.Type, body)
	}
	return r.Num
}

func TestHTTPTarget(t *testing.T) {
	s, _ := newSignals(t, Options{})
	base := serveHTTP(t, s.Handler())
	qwen := map[string]string{"model": "qwen2.5-32b-instruct"}
	two := map[string]string{"model": "llama", "pod": "a,b/c"}
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{
		signal("vllm-qwen", qwen, t0, 3), signal("vllm-qwen", two, t0, 5),
	}})
	f := func(path string, desired int) {
		t.Helper()
		code, body := get(t, base+path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		for loc, want := range map[string]float64{
			"desired_replicas": float64(desired), "current_replicas": 2, "tier": 3,
			"predicted_load": 6.5 * float64(desired), "predicted_upper": 7 * float64(desired),
		} {
			if got := valueAt(t, body, loc); got != want {
				t.Fatalf("GET %s: %s = %v, want %v", path, loc, got, want)
			}
		}
		var sig Signal
		if err := json.Unmarshal(body, &sig); err != nil {
			t.Fatal(err)
		}
		if sig.Rule != "vllm-qwen" || sig.Stale || !sig.ValidUntil.Equal(t0.Add(10*time.Minute)) {
			t.Fatalf("GET %s: %+v", path, sig)
		}
	}
	f("/keda/v1/targets/vllm-qwen/model=qwen2.5-32b-instruct", 3)
	f("/keda/v1/targets/vllm-qwen/%7Bmodel=%22qwen2.5-32b-instruct%22%7D", 3)
	// Pairs in any order; a value holding ',' and '/' escaped.
	f("/keda/v1/targets/vllm-qwen/pod=a%2Cb%2Fc,model=llama", 5)
	f("/keda/v1/targets/vllm-qwen/%7Bmodel=%22llama%22,pod=%22a,b%2Fc%22%7D", 5)
}

func TestHTTPLists(t *testing.T) {
	s, c := newSignals(t, Options{})
	base := serveHTTP(t, s.Handler())
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{
		signal("b", map[string]string{"model": "m2"}, t0, 2), signal("b", map[string]string{"model": "m1"}, t0, 1),
		signal("a", nil, t0.Add(-11*time.Minute), 4),
	}})
	code, body := get(t, base+"/keda/v1/targets")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var l List
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range l.Targets {
		got = append(got, s.Rule+s.Target)
		if s.Stale != (s.Rule == "a") {
			t.Fatalf("%s %s stale = %v", s.Rule, s.Target, s.Stale)
		}
	}
	if strings.Join(got, " ") != `a{} b{model="m1"} b{model="m2"}` {
		t.Fatalf("list: %v", got)
	}
	// A GJSON query picks a target out of a list, for a trigger that
	// prefers one URL per rule.
	_, body = get(t, base+"/keda/v1/targets/b")
	if v := valueAt(t, body, `targets.#(labels.model=="m2").desired_replicas`); v != 2 {
		t.Fatalf("desired replicas of m2 = %v, want 2", v)
	}
	if n := gjson.GetBytes(body, "targets.#").Int(); n != 2 {
		t.Fatalf("rule b lists %d targets, want 2", n)
	}
	// Trailing slashes list too.
	if code, _ := get(t, base+"/keda/v1/targets/b/"); code != http.StatusOK {
		t.Fatalf("GET /keda/v1/targets/b/: %d", code)
	}
	c.Set(t0.Add(2 * time.Hour))
	if code, body := get(t, base+"/keda/v1/targets/"); code != http.StatusOK || gjson.GetBytes(body, "targets.#").Int() != 0 {
		t.Fatalf("after every signal was forgotten: %d %s", code, body)
	}
}

func TestHTTPUnknown(t *testing.T) {
	s, _ := newSignals(t, Options{})
	base := serveHTTP(t, s.Handler())
	f := func(path string, wantCode int, wantErr string, known string) {
		t.Helper()
		code, body := get(t, base+path)
		var e Error
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		if code != wantCode || !strings.Contains(e.Error, wantErr) {
			t.Fatalf("GET %s: %d %q; want %d with %q", path, code, e.Error, wantCode, wantErr)
		}
		if got := strings.Join(append(e.KnownRules, e.KnownTargets...), " "); got != known {
			t.Fatalf("GET %s: known %q, want %q", path, got, known)
		}
	}
	f("/keda/v1/targets/r/model=m", 404, "no scale rule has published a signal yet", "")
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{
		signal("r", map[string]string{"model": "m"}, t0, 1), signal("r", map[string]string{"model": "n"}, t0, 1),
		signal("q", map[string]string{"model": "m"}, t0, 1),
	}})
	f("/keda/v1/targets/nope/model=m", 404, `no scale signals for rule "nope"; known rules: "q", "r"`, "q r")
	f("/keda/v1/targets/nope", 404, `no scale signals for rule "nope"`, "q r")
	f("/keda/v1/targets/r/model=x", 404, `rule "r" has no target {model="x"}; known targets: {model="m"}, {model="n"}`, `{model="m"} {model="n"}`)
	f("/keda/v1/targets/r/model", 400, "name=value pairs", "")
	f("/keda/v1/targets/r/model=a,model=b", 400, "names label model twice", "")
	f("/keda/v1/nothing", 404, "try /keda/v1/targets", "")
	f("/keda/v1/targetsX", 404, "try /keda/v1/targets", "")

	resp, err := http.Post(base+"/keda/v1/targets", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestHTTPStale(t *testing.T) {
	set := metrics.NewSet()
	s, c := newSignals(t, Options{Grace: time.Minute, Forget: 30 * time.Minute, Metrics: set})
	base := serveHTTP(t, s.Handler())
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{signal("r", map[string]string{"model": "m"}, t0, 4)}})
	const path = "/keda/v1/targets/r/model=m"
	// Valid until t0+10m, served as fresh for the minute of grace.
	c.Set(t0.Add(11 * time.Minute))
	if code, body := get(t, base+path); code != http.StatusOK || gjson.GetBytes(body, "stale").Bool() {
		t.Fatalf("within the grace: %d %s", code, body)
	}
	c.Set(t0.Add(11*time.Minute + time.Second))
	code, body := get(t, base+path)
	var e Error
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(e.Error, "is stale: valid until 2026-11-25T14:10:00Z") ||
		e.Signal == nil || !e.Signal.Stale || e.Signal.DesiredReplicas != 4 {
		t.Fatalf("stale: %d %s", code, body)
	}
	// What KEDA would read fails: the trigger counts an error, and its
	// fallback takes over.
	if r := gjson.GetBytes(body, "desired_replicas"); r.Exists() {
		t.Fatalf("a 503 body has desired_replicas at the top: %s", body)
	}
	code, body = get(t, base+path+"?allow_stale=true")
	if code != http.StatusOK || !gjson.GetBytes(body, "stale").Bool() || valueAt(t, body, "desired_replicas") != 4 {
		t.Fatalf("allow_stale: %d %s", code, body)
	}
	// A fresh signal makes it fresh again.
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{signal("r", map[string]string{"model": "m"}, t0.Add(11*time.Minute), 5)}})
	if code, body := get(t, base+path); code != http.StatusOK || valueAt(t, body, "desired_replicas") != 5 {
		t.Fatalf("fresh again: %d %s", code, body)
	}
	// Stale for longer than Forget: unknown.
	c.Set(t0.Add(21*time.Minute + time.Minute + 30*time.Minute + time.Second))
	if code, _ := get(t, base+path); code != http.StatusNotFound {
		t.Fatalf("forgotten: %d", code)
	}
	var out strings.Builder
	set.WritePrometheus(&out)
	for _, want := range []string{
		`inferwatch_keda_stale_answers_total{api="metrics_api"} 1`,
		`inferwatch_keda_requests_total{api="metrics_api",code="503"} 1`,
		`inferwatch_keda_requests_total{api="metrics_api",code="200"} 3`,
		`inferwatch_keda_requests_total{api="metrics_api",code="404"} 1`,
		`inferwatch_keda_targets 0`,
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Fatalf("metrics lack %s:\n%s", want, out.String())
		}
	}
}

func TestSendKeepsNewestAndCaps(t *testing.T) {
	set := metrics.NewSet()
	s, _ := newSignals(t, Options{MaxTargets: 2, Metrics: set})
	m := map[string]string{"model": "m"}
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{
		signal("r", m, t0.Add(time.Minute), 3), signal("r", m, t0, 9), // a replayed older one does not win
		signal("r", map[string]string{"model": "n"}, t0, 1),
		signal("r", map[string]string{"model": "o"}, t0, 1), // past the cap
	}})
	sig, _, err := s.get("r", `{model="m"}`)
	if err != nil || sig.DesiredReplicas != 3 {
		t.Fatalf("newest: %+v %v", sig, err)
	}
	var unk *errUnknown
	if _, _, err := s.get("r", `{model="o"}`); !errors.As(err, &unk) {
		t.Fatalf("a target past the cap: %v", err)
	}
	var out strings.Builder
	set.WritePrometheus(&out)
	if !strings.Contains(out.String(), "inferwatch_keda_targets_dropped_total 1\n") || !strings.Contains(out.String(), "inferwatch_keda_targets 2\n") {
		t.Fatalf("metrics:\n%s", out.String())
	}
	// A rule's only target needs no name; with two it does.
	s2, _ := newSignals(t, Options{})
	s2.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{signal("one", m, t0, 2)}})
	if sig, _, err := s2.get("one", ""); err != nil || sig.DesiredReplicas != 2 {
		t.Fatalf("only target: %+v %v", sig, err)
	}
	if _, _, err := s.get("r", ""); err == nil || !strings.Contains(err.Error(), `rule "r" has 2 targets; name one of them: {model="m"}, {model="n"}`) {
		t.Fatalf("two targets, none named: %v", err)
	}
}

func TestParseTarget(t *testing.T) {
	f := func(in, want, wantErr string) {
		t.Helper()
		got, err := ParseTarget(in)
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("ParseTarget(%q) = %q, %v; want an error with %q", in, got, err, wantErr)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("ParseTarget(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	f("", "", "")
	f("model=qwen", `{model="qwen"}`, "")
	f("pod=p1, model=qwen", `{model="qwen",pod="p1"}`, "") // names trimmed, values kept as they are
	f("pod= p1", `{pod=" p1"}`, "")
	f(`model=say "hi"`, `{model="say \"hi\""}`, "")
	f(`{model="qwen"}`, `{model="qwen"}`, "")
	f("model", "", "name=value pairs")
	f("=x", "", "name=value pairs")
	f("a=1,a=2", "", "twice")
}

func TestJSONFloatNull(t *testing.T) {
	s, _ := newSignals(t, Options{})
	base := serveHTTP(t, s.Handler())
	sig := signal("r", nil, t0, 1)
	sig.PredictedLoad, sig.PredictedUpper, sig.CurrentKnown = alerting.JSONFloat(math.NaN()), alerting.JSONFloat(math.NaN()), false
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{sig}})
	_, body := get(t, base+"/keda/v1/targets/r/%7B%7D")
	// Undefined figures are null: a trigger reading them fails rather
	// than scaling on a made-up number.
	for _, loc := range []string{"predicted_load", "predicted_upper", "current_replicas"} {
		if r := gjson.GetBytes(body, loc); r.Type != gjson.Null {
			t.Fatalf("%s is %s in %s", loc, r.Type, body)
		}
	}
	if valueAt(t, body, "desired_replicas") != 1 {
		t.Fatal(string(body))
	}
}
