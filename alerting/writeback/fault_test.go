package writeback

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/common/config"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
)

// scoreOnly is the Scores of one series with only a score at each of ts
// (valued t/1000), so that it becomes one output series.
func scoreOnly(rule string, labels map[string]string, ts ...int64) alerting.Scores {
	sc := alerting.Scores{Group: "g", Rule: rule, Kind: "anomaly", Labels: labels}
	nan := math.NaN()
	for _, t := range ts {
		sc.T = append(sc.T, t)
		sc.Score = append(sc.Score, float64(t)/1000)
		sc.Value, sc.Expected = append(sc.Value, nan), append(sc.Expected, nan)
		sc.Lower, sc.Upper = append(sc.Lower, nan), append(sc.Upper, nan)
	}
	return sc
}

func span(from, to int64) []int64 {
	var ts []int64
	for t := from; t <= to; t++ {
		ts = append(ts, t)
	}
	return ts
}

// fakeStore is an httptest server taking either protocol. Its answer
// function decides each request's fate from the series it holds: a status
// other than 2xx refuses it, 0 stores it and answers 204.
type fakeStore struct {
	t      *testing.T
	srv    *httptest.Server
	proto  Protocol
	answer func(n int, ss []ingest.Series, r *http.Request) int

	mu       sync.Mutex
	requests int
	sizes    []int               // samples per request, stored or not
	bodies   map[[32]byte]int    // how often each body came
	got      map[string][]sample // stored, by series
	headers  []http.Header
	arrived  chan struct{} // a request arrived since the last look
}

type sample struct {
	t int64
	v float64
}

func newFakeStore(t *testing.T, proto Protocol, answer func(n int, ss []ingest.Series, r *http.Request) int) *fakeStore {
	fs := &fakeStore{t: t, proto: proto, answer: answer, bodies: map[[32]byte]int{}, got: map[string][]sample{},
		arrived: make(chan struct{}, 1)}
	fs.srv = httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(fs.srv.Close)
	return fs
}

