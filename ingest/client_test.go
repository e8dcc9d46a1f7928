package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/inferwatch/inferwatch/internal/httpretry"
)

// newServer starts an httptest server stopped at the end of the test.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newTestClient builds a client with fast backoffs and its own metrics set.
// Its store is not VictoriaMetrics unless o says so: the servers of these
// tests speak query_range, and count the requests they see.
func newTestClient(t *testing.T, o ClientOptions) (*Client, *metrics.Set) {
	t.Helper()
	if o.Store == StoreAuto {
		o.Store = StoreOther
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Millisecond
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	c, err := NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c, o.Metrics
}

// metricValue reads one sample of set in the text exposition format.
func metricValue(t *testing.T, set *metrics.Set, series string) float64 {
	t.Helper()
	var b bytes.Buffer
	set.WritePrometheus(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

const okVector = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"vllm"},"value":[1700000000.5,"1"]}]}}`

func TestClientRetriesServerErrors(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			http.Error(w, "overloaded", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(okVector))
	})
	c, set := newTestClient(t, ClientOptions{URL: srv.URL})
	ss, err := c.Query(context.Background(), "up", time.UnixMilli(1700000000500))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Values[0] != 1 || ss[0].Timestamps[0] != 1700000000500 {
		t.Fatalf("got %+v", ss)
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("%d requests, want 3", got)
	}
	for series, want := range map[string]float64{
		`inferwatch_source_request_retries_total`:                                2,
		`inferwatch_source_requests_total{path="/api/v1/query",code="500"}`:      2,
		`inferwatch_source_requests_total{path="/api/v1/query",code="200"}`:      1,
		`inferwatch_source_request_duration_seconds_count{path="/api/v1/query"}`: 3,
	} {
		if got := metricValue(t, set, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}

func TestClientErrors(t *testing.T) {
	type tc struct {
		name     string
		handler  http.HandlerFunc
		opts     ClientOptions
		requests int32    // how many requests the server must see
		want     []string // fragments of the error message
		check    func(t *testing.T, err error)
	}
	f := func(c tc) {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				c.handler(w, r)
			})
			o := c.opts
			o.URL = strings.Replace(o.URL, "SRV", strings.TrimPrefix(srv.URL, "http://"), 1)
			if o.URL == "" {
				o.URL = srv.URL
			}
			cl, _ := newTestClient(t, o)
			_, err := cl.QueryRange(context.Background(), "up", time.Unix(1700000000, 0), time.Unix(1700000060, 0), 15*time.Second)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if got := n.Load(); got != c.requests {
				t.Errorf("server saw %d requests, want %d", got, c.requests)
			}
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%T is not a *RequestError", err)
			}
			if c.check != nil {
				c.check(t, err)
			}
		})
	}
	f(tc{
		name: "400 is not retried",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:3: parse error"}`))
		},
		requests: 1,
		want:     []string{"query_range http://127.0.0.1:", "/api/v1/query_range (query \"up\"): HTTP 400 Bad Request: server error (bad_data): invalid parameter"},
		check: func(t *testing.T, err error) {
			var ae *APIError
			if !errors.As(err, &ae) || ae.ErrorType != "bad_data" || ae.Status != "error" {
				t.Fatalf("want *APIError bad_data, got %#v", ae)
			}
		},
	})
	f(tc{
		name: "status error with HTTP 200 is an APIError",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"status":"error","errorType":"execution","error":"too many series"}`))
		},
		requests: 1,
		want:     []string{"HTTP 200 OK: server error (execution): too many series"},
		check: func(t *testing.T, err error) {
			var ae *APIError
			if !errors.As(err, &ae) || ae.ErrorType != "execution" || ae.Err != "too many series" {
				t.Fatalf("want *APIError execution, got %#v", ae)
			}
		},
	})
	f(tc{
		name: "5xx retried until MaxRetries with the last body",
		handler: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "upstream connect error", http.StatusServiceUnavailable)
		},
		opts:     ClientOptions{MaxRetries: 2},
		requests: 3,
		want:     []string{"after 3 attempts: HTTP 503 Service Unavailable: body: \"upstream connect error\\n\""},
	})
	f(tc{
		name: "negative MaxRetries means none",
		handler: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		},
		opts:     ClientOptions{MaxRetries: -1},
		requests: 1,
		want:     []string{"HTTP 500 Internal Server Error: body: \"boom\\n\""},
	})
	html := "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>" + strings.Repeat(" ", 600) + "TAIL</body></html>"
	f(tc{
		name: "HTML error page quotes its first and last bytes",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte(html))
		},
		opts:     ClientOptions{MaxRetries: 1},
		requests: 2,
		want:     []string{"HTTP 502 Bad Gateway: body: \"<html><head><title>502 Bad Gateway</title>"},
		check: func(t *testing.T, err error) {
			var re *RequestError
			errors.As(err, &re)
			if !strings.HasSuffix(re.Body, html[len(html)-256:]) || !strings.HasPrefix(re.Body, html[:256]+" … ") || len(re.Body) != 512+len(" … ") {
				t.Fatalf("body should be quoted by its first and last 256 bytes, got %d: %q", len(re.Body), re.Body)
			}
		},
	})
	f(tc{
		name: "HTML with 200 is a bad body, not retried",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<!DOCTYPE html><html><body>Sign in</body></html>"))
		},
		requests: 1,
		want:     []string{"HTTP 200 OK: malformed query response at offset 0", `body begins "<!DOCTYPE html><html><body>Sign in`},
	})
	f(tc{
		name: "truncated JSON",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1700000000,"1"],[17000`))
		},
		requests: 1,
		want:     []string{"HTTP 200 OK: malformed query response at offset 113 near end of input: expected ','"},
	})
	f(tc{
		name: "body shorter than Content-Length",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[`))
		},
		requests: 1,
		want:     []string{"HTTP 200 OK: reading body after 60 bytes: unexpected EOF"},
	})
	f(tc{
		name: "credentials are redacted",
		handler: func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "s3cret-pass" {
				http.Error(w, "no auth", http.StatusUnauthorized)
				return
			}
			http.Error(w, "internal", http.StatusInternalServerError)
		},
		opts:     ClientOptions{URL: "http://user:s3cret-pass@SRV/prefix/?token=tok-123", MaxRetries: -1},
		requests: 1,
		want:     []string{"query_range http://user:xxxxx@127.0.0.1:", "/prefix/api/v1/query_range (query \"up\"): HTTP 500 Internal Server Error"},
		check: func(t *testing.T, err error) {
			if s := err.Error(); strings.Contains(s, "s3cret") || strings.Contains(s, "tok-123") {
				t.Fatalf("secret in error: %s", s)
			}
		},
	})
	f(tc{
		name: "hanging server hits the per-attempt timeout and is not retried",
		handler: func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		},
		opts:     ClientOptions{Timeout: 50 * time.Millisecond},
		requests: 1,
		want:     []string{"query_range http://127.0.0.1:", "/api/v1/query_range (query \"up\"): no response within the per-attempt timeout of 50ms"},
	})
}

