package main

import (
	"context"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/forecasting/capacity"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// frontierFlags reads the flags of --frontier into its options (the
// margins, horizon and targets the caller adds).
func frontierFlags(fs *flag.FlagSet, on bool, startupsS, ablationS, model string, bootstrap int, seed uint64, drawn bool) (rules.FrontierOptions, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !on {
		for _, name := range []string{"startups", "ablation", "bootstrap", "plot"} {
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
		fo.Targets = rules.DefaultFrontierTargets()
	}
	return fo, nil
}

// readWaiting reads a GenTD26 gateway file of the requests waiting, per
// minute, onto the minutes of load: NaN where it has none.
func readWaiting(path string, load *ingest.EvenSeries) ([]float64, error) {
	q, err := ingest.ReadGenTD26(path, "")
	if err != nil {
		return nil, fmt.Errorf("--gentd26-queue: %w", err)
	}
	if q.Step != load.Step {
		return nil, fmt.Errorf("--gentd26-queue %s: a step of %v, the load's is %v", path, q.Step, load.Step)
	}
	return q.Align(load.Start, len(load.Values)), nil
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
	traces, err := ingest.ReadArrivalTraces(files)
	if err != nil {
		return nil, err
	}
	s, err := ingest.SynthesizeArrivals(traces, step, seed)
	if err != nil {
		return nil, fmt.Errorf("--servegen-clients %q: %w", glob, err)
	}
	return s, nil
}

func runFrontier(ctx context.Context, b rules.ScaleBacktest, fo rules.FrontierOptions, name, plotFile string, asJSON bool, stdout, stderr io.Writer) int {
	rep, err := rules.StudyFrontier(ctx, b, fo)
	if err != nil {
		fmt.Fprintf(stderr, "inferwatch backtest scale: %s: %v\n", name, err)
		return 1
	}
	rep.Input = name
	if plotFile != "" {
		if err := writeFrontierPlot(plotFile, rep); err != nil {
			fmt.Fprintln(stderr, "inferwatch backtest scale: --plot:", err)
			return 1
		}
	}
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

// frontierColors tell the start-ups apart in the plot.
var frontierColors = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// writeFrontierPlot draws the report as an SVG file: for each start-up the
// HPA's frontier as a line through its efficient targets, and each
// signal as a mark of that start-up's colour (a circle for --model, then a
// triangle, a cross, … for the ablations); replica-minutes across,
// under-provisioned minutes (plus one, on a log scale) up.
func writeFrontierPlot(path string, rep *rules.FrontierReport) error {
	p := plot.New()
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	p.Title.Text = "The HPA's frontier and the scale signal\n" + regexp.MustCompile(`\S*/([^/\s]+/[^/\s]+)`).ReplaceAllString(rep.Input, "$1")
	p.Title.TextStyle.Font = sans
	p.Title.TextStyle.Font.Size = vg.Points(10)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font, ax.Tick.Label.Font = sans, sans
		ax.Label.TextStyle.Font.Size, ax.Tick.Label.Font.Size = vg.Points(9), vg.Points(8)
	}
	p.Legend.TextStyle.Font = sans
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Legend.Left = true
	p.X.Label.Text = "replica-minutes"
	p.Y.Label.Text = "under-provisioned minutes + 1"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	xy := func(rm, under float64) plotter.XY { return plotter.XY{X: rm, Y: under + 1} }
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.SquareGlyph{}, draw.PlusGlyph{}}
	models := map[string]int{}
	for si, st := range rep.Startups {
		col := frontierColors[si%len(frontierColors)]
		var pts []capacity.Point
		for _, h := range st.HPA {
			pts = append(pts, capacity.Point{ReplicaMinutes: h.ReplicaMinutes, UnderMinutes: h.UnderMinutes})
		}
		var line plotter.XYs
		for _, e := range capacity.Efficient(pts) {
			line = append(line, xy(e.ReplicaMinutes, e.UnderMinutes))
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			return err
		}
		l.Color, l.Width = col, vg.Points(1.2)
		p.Add(l)
		p.Legend.Add("HPA, start-up "+dur.Format(time.Duration(st.StartupSeconds*float64(time.Second))), l)
		for _, s := range st.Signal {
			k, ok := models[s.Model]
			if !ok {
				k = len(models)
				models[s.Model] = k
			}
			sc, err := plotter.NewScatter(plotter.XYs{xy(s.ReplicaMinutes, s.UnderMinutes)})
			if err != nil {
				return err
			}
			sc.Color, sc.Shape, sc.Radius = col, shapes[k%len(shapes)], vg.Points(3)
			p.Add(sc)
			if si == 0 && s.Level == st.Signal[0].Level && s.Margin == st.Signal[0].Margin {
				p.Legend.Add("signal on "+s.Model, sc)
			}
		}
	}
	c := vgsvg.NewWith(vgsvg.UseWH(7.5*vg.Inch, 4.5*vg.Inch))
	p.Draw(draw.New(c))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
