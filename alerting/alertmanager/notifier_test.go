package alertmanager_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting/alertmanager"
)

// fakeAM is an httptest Alertmanager for fault cases: it records the
// alertnames of every batch posted to /api/v2/alerts and answers as
// respond says for the n-th request, counted from 0.
type fakeAM struct {
	*httptest.Server
	respond func(n int, w http.ResponseWriter, r *http.Request)

	mu      sync.Mutex
	batches [][]string
	arrived chan struct{} // one signal per request, never blocking
}

func newFakeAM(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *fakeAM {
	t.Helper()
	f := &fakeAM{respond: respond, arrived: make(chan struct{}, 1000)}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAM) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/v2/alerts" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, fmt.Sprintf("unexpected %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type")), http.StatusNotFound)
		return
	}
	var alerts []alertmanager.Alert
	if err := json.NewDecoder(r.Body).Decode(&alerts); err != nil {
		http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	names := make([]string, len(alerts))
	for i, a := range alerts {
		names[i] = a.Labels["alertname"]
	}
	f.mu.Lock()
	n := len(f.batches)
	f.batches = append(f.batches, names)
	f.mu.Unlock()
	select {
	case f.arrived <- struct{}{}:
	default:
	}
	f.respond(n, w, r)
}

// received is every batch so far.
func (f *fakeAM) received() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.batches...)
}

// alertnames is every alertname received, in order.
func (f *fakeAM) alertnames() []string {
	var out []string
	for _, b := range f.received() {
		out = append(out, b...)
	}
	return out
}

// waitRequests waits until n requests have arrived, at most 10s.
func (f *fakeAM) waitRequests(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for len(f.received()) < n {
		select {
		case <-f.arrived:
		case <-deadline:
			t.Fatalf("%s: %d requests within 10s, want %d", f.URL, len(f.received()), n)
		}
	}
}

func ok(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func alert(name string) alertmanager.Alert {
	return alertmanager.Alert{
		Labels:   map[string]string{"alertname": name, "severity": "warning"},
		StartsAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func alerts(names ...string) []alertmanager.Alert {
	out := make([]alertmanager.Alert, len(names))
	for i, n := range names {
		out[i] = alert(n)
	}
	return out
}

// logBuffer is a concurrency-safe sink for a text slog handler.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// setup starts a Notifier on urls with quick retries, closes it when the
// test ends, and returns it with its metrics and logs.
func setup(t *testing.T, o alertmanager.Options) (*alertmanager.Notifier, *metrics.Set, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	set := metrics.NewSet()
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Metrics = set
	if o.BackoffMax == 0 {
		o.BackoffMax = 20 * time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	n, err := alertmanager.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n.Close(ctx)
		if t.Failed() {
			t.Logf("notifier logs:\n%s", logs)
		}
	})
	return n, set, logs
}

// closeAll closes n, bounded, and checks how many alerts were left.
func closeAll(t *testing.T, n *alertmanager.Notifier, wantLeft int) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	left, err := n.Close(ctx)
	if left != wantLeft {
		t.Fatalf("Close left %d alerts, want %d (err %v)", left, wantLeft, err)
	}
	if (err != nil) != (wantLeft > 0) {
		t.Fatalf("Close: left %d, err %v", left, err)
	}
	return err
}

func counter(set *metrics.Set, name, url string, extra ...string) uint64 {
	labels := fmt.Sprintf("alertmanager=%q", url)
	for i := 0; i+1 < len(extra); i += 2 {
		labels += fmt.Sprintf(",%s=%q", extra[i], extra[i+1])
	}
	return set.GetOrCreateCounter(name + "{" + labels + "}").Get()
}

func checkCounts(t *testing.T, set *metrics.Set, url string, sent, errs, queueFull, rejected uint64) {
	t.Helper()
	got := []uint64{
		counter(set, "inferwatch_alertmanager_alerts_sent_total", url),
		counter(set, "inferwatch_alertmanager_errors_total", url),
		counter(set, "inferwatch_alertmanager_alerts_dropped_total", url, "reason", "queue_full"),
		counter(set, "inferwatch_alertmanager_alerts_dropped_total", url, "reason", "rejected"),
	}
	want := []uint64{sent, errs, queueFull, rejected}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: sent, errors, dropped queue_full, dropped rejected = %v, want %v", url, got, want)
	}
}

