package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// measurement is one timed run of something.
type measurement struct {
	Wall     float64 `json:"wall_seconds"`
	CPU      float64 `json:"cpu_seconds,omitempty"`       // the measured process: inferwatch
	StoreCPU float64 `json:"store_cpu_seconds,omitempty"` // VictoriaMetrics meanwhile
	RSS      int64   `json:"rss_bytes,omitempty"`         // peak (A_cold) or after the cycle (A_steady)
	Bytes    int64   `json:"bytes,omitempty"`             // of the response body
	Samples  float64 `json:"samples,omitempty"`           // samples fetched or scored
	Overran  bool    `json:"overran,omitempty"`           // a steady cycle that missed ticks
}

// caseResult is everything measured for one case.
type caseResult struct {
	Case    benchCase     `json:"-"`
	Name    string        `json:"case"`
	Points  int           `json:"points_per_series"` // of the cold range
	C       []measurement `json:"c"`
	CExport []measurement `json:"c_export"`
	B       []measurement `json:"b"`
	Cold    []measurement `json:"a_cold"`
	// After a restart of the store (-restart): the first export, then,
	// after another restart, the first A_cold.
	CExportRestart *measurement  `json:"c_export_after_restart,omitempty"`
	ColdRestart    *measurement  `json:"a_cold_after_restart,omitempty"`
	First          *measurement  `json:"a_first_cycle,omitempty"` // the running daemon's first (cold) cycle
	Steady         []measurement `json:"a_steady"`
	SteadyB        []measurement `json:"b_steady"`
	PeakRSS        int64         `json:"steady_peak_rss_bytes,omitempty"`
	Missed         float64       `json:"missed_iterations,omitempty"`
	Failures       float64       `json:"failed_evaluations,omitempty"`
	Load           [2][3]float64 `json:"loadavg"` // at the start and the end of the case
	Errors         []string      `json:"errors,omitempty"`
}

type machine struct {
	Cores      int        `json:"cores"`
	GOMAXPROCS int        `json:"gomaxprocs"`
	LoadBefore [3]float64 `json:"loadavg_before"`
	LoadAfter  [3]float64 `json:"loadavg_after"`
	Started    time.Time  `json:"started"`
}

func machineInfo() machine {
	return machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), LoadBefore: loadavg(), Started: time.Now().UTC()}
}

type bench struct {
	o       options
	log     *logger
	machine machine
	results []*caseResult
	publish *publishResult
	// scaleOuts are the figures of the scale-out mode (-members).
	scaleOuts []*scaleOutResult
}

