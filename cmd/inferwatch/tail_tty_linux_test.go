package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// openPTY opens a pseudo-terminal: the terminal end to write to and the
// controlling end to read what was written from. It skips the test where
// the machine has none.
func openPTY(t *testing.T) (term, control *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { control.Close() })
	ioctl := func(req uintptr, arg unsafe.Pointer) syscall.Errno {
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, control.Fd(), req, uintptr(arg))
		return errno
	}
	var unlock int32
	var n uint32
	if errno := ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); errno != 0 {
		t.Skipf("unlocking the pseudo-terminal: %v", errno)
	}
	if errno := ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n)); errno != 0 {
		t.Skipf("naming the pseudo-terminal: %v", errno)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return term, control
}

// TestTailColoursATerminal: --color auto colours the lines when stdout is
// a terminal, unless NO_COLOR is set; not elsewhere (the golden
// tail.txt, written to a buffer, has no colour).
func TestTailColoursATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := natstest.Start(t)
	publishTailBatch(t, srv.ClientURL(), "inferwatch")
	f := func(noColor string) string {
		t.Helper()
		t.Setenv("NO_COLOR", noColor)
		t.Setenv("TERM", "xterm")
		term, control := openPTY(t)
		read := make(chan string, 1)
		go func() {
			var b bytes.Buffer
			io.Copy(&b, control) // until the terminal end is closed
			read <- b.String()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var errb bytes.Buffer
		code := runMain(ctx, []string{"tail", "--nats.url", srv.ClientURL(), "--since", "1h", "--count", "2"}, term, &errb)
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
		}
		term.Close()
		select {
		case out := <-read:
			if strings.Count(out, "\n") != 2 {
				t.Fatalf("the terminal shows %q, want 2 lines", out)
			}
			return out
		case <-ctx.Done():
			t.Fatal("the terminal's output was not read")
		}
		return ""
	}
	if out := f(""); !strings.Contains(out, ansiRed+"critical"+ansiReset) {
		t.Errorf("--color auto on a terminal: no colour in %q", out)
	}
	if out := f("1"); strings.Contains(out, "\x1b[") {
		t.Errorf("--color auto with NO_COLOR: colour in %q", out)
	}
}
