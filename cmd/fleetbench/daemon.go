package main

import (
	"bufio"
	"bytes"
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
	"syscall"
	"time"

	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/internal/localproc"
)

// groupName is the group of the one rule a case runs.
const groupName = "fleet"

// evaluationDelay is the daemon's source.evaluation_delay: VictoriaMetrics
// hides the newest 30 s of samples from range queries by default.
const evaluationDelay = 30 * time.Second

// writeConfig writes the daemon's configuration for case c to dir; without
// exportMetrics, with export.metrics off.
func writeConfig(dir, vmURL string, c benchCase, step time.Duration, exportMetrics bool, selector string) (string, error) {
	rule := ruleText(c, step, selector)
	export := ""
	if !exportMetrics {
		export = "export:\n  metrics:\n    enabled: false\n"
	}
	limits := seriesLimit(c)
	cfg := fmt.Sprintf(`source:
  url: %s
  evaluation_delay: %s
%snats:
  embedded:
    listen: 127.0.0.1:0
%sgroups:
  - name: %s
    interval: %s
    rules:
%s`, vmURL, dur.Format(evaluationDelay), limits, export, groupName, dur.Format(step), rule)
	p := filepath.Join(dir, "inferwatch-"+strings.ReplaceAll(c.String(), "/", "-")+".yml")
	return p, os.WriteFile(p, []byte(cfg), 0o644)
}

// ruleText is the configuration of case c's one rule, in a group's rules.
func ruleText(c benchCase, step time.Duration, selector string) string {
	switch c.Rule {
	case "forecast":
		return fmt.Sprintf(`      - name: forecast
        forecast:
          expr: '%s'
          step: %s
          history: %s
          horizon: 10m
`, selector, dur.Format(step), dur.Format(c.Lookback))
	default:
		return fmt.Sprintf(`      - name: %s
        expr: '%s'
        step: %s
        lookback: %s
        detector: %s
`, c.Rule, selector, dur.Format(step), dur.Format(c.Lookback), c.Rule)
	}
}

// coldRange is the range the first evaluation of a rule at now fetches:
// its lookback before the newest interval.
func coldRange(now time.Time, lookback, step time.Duration) (start, end time.Time) {
	end = now.Add(-evaluationDelay).Truncate(step)
	return end.Add(-step - lookback), end
}

// daemon is a running `inferwatch run`.
type daemon struct {
	cmd    *exec.Cmd
	out    *localproc.Tail
	exited chan struct{}
	err    error
	web    string // host:port of /metrics, "" for none
	// cycles receives the end of each group evaluation the daemon logs
	// (at debug level), as it is logged.
	cycles chan cycleEnd
}

// cycleEnd is a "group evaluated" line of the daemon's log.
type cycleEnd struct {
	at    time.Time     // when the bench read it
	took  time.Duration // as logged
	group string
}

// daemonTimeout bounds `run --once`, and the stop of a running daemon.
const (
	onceTimeout = 20 * time.Minute
	stopTimeout = 30 * time.Second
)

// startDaemon starts `inferwatch run` with the extra flags, and env added
// to this process' environment.
func startDaemon(bin, config string, once bool, extra, env []string) (*daemon, error) {
	d := &daemon{out: &localproc.Tail{Max: 16 << 10}, exited: make(chan struct{}), cycles: make(chan cycleEnd, 64)}
	args := []string{"run", "--config", config}
	if once {
		args = append(args, "--log.level", "warn", "--once", "--web.listen-address", "")
	} else {
		// At debug level the daemon logs the end of each group
		// evaluation: the bench reads /metrics then, once a cycle, as a
		// scrape would, rather than polling it.
		args = append(args, "--log.level", "debug")
		port, err := localproc.FreePort()
		if err != nil {
			return nil, err
		}
		d.web = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		args = append(args, "--web.listen-address", d.web)
	}
	d.cmd = exec.Command(bin, append(args, extra...)...)
	if len(env) > 0 {
		d.cmd.Env = append(os.Environ(), env...)
	}
	d.cmd.Stdout = d.out
	var lines io.ReadCloser
	if once {
		d.cmd.Stderr = d.out
	} else {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		d.cmd.Stderr, lines = pw, pr
		defer pw.Close() // the child has its copy
	}
	// The kernel kills the daemon if the bench dies without stopping it.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	if lines != nil {
		go d.readLog(lines)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// readLog keeps the tail of the daemon's log and sends the end of each
// group evaluation on cycles, dropping it if the bench is not reading.
func (d *daemon) readLog(r io.ReadCloser) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			at := time.Now()
			if bytes.Contains(line, []byte(`msg="group evaluated"`)) {
				group, _ := logField(line, "group")
				if took, ok := logField(line, "took"); ok {
					if dur, err := time.ParseDuration(took); err == nil {
						select {
						case d.cycles <- cycleEnd{at: at, took: dur, group: group}:
						default:
						}
					}
				}
			} else if !bytes.Contains(line, []byte("level=DEBUG")) {
				d.out.Write(line)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return
		}
	}
}