func TestClientRetryAfter(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "120")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		w.Write([]byte(okVector))
	})
	// Retry-After is capped at MaxBackoff, so the 120s header costs 10ms.
	c, set := newTestClient(t, ClientOptions{URL: srv.URL, MaxBackoff: 10 * time.Millisecond})
	if _, err := c.Query(context.Background(), "up", time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 || metricValue(t, set, `inferwatch_source_requests_total{path="/api/v1/query",code="429"}`) != 1 {
		t.Fatalf("%d requests, want a 429 then a 200", n.Load())
	}
}

func TestBackoff(t *testing.T) {
	c, _ := newTestClient(t, ClientOptions{URL: "http://127.0.0.1:1", MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header  string
		attempt int
		min     time.Duration
		max     time.Duration
	}{
		{"", 0, 0, 100 * time.Millisecond},
		{"", 2, 0, 400 * time.Millisecond},
		{"", 10, 0, time.Second},
		{"0", 3, 0, 0},
		{"1", 0, time.Second, time.Second},
		{"30", 0, time.Second, time.Second},                                // capped at MaxBackoff
		{"garbage", 1, 0, 200 * time.Millisecond},                          // ignored
		{now.Add(500 * time.Millisecond).Format(http.TimeFormat), 0, 0, 0}, // whole seconds: rounds to now
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, 0, 0},
		{now.Add(time.Minute).Format(http.TimeFormat), 0, time.Second, time.Second},
	} {
		for range 50 {
			got := c.backoff(tc.attempt, httpretry.ParseRetryAfter(tc.header, now))
			if got < tc.min || got > tc.max {
				t.Fatalf("Retry-After %q attempt %d: %v not in [%v, %v]", tc.header, tc.attempt, got, tc.min, tc.max)
			}
		}
	}
}

