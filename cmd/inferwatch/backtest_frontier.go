package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules"
)

// frontierTargets are the HPA targets a frontier study sweeps unless
// --hpa-target lists its own: 0.4 to 1 by 0.05.
func frontierTargets() []float64 {
	var ts []float64
	for i := 8; i <= 20; i++ {
		ts = append(ts, float64(i)/20)
	}
	return ts
}

// frontierFlags reads the flags of --frontier into its options (the
// margins, horizon and targets the caller adds).
func frontierFlags(fs *flag.FlagSet, on bool, startupsS, ablationS, model string, bootstrap int, seed uint64, drawn bool) (rules.FrontierOptions, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !on {
		for _, name := range []string{"startups", "ablation", "bootstrap"} {
			if set[name] {
				return rules.FrontierOptions{}, fmt.Errorf("--%s is a setting of --frontier", name)
			}
		}
		if set["seed"] && !drawn {
			return rules.FrontierOptions{}, fmt.Errorf("--seed seeds the draws of --servegen-clients and the bootstrap of --frontier")
		}
		return rules.FrontierOptions{}, nil
	}
	fo := rules.FrontierOptions{Models: []string{model}, Bootstrap: bootstrap, Level: 0.9, Seed: seed}
	if bootstrap < 0 {
		return fo, fmt.Errorf("--bootstrap %d: want 0 or more resamples", bootstrap)
	}
	for _, s := range strings.Split(startupsS, ",") {
		d, err := cliDuration("--startups", strings.TrimSpace(s))
		if err != nil {
			return fo, err
		}
		if n := len(fo.Startups); n > 0 && d <= fo.Startups[n-1] {
			return fo, fmt.Errorf("--startups %s: want ascending start-ups, each once", startupsS)
		}
		fo.Startups = append(fo.Startups, d)
	}
	if ablationS != "none" && ablationS != "" {
		for _, m := range strings.Split(ablationS, ",") {
			m = strings.TrimSpace(m)
			if _, err := forecasting.New(forecasting.Options{Step: time.Minute, Model: m}); err != nil {
				return fo, fmt.Errorf("--ablation: %w", err)
			}
			if m == model {
				return fo, fmt.Errorf("--ablation %s: %s is --model already", ablationS, m)
			}
			fo.Models = append(fo.Models, m)
		}
	}
	if !set["hpa-target"] {
		fo.Targets = frontierTargets()
	}
	return fo, nil
}

// drawServeGen reads the ServeGen client traces matching glob and draws
// their requests per step.
func drawServeGen(glob string, step time.Duration, seed uint64) (*ingest.EvenSeries, error) {
	files, err := filepath.Glob(glob)
	if err != nil {
		return nil, fmt.Errorf("--servegen-clients %q: %w", glob, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--servegen-clients %q: no file matches", glob)
	}
	var traces []*ingest.ArrivalTrace
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		tr, err := ingest.ReadArrivalTrace(r, f)
		r.Close()
		if err != nil {
			return nil, err
		}
		traces = append(traces, tr)
	}
	s, err := ingest.SynthesizeArrivals(traces, step, seed)
	if err != nil {
		return nil, fmt.Errorf("--servegen-clients %q: %w", glob, err)
	}
	return s, nil
}

func runFrontier(ctx context.Context, b rules.ScaleBacktest, fo rules.FrontierOptions, name string, asJSON bool, stdout, stderr io.Writer) int {
	rep, err := rules.StudyFrontier(ctx, b, fo)
	if err != nil {
		fmt.Fprintf(stderr, "inferwatch backtest scale: %s: %v\n", name, err)
		return 1
	}
	rep.Input = name
	if asJSON {
		return writeJSON(stdout, stderr, rep)
	}
	writeFrontierText(stdout, rep)
	return 0
}

func writeFrontierText(w io.Writer, rep *rules.FrontierReport) {
	d := func(secs float64) string { return dur.Format(time.Duration(secs * float64(time.Second))) }
	fmt.Fprintf(w, "frontier of %s\n", rep.Input)
	fmt.Fprintf(w, "  %d decisions every %s from %s (%d days); capacity %.4g req/s per replica\n", rep.Decisions, d(rep.StepSeconds), rep.Start, rep.Days, rep.Capacity)
	fmt.Fprintf(w, "  HPA: 15s syncs on the last minute's mean load, tolerance 0.1, scale-down stabilisation 5m, at each target\n")
	fmt.Fprintf(w, "  ratio: the signal's under-provisioned minutes over the HPA frontier's at the signal's replica-minutes, [90%% interval over days]\n")
	num := func(v float64, f string) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf(f, v)
	}
	interval := func(p rules.FrontierPoint) string {
		r, lo, hi := float64(p.Ratio), float64(p.Lo), float64(p.Hi)
		switch {
		case math.IsNaN(r):
			return "outside the sweep"
		case math.IsNaN(lo):
			return num(r, "%.2f")
		}
		return fmt.Sprintf("%.2f [%.2f, %.2f]", r, lo, hi)
	}
	for _, st := range rep.Startups {
		fmt.Fprintf(w, "\nstart-up %s (deciding on the next %s)\n", d(st.StartupSeconds), d(st.HorizonSeconds))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "policy\treplica-minutes\tunder-provisioned minutes\tscale changes\tHPA at that cost\tratio\t")
		for _, p := range st.HPA {
			fmt.Fprintf(tw, "HPA target %g\t%.0f\t%.0f\t%d\t\t\t\n", p.Target, p.ReplicaMinutes, p.UnderMinutes, p.Changes)
		}
		for _, p := range st.Signal {
			fmt.Fprintf(tw, "signal %s level %g margin %g\t%.0f\t%.0f\t%d\t%s\t%s\t\n", p.Model, p.Level, p.Margin, p.ReplicaMinutes, p.UnderMinutes, p.Changes,
				num(float64(p.HPAUnderAtCost), "%.0f"), interval(p))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nratio at equal cost by start-up, and the start-up above which the signal is short less often\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "signal\t"
	for _, st := range rep.Startups {
		head += d(st.StartupSeconds) + "\t"
	}
	fmt.Fprintln(tw, head+"crossover\t")
	for i, c := range rep.Crossovers {
		row := fmt.Sprintf("%s level %g margin %g\t", c.Model, c.Level, c.Margin)
		for _, st := range rep.Startups {
			row += interval(st.Signal[i]) + "\t"
		}
		switch {
		case !c.Known:
			row += "none within the start-ups\t"
		case c.Below:
			row += "below " + d(c.Seconds) + "\t"
		default:
			row += d(math.Round(c.Seconds)) + "\t"
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}
