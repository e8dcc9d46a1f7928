package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestProgress(t *testing.T) {
	f := func(tty bool, total, maxDraws int, last string) {
		t.Helper()
		var b bytes.Buffer
		p := newProgress(&b, tty, true, total, "files")
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range total / 4 {
					p.add(1)
				}
			}()
		}
		wg.Wait()
		p.add(total) // past the end: stays at total
		p.finish()
		out := b.String()
		sep := "\n"
		if tty {
			sep = "\r"
		}
		draws := strings.Count(out, sep)
		if draws > maxDraws || draws < 2 {
			t.Errorf("tty=%v total=%d: %d draws, want 2..%d", tty, total, draws, maxDraws)
		}
		if !strings.Contains(out, last) {
			t.Errorf("tty=%v total=%d: the output lacks %q: %q", tty, total, last, out[max(0, len(out)-200):])
		}
	}
	// On a terminal: one redraw per percent at most, then the line is cleared.
	f(true, 10000, 102, "] 100% 10000/10000 files\r\033[K")
	f(true, 8, 10, "[##############################] 100% 8/8 files")
	// On a log: a line per tenth at most.
	f(false, 10000, 11, "progress: 10000/10000 files (100%)\n")
	f(false, 4, 5, "progress: 4/4 files (100%)\n")

	// Disabled: nil, and every method is a no-op.
	var b bytes.Buffer
	p := newProgress(&b, true, false, 10, "files")
	p.add(3)
	p.finish()
	if p != nil || b.Len() != 0 {
		t.Errorf("a disabled bar wrote %q", b.String())
	}
	if isTerminal(&b) {
		t.Error("a buffer is not a terminal")
	}
}