func TestClientConnectionErrorsAreRetried(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, set := newTestClient(t, ClientOptions{URL: "http://" + addr, MaxRetries: 2})
		_, err = c.Query(context.Background(), "up", time.Unix(1700000000, 0))
		if err == nil || !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("want connection refused after 3 attempts, got %v", err)
		}
		if got := metricValue(t, set, `inferwatch_source_requests_total{path="/api/v1/query",code="error"}`); got != 3 {
			t.Fatalf("%v failed requests counted, want 3", got)
		}
	})
	t.Run("closed before headers", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.Write([]byte(okVector))
		})
		c, _ := newTestClient(t, ClientOptions{URL: srv.URL})
		if _, err := c.Query(context.Background(), "up", time.Unix(1700000000, 0)); err != nil {
			t.Fatal(err)
		}
		if n.Load() != 2 {
			t.Fatalf("%d requests, want 2", n.Load())
		}
	})
}

func TestClientCallerCancelStopsRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		cancel()
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	})
	c, set := newTestClient(t, ClientOptions{URL: srv.URL, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	_, err := c.Query(ctx, "up", time.Unix(1700000000, 0))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if n.Load() != 1 || metricValue(t, set, "inferwatch_source_request_retries_total") != 0 {
		t.Fatalf("%d requests after cancel, want 1 and no retry", n.Load())
	}
}

// rangeHandler answers query_range like Prometheus for two series, one
// point per step; the value at t is t/1000 + series. With overlap, each
// answer also repeats the point one step before start, as a server that
// aligns start to the step may. It records every (start, end) it served.
func rangeHandler(t *testing.T, overlap bool, calls *[]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
			return
		}
		parse := func(k string) int64 {
			f, err := strconv.ParseFloat(r.Form.Get(k), 64)
			if err != nil {
				t.Errorf("parameter %s=%q: %v", k, r.Form.Get(k), err)
			}
			return int64(f*1000 + 0.5)
		}
		start, end, step := parse("start"), parse("end"), parse("step")
		*calls = append(*calls, r.Method+" "+r.URL.Path+" "+r.Form.Get("query")+" "+r.Form.Get("start")+" "+r.Form.Get("end")+" "+r.Form.Get("step"))
		if overlap {
			start -= step
		}
		var b bytes.Buffer
		b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
		for s := range 2 {
			if s > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"metric":{"__name__":"vllm:num_requests_waiting","pod":"p%d"},"values":[`, s)
			for ts := start; ts <= end; ts += step {
				if ts > start {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `[%s,"%d"]`, formatSeconds(ts), ts/1000+int64(s))
			}
			b.WriteString("]}")
		}
		b.WriteString("]}}")
		w.Write(b.Bytes())
	}
}

func TestClientQueryRangeSplits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		post     bool
		overlap  bool
		maxPts   int
		points   int
		requests int
	}{
		{"25000 points in 3 GET requests", false, false, 0, 25000, 3},
		{"25000 points in 3 POST requests", true, false, 0, 25000, 3},
		{"server repeats the boundary", false, true, 0, 25000, 3},
		{"exactly MaxPointsPerSeries is one request", false, false, 100, 100, 1},
		{"one more point is two", false, true, 100, 101, 2},
		{"one point per request", false, false, 1, 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			srv := newServer(t, rangeHandler(t, tc.overlap, &calls))
			// One request at a time: the server sees them in order.
			c, _ := newTestClient(t, ClientOptions{URL: srv.URL, UsePOST: tc.post, MaxPointsPerSeries: tc.maxPts, MaxConcurrentRequests: 1})
			const step = 15 * time.Second
			start := time.UnixMilli(1600000000250)
			end := start.Add(time.Duration(tc.points-1) * step)
			ss, err := c.QueryRange(context.Background(), `vllm:num_requests_waiting{model="m"}`, start, end, step)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != tc.requests {
				t.Fatalf("%d requests, want %d: %q", len(calls), tc.requests, calls)
			}
			wantMethod := "GET"
			if tc.post {
				wantMethod = "POST"
			}
			if !strings.HasPrefix(calls[0], wantMethod+` /api/v1/query_range vllm:num_requests_waiting{model="m"} 1600000000.250 `) ||
				!strings.HasSuffix(calls[0], " 15") {
				t.Fatalf("first request %q", calls[0])
			}
			if len(ss) != 2 {
				t.Fatalf("%d series, want 2", len(ss))
			}
			for s, series := range ss {
				if want := fmt.Sprintf(`vllm:num_requests_waiting{pod="p%d"}`, s); series.Labels.String() != want {
					t.Fatalf("series %d is %s, want %s", s, series.Labels, want)
				}
				// With overlap the first answer also holds the point one
				// step before start; later answers' repeats are dropped.
				first, points := start.UnixMilli(), tc.points
				if tc.overlap {
					first, points = first-step.Milliseconds(), points+1
				}
				if len(series.Timestamps) != points || len(series.Values) != points {
					t.Fatalf("series %d has %d points, want %d", s, len(series.Timestamps), points)
				}
				for i, ts := range series.Timestamps {
					wantTs := first + int64(i)*step.Milliseconds()
					if ts != wantTs || series.Values[i] != float64(wantTs/1000+int64(s)) {
						t.Fatalf("series %d point %d = (%d, %v), want (%d, %d)", s, i, ts, series.Values[i], wantTs, wantTs/1000+int64(s))
					}
				}
			}
		})
	}
}

func TestClientRangeValidation(t *testing.T) {
	c, _ := newTestClient(t, ClientOptions{URL: "http://127.0.0.1:1"})
	now := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		start, end time.Time
		step       time.Duration
		want       string
	}{
		{now, now, 0, "step 0s must be positive"},
		{now, now, time.Microsecond, "below one millisecond"},
		{now, now.Add(-time.Second), time.Second, "end 2023-11-14T22:13:19Z is before start 2023-11-14T22:13:20Z"},
	} {
		_, err := c.QueryRange(context.Background(), "up", tc.start, tc.end, tc.step)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestNewClientOptions(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"", "URL is empty"},
		{"localhost:8428", "scheme must be http or https"},
		{"127.0.0.1:8428", "parsing URL"},
		{"ftp://u:p@h/", "URL ftp://u:xxxxx@h/: scheme must be http or https"},
		{"http:///x", "has no host"},
		{"http://h\x7f", "parsing URL"},
	} {
		_, err := NewClient(ClientOptions{URL: tc.url})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("URL %q: got %v, want %q", tc.url, err, tc.want)
		}
	}
	c, err := NewClient(ClientOptions{URL: "http://h:1/"})
	if err != nil {
		t.Fatal(err)
	}
	o := c.o
	if o.Timeout != 30*time.Second || o.MaxRetries != 3 || o.MinBackoff != 250*time.Millisecond ||
		o.MaxBackoff != 5*time.Second || o.MaxPointsPerSeries != 11000 {
		t.Fatalf("defaults not filled: %+v", o)
	}
	if want := (ResponseLimits{Bytes: 1 << 30, Series: 200_000, Points: 48_000_000}); c.lim != want {
		t.Fatalf("default limits %+v, want %+v", c.lim, want)
	}
	c, err = NewClient(ClientOptions{URL: "http://h:1/", MaxResponseBytes: -1, MaxResponseSeries: -1, MaxResponsePoints: 7})
	if err != nil {
		t.Fatal(err)
	}
	if want := (ResponseLimits{Points: 7}); c.lim != want {
		t.Fatalf("limits %+v, want %+v (negative: none)", c.lim, want)
	}
}

func TestFormatSeconds(t *testing.T) {
	for ms, want := range map[int64]string{0: "0.000", 1: "0.001", 1700000000123: "1700000000.123", -1500: "-1.500", -1: "-0.001"} {
		if got := formatSeconds(ms); got != want {
			t.Errorf("formatSeconds(%d) = %q, want %q", ms, got, want)
		}
	}
}

// A query too long for a URL (one shard's matcher on many values) goes in
// a POST form, a short one in the URL.
func TestClientPostsLongQueries(t *testing.T) {
	var methods, queries []string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		methods, queries = append(methods, r.Method), append(queries, r.Form.Get("query"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	})
	c, _ := newTestClient(t, ClientOptions{URL: srv.URL})
	var pods []string
	for i := range 500 {
		pods = append(pods, fmt.Sprintf("vllm-%d", i))
	}
	long := `ttft{pod=~"` + strings.Join(pods, "|") + `"}`
	end := time.UnixMilli(1600000000000)
	for _, q := range []string{"ttft", long} {
		if _, err := c.QueryRange(context.Background(), q, end.Add(-time.Minute), end, 15*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"GET", "POST"}; !slices.Equal(methods, want) || queries[0] != "ttft" || queries[1] != long {
		t.Errorf("methods %q, want %q; the long query arrived whole: %v", methods, want, queries[1] == long)
	}
}
