// Package localvm runs a real single-node VictoriaMetrics on 127.0.0.1 for
// tests, the demo and CI. The binary is the module's go tool
// (`go tool victoria-metrics`), so no download is needed.
package localvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// Options configure Start.
type Options struct {
	// DataDir holds the storage. "": a temporary directory removed by Stop.
	DataDir string
	// Logger receives start and stop notices. nil: discarded.
	Logger *slog.Logger
	// Stdout and Stderr receive the process output. nil: discarded (the
	// tail of both is still kept for error messages).
	Stdout, Stderr io.Writer
	// ExtraFlags are appended to the command line.
	ExtraFlags []string
}

// ErrNoTool means the VictoriaMetrics binary cannot be had: there is no go
// command, no go.mod above the working directory, or the module does not
// declare the victoria-metrics tool.
var ErrNoTool = errors.New("the victoria-metrics go tool is unavailable")

// EnvBinary names an environment variable holding the path of a
// victoria-metrics binary to use instead of the go tool.
const EnvBinary = "INFERWATCH_VM_BIN"

// Bounds of the lifecycle.
const (
	healthTimeout = 60 * time.Second
	stopTimeout   = 10 * time.Second
)

// VM is a running VictoriaMetrics process.
type VM struct {
	url     string
	proc    *localproc.Process
	dataDir string
	tempDir bool
	log     *slog.Logger
	hc      *http.Client
	stderr  *localproc.Tail

	stopOnce sync.Once
	stopErr  error
}

// Start finds the binary, starts VictoriaMetrics on a free 127.0.0.1 port
// and waits until /health answers. ctx bounds the start only.
func Start(ctx context.Context, o Options) (*VM, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bin, err := findBinary(ctx)
	if err != nil {
		return nil, err
	}
	dataDir, temp := o.DataDir, false
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "inferwatch-vm-"); err != nil {
			return nil, fmt.Errorf("localvm: creating a data directory: %w", err)
		}
		temp = true
	}
	vm, err := localproc.Retry(func() (*VM, error) {
		vm, err := start(ctx, bin, dataDir, o, log)
		if errors.Is(err, localproc.ErrPortClash) {
			log.Warn("localvm: port taken before VictoriaMetrics bound it; retrying on another", "err", err)
		}
		return vm, err
	})
	if err != nil {
		if temp {
			os.RemoveAll(dataDir)
		}
		return nil, err
	}
	vm.tempDir = temp
	log.Info("localvm: VictoriaMetrics is up", "url", vm.url, "data_dir", dataDir, "pid", vm.proc.PID())
	return vm, nil
}

func start(ctx context.Context, bin, dataDir string, o Options, log *slog.Logger) (*VM, error) {
	port, err := localproc.FreePort()
	if err != nil {
		return nil, fmt.Errorf("localvm: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{
		"-httpListenAddr=" + addr,
		"-storageDataPath=" + dataDir,
		"-retentionPeriod=100y",
		"-loggerLevel=ERROR",
	}, o.ExtraFlags...)
	tail := &localproc.Tail{Max: 4096}
	cmd := exec.Command(bin, args...)
	// VictoriaMetrics logs to stderr but prints flag errors to stdout: keep
	// the tail of both for error messages.
	cmd.Stdout, cmd.Stderr = tail, tail
	if o.Stdout != nil {
		cmd.Stdout = io.MultiWriter(tail, o.Stdout)
	}
	if o.Stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, o.Stderr)
	}
	proc, err := localproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("localvm: starting %s: %w", bin, err)
	}
	vm := &VM{
		url:     "http://" + addr,
		proc:    proc,
		dataDir: dataDir,
		log:     log,
		hc:      &http.Client{Timeout: 30 * time.Second},
		stderr:  tail,
	}
	if err := proc.WaitOK(ctx, vm.hc, vm.url+"/health", healthTimeout, "healthy"); err != nil {
		proc.Kill()
		return nil, localproc.Failure(fmt.Sprintf("localvm: VictoriaMetrics %s on %s: %v", bin, addr, err), tail)
	}
	return vm, nil
}

