// Package localproc holds what the helpers that run a real store,
// Alertmanager or daemon on 127.0.0.1 share: a free port, starting a child
// that dies with its parent and waiting until it answers, stopping it, the
// tail of its output for error messages, and starting again on a new port
// when another process took the first one before the child bound it.
package localproc

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// FreePort asks the kernel for a free 127.0.0.1 port. The port is released
// before it is returned, so another process may bind it first: start a
// child on it through Retry.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free 127.0.0.1 port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ErrPortClash marks a start that failed because another process bound the
// port first: Retry tries again on it.
var ErrPortClash = errors.New("address already in use")

// Failure is the error of a child that did not come up: msg, then the tail
// of its output, wrapping ErrPortClash when the output says its listen
// address was taken (as Go servers and most others word it).
func Failure(msg string, out *Tail) error {
	s := out.String()
	if s != "" {
		msg += "; output:\n" + s
	}
	if portClash(s) {
		return fmt.Errorf("%s: %w", msg, ErrPortClash)
	}
	return errors.New(msg)
}

func portClash(output string) bool {
	return strings.Contains(output, "address already in use")
}

// Tries bounds how many times Retry starts a child.
const Tries = 4

// Retry calls start until it returns an error that does not wrap
// ErrPortClash, at most Tries times, and returns the last result.
func Retry[T any](start func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for try := 0; try < Tries; try++ {
		v, err = start()
		if !errors.Is(err, ErrPortClash) {
			break
		}
	}
	return v, err
}

// Tail keeps the last Max bytes written to it. It is safe for concurrent
// use, so a child's stdout and stderr can both write to it while String is
// read.
type Tail struct {
	Max int

	mu sync.Mutex
	b  []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String returns what is kept, without leading or trailing white space.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