func TestRetriesWhatCanSucceed(t *testing.T) {
	f := func(name string, fail func(w http.ResponseWriter)) {
		t.Run(name, func(t *testing.T) {
			am := newFakeAM(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n < 2 {
					fail(w)
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			n, set, logs := setup(t, alertmanager.Options{URLs: []string{am.URL}})
			n.Send(alerts("A", "B")...)
			am.waitRequests(t, 3)
			closeAll(t, n, 0)
			if got := fmt.Sprint(am.received()); got != "[[A B] [A B] [A B]]" {
				t.Fatalf("batches %s, want the same batch three times", got)
			}
			checkCounts(t, set, am.URL, 2, 2, 0, 0)
			if !strings.Contains(logs.String(), "retrying") || !strings.Contains(logs.String(), "takes alerts again") {
				t.Fatalf("logs do not tell of the retries and the recovery:\n%s", logs)
			}
		})
	}
	f("500", func(w http.ResponseWriter) { http.Error(w, "boom", http.StatusInternalServerError) })
	f("503", func(w http.ResponseWriter) { http.Error(w, "unavailable", http.StatusServiceUnavailable) })
	f("429 with Retry-After", func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	})
	f("connection closed", func(w http.ResponseWriter) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
}

func TestDoesNotRetryClientErrors(t *testing.T) {
	const answer = "{\"code\":400,\"message\":\"start time must be before end time\"}\n"
	am := newFakeAM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			http.Error(w, answer+strings.Repeat("x", 4096), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	n, set, logs := setup(t, alertmanager.Options{URLs: []string{am.URL}})
	n.Send(alerts("A", "B")...)
	am.waitRequests(t, 1)
	n.Send(alert("C")) // the next batch goes out as usual
	am.waitRequests(t, 2)
	closeAll(t, n, 0)
	if got := fmt.Sprint(am.received()); got != "[[A B] [C]]" {
		t.Fatalf("batches %s, want [[A B] [C]]: a 400 is not retried", got)
	}
	checkCounts(t, set, am.URL, 1, 1, 0, 2)
	out := logs.String()
	for _, want := range []string{"refused", "400 Bad Request", "start time must be before end time", "first=A"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, strings.Repeat("x", 600)) {
		t.Errorf("logs quote more than the first bytes of the answer")
	}
}

func TestRetriesPastTimeout(t *testing.T) {
	release := make(chan struct{})
	am := newFakeAM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			select { // hang until the client gives up
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	t.Cleanup(func() { close(release) }) // before am.Close, which waits for handlers
	n, set, logs := setup(t, alertmanager.Options{URLs: []string{am.URL}, Timeout: 100 * time.Millisecond})
	n.Send(alert("A"))
	am.waitRequests(t, 2)
	closeAll(t, n, 0)
	checkCounts(t, set, am.URL, 1, 1, 0, 0)
	if !strings.Contains(logs.String(), "no answer within the timeout of 100ms") {
		t.Fatalf("logs do not name the timeout:\n%s", logs)
	}
}

func TestCloseGivesUpOnHungAlertmanager(t *testing.T) {
	release := make(chan struct{})
	am := newFakeAM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	n, set, _ := setup(t, alertmanager.Options{URLs: []string{am.URL}, Timeout: time.Minute, FlushTimeout: 200 * time.Millisecond})
	n.Send(alerts("A", "B", "C")...)
	am.waitRequests(t, 1)
	err := closeAll(t, n, 3)
	if !strings.Contains(err.Error(), "3 to "+am.URL) || !strings.Contains(err.Error(), "flush timeout of 200ms") {
		t.Fatalf("Close error %q does not name the Alertmanager and the flush timeout", err)
	}
	if got := counter(set, "inferwatch_alertmanager_alerts_dropped_total", am.URL, "reason", "shutdown"); got != 3 {
		t.Fatalf("dropped shutdown = %d, want 3", got)
	}
	n.Send(alert("D"))
	if got := counter(set, "inferwatch_alertmanager_alerts_dropped_total", am.URL, "reason", "shutdown"); got != 4 {
		t.Fatalf("after a Send past Close, dropped shutdown = %d, want 4", got)
	}
	if l, err2 := n.Close(context.Background()); l != 3 || err2 == nil {
		t.Fatalf("second Close: %d, %v; want the first answer again", l, err2)
	}
}

func TestCloseForcedByContext(t *testing.T) {
	am := newFakeAM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	})
	n, _, _ := setup(t, alertmanager.Options{URLs: []string{am.URL}, FlushTimeout: time.Minute})
	n.Send(alert("A"))
	am.waitRequests(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	left, err := n.Close(ctx)
	if left != 1 || err == nil || !strings.Contains(err.Error(), "forced") {
		t.Fatalf("Close with a done context: %d, %v; want 1 left and a forced shutdown", left, err)
	}
}

func TestCloseFlushes(t *testing.T) {
	// Close delivers what is still queued, through an Alertmanager that
	// fails at first.
	am := newFakeAM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	n, set, _ := setup(t, alertmanager.Options{URLs: []string{am.URL}, MaxBatch: 2})
	n.Send(alerts("A", "B", "C", "D", "E")...)
	closeAll(t, n, 0)
	if got := strings.Join(am.alertnames(), ""); got != "ABABCDE" {
		t.Fatalf("delivered %s, want ABABCDE (A B retried, then the rest)", got)
	}
	checkCounts(t, set, am.URL, 5, 1, 0, 0)
}

func TestQueueOverflowDropsOldest(t *testing.T) {
	release := make(chan struct{})
	am := newFakeAM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			<-release
		}
		w.WriteHeader(http.StatusOK)
	})
	n, set, logs := setup(t, alertmanager.Options{URLs: []string{am.URL}, QueueCapacity: 3})
	length := set.GetOrCreateGauge(fmt.Sprintf("inferwatch_alertmanager_queue_length{alertmanager=%q}", am.URL), nil)
	n.Send(alert("A"))
	am.waitRequests(t, 1) // A is in flight, held by the server
	for _, name := range []string{"B", "C", "D", "E", "F"} {
		n.Send(alert(name))
	}
	if l := length.Get(); l != 3 {
		t.Fatalf("queue length %v, want 3", l)
	}
	// One Send of more than the capacity keeps its newest.
	n.Send(alerts("G", "H", "I", "J")...)
	close(release)
	am.waitRequests(t, 2)
	closeAll(t, n, 0)
	if got := fmt.Sprint(am.received()); got != "[[A] [H I J]]" {
		t.Fatalf("batches %s, want [[A] [H I J]]: the oldest queued are dropped", got)
	}
	checkCounts(t, set, am.URL, 4, 0, 6, 0)
	if got := strings.Count(logs.String(), "queue full"); got != 1 {
		t.Fatalf("%d log lines about the full queue, want 1 (rate-limited):\n%s", got, logs)
	}
	if l := length.Get(); l != 0 {
		t.Fatalf("queue length %v after Close, want 0", l)
	}
}