// URL is the base URL, e.g. http://127.0.0.1:40123.
func (vm *VM) URL() string { return vm.url }

// PID is the process id of VictoriaMetrics, to read its CPU time and
// memory from.
func (vm *VM) PID() int { return vm.proc.PID() }

// Import sends JSON lines in the /api/v1/import format (see
// ingest.WriteImportJSONL), then flushes and resets the rollup cache so the
// data can be queried at once.
func (vm *VM) Import(ctx context.Context, r io.Reader) error {
	if err := vm.call(ctx, http.MethodPost, "/api/v1/import", r); err != nil {
		return err
	}
	if err := vm.call(ctx, http.MethodGet, "/internal/force_flush", nil); err != nil {
		return err
	}
	return vm.call(ctx, http.MethodGet, "/internal/resetRollupResultCache", nil)
}

func (vm *VM) call(ctx context.Context, method, path string, body io.Reader) error {
	req, err := http.NewRequestWithContext(ctx, method, vm.url+path, body)
	if err != nil {
		return fmt.Errorf("localvm: %s %s: %w", method, path, err)
	}
	resp, err := vm.hc.Do(req)
	if err != nil {
		return fmt.Errorf("localvm: %s %s%s: %w", method, vm.url, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("localvm: %s %s%s: HTTP %s: %q", method, vm.url, path, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Stop interrupts the process, waits up to 10s before killing it, and
// removes a temporary data directory. It may be called more than once.
func (vm *VM) Stop() error {
	vm.stopOnce.Do(func() {
		killed, err := vm.proc.Interrupt(stopTimeout)
		if err != nil {
			vm.log.Warn("localvm: interrupt failed", "err", err)
		}
		if killed {
			vm.log.Warn("localvm: VictoriaMetrics ignored SIGINT; killed it", "pid", vm.proc.PID())
			vm.stopErr = fmt.Errorf("localvm: VictoriaMetrics did not stop within %v of SIGINT; killed", stopTimeout)
		}
		if vm.tempDir {
			if err := os.RemoveAll(vm.dataDir); err != nil && vm.stopErr == nil {
				vm.stopErr = fmt.Errorf("localvm: removing %s: %w", vm.dataDir, err)
			}
		}
	})
	return vm.stopErr
}

// Run starts VictoriaMetrics for a test and stops it in t.Cleanup. The test
// is skipped only when the go tool itself is unavailable.
func Run(t testing.TB, extraFlags ...string) *VM {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*healthTimeout)
	defer cancel()
	var out io.Writer
	if testing.Verbose() {
		out = os.Stderr
	}
	vm, err := Start(ctx, Options{Stdout: out, Stderr: out, ExtraFlags: extraFlags})
	if errors.Is(err, ErrNoTool) {
		t.Skipf("skipping: no VictoriaMetrics binary: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := vm.Stop(); err != nil {
			t.Error(err)
		}
	})
	return vm
}

// findBinary returns $INFERWATCH_VM_BIN or the path `go tool -n
// victoria-metrics` prints in the module root (building it if needed).
func findBinary(ctx context.Context) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("localvm: %s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("localvm: %w: no go command in PATH (or set %s)", ErrNoTool, EnvBinary)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, goBin, "tool", "-n", "victoria-metrics")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "no such tool") {
			return "", fmt.Errorf("localvm: %w: go tool -n victoria-metrics in %s: %s", ErrNoTool, root, msg)
		}
		return "", fmt.Errorf("localvm: go tool -n victoria-metrics in %s: %v: %s", root, err, msg)
	}
	p := strings.TrimSpace(string(out))
	if p == "" {
		return "", fmt.Errorf("localvm: go tool -n victoria-metrics in %s printed nothing", root)
	}
	return p, nil
}

// moduleRoot walks up from the working directory to the directory with go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("localvm: %w", err)
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("localvm: %w: no go.mod in %s or above (or set %s)", ErrNoTool, dir, EnvBinary)
		}
		d = parent
	}
}
