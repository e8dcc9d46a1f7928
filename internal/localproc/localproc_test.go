package localproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFreePortIsBindable(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d from FreePort: %v", port, err)
	}
	ln.Close()
}

func TestRetry(t *testing.T) {
	calls := 0
	v, err := Retry(func() (int, error) {
		calls++
		if calls < 3 {
			return 0, fmt.Errorf("child on 127.0.0.1:%d: %w", calls, ErrPortClash)
		}
		return calls, nil
	})
	if err != nil || v != 3 || calls != 3 {
		t.Fatalf("two clashes then a start: got %d, %v after %d calls; want 3, nil after 3", v, err, calls)
	}

	calls = 0
	_, err = Retry(func() (int, error) {
		calls++
		return 0, fmt.Errorf("clash %d: %w", calls, ErrPortClash)
	})
	if !errors.Is(err, ErrPortClash) || calls != Tries {
		t.Fatalf("clashes only: got %v after %d calls; want ErrPortClash after %d", err, calls, Tries)
	}

	calls = 0
	other := errors.New("bad flag")
	_, err = Retry(func() (int, error) { calls++; return 0, other })
	if err != other || calls != 1 {
		t.Fatalf("another error: got %v after %d calls; want it after 1", err, calls)
	}
}

func TestFailure(t *testing.T) {
	out := &Tail{Max: 1024}
	out.Write([]byte("listen tcp 127.0.0.1:1: bind: address already in use\n"))
	err := Failure("child on 127.0.0.1:1: exited", out)
	if !errors.Is(err, ErrPortClash) || !strings.Contains(err.Error(), "child on 127.0.0.1:1: exited; output:\nlisten tcp") {
		t.Fatalf("a clash: %v; want ErrPortClash, the message and the output", err)
	}
	if err := Failure("child: exited", &Tail{Max: 1024}); errors.Is(err, ErrPortClash) || err.Error() != "child: exited" {
		t.Fatalf("no output: %v; want the message alone", err)
	}
}

func TestPortClash(t *testing.T) {
	for out, want := range map[string]bool{
		`level=error msg="Listen error" err="listen tcp 127.0.0.1:34255: bind: address already in use"`:   true,
		`cannot start http server at http://127.0.0.1:1: listen tcp 127.0.0.1:1: bind: permission denied`: false,
		"": false,
	} {
		if got := portClash(out); got != want {
			t.Errorf("portClash(%q) = %v, want %v", out, got, want)
		}
	}
}

func TestTail(t *testing.T) {
	tl := &Tail{Max: 5}
	for _, s := range []string{"ab", "cdef", "gh\n"} {
		if n, err := tl.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := tl.String(); got != "efgh" {
		t.Fatalf("String() = %q, want the last 5 bytes %q trimmed to %q", got, "efgh\n", "efgh")
	}
}

func TestProcess(t *testing.T) {
	trueBin, err1 := exec.LookPath("true")
	sleepBin, err2 := exec.LookPath("sleep")
	if err1 != nil || err2 != nil {
		t.Skip("no true or sleep in PATH")
	}
	p, err := Start(exec.Command(trueBin))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitOK(context.Background(), http.DefaultClient, "http://127.0.0.1:1/health", time.Minute, "healthy")
	if err == nil || !strings.Contains(err.Error(), "exited before becoming healthy") {
		t.Errorf("WaitOK on a process that exits: %v", err)
	}
	p, err = Start(exec.Command(sleepBin, "60"))
	if err != nil {
		t.Fatal(err)
	}
	if killed, err := p.Interrupt(time.Minute); killed || err != nil {
		t.Errorf("sleep did not stop on SIGINT: killed %v, %v", killed, err)
	}
	<-p.Exited()
}
