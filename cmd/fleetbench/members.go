package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules"
)

// The scale-out mode (-members N) runs N daemons on one configuration
// and an embedded NATS server on 127.0.0.1, the case's group split into
// -shards shards by -shard-by, instead of the single-process phases. Once
// every shard has been evaluated twice it measures a window of
// -window: each member's CPU time, RSS and series tracked, and the
// store's CPU time. Then, with more than one member, it kills one
// (SIGKILL, or stops it with SIGTERM under -takeover-signal term) and
// measures, for each shard the killed member evaluated, the time from the
// signal to the end of the shard's first evaluation by another member:
// the lease's expiry (or release), the takeover and the shard's cold
// evaluation, and that evaluation's own time.

// memberFigures is what the window measured of one member.
type memberFigures struct {
	Units    []string `json:"groups"`
	Series   float64  `json:"series_tracked"`
	CPU      float64  `json:"cpu_seconds"`
	RSS      int64    `json:"rss_bytes"`
	Evals    float64  `json:"evaluations"`
	Missed   float64  `json:"missed_iterations"`
	Failures float64  `json:"failed_evaluations"`
	// Failed are the last lines the member logged at error level, when
	// an evaluation failed in the window.
	Failed []string `json:"failed,omitempty"`
}

// scaleOutResult is what the scale-out mode measured for one case.
type scaleOutResult struct {
	Name     string          `json:"case"`
	Members  int             `json:"members"`
	Shards   int             `json:"shards"`
	ShardBy  string          `json:"shard_by,omitempty"`
	Window   float64         `json:"window_seconds"`
	Step     float64         `json:"step_seconds"`
	PerMem   []memberFigures `json:"members_figures"`
	StoreCPU float64         `json:"store_cpu_seconds"`
	// Takeover is, for each shard of the killed member, the seconds from
	// the signal to the end of its first evaluation by another member,
	// and TakeoverEval that evaluation's own seconds, in the same order;
	// Signal names the signal.
	Takeover     []float64     `json:"takeover_seconds,omitempty"`
	TakeoverEval []float64     `json:"takeover_evaluation_seconds,omitempty"`
	Signal       string        `json:"takeover_signal,omitempty"`
	Load         [2][3]float64 `json:"loadavg"`
	Errors       []string      `json:"errors,omitempty"`
}

// evaluation is one "group evaluated" line of a member's log.
type evaluation struct {
	member int
	group  string
	at     time.Time     // when the bench read it
	took   time.Duration // as the member logged it
}

// evalLog collects the evaluations of every member.
type evalLog struct {
	mu  sync.Mutex
	evs []evaluation
}

func (l *evalLog) drain(member int, d *daemon) {
	for {
		select {
		case <-d.exited:
			return
		case ce := <-d.cycles:
			l.mu.Lock()
			l.evs = append(l.evs, evaluation{member: member, group: ce.group, at: ce.at, took: ce.took})
			l.mu.Unlock()
		}
	}
}

func (l *evalLog) snapshot() []evaluation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// unitNames are the groups the case's group is evaluated as.
func unitNames(shards int) []string {
	if shards < 2 {
		return []string{groupName}
	}
	out := make([]string, shards)
	for i := range shards {
		out[i] = rules.UnitName(groupName, i, shards)
	}
	return out
}

// scaleOut runs case c in the scale-out mode over st.
func (b *bench) scaleOut(ctx context.Context, st *store, dir string, c benchCase) error {
	res := &scaleOutResult{Name: c.String(), Members: b.o.members, Shards: b.o.shards, Step: b.o.step.Seconds()}
	if b.o.shards > 1 {
		res.ShardBy = b.o.shardBy
	}
	b.scaleOuts = append(b.scaleOuts, res)
	res.Load[0] = loadavg()
	defer func() { res.Load[1] = loadavg() }()
	err := b.runScaleOut(ctx, st, dir, c, res)
	if err != nil {
		res.Errors = append(res.Errors, err.Error())
	}
	return err
}

