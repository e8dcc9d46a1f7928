package tick

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestStart: the function runs at the period until stop, and not after.
func TestStart(t *testing.T) {
	var n atomic.Int64
	called := make(chan struct{}, 100)
	stop := Start(context.Background(), time.Millisecond, func(context.Context, time.Time) {
		n.Add(1)
		called <- struct{}{}
	})
	for range 3 {
		<-called
	}
	stop()
	after := n.Load()
	time.Sleep(20 * time.Millisecond)
	if got := n.Load(); got != after || after < 3 {
		t.Errorf("%d calls by stop, %d after; want at least 3 and none after", after, got)
	}
}

// TestEveryEndsWithItsContext: Every returns once its context ends.
func TestEveryEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		Every(ctx, time.Hour, func(context.Context, time.Time) { t.Error("called after the context ended") })
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
}