func TestOneAlertmanagerDownOthersReceive(t *testing.T) {
	// hung accepts connections and never answers; refused is a port with
	// nothing listening. Neither may delay healthy.
	release := make(chan struct{})
	hung := newFakeAM(t, func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	healthy := newFakeAM(t, ok)

	n, set, logs := setup(t, alertmanager.Options{
		URLs:         []string{hung.URL, refused, healthy.URL},
		Timeout:      time.Minute,
		BackoffMax:   50 * time.Millisecond,
		FlushTimeout: 300 * time.Millisecond,
	})
	n.Send(alerts("A", "B")...)
	healthy.waitRequests(t, 1)
	hung.waitRequests(t, 1)
	n.Send(alert("C"))
	healthy.waitRequests(t, 2)
	if got := fmt.Sprint(healthy.received()); got != "[[A B] [C]]" {
		t.Fatalf("healthy Alertmanager got %s, want [[A B] [C]]", got)
	}
	err = closeAll(t, n, 6)
	for _, want := range []string{"3 to " + hung.URL, "3 to " + refused} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Close error %q lacks %q", err, want)
		}
	}
	checkCounts(t, set, healthy.URL, 3, 0, 0, 0)
	if counter(set, "inferwatch_alertmanager_errors_total", refused) == 0 {
		t.Errorf("no error counted for the refused Alertmanager")
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("logs do not say the connection was refused:\n%s", logs)
	}
}

