// Command churnbench measures what series churn costs the daemon: memory
// and the series it tracks while pods come and go, as in a fleet where
// every restart, rollout or autoscaler step brings a new pod label.
//
// It starts a VictoriaMetrics single-node on 127.0.0.1 (a temporary data
// dir) and `inferwatch run` with one anomaly rule over load{} (the default
// detector unless -detector), and writes one sample per live series each
// step: -live series for the whole run, and during -burst-for a burst of
// -burst series, each living -burst-life, started evenly. It samples the
// daemon's resident memory (/proc) and inferwatch_series_tracked and
// inferwatch_series_forgotten_total (its /metrics) every step, prints them,
// and reports the resident memory before the burst, at its peak, and
// forget_after past the burst's last sample.
//
//	make build && go run ./cmd/churnbench -inferwatch bin/inferwatch
//
// Everything it starts is stopped when it ends or is interrupted, every
// loop is bounded (and the whole run by -timeout), and it talks to
// 127.0.0.1 only. Linux only.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/inferwatch/inferwatch/ingest/localvm"
	"github.com/inferwatch/inferwatch/internal/benchcmd"
	"github.com/inferwatch/inferwatch/internal/localproc"
)

type options struct {
	bin                  string
	live, burst          int
	burstFor, burstLife  time.Duration
	before, after        time.Duration
	step                 time.Duration
	detector             string
	forgetAfter, timeout time.Duration
	absentAfter          time.Duration
}

func main() { benchcmd.Main("churnbench", run) }

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("churnbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "inferwatch", "bin/inferwatch", "the inferwatch binary to measure")
	fs.IntVar(&o.live, "live", 200, "series that live for the whole run")
	fs.IntVar(&o.burst, "burst", 50_000, "short-lived series of the burst")
	fs.DurationVar(&o.burstFor, "burst-for", time.Minute, "how long new series of the burst keep starting")
	fs.DurationVar(&o.burstLife, "burst-life", 30*time.Second, "how long each series of the burst lives")
	fs.DurationVar(&o.before, "before", 2*time.Minute, "how long the daemon runs before the burst")
	fs.DurationVar(&o.after, "after", 0, "how long it runs after the burst's last sample (0: forget_after and two minutes)")
	fs.DurationVar(&o.step, "step", 10*time.Second, "sample interval, rule step and group interval")
	fs.StringVar(&o.detector, "detector", "", "the rule's detector (empty: the default)")
	fs.DurationVar(&o.forgetAfter, "forget-after", 0, "the rule's forget_after (0: its default)")
	fs.DurationVar(&o.absentAfter, "resolve-after-absent", 0, "the rule's resolve_after_absent (0: its default)")
	fs.DurationVar(&o.timeout, "timeout", 40*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.live < 1 || o.burst < 0 || o.burst > 1_000_000:
		return o, fmt.Errorf("-live %d, -burst %d: want at least one live series and at most a million in the burst", o.live, o.burst)
	case o.step < time.Second || o.burstLife < o.step || o.burstFor < o.step:
		return o, errors.New("-step must be at least 1s, -burst-life and -burst-for at least a step")
	}
	return o, benchcmd.CheckBinary(o.bin)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	vm, err := localvm.Start(ctx, localvm.Options{ExtraFlags: []string{"-search.latencyOffset=0s"}})
	if err != nil {
		return err
	}
	defer vm.Stop()
	dir, err := os.MkdirTemp("", "churnbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Five minutes of history for the live series, then the daemon.
	start := time.Now().Truncate(o.step)
	var hist bytes.Buffer
	for t := start.Add(-5 * time.Minute); !t.After(start); t = t.Add(o.step) {
		writeSamples(&hist, "live", 0, o.live, t)
	}
	if err := vm.Import(ctx, &hist); err != nil {
		return err
	}
	d, err := startDaemon(ctx, o, vm.URL(), dir)
	if err != nil {
		return err
	}
	defer d.stop()

	absent := o.absentAfter
	if absent == 0 {
		absent = max(3*o.step, 5*time.Minute) // the default at for 0
	}
	forget := o.forgetAfter
	if forget == 0 {
		forget = max(absent, 20*o.step) // the default
	}
	after := o.after
	if after == 0 {
		after = forget + 2*time.Minute
	}
	burstFrom := start.Add(o.before)
	burstTo := burstFrom.Add(o.burstFor)   // the last series of the burst starts before it
	lastSample := burstTo.Add(o.burstLife) // and has its last sample before this
	end := lastSample.Add(after)
	fmt.Fprintf(stdout, "# churnbench: %d cores, %d live series, a burst of %d series (each %s) over %s, step %s, forget_after %s\n",
		runtime.NumCPU(), o.live, o.burst, o.burstLife, o.burstFor, o.step, forget)
	fmt.Fprintf(stdout, "%8s  %-6s  %9s  %9s  %9s  %8s  %9s\n", "t", "phase", "in store", "tracked", "forgotten", "RSS MiB", "heap MiB")
	var before, peak, final []float64
	for t := start.Add(o.step); !t.After(end); t = t.Add(o.step) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(t)):
		}
		var body bytes.Buffer
		writeSamples(&body, "live", 0, o.live, t)
		inStore := o.live
		if o.burst > 0 {
			// Series i of the burst starts at burstFrom + i·burstFor/burst.
			for i := 0; i < o.burst; i++ {
				born := burstFrom.Add(time.Duration(int64(o.burstFor) * int64(i) / int64(o.burst)))
				if !t.Before(born) && t.Before(born.Add(o.burstLife)) {
					writeSamples(&body, "burst", i, i+1, t)
					inStore++
				}
			}
		}
		if err := vm.Import(ctx, &body); err != nil {
			return err
		}
		rss, err := procRSS(d.pid())
		if err != nil {
			return fmt.Errorf("the daemon: %w\n%s", err, d.out.String())
		}
		tracked, forgotten := d.gauge("inferwatch_series_tracked"), d.gauge("inferwatch_series_forgotten_total")
		heap := d.gauge("go_memstats_heap_inuse_bytes") / (1 << 20)
		phase := "before"
		switch {
		case !t.Before(burstFrom) && t.Before(lastSample):
			phase = "burst"
		case !t.Before(lastSample):
			phase = "after"
		}
		mib := float64(rss) / (1 << 20)
		switch {
		case phase == "before" && t.After(burstFrom.Add(-time.Minute)):
			before = append(before, mib)
		case phase != "before":
			peak = append(peak, mib)
		}
		if !t.Before(lastSample.Add(forget + time.Minute)) {
			final = append(final, mib)
		}
		fmt.Fprintf(stdout, "%8s  %-6s  %9d  %9.0f  %9.0f  %8.1f  %9.1f\n", t.Sub(start).Round(time.Second), phase, inStore, tracked, forgotten, mib, heap)
	}
	fmt.Fprintf(stdout, "\nRSS: %.1f MiB before the burst (mean of its last minute), %.1f MiB at the peak, %.1f MiB from forget_after + 1m past the burst's last sample (mean); after/before %.2f\n",
		mean(before), maxOf(peak), mean(final), mean(final)/mean(before))
	return nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// writeSamples writes, in VictoriaMetrics' /api/v1/import format, one
