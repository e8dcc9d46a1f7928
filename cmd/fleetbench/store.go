package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inferwatch/inferwatch/ingest/localvm"
	"github.com/inferwatch/inferwatch/internal/dur"
)

// store is the VictoriaMetrics the bench fills and measures, and the
// writer that keeps it current.
type store struct {
	vm  *localvm.VM
	dir string // the data directory, kept across restarts
	gen *generator
	hc  *http.Client

	mu      sync.Mutex
	written int64 // unix ms of the newest sample written
}

// vmFlags are the flags the store runs with: no rollup result cache, so
// that a range fetched again is computed again from storage, as a cold
// evaluation's is.
var vmFlags = []string{"-search.disableCache"}

// requestTimeout bounds each request of the bench to the store.
const requestTimeout = 10 * time.Minute

func newStore(ctx context.Context, gen *generator) (*store, error) {
	dir, err := os.MkdirTemp("", "fleetbench-vm-")
	if err != nil {
		return nil, err
	}
	vm, err := localvm.Start(ctx, localvm.Options{ExtraFlags: vmFlags, DataDir: dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A plain client: keep-alive, no compression asked for, as curl.
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}
	return &store{vm: vm, dir: dir, gen: gen, hc: &http.Client{Transport: tr}}, nil
}

func (s *store) stop() error {
	s.hc.CloseIdleConnections()
	err := s.vm.Stop()
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

// restart stops the store and starts it again on its data, its caches
// empty, as after a store's rollout; its URL may change.
func (s *store) restart(ctx context.Context) error {
	s.hc.CloseIdleConnections()
	if err := s.vm.Stop(); err != nil {
		return err
	}
	vm, err := localvm.Start(ctx, localvm.Options{ExtraFlags: vmFlags, DataDir: s.dir})
	if err != nil {
		return fmt.Errorf("starting VictoriaMetrics again: %w", err)
	}
	s.vm = vm
	return nil
}

// importHistory writes the samples of [from, to] (unix ms), a few
// clusters per request, and makes them searchable.
func (s *store) importHistory(ctx context.Context, from, to int64) (int, error) {
	points := int((to-from)/s.gen.stepMs) + 1
	per := max(1, 4_000_000/(points*len(s.gen.base))) // about 4 million samples a request
	total := 0
	for c := 0; c < s.gen.clusters(); c += per {
		n, err := s.write(ctx, from, to, c, c+per)
		total += n
		if err != nil {
			return total, err
		}
	}
	s.mu.Lock()
	s.written = to
	s.mu.Unlock()
	return total, s.flush(ctx)
}

// write posts the samples of [from, to] of clusters [c0, c1).
func (s *store) write(ctx context.Context, from, to int64, c0, c1 int) (int, error) {
	pr, pw := io.Pipe()
	var n int
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, werr = s.gen.writeRange(pw, from, to, c0, c1)
		pw.CloseWithError(werr)
	}()
	err := s.call(ctx, http.MethodPost, "/api/v1/import", pr)
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the request ended early
	<-done
	if werr != nil && werr != io.ErrClosedPipe {
		return n, werr
	}
	return n, err
}

func (s *store) flush(ctx context.Context) error {
	return s.call(ctx, http.MethodGet, "/internal/force_flush", nil)
}

// catchUp writes every sample after the newest written up to now, one
// point per series per step, as scrapes would have, and makes them
// searchable. It returns the samples written.
func (s *store) catchUp(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixMilli()
	now -= now % s.gen.stepMs
	if now <= s.written {
		return 0, nil
	}
	n, err := s.write(ctx, s.written+1, now, 0, s.gen.clusters())
	if err != nil {
		return n, err
	}
	s.written = now
	return n, s.flush(ctx)
}

func (s *store) call(ctx context.Context, method, path string, body io.Reader) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.vm.URL()+path, body)
	if err != nil {
		return err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %s: %q", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// fetch is one GET of path with params whose body is read and discarded,
// timed, with the store's CPU time meanwhile.
func (s *store) fetch(ctx context.Context, path string, params url.Values) (measurement, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.vm.URL()+path+"?"+params.Encode(), nil)
	if err != nil {
		return measurement{}, err
	}
	cpu0, _ := procCPU(s.vm.PID())
	began := time.Now()
	resp, err := s.hc.Do(req)
	if err != nil {
		return measurement{}, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return measurement{}, fmt.Errorf("GET %s: HTTP %s: %q", path, resp.Status, strings.TrimSpace(string(msg)))
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	wall := time.Since(began)
	cpu1, _ := procCPU(s.vm.PID())
	if err != nil {
		return measurement{}, fmt.Errorf("GET %s: reading the body after %d bytes: %w", path, n, err)
	}
	return measurement{Wall: wall.Seconds(), StoreCPU: (cpu1 - cpu0).Seconds(), Bytes: n}, nil
}

// fetchRange fetches the range [start, end] of sel at step as query_range
// returns it.
func (s *store) fetchRange(ctx context.Context, sel string, start, end time.Time, step time.Duration) (measurement, error) {
	return s.fetch(ctx, "/api/v1/query_range", url.Values{"query": {sel}, "start": {unixSeconds(start)},
		"end": {unixSeconds(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
}

// fetchExport fetches the raw samples the same range is made of: those
// after start-step, up to end.
func (s *store) fetchExport(ctx context.Context, sel string, start, end time.Time, step time.Duration) (measurement, error) {
	return s.fetch(ctx, "/api/v1/export", url.Values{"match[]": {sel},
		"start": {unixSeconds(start.Add(-step + time.Millisecond))}, "end": {unixSeconds(end)}})
}

// zscore has the store compute zscore_over_time(sel[lookback]) at t for
// every series (keep_metric_names: the series differ by name only).
func (s *store) zscore(ctx context.Context, sel string, lookback time.Duration, t time.Time) (measurement, error) {
	q := fmt.Sprintf("zscore_over_time(%s[%s]) keep_metric_names", sel, dur.Format(lookback))
	return s.fetch(ctx, "/api/v1/query", url.Values{"query": {q}, "time": {unixSeconds(t)}})
}

func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}