func (b *bench) runScaleOut(ctx context.Context, st *store, dir string, c benchCase, res *scaleOutResult) error {
	step := b.o.step
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "nats-"+strconv.Itoa(c.Series))})
	if err != nil {
		return fmt.Errorf("starting NATS: %w", err)
	}
	defer srv.Shutdown()
	cfg, err := writeMembersConfig(dir, st.vm.URL(), srv.ClientURL(), c, step, b.o.shape.selector(), b.o.shards, b.o.shardBy)
	if err != nil {
		return err
	}
	var log evalLog
	ds := make([]*daemon, b.o.members)
	defer func() {
		for _, d := range ds {
			if d != nil {
				if err := d.stop(); err != nil {
					b.log.warn("stopping a member", "err", err)
				}
			}
		}
	}()
	for i := range ds {
		extra := append(slices.Clone(b.o.daemonFlags), "--outbox.dir", filepath.Join(dir, fmt.Sprintf("outbox-%d-%d", c.Series, i)))
		d, err := startDaemon(b.o.bin, cfg, false, extra, b.o.daemonEnv)
		if err != nil {
			return err
		}
		ds[i] = d
		go log.drain(i, d)
	}
	// One new point per series each interval, as a scrape would.
	wctx, stopWriting := context.WithCancel(ctx)
	var writer sync.WaitGroup
	defer func() {
		stopWriting()
		writer.Wait()
	}()
	writer.Go(func() {
		t := time.NewTicker(step)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if _, err := st.catchUp(wctx); err != nil && wctx.Err() == nil {
				b.log.warn("writing the new points", "err", err)
			}
		}
	})

	units := unitNames(b.o.shards)
	// Warm-up: every unit evaluated twice, its cold cycle and a steady one.
	deadline := time.Now().Add(onceTimeout)
	for {
		n := map[string]int{}
		for _, e := range log.snapshot() {
			n[e.group]++
		}
		done := true
		for _, u := range units {
			done = done && n[u] >= 2
		}
		if done {
			break
		}
		if err := wait(ctx, ds, time.Second); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the shards were not all evaluated twice within %v: %v", onceTimeout, n)
		}
	}
	b.log.info("members warmed up", "case", c.String(), "members", len(ds), "shards", b.o.shards)

	// The window: CPU time, series and RSS of each member, the store's CPU.
	cpu0 := make([]time.Duration, len(ds))
	m0 := make([]memberMetrics, len(ds))
	for i, d := range ds {
		cpu0[i], _ = procCPU(d.pid())
		if m0[i], err = scrapeMember(ctx, d); err != nil {
			return err
		}
	}
	store0, _ := procCPU(st.vm.PID())
	began := time.Now()
	if err := wait(ctx, ds, b.o.window); err != nil {
		return err
	}
	res.Window = time.Since(began).Seconds()
	store1, _ := procCPU(st.vm.PID())
	res.StoreCPU = (store1 - store0).Seconds()
	owned := make([]map[string]bool, len(ds))
	for i := range owned {
		owned[i] = map[string]bool{}
	}
	for _, e := range log.snapshot() {
		if !e.at.Before(began) {
			owned[e.member][e.group] = true
		}
	}
	for i, d := range ds {
		cpu1, _ := procCPU(d.pid())
		m1, err := scrapeMember(ctx, d)
		if err != nil {
			return err
		}
		rss, _, _ := procRSS(d.pid())
		f := memberFigures{Series: m1.series, CPU: (cpu1 - cpu0[i]).Seconds(), RSS: rss,
			Evals: m1.evals - m0[i].evals, Missed: m1.missed - m0[i].missed, Failures: m1.failures - m0[i].failures}
		for u := range owned[i] {
			f.Units = append(f.Units, u)
		}
		if f.Failures > 0 {
			f.Failed = errorLines(d.out.String(), 3)
		}
		slices.Sort(f.Units)
		res.PerMem = append(res.PerMem, f)
	}
	b.log.info("window measured", "case", c.String(), "window", time.Duration(res.Window*float64(time.Second)).Round(time.Second))
	if len(ds) < 2 {
		return nil
	}

	// Takeover: kill the member with the most shards.
	victim := 0
	for i := range owned {
		if len(owned[i]) > len(owned[victim]) {
			victim = i
		}
	}
	sig := syscall.SIGKILL
	res.Signal = "SIGKILL"
	if b.o.takeoverSignal == "term" {
		sig, res.Signal = syscall.SIGTERM, "SIGTERM"
	}
	killed := time.Now()
	if err := ds[victim].cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("stopping a member with %s: %w", res.Signal, err)
	}
	deadline = killed.Add(onceTimeout)
	for {
		first := map[string]evaluation{}
		for _, e := range log.snapshot() {
			if _, ok := first[e.group]; !ok && e.member != victim && owned[victim][e.group] && e.at.After(killed) {
				first[e.group] = e
			}
		}
		if len(first) == len(owned[victim]) {
			firsts := slices.SortedFunc(maps.Values(first), func(x, y evaluation) int { return x.at.Compare(y.at) })
			for _, e := range firsts {
				res.Takeover = append(res.Takeover, e.at.Sub(killed).Seconds())
				res.TakeoverEval = append(res.TakeoverEval, e.took.Seconds())
			}
			b.log.info("shards taken over", "case", c.String(), "signal", res.Signal, "shards", len(first),
				"seconds", res.Takeover, "evaluation_seconds", res.TakeoverEval)
			return nil
		}
		others := slices.Delete(slices.Clone(ds), victim, victim+1)
		if err := wait(ctx, others, time.Second); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of the killed member's %d shards taken over within %v", len(first), len(owned[victim]), onceTimeout)
		}
	}
}

