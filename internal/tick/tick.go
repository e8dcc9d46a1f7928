// Package tick runs a function at a fixed period until its context ends,
// the loop the daemon's background work shares.
package tick

import (
	"context"
	"time"
)

// Every calls f every d, first after d, until ctx is done; a call that
// overruns the period delays the next (ticks are dropped, not queued).
func Every(ctx context.Context, d time.Duration, f func(ctx context.Context, now time.Time)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			f(ctx, now)
		}
	}
}

// Start runs Every in its own goroutine. stop ends it and waits for a call
// in flight to return.
func Start(ctx context.Context, d time.Duration, f func(ctx context.Context, now time.Time)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, d, f)
	}()
	return func() { cancel(); <-done }
}
