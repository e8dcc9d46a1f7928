package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"
)

// Readiness answers /readyz from named checks: ready when every required
// name has a check and every check passes. Each check is set once its
// component is up; until then a required name reads "starting".
type Readiness struct {
	mu       sync.Mutex
	required []string
	checks   map[string]func(context.Context) error
	// each check's answer is kept a few seconds, so a scrape of /readyz
	// every second does not query the store every second
	cached   map[string]error
	cachedAt map[string]time.Time
}

// NewReadiness returns a Readiness that is not ready until each of the
// required names has a check.
func NewReadiness(required ...string) *Readiness {
	return &Readiness{required: slices.Clone(required), checks: map[string]func(context.Context) error{},
		cached: map[string]error{}, cachedAt: map[string]time.Time{}}
}

// Set adds (or replaces) the named check.
func (r *Readiness) Set(name string, check func(context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks[name] = check
}

const readyCacheFor = 5 * time.Second

// ServeHTTP answers 200 "ready" with each check's state, or 503 with what
// is not ready.
func (r *Readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), 3*time.Second)
	defer cancel()
	r.mu.Lock()
	names := make([]string, 0, len(r.checks))
	for n := range r.checks {
		names = append(names, n)
	}
	checks := maps.Clone(r.checks)
	r.mu.Unlock()
	sort.Strings(names)
	var lines []string
	failed := false
	for _, want := range r.required {
		if _, ok := checks[want]; !ok {
			lines = append(lines, want+": starting")
			failed = true
		}
	}
	for _, n := range names {
		err := r.run(ctx, n, checks[n])
		if err != nil {
			failed = true
			lines = append(lines, fmt.Sprintf("%s: %v", n, err))
		} else {
			lines = append(lines, n+": ok")
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "not ready\n")
	} else {
		io.WriteString(w, "ready\n")
	}
	sort.Strings(lines)
	for _, l := range lines {
		io.WriteString(w, l+"\n")
	}
}

func (r *Readiness) run(ctx context.Context, name string, check func(context.Context) error) error {
	r.mu.Lock()
	if at, ok := r.cachedAt[name]; ok && time.Since(at) < readyCacheFor {
		err := r.cached[name]
		r.mu.Unlock()
		return err
	}
	r.mu.Unlock()
	err := check(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within 3s")
	}
	r.mu.Lock()
	r.cached[name], r.cachedAt[name] = err, time.Now()
	r.mu.Unlock()
	return err
}
