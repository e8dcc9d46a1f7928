package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientFaults runs the client against servers that fail: every error
// must say what happened, name the query and the URL with its credentials
// redacted, and be retried only when a retry can succeed.
func TestClientFaults(t *testing.T) {
	type tc struct {
		name     string
		handler  func(w http.ResponseWriter, r *http.Request, s signals)
		opts     ClientOptions
		requests int32    // how many requests the server must see
		want     []string // fragments of the error message
		limit    string   // the limit that refused the response, if any
		partial  bool     // the server must not have written all of its body, large's
	}
	const query = `sum by (pod) (rate(vllm:request_success_total[1m]))`
	f := func(c tc) {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			var written atomic.Int64
			sig := signals{got: make(chan struct{}, 1), done: make(chan struct{})}
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				c.handler(&countingWriter{ResponseWriter: w, n: &written}, r, sig)
			})
			defer close(sig.done)
			o := c.opts
			o.URL = "http://inferwatch:s3cret-pass@" + strings.TrimPrefix(srv.URL, "http://") + "/select/0/prometheus?tenant=tok-123"
			o.HTTPClient = &http.Client{Transport: headersSignal{got: sig.got}}
			cl, set := newTestClient(t, o)
			_, err := cl.QueryRange(context.Background(), query, time.Unix(1700000000, 0), time.Unix(1700003600, 0), 15*time.Second)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			want := append([]string{
				"query_range http://inferwatch:xxxxx@127.0.0.1:",
				`/select/0/prometheus/api/v1/query_range (query "sum by (pod) (rate(vllm:request_success_total[1m]))")`,
			}, c.want...)
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\ndoes not contain %q", msg, w)
				}
			}
			if strings.Contains(msg, "s3cret") || strings.Contains(msg, "tok-123") {
				t.Errorf("secret in error: %s", msg)
			}
			if got := n.Load(); got != c.requests {
				t.Errorf("server saw %d requests, want %d", got, c.requests)
			}
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%T is not a *RequestError", err)
			}
			var le *LimitError
			if c.limit != "" {
				if !errors.As(err, &le) || le.Limit != c.limit {
					t.Errorf("want a LimitError on %s, got %v", c.limit, err)
				}
			} else if errors.As(err, &le) {
				t.Errorf("unexpected LimitError: %v", err)
			}
			for _, l := range []string{"bytes", "series", "points"} {
				want := 0.0
				if l == c.limit {
					want = 1
				}
				if v := metricValue(t, set, `inferwatch_source_responses_refused_total{limit="`+l+`"}`); v != want {
					t.Errorf("refused{limit=%q} = %v, want %v", l, v, want)
				}
			}
			if c.partial {
				// The handler stops writing once the connection is closed:
				// wait for it to return before reading what it wrote.
				srv.CloseClientConnections()
				srv.Close()
				if written.Load() > 64<<20 {
					t.Errorf("the server wrote %d bytes of its 600 MB: the client read on after refusing the body", written.Load())
				}
				t.Logf("the server wrote %d bytes of its 600 MB", written.Load())
			}
		})
	}

	f(tc{
		name: "500 retried, then failing with the last body",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			http.Error(w, "overloaded: too many concurrent queries", http.StatusInternalServerError)
		},
		opts:     ClientOptions{MaxRetries: 2},
		requests: 3,
		want:     []string{`after 3 attempts: HTTP 500 Internal Server Error: body: "overloaded: too many concurrent queries\n"`},
	})
	f(tc{
		name: "503 with an API error",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"error","errorType":"unavailable","error":"vmstorage is unavailable"}`)
		},
		opts:     ClientOptions{MaxRetries: 1},
		requests: 2,
		want:     []string{"after 2 attempts: HTTP 503 Service Unavailable: server error (unavailable): vmstorage is unavailable"},
	})
	f(tc{
		name: "hang before the headers",
		handler: func(w http.ResponseWriter, r *http.Request, s signals) {
			s.hang(r)
		},
		opts:     ClientOptions{Timeout: 100 * time.Millisecond},
		requests: 1,
		want:     []string{"no response within the per-attempt timeout of 100ms"},
	})
	f(tc{
		name: "hang mid-body",
		handler: func(w http.ResponseWriter, r *http.Request, s signals) {
			io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"p0"},"values":[[1700000000,"1"],`)
			w.(http.Flusher).Flush()
			s.hang(r)
		},
		opts:     ClientOptions{Timeout: 100 * time.Millisecond},
		requests: 1,
		want:     []string{"HTTP 200 OK: reading body: not complete within the per-attempt timeout of 100ms (after 110 bytes)"},
	})
	f(tc{
		name: "connection reset mid-body",
		handler: func(w http.ResponseWriter, r *http.Request, s signals) {
			w.Header().Set("Content-Length", "100000")
			io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"p0"},"values":[[1700000000,"1"],`)
			w.(http.Flusher).Flush()
			<-s.got
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // close with a reset
			conn.Close()
		},
		requests: 1,
		want:     []string{"HTTP 200 OK: reading body after 110 bytes: read tcp ", "connection reset by peer"},
	})
	f(tc{
		name: "connection closed mid-body",
		handler: func(w http.ResponseWriter, r *http.Request, s signals) {
			w.Header().Set("Content-Length", "100000")
			io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[`)
			w.(http.Flusher).Flush()
			<-s.got
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		},
		requests: 1,
		want:     []string{"HTTP 200 OK: reading body after 60 bytes: unexpected EOF"},
	})
	f(tc{
		name: "truncated JSON",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1700000000,"1"],[17000`)
		},
		requests: 1,
		want:     []string{`HTTP 200 OK: malformed query response at offset 113 near end of input: expected ','; body begins "{\"status\":\"success\"`},
	})
	f(tc{
		name: "oversized body announced by Content-Length",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			w.Header().Set("Content-Length", "5000000")
			io.Copy(w, benchStream(1000, 100))
		},
		opts:     ClientOptions{MaxResponseBytes: 1 << 20},
		requests: 1,
		want:     []string{"HTTP 200 OK: response refused: Content-Length 5000000 is past the bytes limit of 1048576; the body was not read"},
		limit:    "bytes",
	})
	f(tc{
		name: "oversized body",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			io.Copy(w, large())
		},
		opts:     ClientOptions{MaxResponseBytes: 1 << 20},
		requests: 1,
		want:     []string{"HTTP 200 OK: response refused: past the bytes limit of 1048576; stopped reading after 1048577 bytes of the body"},
		limit:    "bytes",
		partial:  true,
	})
	f(tc{
		name: "too many series",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			io.Copy(w, large())
		},
		opts:     ClientOptions{MaxResponseSeries: 1000},
		requests: 1,
		want:     []string{"HTTP 200 OK: response refused: past the series limit of 1000; stopped reading after "},
		limit:    "series",
		partial:  true,
	})
	f(tc{
		name: "too many points",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			io.Copy(w, large())
		},
		opts:     ClientOptions{MaxResponsePoints: 1_000_000},
		requests: 1,
		want:     []string{"HTTP 200 OK: response refused: past the points limit of 1000000; stopped reading after "},
		limit:    "points",
		partial:  true,
	})
	var req atomic.Int32
	f(tc{
		name: "too many series over a split range",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			// Two series in each answer, new ones in each.
			n := req.Add(1)
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[`+
				`{"metric":{"pod":"p%d"},"values":[[1700000000,"1"]]},{"metric":{"pod":"q%d"},"values":[[1700000000,"1"]]}]}}`, n, n)
		},
		opts:     ClientOptions{MaxPointsPerSeries: 100, MaxResponseSeries: 3, MaxConcurrentRequests: 1},
		requests: 2,
		want: []string{": joining the answers from 2023-11-14T22:13:20Z to 2023-11-14T23:03:05Z: " +
			"response refused: past the series limit of 3"},
		limit: "series",
	})
	f(tc{
		name: "too many points over a split range",
		handler: func(w http.ResponseWriter, r *http.Request, _ signals) {
			// Two series of 241 points in requests of 100, 100 and 41
			// points each: the third may take in only 50 more.
			var calls []string
			rangeHandler(t, false, &calls)(w, r)
		},
		opts:     ClientOptions{MaxPointsPerSeries: 100, MaxResponsePoints: 450, MaxConcurrentRequests: 1},
		requests: 3,
		want:     []string{"HTTP 200 OK: response refused: past the points limit of 450; stopped reading after "},
		limit:    "points",
	})
}

// large is a body of the daemon's design load, 100,000 series of 240
// points: 598,760,572 bytes.
func large() io.Reader { return benchStream(100_000, 240) }

// signals tell a fault handler when the client has the response headers
// (got) and when the test is over (done).
type signals struct{ got, done chan struct{} }

// hang waits until the client gives up or the test is over.
func (s signals) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
}

// headersSignal is a transport that tells the server when the client has
// the response headers, so that the server breaks the body after them.
type headersSignal struct{ got chan<- struct{} }

func (h headersSignal) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		select {
		case h.got <- struct{}{}:
		default:
		}
	}
	return resp, err
}

// countingWriter counts what a handler wrote.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

func (w *countingWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestClientRefusedResponsesReleaseMemory refuses large responses by each
// limit a few times and checks that the heap comes back to where it was:
// nothing of a refused response is kept.
func TestClientRefusedResponsesReleaseMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes some 100 MB of responses")
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, large())
	})
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	clients := map[string]ClientOptions{
		"bytes":  {MaxResponseBytes: 16 << 20},
		"series": {MaxResponseSeries: 2000},
		"points": {MaxResponsePoints: 500_000},
	}
	before := heap()
	for _, limit := range []string{"bytes", "series", "points"} {
		o := clients[limit]
		o.URL = srv.URL
		c, set := newTestClient(t, o)
		for range 3 {
			_, err := c.QueryRange(context.Background(), "up", time.Unix(1700000000, 0), time.Unix(1700003600, 0), 15*time.Second)
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != limit {
				t.Fatalf("want a LimitError on %s, got %v", limit, err)
			}
		}
		if v := metricValue(t, set, fmt.Sprintf(`inferwatch_source_responses_refused_total{limit=%q}`, limit)); v != 3 {
			t.Fatalf("refused{limit=%q} = %v, want 3", limit, v)
		}
	}
	after := heap()
	const slack = 4 << 20
	t.Logf("heap in use: %.1f MB before, %.1f MB after nine refused responses", float64(before)/(1<<20), float64(after)/(1<<20))
	if after > before+slack {
		t.Fatalf("heap in use grew from %d to %d bytes after the refused responses", before, after)
	}
}
