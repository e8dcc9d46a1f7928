package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// profiler fetches profiles from a daemon run with --web.enable-pprof; it
// does nothing without a directory.
type profiler struct {
	dir, name string
	d         *daemon
	log       *logger
	wg        sync.WaitGroup
	mu        sync.Mutex
	busy      bool
	taken     map[string]bool
}

// cpu starts a CPU profile of span in the background, unless one is being
// taken or this one was.
func (p *profiler) cpu(ctx context.Context, what string, span time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dir == "" || p.busy || p.taken[what] {
		return
	}
	if p.taken == nil {
		p.taken = map[string]bool{}
	}
	p.busy, p.taken[what] = true, true
	p.wg.Go(func() {
		defer func() {
			p.mu.Lock()
			p.busy = false
			p.mu.Unlock()
		}()
		secs := max(1, int(span/time.Second))
		p.fetch(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), what+"-cpu", span+time.Minute)
	})
}

// heap writes a heap profile, and the text form with the runtime's
// memory statistics, each right after a collection: what is in use is
// then what the daemon keeps, not also what a collection in the middle
// of a cycle found live (a refit's validation rows, the events being
// encoded).
func (p *profiler) heap(ctx context.Context) {
	if p.dir != "" {
		p.fetch(ctx, "/debug/pprof/heap?gc=1", "heap", time.Minute)
		p.fetch(ctx, "/debug/pprof/heap?debug=1&gc=1", "heap-text", time.Minute)
	}
}

func (p *profiler) wait() { p.wg.Wait() }

func (p *profiler) fetch(ctx context.Context, path, what string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.d.web+path, nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.log.warn("profile", "what", what, "err", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		p.log.warn("profile", "what", what, "status", resp.Status)
		return
	}
	ext := ".pprof"
	if strings.HasSuffix(what, "-text") {
		ext = ".txt"
	}
	out := filepath.Join(p.dir, p.name+"-"+what+ext)
	f, err := os.Create(out)
	if err != nil {
		p.log.warn("profile", "what", what, "err", err)
		return
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.log.warn("profile", "what", what, "err", err)
		return
	}
	p.log.info("profile written", "file", out)
}