func TestInvalidAlertsDropped(t *testing.T) {
	am := newFakeAM(t, ok)
	n, set, logs := setup(t, alertmanager.Options{URLs: []string{am.URL}})
	n.Send(alert("A"), alertmanager.Alert{}, alert("B"))
	closeAll(t, n, 0)
	if got := strings.Join(am.alertnames(), ""); got != "AB" {
		t.Fatalf("delivered %s, want AB", got)
	}
	if got := counter(set, "inferwatch_alertmanager_alerts_dropped_total", am.URL, "reason", "invalid"); got != 1 {
		t.Fatalf("dropped invalid = %d, want 1", got)
	}
	if !strings.Contains(logs.String(), "no label") {
		t.Fatalf("logs do not say why the alert was dropped:\n%s", logs)
	}
}

func TestSendKeepsNoReference(t *testing.T) {
	am := newFakeAM(t, ok)
	n, _, _ := setup(t, alertmanager.Options{URLs: []string{am.URL}})
	a := alert("A")
	n.Send(a)
	a.Labels["alertname"] = "changed" // the caller may reuse its maps
	closeAll(t, n, 0)
	if got := strings.Join(am.alertnames(), ""); got != "A" {
		t.Fatalf("delivered %q, want A", got)
	}
}

func TestPathPrefix(t *testing.T) {
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		io.Copy(io.Discard, r.Body)
	}))
	t.Cleanup(srv.Close)
	n, _, _ := setup(t, alertmanager.Options{URLs: []string{srv.URL + "/am/"}})
	n.Send(alert("A"))
	closeAll(t, n, 0)
	if path != "/am/api/v2/alerts" {
		t.Fatalf("posted to %q, want /am/api/v2/alerts", path)
	}
}

func TestNewRejects(t *testing.T) {
	f := func(o alertmanager.Options, fragment string) {
		t.Helper()
		_, err := alertmanager.New(o)
		if err == nil || !strings.Contains(err.Error(), fragment) {
			t.Errorf("New(%+v) = %v, want it to mention %q", o, err, fragment)
		}
	}
	url := []string{"http://127.0.0.1:9093"}
	f(alertmanager.Options{}, "at least one")
	f(alertmanager.Options{URLs: []string{"http://u:p@am:9093"}}, "basic_auth")
	f(alertmanager.Options{URLs: url, QueueCapacity: -1}, "queue capacity")
	f(alertmanager.Options{URLs: url, Timeout: -time.Second}, "timeout")
	f(alertmanager.Options{URLs: url, HTTPClient: http.DefaultClient, HTTPClientConfig: &promConfigWithBearer}, "set one")
	bad := promConfigWithBearer
	bad.BearerToken = "a"
	bad.BasicAuth = basicAuth
	f(alertmanager.Options{URLs: url, HTTPClientConfig: &bad}, "HTTP client settings")
}