// logField is the value of key=value in a logfmt line.
func logField(line []byte, key string) (string, bool) {
	i := bytes.Index(line, []byte(" "+key+"="))
	if i < 0 {
		return "", false
	}
	v := line[i+len(key)+2:]
	if j := bytes.IndexAny(v, " \n"); j >= 0 {
		v = v[:j]
	}
	return string(v), len(v) > 0
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// stop interrupts the daemon and kills it if it has not exited within
// stopTimeout.
func (d *daemon) stop() error {
	select {
	case <-d.exited:
		return d.err
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return d.err
	case <-time.After(stopTimeout):
		d.cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("inferwatch did not stop within %v of SIGTERM; killed", stopTimeout)
	}
}

// runOnce runs `inferwatch run --once` and measures it: wall time, its CPU
// time and peak RSS, the store's CPU time meanwhile.
func runOnce(ctx context.Context, bin, config string, extra, env []string, storePID int) (measurement, error) {
	storeCPU0, _ := procCPU(storePID)
	began := time.Now()
	d, err := startDaemon(bin, config, true, extra, env)
	if err != nil {
		return measurement{}, err
	}
	select {
	case <-d.exited:
	case <-ctx.Done():
		d.stop()
		return measurement{}, ctx.Err()
	case <-time.After(onceTimeout):
		d.stop()
		return measurement{}, fmt.Errorf("inferwatch run --once did not finish within %v", onceTimeout)
	}
	wall := time.Since(began)
	storeCPU1, _ := procCPU(storePID)
	if d.err != nil {
		return measurement{}, fmt.Errorf("inferwatch run --once: %v; output: %s", d.err, d.out.String())
	}
	ru, ok := d.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return measurement{}, errors.New("no resource usage of the finished process")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return measurement{Wall: wall.Seconds(), CPU: cpu.Seconds(), StoreCPU: (storeCPU1 - storeCPU0).Seconds(),
		RSS: ru.Maxrss << 10}, nil
}

// selfMetrics are the figures of the daemon's /metrics the bench reads.
type selfMetrics struct {
	evals    int64   // inferwatch_group_evaluations_total
	count    int64   // inferwatch_group_evaluation_duration_seconds_count
	sum      float64 // inferwatch_group_evaluation_duration_seconds_sum
	scored   float64 // inferwatch_samples_scored_total
	missed   float64 // inferwatch_group_missed_iterations_total
	failures float64 // inferwatch_group_evaluation_failures_total
}

var metricsClient = &http.Client{Timeout: 5 * time.Second}

// get is the status of GET path from the daemon's web listener.
func (d *daemon) get(ctx context.Context, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.web+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// eachSample reads the daemon's /metrics and hands f each sample: the
// series (name and labels, as written) and its value.
func (d *daemon) eachSample(ctx context.Context, f func(series string, v float64)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.web+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics: HTTP %s", resp.Status)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(line[sp+1:], 64); err == nil {
			f(line[:sp], v)
		}
	}
	return sc.Err()
}

// scrape reads the daemon's /metrics.
func (d *daemon) scrape(ctx context.Context) (selfMetrics, error) {
	var m selfMetrics
	group := `{group="` + groupName + `"}`
	err := d.eachSample(ctx, func(name string, v float64) {
		switch name {
		case "inferwatch_group_evaluations_total" + group:
			m.evals = int64(v)
		case "inferwatch_group_evaluation_duration_seconds_count" + group:
			m.count = int64(v)
		case "inferwatch_group_evaluation_duration_seconds_sum" + group:
			m.sum = v
		case "inferwatch_samples_scored_total":
			m.scored = v
		case "inferwatch_group_missed_iterations_total" + group:
			m.missed = v
		case "inferwatch_group_evaluation_failures_total" + group:
			m.failures = v
		}
	})
	return m, err
}

// seriesLimit is the source's setting for a case: the default limit of
// series one query may return (200,000) is twice what the daemon is sized
// for by default, and a larger case asks for twice its series.
func seriesLimit(c benchCase) string {
	if c.Series > 100_000 {
		return fmt.Sprintf("  max_response_series: %d\n", 2*c.Series)
	}
	return ""
}