func (fs *fakeStore) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client gave up
	}
	var ss []ingest.Series
	if fs.proto == RemoteWrite {
		ss, err = decodeWriteRequest(body)
	} else {
		ss, err = decodeImport(body)
	}
	if err != nil {
		fs.t.Errorf("request %s: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fs.mu.Lock()
	fs.requests++
	n := fs.requests
	fs.bodies[sha256.Sum256(body)]++
	fs.sizes = append(fs.sizes, total(ss))
	fs.headers = append(fs.headers, r.Header.Clone())
	fs.mu.Unlock()
	select {
	case fs.arrived <- struct{}{}:
	default:
	}
	code := 0
	if fs.answer != nil {
		code = fs.answer(n, ss, r)
	}
	if code != 0 && code/100 != 2 {
		http.Error(w, fmt.Sprintf("refused with %d", code), code)
		return
	}
	fs.mu.Lock()
	for _, s := range ss {
		k := s.Labels.String()
		for i, t := range s.Timestamps {
			fs.got[k] = append(fs.got[k], sample{t, s.Values[i]})
		}
	}
	fs.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func total(ss []ingest.Series) int {
	n := 0
	for _, s := range ss {
		n += len(s.Timestamps)
	}
	return n
}

// stored is the timestamps stored for the series with the label for=rule.
func (fs *fakeStore) stored(rule string) []int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var ts []int64
	for k, ss := range fs.got {
		if strings.Contains(k, `for="`+rule+`"`) {
			for _, s := range ss {
				ts = append(ts, s.t)
			}
		}
	}
	return ts
}

// waitRequests waits until n requests have arrived.
func (fs *fakeStore) waitRequests(n int) {
	fs.t.Helper()
	for {
		fs.mu.Lock()
		k := fs.requests
		fs.mu.Unlock()
		if k >= n {
			return
		}
		select {
		case <-fs.arrived:
		case <-time.After(30 * time.Second):
			fs.t.Fatalf("%d requests arrived, want %d", k, n)
		}
	}
}

// metric is the value of the named self-metric in set, or -1 when absent.
func metric(set *metrics.Set, name string) float64 {
	var b bytes.Buffer
	set.WritePrometheus(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return -1
}

func dropped(set *metrics.Set, reason string) float64 {
	return metric(set, `inferwatch_writeback_samples_dropped_total{reason="`+reason+`"}`)
}

// newTestWriter is a Writer to fs with fast retries, closed at the end of
// the test.
func newTestWriter(t *testing.T, fs *fakeStore, o Options) (*Writer, *metrics.Set) {
	t.Helper()
	if o.URL == "" {
		o.URL = fs.srv.URL
	}
	o.Protocol = fs.proto
	if o.BackoffMax == 0 {
		o.BackoffMax = 5 * time.Millisecond
	}
	if o.BatchDeadline == 0 {
		o.BatchDeadline = time.Millisecond
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	return w, o.Metrics
}

func closeWriter(t *testing.T, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if left, err := w.Close(ctx); left != 0 || err != nil {
		t.Fatalf("Close: %d left, %v", left, err)
	}
}

func TestRetries5xxThenWrites(t *testing.T) {
	for _, proto := range []Protocol{VMImport, RemoteWrite} {
		t.Run(string(proto), func(t *testing.T) {
			fs := newFakeStore(t, proto, func(n int, _ []ingest.Series, _ *http.Request) int {
				switch n {
				case 1:
					return http.StatusInternalServerError
				case 2:
					return http.StatusTooManyRequests
				}
				return 0
			})
			w, set := newTestWriter(t, fs, Options{})
			w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", map[string]string{"pod": "p"}, span(1, 50)...)}})
			closeWriter(t, w)
			if got := fs.stored("r"); !slices.Equal(got, span(1, 50)) {
				t.Errorf("stored %v, want 1..50 once", got)
			}
			for name, want := range map[string]float64{
				"inferwatch_writeback_samples_sent_total":         50,
				"inferwatch_writeback_samples_queued_total":       50,
				"inferwatch_writeback_retries_total":              2,
				"inferwatch_writeback_errors_total":               2,
				`inferwatch_writeback_requests_total{code="500"}`: 1,
				`inferwatch_writeback_requests_total{code="429"}`: 1,
				`inferwatch_writeback_requests_total{code="204"}`: 1,
				"inferwatch_writeback_queue_length":               0,
			} {
				if got := metric(set, name); got != want {
					t.Errorf("%s = %g, want %g", name, got, want)
				}
			}
			h := fs.headers[0]
			switch proto {
			case RemoteWrite:
				for k, v := range map[string]string{"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
					"X-Prometheus-Remote-Write-Version": "0.1.0", "User-Agent": "inferwatch"} {
					if h.Get(k) != v {
						t.Errorf("header %s: %q, want %q", k, h.Get(k), v)
					}
				}
			case VMImport:
				if h.Get("Content-Encoding") != "" {
					t.Errorf("Content-Encoding %q on an import", h.Get("Content-Encoding"))
				}
			}
		})
	}
}

func TestRefusalsAreNotRetried(t *testing.T) {
	f := func(code int, wantRequests int) {
		t.Helper()
		fs := newFakeStore(t, RemoteWrite, func(int, []ingest.Series, *http.Request) int { return code })
		var logs bytes.Buffer
		w, set := newTestWriter(t, fs, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{
			scoreOnly("a", map[string]string{"pod": "p"}, span(1, 10)...),
			scoreOnly("b", map[string]string{"pod": "p"}, span(1, 10)...),
		}})
		closeWriter(t, w)
		fs.mu.Lock()
		n := fs.requests
		fs.mu.Unlock()
		if n != wantRequests {
			t.Errorf("HTTP %d: %d requests, want %d", code, n, wantRequests)
		}
		for body, k := range fs.bodies {
			if k > 1 {
				t.Errorf("HTTP %d: a request was sent %d times (%x)", code, k, body[:4])
			}
		}
		if got := dropped(set, ReasonRejected); got != 20 {
			t.Errorf("HTTP %d: dropped as rejected %g, want 20", code, got)
		}
		if metric(set, "inferwatch_writeback_retries_total") != 0 {
			t.Errorf("HTTP %d: retried", code)
		}
		if !strings.Contains(logs.String(), fmt.Sprintf("refused with %d", code)) {
			t.Errorf("HTTP %d: the store's answer is not logged:\n%s", code, logs.String())
		}
	}
	// 400 is refused content: the halves are tried apart, once each.
	f(http.StatusBadRequest, 3)
	f(http.StatusRequestEntityTooLarge, 3)
	// Refusals of the request as a whole are not split.
	f(http.StatusUnauthorized, 1)
	f(http.StatusNotFound, 1)
}

// A store refusing any request that holds one refused series (as Prometheus
// before 3.0 does for a sample out of order) still gets every other series.
func TestRefusedRequestIsSplitBySeries(t *testing.T) {
	fs := newFakeStore(t, RemoteWrite, func(_ int, ss []ingest.Series, _ *http.Request) int {
		for _, s := range ss {
			if s.Labels.Get("pod") == "bad" {
				return http.StatusBadRequest
			}
		}
		return 0
	})
	w, set := newTestWriter(t, fs, Options{BatchDeadline: time.Hour})
	var b alerting.Batch
	for i := range 9 {
		pod := fmt.Sprint("p", i)
		if i == 6 {
			pod = "bad"
		}
		b.Scores = append(b.Scores, scoreOnly(fmt.Sprint("r", i), map[string]string{"pod": pod}, span(1, 5)...))
	}
	w.Send(context.Background(), b)
	closeWriter(t, w)
	for i := range 9 {
		got := fs.stored(fmt.Sprint("r", i))
		if want := span(1, 5); i == 6 {
			if len(got) != 0 {
				t.Errorf("the refused series was stored: %v", got)
			}
		} else if !slices.Equal(got, want) {
			t.Errorf("series r%d: stored %v, want %v", i, got, want)
		}
	}
	if got := dropped(set, ReasonRejected); got != 5 {
		t.Errorf("dropped as rejected %g, want 5: the refused series alone", got)
	}
	if got := metric(set, "inferwatch_writeback_samples_sent_total"); got != 40 {
		t.Errorf("sent %g, want 40", got)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.requests > 2*9-1 {
		t.Errorf("%d requests for 9 series", fs.requests)
	}
	for _, k := range fs.bodies {
		if k > 1 {
			t.Error("a request was sent twice")
		}
	}
}

func TestHangPastTimeoutIsRetried(t *testing.T) {
	fs := newFakeStore(t, VMImport, func(n int, _ []ingest.Series, r *http.Request) int {
		if n == 1 {
			<-r.Context().Done() // until the client gives up
			return http.StatusServiceUnavailable
		}
		return 0
	})
	var logs bytes.Buffer
	w, set := newTestWriter(t, fs, Options{Timeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", nil, span(1, 20)...)}})
	closeWriter(t, w)
	if got := fs.stored("r"); !slices.Equal(got, span(1, 20)) {
		t.Errorf("stored %v, want 1..20", got)
	}
	if got := metric(set, `inferwatch_writeback_requests_total{code="error"}`); got != 1 {
		t.Errorf("requests without an answer: %g, want 1", got)
	}
	if got := metric(set, "inferwatch_writeback_retries_total"); got != 1 {
		t.Errorf("retries %g, want 1", got)
	}
	if !strings.Contains(logs.String(), "no answer within the timeout of 50ms") {
		t.Errorf("the timeout is not logged:\n%s", logs.String())
	}
}

func TestQueueOverflowDropsOldest(t *testing.T) {
	release := make(chan struct{})
	fs := newFakeStore(t, RemoteWrite, func(n int, _ []ingest.Series, _ *http.Request) int {
		if n == 1 {
			<-release
		}
		return 0
	})
	w, set := newTestWriter(t, fs, Options{QueueCapacity: 10, MaxSamplesPerSend: 10})
	send := func(ts ...int64) {
		w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", nil, ts...)}})
	}
	send(span(1, 4)...)
	fs.waitRequests(1) // 1..4 in flight, held by the store
	send(span(5, 19)...)
	if got := dropped(set, ReasonQueueFull); got != 5 {
		t.Errorf("dropped from the full queue: %g, want 5", got)
	}
	if got := metric(set, "inferwatch_writeback_queue_length"); got != 10 {
		t.Errorf("queue length %g, want 10", got)
	}
	close(release)
	closeWriter(t, w)
	if got, want := fs.stored("r"), append(span(1, 4), span(10, 19)...); !slices.Equal(got, want) {
		t.Errorf("stored %v, want %v: the oldest of the queue dropped", got, want)
	}
	if got := metric(set, "inferwatch_writeback_samples_sent_total"); got != 14 {
		t.Errorf("sent %g, want 14", got)
	}
}

func TestBatchesBySizeAndAge(t *testing.T) {
	fs := newFakeStore(t, VMImport, nil)
	w, _ := newTestWriter(t, fs, Options{MaxSamplesPerSend: 3, BatchDeadline: time.Hour})
	w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", nil, span(1, 7)...)}})
	// Two full requests go at once; the seventh sample waits for more, up
	// to an hour, or for Close.
	fs.waitRequests(2)
	closeWriter(t, w)
	if got := fmt.Sprint(fs.sizes); got != "[3 3 1]" {
		t.Errorf("request sizes %s, want [3 3 1]", got)
	}

	fs = newFakeStore(t, VMImport, nil)
	w, _ = newTestWriter(t, fs, Options{MaxSamplesPerSend: 1000, BatchDeadline: 10 * time.Millisecond})
	w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", nil, 1)}})
	fs.waitRequests(1) // sent once it has waited the deadline, without Close
	closeWriter(t, w)
	if got := fs.stored("r"); !slices.Equal(got, []int64{1}) {
		t.Errorf("stored %v", got)
	}
}

func TestCloseReportsWhatWasLeft(t *testing.T) {
	fs := newFakeStore(t, RemoteWrite, func(int, []ingest.Series, *http.Request) int { return http.StatusServiceUnavailable })
	var logs bytes.Buffer
	w, set := newTestWriter(t, fs, Options{
		URL:          fs.srv.URL + "/api/v1/write?extra_label=team%3Dserving&token=secret-token",
		FlushTimeout: 50 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
	})
	w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", nil, span(1, 30)...)}})
	fs.waitRequests(2)
	left, err := w.Close(context.Background())
	if left != 30 || err == nil {
		t.Fatalf("Close: %d left, %v; want 30 and an error", left, err)
	}
	for _, want := range []string{"30 samples not written at shutdown", "flush timeout of 50ms", fs.srv.URL + "/api/v1/write?", "token=xxxxx"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Close error %q does not say %q", err, want)
		}
	}
	if got := dropped(set, ReasonShutdown); got != 30 {
		t.Errorf("dropped at shutdown %g, want 30", got)
	}
	if strings.Contains(err.Error()+logs.String(), "secret") {
		t.Errorf("the token is shown:\n%v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "503 Service Unavailable") {
		t.Errorf("the retries are not logged with the status:\n%s", logs.String())
	}
	// Sent after Close: dropped and counted.
	w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", nil, 100)}})
	if got := dropped(set, ReasonShutdown); got != 31 {
		t.Errorf("dropped at shutdown %g, want 31", got)
	}
	if l2, err2 := w.Close(context.Background()); l2 != left || err2 != err {
		t.Errorf("second Close: %d, %v", l2, err2)
	}
}

func TestConnectionRefusedIsRetried(t *testing.T) {
	fs := newFakeStore(t, VMImport, nil)
	url := fs.srv.URL
	fs.srv.Close() // nothing listens there any more
	var logs bytes.Buffer
	w, set := newTestWriter(t, fs, Options{URL: url, FlushTimeout: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", nil, 1, 2)}})
	left, err := w.Close(context.Background())
	if left != 2 || err == nil {
		t.Fatalf("Close: %d left, %v", left, err)
	}
	if metric(set, "inferwatch_writeback_retries_total") < 1 {
		t.Error("a refused connection was not retried")
	}
	if dropped(set, ReasonRejected) != 0 {
		t.Error("a refused connection was taken for a refusal of the samples")
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the cause is not logged:\n%s", logs.String())
	}
}

// Concurrent Sends for the same series never put it out of order.
func TestConcurrentSendsKeepOrder(t *testing.T) {
	fs := newFakeStore(t, RemoteWrite, nil)
	w, set := newTestWriter(t, fs, Options{MaxSamplesPerSend: 7})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				t0 := int64(i*4+g) * 10
				w.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{scoreOnly("r", nil, t0, t0+1, t0+2)}})
			}
		}()
	}
	wg.Wait()
	closeWriter(t, w)
	got := fs.stored("r")
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("stored out of order at %d: %v", i, got[i-1:i+1])
		}
	}
	sent := metric(set, "inferwatch_writeback_samples_sent_total")
	skipped := dropped(set, ReasonOutOfOrder) + dropped(set, ReasonDuplicate)
	if int(sent) != len(got) || sent+skipped != 600 {
		t.Errorf("sent %g, stored %d, out of order or duplicate %g; want sent = stored and 600 in all", sent, len(got), skipped)
	}
}

