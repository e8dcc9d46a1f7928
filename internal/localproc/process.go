package localproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// Process is a child started by Start.
type Process struct {
	Cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start starts cmd, which the kernel kills if this process dies without
// stopping it (on Linux: a test binary killed by its timeout), and watches
// for its exit.
func Start(cmd *exec.Cmd) (*Process, error) {
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// PID is the process' id.
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Kill kills the process and waits until it has exited.
func (p *Process) Kill() {
	p.Cmd.Process.Kill()
	<-p.exited
}

// Interrupt sends SIGINT and waits up to timeout for the process to exit;
// then it kills it and says so (killed). err is the signal's error.
func (p *Process) Interrupt(timeout time.Duration) (killed bool, err error) {
	if serr := p.Cmd.Process.Signal(os.Interrupt); serr != nil && !errors.Is(serr, os.ErrProcessDone) {
		err = serr
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.Kill()
		killed = true
	}
	return killed, err
}

// WaitOK polls url every 50 ms until it answers 200, the process exits,
// ctx ends or timeout passes; state names what a 200 means in errors
// ("ready", "healthy").
func (p *Process) WaitOK(ctx context.Context, hc *http.Client, url string, timeout time.Duration, state string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before becoming %s: %v", state, p.err)
		case <-ctx.Done():
			return fmt.Errorf("not %s within %v: %w", state, timeout, ctx.Err())
		case <-tick.C:
		}
	}
}
