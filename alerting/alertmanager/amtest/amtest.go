// Package amtest runs a real Alertmanager on 127.0.0.1 for tests: a free
// port, a temporary storage directory, a configuration whose only receiver
// notifies nobody, and clustering off.
//
// The binary is $INFERWATCH_ALERTMANAGER, else prometheus-alertmanager (the
// Debian package of that name) or alertmanager in PATH. Without one the
// test is skipped, unless INFERWATCH_REQUIRE_ALERTMANAGER=1, as CI sets it.
package amtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/internal/localproc"
)

// Environment variables read by Start.
const (
	// EnvBinary holds the path of an Alertmanager binary to use.
	EnvBinary = "INFERWATCH_ALERTMANAGER"
	// EnvRequire set to 1 turns a missing binary into a test failure.
	EnvRequire = "INFERWATCH_REQUIRE_ALERTMANAGER"
)

// Names looked up in PATH, in order, when EnvBinary is unset.
var binaryNames = []string{"prometheus-alertmanager", "alertmanager"}

// ErrNoBinary means no Alertmanager binary is in PATH and EnvBinary is unset.
var ErrNoBinary = errors.New("no Alertmanager binary")

// Config is the configuration Start runs Alertmanager with: every alert is
// routed to a receiver without integrations, so nothing is notified.
const Config = `route:
  receiver: nobody
  group_by: ['...']
receivers:
  - name: nobody
`

// Bounds of the lifecycle.
const (
	readyTimeout = 60 * time.Second
	stopTimeout  = 10 * time.Second
)

// Start runs Alertmanager for the test, waits until it is ready and returns
// its base URL, e.g. http://127.0.0.1:40123. The process is stopped in
// t.Cleanup, and its output is logged when the test has failed (or as it
// comes with go test -v).
func Start(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if errors.Is(err, ErrNoBinary) {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%v, and %s=1 requires one: install the Debian package prometheus-alertmanager or set %s", err, EnvRequire, EnvBinary)
		}
		t.Skipf("skipping: %v (apt-get install prometheus-alertmanager, or set %s to an alertmanager binary; %s=1 makes this a failure)", err, EnvBinary, EnvRequire)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out io.Writer
	if testing.Verbose() {
		out = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*readyTimeout)
	defer cancel()
	p, err := startRetrying(ctx, bin, dir, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() && !testing.Verbose() {
			t.Logf("amtest: output of Alertmanager on %s:\n%s", p.URL, p.Output())
		}
	})
	return p.URL
}

// Binary is the path of the Alertmanager binary: $INFERWATCH_ALERTMANAGER,
// which must exist when set, else the first of prometheus-alertmanager and
// alertmanager in PATH. The error wraps ErrNoBinary when there is none.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("amtest: %s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	for _, name := range binaryNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("amtest: %w: neither %s is in PATH, and %s is unset", ErrNoBinary, strings.Join(binaryNames, " nor "), EnvBinary)
}

// process is a running Alertmanager.
type process struct {
	URL  string
	proc *localproc.Process
	out  *localproc.Tail

	stopOnce sync.Once
	stopErr  error
}

// startRetrying starts Alertmanager on a new free port each time another
// process took the port first, within localproc.Tries.
func startRetrying(ctx context.Context, bin, dir string, out io.Writer) (*process, error) {
	return localproc.Retry(func() (*process, error) { return start(ctx, bin, dir, out) })
}

// start writes the configuration into dir, starts bin on a free port with
// its storage under dir and waits until it is ready.
func start(ctx context.Context, bin, dir string, out io.Writer) (*process, error) {
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(Config), 0o644); err != nil {
		return nil, fmt.Errorf("amtest: writing the configuration: %w", err)
	}
	port, err := localproc.FreePort()
	if err != nil {
		return nil, fmt.Errorf("amtest: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tail := &localproc.Tail{Max: 8192}
	cmd := exec.Command(bin,
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=", // no clustering: no gossip port, ready at once
		"--log.level=info",
	)
	cmd.Stdout, cmd.Stderr = tail, tail
	if out != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(tail, out), io.MultiWriter(tail, out)
	}
	proc, err := localproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("amtest: starting %s: %w", bin, err)
	}
	p := &process{URL: "http://" + addr, proc: proc, out: tail}
	if err := proc.WaitOK(ctx, &http.Client{Timeout: 5 * time.Second}, p.URL+"/-/ready", readyTimeout, "ready"); err != nil {
		proc.Kill()
		return nil, localproc.Failure(fmt.Sprintf("amtest: Alertmanager %s on %s: %v", bin, addr, err), tail)
	}
	return p, nil
}

// Output is the tail of what the process printed.
func (p *process) Output() string { return p.out.String() }

// Stop interrupts the process and kills it if it has not exited within
// 10s. It may be called more than once.
func (p *process) Stop() error {
	p.stopOnce.Do(func() {
		killed, err := p.proc.Interrupt(stopTimeout)
		switch {
		case killed:
			p.stopErr = fmt.Errorf("amtest: Alertmanager on %s did not stop within %v of SIGINT; killed", p.URL, stopTimeout)
		case err != nil:
			p.stopErr = fmt.Errorf("amtest: interrupting Alertmanager: %w", err)
		}
	})
	return p.stopErr
}