func TestNewRejects(t *testing.T) {
	f := func(o Options, want string) {
		t.Helper()
		_, err := New(o)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want one saying %q", o, err, want)
		}
	}
	u := "http://127.0.0.1:8428"
	f(Options{}, "URL is empty")
	f(Options{URL: "ftp://x"}, `scheme "ftp"`)
	f(Options{URL: "http://u:p4ss@h:1"}, "holds credentials")
	f(Options{URL: "http://h:1/#x"}, "fragment")
	f(Options{URL: u, Protocol: "influx"}, `protocol "influx"`)
	f(Options{URL: u, ForecastAt: "now"}, `forecast time "now"`)
	f(Options{URL: u, QueueCapacity: -1}, "queue capacity is -1")
	f(Options{URL: u, SkipScores: true, SkipForecasts: true}, "nothing would be written")
	f(Options{URL: u, Horizons: []time.Duration{0}}, "horizon 0s")
	f(Options{URL: u, Rules: []string{"a/b/c"}}, "more than one /")
	f(Options{URL: u, HTTPClient: http.DefaultClient, HTTPClientConfig: &config.HTTPClientConfig{}}, "set one")
	f(Options{URL: u, HTTPClientConfig: &config.HTTPClientConfig{BearerToken: "t", BasicAuth: &config.BasicAuth{Username: "u"}}},
		"HTTP client settings")
	_, err := New(Options{URL: "http://u:p4ss@h:1"})
	if strings.Contains(err.Error(), "p4ss") {
		t.Errorf("the password is shown: %v", err)
	}
	// Every problem at once.
	_, err = New(Options{URL: u, Protocol: "x", ForecastAt: "y", Timeout: -1})
	for _, want := range []string{"protocol", "forecast time", "timeout"} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	f := func(raw string, p Protocol, want string) {
		t.Helper()
		if got := endpoint(raw, p); got != want {
			t.Errorf("endpoint(%q, %s) = %q, want %q", raw, p, got, want)
		}
	}
	f("http://vm:8428", VMImport, "http://vm:8428/api/v1/import")
	f("http://vm:8428/", RemoteWrite, "http://vm:8428/api/v1/write")
	f("http://vm:8428?extra_label=a=b", VMImport, "http://vm:8428/api/v1/import?extra_label=a=b")
	f("https://mimir/api/v1/push", RemoteWrite, "https://mimir/api/v1/push")
	f("http://vminsert:8480/insert/0/prometheus/api/v1/import", VMImport, "http://vminsert:8480/insert/0/prometheus/api/v1/import")
}