// errorLines are the last n lines of log at error level.
func errorLines(log string, n int) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=ERROR") {
			out = append(out, line)
		}
	}
	return out[max(0, len(out)-n):]
}

// wait waits for d or until ctx ends or a member exits.
func wait(ctx context.Context, ds []*daemon, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, m := range ds {
		select {
		case <-m.exited:
			return fmt.Errorf("a member exited: %v; output: %s", m.err, m.out.String())
		default:
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// memberMetrics are the figures of a member's /metrics the scale-out mode
// reads, summed over its groups.
type memberMetrics struct {
	series, evals, missed, failures float64
}

func scrapeMember(ctx context.Context, d *daemon) (memberMetrics, error) {
	var m memberMetrics
	err := d.eachSample(ctx, func(series string, v float64) {
		name, _, _ := strings.Cut(series, "{")
		switch name {
		case "inferwatch_series_tracked":
			m.series = v
		case "inferwatch_group_evaluations_total":
			m.evals += v
		case "inferwatch_group_missed_iterations_total":
			m.missed += v
		case "inferwatch_group_evaluation_failures_total":
			m.failures += v
		}
	})
	return m, err
}

// writeMembersConfig writes the members' configuration for case c: the
// case's rule in a group split into shards by shardBy (none below 2), the
// replicas' NATS at natsURL.
func writeMembersConfig(dir, vmURL, natsURL string, c benchCase, step time.Duration, selector string, shards int, shardBy string) (string, error) {
	split := ""
	if shards > 1 {
		split = fmt.Sprintf("    shards: %d\n    shard_by: [%s]\n", shards, shardBy)
	}
	limits := seriesLimit(c)
	cfg := fmt.Sprintf(`source:
  url: %s
  evaluation_delay: %s
%snats:
  url: %s
groups:
  - name: %s
    interval: %s
%s    rules:
%s`, vmURL, dur.Format(evaluationDelay), limits, natsURL, groupName, dur.Format(step), split, ruleText(c, step, selector))
	p := filepath.Join(dir, fmt.Sprintf("members-%d-%s.yml", shards, strings.ReplaceAll(c.String(), "/", "-")))
	return p, os.WriteFile(p, []byte(cfg), 0o644)
}

// reportScaleOut writes the scale-out figures.
func (b *bench) reportScaleOut(w io.Writer) {
	if len(b.scaleOuts) == 0 {
		return
	}
	fmt.Fprintln(w, "Scale-out: the members over a window of steady cycles; CPU is user+sys per interval; per series over the member's series tracked")
	fmt.Fprintln(w, "| case | members | shards | member | groups | series tracked | CPU per interval | CPU per series per interval | RSS | RSS per series | evaluations | missed | failed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range b.scaleOuts {
		intervals := r.Window / r.Step
		for i, m := range r.PerMem {
			perSeries, rssPer := "–", "–"
			if m.Series > 0 {
				perSeries = fmt.Sprintf("%.2f µs", m.CPU/intervals/m.Series*1e6)
				rssPer = fmt.Sprintf("%.1f KiB", float64(m.RSS)/m.Series/1024)
			}
			fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %.0f | %.3f s | %s | %d MiB | %s | %.0f | %.0f | %.0f |\n", r.Name, r.Members, r.Shards, i,
				len(m.Units), m.Series, m.CPU/intervals, perSeries, m.RSS>>20, rssPer, m.Evals, m.Missed, m.Failures)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | members | shards | window | store CPU per interval | takeover after the signal (each shard of the stopped member; its first evaluation's own time) | load average before, after |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range b.scaleOuts {
		take := "–"
		if len(r.Takeover) > 0 {
			var s []string
			for i, x := range r.Takeover {
				s = append(s, fmt.Sprintf("%.1f (%.1f)", x, r.TakeoverEval[i]))
			}
			take = r.Signal + ": " + strings.Join(s, ", ") + " s"
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f s | %.3f s | %s | %.2f, %.2f |\n", r.Name, r.Members, r.Shards, r.Window,
			r.StoreCPU/(r.Window/r.Step), take, r.Load[0][0], r.Load[1][0])
	}
	fmt.Fprintln(w)
	for _, r := range b.scaleOuts {
		for i, m := range r.PerMem {
			for _, line := range m.Failed {
				fmt.Fprintf(w, "%s: member %d: %s\n", r.Name, i, line)
			}
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "%s: error: %s\n", r.Name, e)
		}
	}
}