// runAll measures the cases, one fresh store per series count in the
// order the cases first name it, then the publishing.
func (b *bench) runAll(ctx context.Context) error {
	var sizes []int
	if b.o.serve {
		return b.runSize(ctx, b.o.cases[0].Series)
	}
	seen := map[int]bool{}
	for _, c := range b.o.cases {
		if !seen[c.Series] {
			seen[c.Series] = true
			sizes = append(sizes, c.Series)
		}
	}
	var errs []error
	for _, n := range sizes {
		if err := b.runSize(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("%d series: %w", n, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	if b.o.publish > 0 && ctx.Err() == nil {
		pr, err := measurePublish(ctx, b.o.publish, b.o.rounds, b.log)
		b.publish = pr
		if err != nil {
			errs = append(errs, fmt.Errorf("publishing: %w", err))
		}
	}
	return errors.Join(errs...)
}

// historyMargin is written before the longest lookback: the cold range
// reaches one interval further back, and query_range looks behind its
// first point.
const historyMargin = 10 * time.Minute

func (b *bench) runSize(ctx context.Context, n int) error {
	var cases []benchCase
	var lookback time.Duration
	for _, c := range b.o.cases {
		if c.Series == n {
			cases = append(cases, c)
			lookback = max(lookback, c.Lookback)
		}
	}
	step := b.o.step
	now := time.Now().Truncate(step)
	first := now.Add(-lookback - historyMargin)
	// The generated samples reach past the end of the run, bounded by
	// -timeout, so the writer never runs out.
	last := now.Add(b.o.timeout + time.Hour).Truncate(step)
	b.log.info("generating", "series", n, "from", first.UTC(), "to", now.UTC())
	gen, err := newGenerator(n, b.o.seed, step, first, last, b.o.shape)
	if err != nil {
		return err
	}
	st, err := newStore(ctx, gen)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.stop(); err != nil {
			b.log.warn("stopping VictoriaMetrics", "err", err)
		}
	}()
	began := time.Now()
	samples, err := st.importHistory(ctx, first.UnixMilli(), now.UnixMilli())
	if err != nil {
		return fmt.Errorf("importing the history: %w", err)
	}
	b.log.info("imported", "series", n, "samples", samples, "took", time.Since(began).Round(time.Millisecond), "store", st.vm.URL())
	if b.o.serve {
		return b.serveStore(ctx, st)
	}
	dir, err := os.MkdirTemp("", "fleetbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var errs []error
	if b.o.members > 0 {
		for _, c := range cases {
			if err := b.scaleOut(ctx, st, dir, c); err != nil {
				errs = append(errs, fmt.Errorf("case %s: %w", c, err))
				if ctx.Err() != nil {
					break
				}
			}
		}
		return errors.Join(errs...)
	}
	for _, c := range cases {
		res := &caseResult{Case: c, Name: c.String()}
		b.results = append(b.results, res)
		res.Load[0] = loadavg()
		err := b.runCase(ctx, st, dir, res)
		res.Load[1] = loadavg()
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
			errs = append(errs, fmt.Errorf("case %s: %w", c, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (b *bench) runCase(ctx context.Context, st *store, dir string, res *caseResult) error {
	c, step := res.Case, b.o.step
	selector := b.o.shape.selector()
	cfg, err := writeConfig(dir, st.vm.URL(), c, step, b.o.scores, selector)
	if err != nil {
		return err
	}
	res.Points = int(c.Lookback/step) + 2
	coldSamples := float64(c.Series * res.Points)
	for round := 1; round <= b.o.rounds; round++ {
		if _, err := st.catchUp(ctx); err != nil {
			return fmt.Errorf("writing the new points: %w", err)
		}
		start, end := coldRange(time.Now(), c.Lookback, step)
		// The store's own answers are measured where it gives them: at a
		// million series VictoriaMetrics refuses a query_range ("not
		// enough memory"), which the report then says, and the daemon is
		// measured all the same.
		refused := func(what string, err error) error {
			if ctx.Err() != nil || !strings.Contains(err.Error(), "HTTP 4") {
				return fmt.Errorf("%s: %w", what, err)
			}
			res.Errors = append(res.Errors, fmt.Sprintf("%s, round %d: the store refused it: %v", what, round, err))
			return nil
		}
		m, err := st.fetchRange(ctx, selector, start, end, step)
		if err == nil {
			m.Samples = coldSamples
			res.C = append(res.C, m)
			b.log.measured(c, "C query_range", round, m)
		} else if err := refused("C query_range", err); err != nil {
			return err
		}

		m, err = st.fetchExport(ctx, selector, start, end, step)
		if err == nil {
			m.Samples = coldSamples
			res.CExport = append(res.CExport, m)
			b.log.measured(c, "C export", round, m)
		} else if err := refused("C export", err); err != nil {
			return err
		}

		m, err = st.zscore(ctx, selector, c.Lookback, end)
		if err == nil {
			m.Samples = float64(c.Series) * float64(c.Lookback/step)
			res.B = append(res.B, m)
			b.log.measured(c, "B", round, m)
		} else if err := refused("B", err); err != nil {
			return err
		}

		if _, err := st.catchUp(ctx); err != nil {
			return fmt.Errorf("writing the new points: %w", err)
		}
		m, err = runOnce(ctx, b.o.bin, cfg, b.o.daemonFlags, b.o.daemonEnv, st.vm.PID())
		if err != nil {
			return fmt.Errorf("A_cold: %w", err)
		}
		m.Samples = coldSamples
		res.Cold = append(res.Cold, m)
		b.log.measured(c, "A_cold", round, m)
	}
	if b.o.restart {
		if err := b.afterRestart(ctx, st, dir, res); err != nil {
			return err
		}
		if cfg, err = writeConfig(dir, st.vm.URL(), c, step, b.o.scores, selector); err != nil {
			return err
		}
	}
	if b.o.steadyCycles > 0 {
		return b.steady(ctx, st, cfg, res)
	}
	return nil
}

// afterRestart measures the first export after the store restarts, and
// the first A_cold after it restarts again.
func (b *bench) afterRestart(ctx context.Context, st *store, dir string, res *caseResult) error {
	c, step, selector := res.Case, b.o.step, b.o.shape.selector()
	if _, err := st.catchUp(ctx); err != nil {
		return fmt.Errorf("writing the new points: %w", err)
	}
	if err := st.restart(ctx); err != nil {
		return err
	}
	start, end := coldRange(time.Now(), c.Lookback, step)
	m, err := st.fetchExport(ctx, selector, start, end, step)
	if err != nil {
		return fmt.Errorf("C export after a restart: %w", err)
	}
	exp := m
	res.CExportRestart = &exp
	b.log.measured(c, "C export after a restart", 0, m)
	if _, err := st.catchUp(ctx); err != nil {
		return fmt.Errorf("writing the new points: %w", err)
	}
	if err := st.restart(ctx); err != nil {
		return err
	}
	cfg, err := writeConfig(dir, st.vm.URL(), c, step, b.o.scores, selector)
	if err != nil {
		return err
	}
	m, err = runOnce(ctx, b.o.bin, cfg, b.o.daemonFlags, b.o.daemonEnv, st.vm.PID())
	if err != nil {
		return fmt.Errorf("A_cold after a restart: %w", err)
	}
	res.ColdRestart = &m
	b.log.measured(c, "A_cold after a restart", 0, m)
	return nil
}

// cpuSample is the CPU time of the daemon and of the store at one time.
type cpuSample struct {
	at           time.Time
	daemon, repo time.Duration
}

// pollEvery is how often the steady phase reads the daemon's /metrics and
// the processes' CPU time.
const pollEvery = 50 * time.Millisecond

// steady runs the daemon, writes one new point per series each interval
// and measures -steady-cycles cycles after its first, with one B between
// cycles where the time to the next tick allows.
func (b *bench) steady(ctx context.Context, st *store, cfg string, res *caseResult) error {
	c, step, selector := res.Case, b.o.step, b.o.shape.selector()
	flags := b.o.daemonFlags
	if b.o.profileDir != "" {
		flags = append(slices.Clone(flags), "--web.enable-pprof")
	}
	d, err := startDaemon(b.o.bin, cfg, false, flags, b.o.daemonEnv)
	if err != nil {
		return err
	}
	prof := &profiler{dir: b.o.profileDir, name: strings.ReplaceAll(c.String(), "/", "-"), d: d, log: b.log}
	defer prof.wait()
	defer func() {
		if err := d.stop(); err != nil {
			b.log.warn("stopping the daemon", "err", err)
		}
	}()
	// The first cycle is a cold one, up to the interval away; then one
	// cycle per interval, each allowed to overrun twice.
	deadline := time.Now().Add(onceTimeout + time.Duration(b.o.steadyCycles+2)*3*step)
	var (
		prev    selfMetrics
		started bool
		ring    []cpuSample
		lastB   time.Duration
	)
	cpuAt := func(t time.Time) (cpuSample, bool) {
		for i := len(ring) - 1; i >= 0; i-- {
			if !ring[i].at.After(t) {
				return ring[i], true
			}
		}
		return cpuSample{}, false
	}
	sample := func() {
		dc, err1 := procCPU(d.pid())
		sc, err2 := procCPU(st.vm.PID())
		if err1 == nil && err2 == nil {
			ring = append(ring, cpuSample{at: time.Now(), daemon: dc, repo: sc})
			if len(ring) > 4096 {
				ring = append(ring[:0], ring[len(ring)-2048:]...)
			}
		}
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for len(res.Steady) < b.o.steadyCycles {
		var ce cycleEnd
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.exited:
			return fmt.Errorf("the daemon exited: %v; output: %s", d.err, d.out.String())
		case <-tick.C:
			if time.Now().After(deadline) {
				return fmt.Errorf("%d steady cycles measured of %d before the deadline", len(res.Steady), b.o.steadyCycles)
			}
			sample()
			if !started {
				if code, err := d.get(ctx, "/healthz"); err == nil && code == http.StatusOK {
					started = true
					// The first cycle comes within an interval, then
					// takes a cold fetch's time.
					prof.cpu(ctx, "first", step+10*time.Second)
				}
			}
			continue
		case ce = <-d.cycles:
		}
		sample()
		m, err := d.scrape(ctx)
		if err != nil {
			return fmt.Errorf("reading the daemon's /metrics: %w", err)
		}
		if m.count == prev.count {
			continue
		}
		now := ce.at
		dur := time.Duration((m.sum - prev.sum) * float64(time.Second))
		cyc := measurement{Wall: dur.Seconds(), Samples: m.scored - prev.scored,
			Overran: m.count-prev.count > 1 || m.missed > prev.missed}
		if s0, ok := cpuAt(now.Add(-ce.took - pollEvery)); ok {
			s1 := ring[len(ring)-1]
			cyc.CPU, cyc.StoreCPU = (s1.daemon - s0.daemon).Seconds(), (s1.repo - s0.repo).Seconds()
		}
		if rss, peak, err := procRSS(d.pid()); err == nil {
			cyc.RSS, res.PeakRSS = rss, peak
		}
		if prev.count == 0 {
			res.First = &cyc
			b.log.measured(c, "A first cycle", 0, cyc)
		} else {
			prof.cpu(ctx, "steady", time.Duration(b.o.steadyCycles-len(res.Steady))*step)
			res.Steady = append(res.Steady, cyc)
			b.log.measured(c, "A_steady", len(res.Steady), cyc)
		}
		res.Missed, res.Failures = m.missed, m.failures
		prev = m
		if _, err := st.catchUp(ctx); err != nil {
			return fmt.Errorf("writing the new points: %w", err)
		}
		// One B while the daemon is idle: its next tick is an interval
		// after this cycle's.
		next := now.Add(-dur).Add(step)
		if time.Until(next) > 2*lastB+time.Second {
			_, end := coldRange(time.Now(), c.Lookback, step)
			mb, err := st.zscore(ctx, selector, c.Lookback, end)
			switch {
			case err != nil && strings.Contains(err.Error(), "HTTP 4"):
				// The store refuses it at this size (see runCase).
				lastB = step
			case err != nil:
				return fmt.Errorf("B: %w", err)
			default:
				mb.Samples = float64(c.Series) * float64(c.Lookback/step)
				lastB = time.Duration(mb.Wall * float64(time.Second))
				res.SteadyB = append(res.SteadyB, mb)
			}
		}
	}
	prof.wait()
	prof.heap(ctx)
	return nil
}

// logger writes progress to stderr.
type logger struct {
	l       *slog.Logger
	verbose bool
}

func newLogger(w io.Writer, verbose bool) *logger {
	return &logger{l: slog.New(slog.NewTextHandler(w, nil)), verbose: verbose}
}

func (l *logger) info(msg string, kv ...any) { l.l.Info(msg, kv...) }
func (l *logger) warn(msg string, kv ...any) { l.l.Warn(msg, kv...) }

func (l *logger) measured(c benchCase, what string, round int, m measurement) {
	if !l.verbose {
		return
	}
	l.l.Info(what, "case", c.String(), "round", round, "wall", secs(m.Wall), "cpu", secs(m.CPU),
		"store_cpu", secs(m.StoreCPU), "rss_mb", m.RSS>>20, "bytes", m.Bytes, "samples", m.Samples, "overran", m.Overran)
}

func secs(s float64) string { return fmt.Sprintf("%.3fs", s) }

// serveStore keeps the store current until ctx ends.
func (b *bench) serveStore(ctx context.Context, st *store) error {
	fmt.Fprintf(os.Stdout, "%s\n", st.vm.URL())
	b.log.info("serving the store until interrupted", "url", st.vm.URL(), "selector", b.o.shape.selector())
	t := time.NewTicker(b.o.step)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := st.catchUp(ctx); err != nil {
			return err
		}
	}
}
