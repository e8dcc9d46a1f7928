package process

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReleaseForgotten: nothing is released below 1,000 series forgotten,
// nor below a tenth of those tracked; the first release that qualifies
// happens at once and counts every series forgotten since.
func TestReleaseForgotten(t *testing.T) {
	var logs lockedBuffer
	f := ReleaseForgotten(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	f(999, 0)    // below 1,000
	f(1, 50_000) // 1,000 of 51,000: below a tenth
	if got := logs.String(); got != "" {
		t.Fatalf("released below the thresholds: %s", got)
	}
	f(0, 0) // 1,000 of 1,000
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "forgotten=1000 ") {
		if time.Now().After(deadline) {
			t.Fatalf("no release of the 1,000 series forgotten; log: %q", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
