package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// storeFault is what the fault proxy does to each request.
type storeFault int32

const (
	faultNone      storeFault = iota
	fault500                  // answers 500
	faultHang                 // never answers (until the client gives up)
	faultReset                // closes the connection without an answer
	faultTruncated            // the store's answer cut in the middle
	faultOversized            // an answer past the configured size bound
)

func (f storeFault) String() string {
	return [...]string{"none", "500", "hang", "reset", "truncated JSON", "oversized body"}[f]
}

// faultProxy stands between the daemon and a real VictoriaMetrics and
// injects one fault at a time.
type faultProxy struct {
	mode  atomic.Int32
	proxy *httputil.ReverseProxy
	hits  sync.Map // fault → requests it answered
}

func newFaultProxy(t *testing.T, target string) (*faultProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{proxy: httputil.NewSingleHostReverseProxy(u)}
	return p, serveLoopback(t, p)
}

// serveLoopback serves h on a port of 127.0.0.1 until the test ends, and
// returns its URL. Unlike httptest.Server, closing it does not wait for
// the requests h holds.
func serveLoopback(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mode := storeFault(p.mode.Load())
	if !strings.HasSuffix(r.URL.Path, "/query_range") {
		mode = faultNone // /readyz's instant queries pass
	}
	n, _ := p.hits.LoadOrStore(mode, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	switch mode {
	case fault500:
		http.Error(w, "injected failure", http.StatusInternalServerError)
	case faultHang:
		<-r.Context().Done()
	case faultReset:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetLinger(0) // RST, not FIN
				}
				c.Close()
			}
		}
	case faultTruncated:
		rec := &captured{header: http.Header{}}
		p.proxy.ServeHTTP(rec, r)
		w.Header().Set("Content-Type", "application/json")
		w.Write(rec.body[:len(rec.body)/2])
	case faultOversized:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"`)
		pad := strings.Repeat("x", 1<<16)
		for range 40 { // 2.5 MiB, past the 1 MiB bound of the test's config
			if _, err := io.WriteString(w, pad); err != nil {
				return
			}
		}
		io.WriteString(w, `"},"values":[]}]}}`)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// captured is an http.ResponseWriter that keeps the answer.
type captured struct {
	header http.Header
	body   []byte
	code   int
}

func (c *captured) Header() http.Header         { return c.header }
func (c *captured) Write(b []byte) (int, error) { c.body = append(c.body, b...); return len(b), nil }
func (c *captured) WriteHeader(code int)        { c.code = code }

// Through 500s, hangs, resets, truncated and oversized answers, every anomaly is found once the store is back.
func TestStoreFaultsLoseNoFinding(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	proxy, proxyURL := newFaultProxy(t, vm.URL())
	srv := natstest.Start(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %s
  timeout: 1s
  evaluation_delay: 0s
  max_response_bytes: 1048576
nats:
  url: %s
groups:
  - name: latency
    interval: 1s
    rules:
      - name: ttft_spike
        expr: ttft
        step: 1s
        lookback: 10m
        detector: {name: sigma, k: 4, min_points: 30}
`, proxyURL, srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	normal := func(ts time.Time) float64 { return 10 + 0.1*float64(ts.Unix()%3) }

	// Eleven minutes of history, then a sample a second, live.
	t0 := time.Now().Truncate(time.Second)
	liveSeries(t, vm, t0.Add(-11*time.Minute), t0, normal)
	// The faults, four seconds each, and a spike in the middle of each
	// (and one before them, one after).
	faults := []storeFault{fault500, faultHang, faultReset, faultTruncated, faultOversized}
	faultFrom := t0.Add(8 * time.Second)
	var spikes []time.Time
	spikes = append(spikes, t0.Add(4*time.Second))
	for i := range faults {
		spikes = append(spikes, faultFrom.Add(time.Duration(4*i+2)*time.Second))
	}
	faultTo := faultFrom.Add(time.Duration(4*len(faults)) * time.Second)
	spikes = append(spikes, faultTo.Add(4*time.Second))
	end := faultTo.Add(8 * time.Second)
	isSpike := map[int64]bool{}
	for _, s := range spikes {
		isSpike[s.Unix()] = true
	}

	stderr := newSyncBuffer()
	cmd := exec.Command(bin, "run", "--config", cfg, "--web.listen-address", "127.0.0.1:0")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	}()

	// Write a sample a second, and switch the faults on and off on time.
	for ts := t0.Add(time.Second); !ts.After(end); ts = ts.Add(time.Second) {
		time.Sleep(time.Until(ts))
		v := normal(ts)
		if isSpike[ts.Unix()] {
			v = 50
		}
		liveSeries(t, vm, ts, ts, func(time.Time) float64 { return v })
		mode := faultNone
		if !ts.Before(faultFrom) && ts.Before(faultTo) {
			mode = faults[int(ts.Sub(faultFrom)/(4*time.Second))]
		}
		proxy.mode.Store(int32(mode))
	}

	// Read what a subscriber gets, until every spike is there or the
	// deadline.
	collect := natstest.Collect(t, srv.ClientURL(), "inferwatch.findings.>")
	got := map[string]int{} // window end → findings
	ids := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && len(got) < len(spikes) {
		for _, m := range collect(100, time.Second) {
			id, f := eventOf[alerting.Finding](t, m, alerting.FindingEventType)
			got[f.WindowEnd.UTC().Format(time.RFC3339)]++
			ids[id]++
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	<-done

	expected, received, duplicated := len(spikes), 0, 0
	var missing []string
	for _, s := range spikes {
		k := s.UTC().Format(time.RFC3339)
		switch n := got[k]; {
		case n == 0:
			missing = append(missing, k)
		default:
			received++
			duplicated += n - 1
		}
	}
	var extra []string
	for k := range got {
		if !isSpike[mustParse(t, k).Unix()] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	var hits []string
	for _, f := range faults {
		if n, ok := proxy.hits.Load(f); ok {
			hits = append(hits, fmt.Sprintf("%s: %d requests", f, n.(*atomic.Int64).Load()))
		} else {
			hits = append(hits, fmt.Sprintf("%s: 0 requests", f))
		}
	}
	t.Logf("store faults (%s): findings expected %d, received %d, duplicated %d", strings.Join(hits, ", "), expected, received, duplicated)
	if received != expected || duplicated != 0 || len(extra) != 0 {
		t.Fatalf("findings expected %d, received %d, duplicated %d; missing %v, findings outside the spikes %v\nlog:\n%s",
			expected, received, duplicated, missing, extra, stderr.String())
	}
	for _, f := range faults {
		if n, ok := proxy.hits.Load(f); !ok || n.(*atomic.Int64).Load() == 0 {
			t.Errorf("fault %s was never hit: the test did not test it", f)
		}
	}
	log := stderr.String()
	for _, want := range []string{"HTTP 500", "timeout", "response refused: past the bytes limit of 1048576"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %q", want)
		}
	}
}

func mustParse(t *testing.T, s string) time.Time {
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
