package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// progress draws a bounded progress bar for a long run. On a terminal it
// redraws one line in place, at most once per percent; elsewhere (a CI log)
// it prints a plain line at each tenth, so a log gets at most eleven lines
// and never a carriage-return smear. It is safe for concurrent use.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	what  string // the unit counted, e.g. "files"
	total int
	done  int
	drawn int // the last step drawn: percent on a terminal, tenth elsewhere
}

// progressWidth is the width of the bar in cells.
const progressWidth = 30

// newProgress returns a progress bar for total items written to w, or nil
// (on which every method does nothing) when it is not enabled.
func newProgress(w io.Writer, tty, enabled bool, total int, what string) *progress {
	if !enabled || total <= 0 {
		return nil
	}
	p := &progress{w: w, tty: tty, what: what, total: total, drawn: -1}
	p.draw()
	return p
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// add counts n more items done.
func (p *progress) add(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = min(p.done+n, p.total)
	p.draw()
}

// finish ends the bar: on a terminal it clears the line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// draw writes the bar when the step changed. Callers hold p.mu.
func (p *progress) draw() {
	pct := p.done * 100 / p.total
	step := pct
	if !p.tty {
		step = pct / 10
	}
	if step == p.drawn {
		return
	}
	p.drawn = step
	if !p.tty {
		fmt.Fprintf(p.w, "progress: %d/%d %s (%d%%)\n", p.done, p.total, p.what, pct)
		return
	}
	full := p.done * progressWidth / p.total
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %d/%d %s", strings.Repeat("#", full), strings.Repeat(" ", progressWidth-full), pct, p.done, p.total, p.what)
}
