package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/inferwatch/inferwatch/internal/dur"
)

// stat is the median and the range of some figures.
type stat struct {
	n                int
	median, min, max float64
}

func statOf(xs []float64) stat {
	if len(xs) == 0 {
		return stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{n: len(s), median: m, min: s[0], max: s[len(s)-1]}
}

func field(ms []measurement, f func(measurement) float64) stat {
	xs := make([]float64, 0, len(ms))
	for _, m := range ms {
		xs = append(xs, f(m))
	}
	return statOf(xs)
}

func wall(m measurement) float64     { return m.Wall }
func cpu(m measurement) float64      { return m.CPU }
func storeCPU(m measurement) float64 { return m.StoreCPU }
func rssMiB(m measurement) float64   { return float64(m.RSS) / (1 << 20) }
func rate(m measurement) float64 {
	if m.Wall <= 0 {
		return 0
	}
	return m.Samples / m.Wall
}

// seconds formats a stat of seconds: the median and the range.
func (s stat) seconds() string {
	if s.n == 0 {
		return "–"
	}
	if s.n == 1 {
		return fmt.Sprintf("%.3g s", s.median)
	}
	return fmt.Sprintf("%.3g s (%.3g–%.3g)", s.median, s.min, s.max)
}

func (s stat) mib() string {
	if s.n == 0 {
		return "–"
	}
	if s.n == 1 {
		return fmt.Sprintf("%.0f MiB", s.median)
	}
	return fmt.Sprintf("%.0f MiB (%.0f–%.0f)", s.median, s.min, s.max)
}

func (s stat) perSecond() string {
	if s.n == 0 || s.median == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3g M/s", s.median/1e6)
}

func ratio(a, b stat) string {
	if a.n == 0 || b.n == 0 || b.median == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a.median/b.median)
}

func (b *bench) report(w io.Writer) {
	m := b.machine
	fmt.Fprintf(w, "\nfleetbench: %d cores (GOMAXPROCS %d); load average %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end; step %s; shape %s (%s); VictoriaMetrics with %s\n",
		m.Cores, m.GOMAXPROCS, m.LoadBefore[0], m.LoadBefore[1], m.LoadBefore[2], m.LoadAfter[0], m.LoadAfter[1], m.LoadAfter[2],
		dur.Format(b.o.step), b.o.shape, b.o.shape.selector(), strings.Join(vmFlags, " "))
	fmt.Fprintf(w, "medians of %d rounds (cold) and %d cycles (steady), range in parentheses; CPU is user+sys of the process named; export.metrics %s\n\n",
		b.o.rounds, b.o.steadyCycles, map[bool]string{true: "on (the default)", false: "off"}[b.o.scores])
	if len(b.o.daemonFlags) > 0 || len(b.o.daemonEnv) > 0 {
		fmt.Fprintf(w, "inferwatch run with flags %q and environment %q\n\n", b.o.daemonFlags, b.o.daemonEnv)
	}

	if b.o.members > 0 {
		b.reportScaleOut(w)
		return
	}
	fmt.Fprintln(w, "Cold: one evaluation's lookback fetched, every series warmed up")
	fmt.Fprintln(w, "| case | points/series | C query_range | C export | B | A_cold wall | A_cold CPU | store CPU in A_cold | A_cold peak RSS | A_cold/C | A_cold/C_export | A_cold samples/s |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range b.results {
		c, ce, bb, a := field(r.C, wall), field(r.CExport, wall), field(r.B, wall), field(r.Cold, wall)
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Name, r.Points,
			c.seconds(), ce.seconds(), bb.seconds(), a.seconds(), field(r.Cold, cpu).seconds(), field(r.Cold, storeCPU).seconds(),
			field(r.Cold, rssMiB).mib(), ratio(a, c), ratio(a, ce), field(r.Cold, rate).perSecond())
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The store's cost of a cold evaluation: VictoriaMetrics' CPU time (user+sys) while it answers")
	fmt.Fprintln(w, "| case | store CPU: C query_range | C export | A_cold | A_cold/C_export | after a restart: C export wall | A_cold wall | A_cold/C_export |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range b.results {
		sq, se, sa := field(r.C, storeCPU), field(r.CExport, storeCPU), field(r.Cold, storeCPU)
		re, ra, rr := "–", "–", "–"
		if r.CExportRestart != nil && r.ColdRestart != nil {
			re, ra = fmt.Sprintf("%.3g s", r.CExportRestart.Wall), fmt.Sprintf("%.3g s", r.ColdRestart.Wall)
			rr = ratio(statOf([]float64{r.ColdRestart.Wall}), statOf([]float64{r.CExportRestart.Wall}))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Name, sq.seconds(), se.seconds(), sa.seconds(), ratio(sa, se), re, ra, rr)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Steady: the daemon running, one new point per series each interval")
	fmt.Fprintln(w, "| case | cycles | first cycle | A_steady wall | A_steady CPU | store CPU | B | A_steady/B | RSS after a cycle | RSS first→last | KiB/series | samples/s | missed ticks |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range b.results {
		if len(r.Steady) == 0 {
			continue
		}
		a := field(r.Steady, wall)
		bs := r.SteadyB
		if len(bs) == 0 {
			bs = r.B
		}
		bb := field(bs, wall)
		first := "–"
		if r.First != nil {
			first = fmt.Sprintf("%.3g s", r.First.Wall)
		}
		rss := field(r.Steady, rssMiB)
		drift := fmt.Sprintf("%.0f→%.0f MiB", rssMiB(r.Steady[0]), rssMiB(r.Steady[len(r.Steady)-1]))
		perSeries := rss.median * 1024 / float64(r.Case.Series)
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %s | %.0f |\n", r.Name, len(r.Steady), first,
			a.seconds(), field(r.Steady, cpu).seconds(), field(r.Steady, storeCPU).seconds(), bb.seconds(), ratio(a, bb),
			rss.mib(), drift, perSeries, field(r.Steady, rate).perSecond(), r.Missed)
	}
	if p := b.publish; p != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Publishing: %d findings per round through alerting.Publisher and natsjs to an embedded NATS server with file storage, in batches of %d\n", p.Findings, p.Batch)
		fmt.Fprintf(w, "| acknowledged findings/s | wall per round |\n|---|---|\n| %.0f (%.0f–%.0f) | %s |\n",
			p.rate().median, p.rate().min, p.rate().max, statOf(p.Walls).seconds())
	}
	for _, r := range b.results {
		for _, e := range r.Errors {
			fmt.Fprintf(w, "\nerror: %s: %s\n", r.Name, e)
		}
	}
}

func (b *bench) writeJSON(path string) error {
	out := struct {
		Machine  machine           `json:"machine"`
		Step     string            `json:"step"`
		VMFlags  []string          `json:"victoriametrics_flags"`
		Cases    []*caseResult     `json:"cases"`
		ScaleOut []*scaleOutResult `json:"scale_out,omitempty"`
		Publish  *publishResult    `json:"publish,omitempty"`
		Rounds   int               `json:"rounds"`
		Cycles   int               `json:"steady_cycles"`
		Inferwat string            `json:"inferwatch"`
	}{b.machine, dur.Format(b.o.step), vmFlags, b.results, b.scaleOuts, b.publish, b.o.rounds, b.o.steadyCycles, b.o.bin}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
