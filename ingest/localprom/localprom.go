// Package localprom runs a real Prometheus server on 127.0.0.1 for tests:
// loaded with historical samples through promtool's OpenMetrics backfill,
// the second store, beside VictoriaMetrics, that inferwatch is checked
// against; or scraping the daemon's /metrics. It needs the prometheus and
// promtool binaries (Debian package prometheus).
//
// Without them a test is skipped, or fails when the environment variable CI
// is set or INFERWATCH_REQUIRE_PROMETHEUS is 1, since CI installs them.
package localprom

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/localproc"
)

// Prometheus is a running Prometheus server.
type Prometheus struct {
	URL string
}

// EnvRequire names the environment variable that, set to 1, makes a
// missing Prometheus a failure rather than a skip.
const EnvRequire = "INFERWATCH_REQUIRE_PROMETHEUS"

// Run backfills series into a fresh TSDB, starts Prometheus on it on a free
// 127.0.0.1 port with flags appended to its command line (e.g.
// --web.enable-remote-write-receiver), waits until it is ready, and stops it
// in t.Cleanup. Without the binaries the test is skipped — or fails when
// the CI environment variable is set or INFERWATCH_REQUIRE_PROMETHEUS is 1.
func Run(t testing.TB, series []ingest.Series, flags ...string) *Prometheus {
	t.Helper()
	Need(t, "prometheus", "promtool")
	dir := t.TempDir()
	om := filepath.Join(dir, "backfill.om")
	if err := writeOpenMetrics(om, series); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "promtool", "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
		t.Fatalf("localprom: promtool backfill: %v\n%s", err, tail(out))
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := localproc.Retry(func() (*process, error) { return start(cfg, data, flags) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.stop)
	return &Prometheus{URL: proc.url}
}

// Scrape starts Prometheus with an empty TSDB on a free 127.0.0.1 port,
// scraping http://target/metrics every interval as job "inferwatch", and
// stops it in t.Cleanup. Without the binary the test is skipped, or fails,
// as in Run.
func Scrape(t testing.TB, target string, interval time.Duration) *Prometheus {
	t.Helper()
	Need(t, "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	body := fmt.Sprintf("global:\n  scrape_interval: %s\nscrape_configs:\n  - job_name: inferwatch\n    static_configs:\n      - targets: [%q]\n",
		promDuration(interval), target)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	proc, err := localproc.Retry(func() (*process, error) { return start(cfg, data, nil) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.stop)
	return &Prometheus{URL: proc.url}
}

// promDuration writes d as a Prometheus duration (whole milliseconds).
func promDuration(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

// Need skips t when one of bins (prometheus, promtool) is not on PATH, or
// fails it when the CI environment variable is set or
// INFERWATCH_REQUIRE_PROMETHEUS is 1, since CI installs them.
func Need(t testing.TB, bins ...string) {
	t.Helper()
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" || os.Getenv(EnvRequire) == "1" {
				t.Fatalf("localprom: %s not found; .ci/run installs the Debian package prometheus", bin)
			}
			t.Skipf("localprom: %s not found (apt-get install prometheus, or set %s=1 to make this a failure)", bin, EnvRequire)
		}
	}
}

// process is a running prometheus.
type process struct {
	url    string
	cmd    *exec.Cmd
	exited chan error
}

// start runs prometheus on a free port over the TSDB at data and waits
// until it is ready. The error wraps localproc.ErrPortClash when another
// process bound the port first.
func start(cfg, data string, flags []string) (*process, error) {
	port, err := localproc.FreePort()
	if err != nil {
		return nil, fmt.Errorf("localprom: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	out := &localproc.Tail{Max: 4096}
	args := append([]string{"--config.file=" + cfg, "--storage.tsdb.path=" + data,
		"--storage.tsdb.retention.time=100y", "--web.listen-address=" + addr, "--log.level=warn"}, flags...)
	cmd := exec.Command("prometheus", args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localprom: starting prometheus: %w", err)
	}
	p := &process{url: "http://" + addr, cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case err := <-p.exited:
			return nil, localproc.Failure(fmt.Sprintf("localprom: prometheus on %s exited before it was ready: %v", addr, err), out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, localproc.Failure(fmt.Sprintf("localprom: prometheus on %s not ready within 60s", addr), out)
		}
	}
}

// stop interrupts prometheus and kills it if it has not exited within 15 s.
func (p *process) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// writeOpenMetrics writes series as OpenMetrics text, the format promtool
// backfills from. Non-finite samples are left out.
func writeOpenMetrics(path string, series []ingest.Series) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, s := range series {
		name := s.Labels.Get("__name__")
		var sel strings.Builder
		sel.WriteString(name)
		sel.WriteByte('{')
		first := true
		for _, l := range s.Labels {
			if l.Name == "__name__" {
				continue
			}
			if !first {
				sel.WriteByte(',')
			}
			first = false
			fmt.Fprintf(&sel, "%s=%s", l.Name, strconv.Quote(l.Value))
		}
		sel.WriteByte('}')
		prefix := sel.String()
		for i, t := range s.Timestamps {
			v := s.Values[i]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			fmt.Fprintf(w, "%s %s %s\n", prefix, strconv.FormatFloat(v, 'g', -1, 64),
				strconv.FormatFloat(float64(t)/1000, 'f', 3, 64))
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func tail(b []byte) string {
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return string(b)
}