// sample at t of load{namespace="churn",pod="<kind>-<i>"} for i in
// [from, to).
func writeSamples(w *bytes.Buffer, kind string, from, to int, t time.Time) {
	for i := from; i < to; i++ {
		v := 100 + float64((i*7+int(t.Unix()/10))%11) - 5
		fmt.Fprintf(w, `{"metric":{"__name__":"load","namespace":"churn","pod":"%s-%d"},"values":[%g],"timestamps":[%d]}`+"\n",
			kind, i, v, t.UnixMilli())
	}
}

// daemon is a running `inferwatch run`.
type daemon struct {
	cmd  *exec.Cmd
	out  *localproc.Tail
	web  string
	done chan struct{}
}

func startDaemon(ctx context.Context, o options, vmURL, dir string) (*daemon, error) {
	detector := ""
	if o.detector != "" {
		detector = "        detector: " + o.detector + "\n"
	}
	forget := ""
	if o.forgetAfter > 0 {
		forget = "        forget_after: " + o.forgetAfter.String() + "\n"
	}
	if o.absentAfter > 0 {
		forget += "        resolve_after_absent: " + o.absentAfter.String() + "\n"
	}
	cfg := filepath.Join(dir, "churn.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %s
  evaluation_delay: 2s
nats:
  embedded:
    listen: 127.0.0.1:0
export:
  metrics:
    enabled: false
groups:
  - name: churn
    interval: %s
    rules:
      - name: load
        expr: 'load{namespace="churn"}'
        step: %s
%s%s`, vmURL, o.step, o.step, detector, forget)), 0o644); err != nil {
		return nil, err
	}
	port, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	d := &daemon{out: &localproc.Tail{Max: 16 << 10}, web: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
	d.cmd = exec.Command(o.bin, "run", "--config", cfg, "--web.listen-address", d.web, "--outbox.dir", "none")
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	deadline := time.Now().Add(time.Minute)
	for d.gauge("inferwatch_series_tracked") < 0 {
		select {
		case <-d.done:
			return nil, fmt.Errorf("inferwatch exited at start:\n%s", d.out.String())
		case <-ctx.Done():
			d.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("inferwatch did not serve /metrics within a minute:\n%s", d.out.String())
		}
	}
	return d, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// gauge reads a metric without labels from the daemon's /metrics, -1 when
// it cannot.
func (d *daemon) gauge(name string) float64 {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + d.web + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				return v
			}
		}
	}
	return -1
}

func (d *daemon) stop() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// procRSS is the resident set of process pid, in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}
