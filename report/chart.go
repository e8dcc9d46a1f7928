package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The charts are drawn by gonum/plot onto its SVG canvas and inlined in
// the HTML. Fonts are not embedded: the SVG names Liberation Sans, which a
// browser replaces by a local sans-serif font, so a chart needs nothing
// from outside the file.

var (
	colP50      = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colP95      = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colP99      = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colPrev     = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	colBand     = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0x40}
	colMark     = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0x38}
	colSLO      = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colKneeAll  = color.RGBA{R: 0xbb, G: 0xbb, B: 0xbb, A: 0xff}
	colKneeNow  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	chartWidth  = 7.5 * vg.Inch
	chartHeight = 2.6 * vg.Inch
)

// line is one series of a time chart.
type line struct {
	name  string
	pts   []point
	col   color.Color
	dash  bool
	width vg.Length
	// whole draws the points as one line however far apart (a fitted
	// trend), not broken at gaps.
	whole bool
}

// timeChart describes one chart over the report's period.
type timeChart struct {
	title, yLabel string
	from, to      time.Time
	loc           *time.Location
	lines         []line
	band          []band
	bandName      string
	marks         []Span
	hline         float64 // NaN: none
	hlineName     string
	gap           time.Duration // a line breaks where samples are further apart
	percent       bool
}

func newPlot(title string) *plot.Plot {
	p := plot.New()
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	p.Title.Text = title
	p.Title.TextStyle.Font = sans
	p.Title.TextStyle.Font.Size = vg.Points(11)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = sans
		ax.Label.TextStyle.Font.Size = vg.Points(9)
		ax.Tick.Label.Font = sans
		ax.Tick.Label.Font.Size = vg.Points(8)
	}
	p.Legend.TextStyle.Font = sans
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// draw renders the chart as inline SVG.
func (c timeChart) draw(id string) (string, error) {
	p := newPlot(c.title)
	p.X.Label.Text = "time (" + c.loc.String() + ")"
	p.Y.Label.Text = c.yLabel
	span := c.to.Sub(c.from)
	format := "15:04"
	if span > 2*day {
		format = "Mon 15:04"
	}
	p.X.Tick.Marker = plot.TimeTicks{Ticker: hourTicks{loc: c.loc, span: span}, Format: format, Time: plot.UnixTimeIn(c.loc)}
	p.X.Min, p.X.Max = float64(c.from.Unix()), float64(c.to.Unix())
	ymin, ymax := math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if finite(v) {
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	for _, l := range c.lines {
		for _, pt := range l.pts {
			see(pt.V)
		}
	}
	for _, b := range c.band {
		see(b.Lower)
		see(b.Upper)
	}
	see(c.hline)
	if !finite(ymin) {
		return "", errNoData
	}
	if ymin > 0 && !c.percent {
		ymin = 0
	}
	if ymax == ymin {
		ymax = ymin + 1
	}
	// Room above the data for the legend.
	pad := (ymax - ymin) * 0.3
	p.Y.Min, p.Y.Max = ymin, ymax+pad
	if c.percent {
		// Shares near 100 %: the legend goes below the data.
		p.Y.Min = math.Max(0, ymin-(ymax-ymin)*0.6/0.3)
		p.Y.Max = math.Min(100, ymax) + (ymax-ymin)*0.05/0.3
		p.Legend.Top = false
	}
	// Findings: translucent bands, at least five minutes wide to be seen.
	for i, m := range c.marks {
		a, b := m.Start, m.End
		if b.Sub(a) < 5*time.Minute {
			mid := a.Add(b.Sub(a) / 2)
			a, b = mid.Add(-150*time.Second), mid.Add(150*time.Second)
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: float64(a.Unix()), Y: p.Y.Min}, {X: float64(b.Unix()), Y: p.Y.Min},
			{X: float64(b.Unix()), Y: p.Y.Max}, {X: float64(a.Unix()), Y: p.Y.Max}})
		if err != nil {
			return "", err
		}
		poly.Color = colMark
		poly.LineStyle.Width = 0
		p.Add(poly)
		if i == 0 {
			p.Legend.Add("finding", poly)
		}
	}
	if len(c.band) > 1 {
		var xy plotter.XYs
		for _, b := range c.band {
			xy = append(xy, plotter.XY{X: float64(b.T / 1000), Y: b.Upper})
		}
		for i := len(c.band) - 1; i >= 0; i-- {
			xy = append(xy, plotter.XY{X: float64(c.band[i].T / 1000), Y: c.band[i].Lower})
		}
		poly, err := plotter.NewPolygon(xy)
		if err != nil {
			return "", err
		}
		poly.Color = colBand
		poly.LineStyle.Width = 0
		p.Add(poly)
		p.Legend.Add(c.bandName, poly)
	}
	if finite(c.hline) {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: c.hline}, {X: p.X.Max, Y: c.hline}})
		if err != nil {
			return "", err
		}
		l.Color, l.Width, l.Dashes = colSLO, vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(c.hlineName, l)
	}
	for _, ln := range c.lines {
		first := true
		gap := c.gap
		if ln.whole {
			gap = 0
		}
		for _, seg := range segments(ln.pts, gap) {
			xy := make(plotter.XYs, len(seg))
			for i, pt := range seg {
				xy[i] = plotter.XY{X: float64(pt.T / 1000), Y: pt.V}
			}
			if len(xy) == 1 {
				s, err := plotter.NewScatter(xy)
				if err != nil {
					return "", err
				}
				s.Color = ln.col
				s.Radius = vg.Points(1.5)
				s.Shape = draw.CircleGlyph{}
				p.Add(s)
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return "", err
			}
			l.Color = ln.col
			l.Width = cmpLen(ln.width, vg.Points(1.2))
			if ln.dash {
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			}
			p.Add(l)
			if first {
				p.Legend.Add(ln.name, l)
				first = false
			}
		}
	}
	return render(p, id)
}

func cmpLen(a, b vg.Length) vg.Length {
	if a > 0 {
		return a
	}
	return b
}

// segments splits pts where consecutive samples are further apart than
// gap, so a line does not bridge missing data.
func segments(pts []point, gap time.Duration) [][]point {
	var out [][]point
	start := 0
	for i := 1; i <= len(pts); i++ {
		if i == len(pts) || (gap > 0 && pts[i].T-pts[i-1].T > gap.Milliseconds()) {
			if i > start {
				out = append(out, pts[start:i])
			}
			start = i
		}
	}
	return out
}

// scatterChart draws the knee: the week's QPS against concurrency, the
// period's points, and the knee.
func scatterChart(title string, all, now [][2]float64, knee [2]float64, id string) (string, error) {
	if len(all) == 0 {
		return "", errNoData
	}
	p := newPlot(title)
	p.X.Label.Text = "requests running (concurrency)"
	p.Y.Label.Text = "requests/s"
	thin := func(v [][2]float64, n int) plotter.XYs {
		stride := max(1, len(v)/n)
		var xy plotter.XYs
		for i := 0; i < len(v); i += stride {
			if finite(v[i][0]) && finite(v[i][1]) {
				xy = append(xy, plotter.XY{X: v[i][0], Y: v[i][1]})
			}
		}
		return xy
	}
	for _, s := range []struct {
		name string
		xy   plotter.XYs
		col  color.Color
	}{{"the week", thin(all, 1200), colKneeAll}, {"the period", thin(now, 600), colKneeNow}} {
		if len(s.xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.xy)
		if err != nil {
			return "", err
		}
		sc.Color, sc.Radius, sc.Shape = s.col, vg.Points(1.2), draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}
	if finite(knee[0]) && finite(knee[1]) {
		k, err := plotter.NewScatter(plotter.XYs{{X: knee[0], Y: knee[1]}})
		if err != nil {
			return "", err
		}
		k.Color, k.Radius, k.Shape = colP99, vg.Points(5), draw.CrossGlyph{}
		k.GlyphStyle.Color = colP99
		p.Add(k)
		p.Legend.Add("knee", k)
	}
	p.X.Min, p.Y.Min = 0, 0
	return render(p, id)
}

var errNoData = fmt.Errorf("no data to draw")

// svgID matches the ids gonum's SVG canvas gives clip paths and the like.
var svgHeader = regexp.MustCompile(`(?s)^<\?xml[^>]*\?>\s*(<!--.*?-->\s*)?`)

// render draws p on gonum's SVG canvas and returns the SVG element, with
// an id and a title for the page.
func render(p *plot.Plot, id string) (string, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(chartWidth, chartHeight))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("drawing chart %s: %w", id, err)
	}
	s := svgHeader.ReplaceAllString(buf.String(), "")
	s = strings.Replace(s, "<svg ", fmt.Sprintf(`<svg id=%q class="chart" role="img" aria-label=%q preserveAspectRatio="xMinYMin meet" `, id, p.Title.Text), 1)
	return s, nil
}

// hourTicks places time ticks on whole hours of the zone: every 3 hours
// over a day, every 12 over a few, and so on.
type hourTicks struct {
	loc  *time.Location
	span time.Duration
}

func (h hourTicks) Ticks(min, max float64) []plot.Tick {
	every := time.Hour
	switch {
	case h.span > 4*day:
		every = 24 * time.Hour
	case h.span > 36*time.Hour:
		every = 12 * time.Hour
	case h.span > 12*time.Hour:
		every = 3 * time.Hour
	case h.span > 4*time.Hour:
		every = time.Hour
	default:
		every = 30 * time.Minute
	}
	t := time.Unix(int64(min), 0).In(h.loc).Truncate(time.Minute)
	t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, h.loc)
	var out []plot.Tick
	for n := 0; n < 400 && float64(t.Unix()) <= max; n++ {
		// Whole hours of local time divisible by every (in hours).
		if float64(t.Unix()) >= min {
			lh := t.Hour()*60 + t.Minute()
			if every < time.Hour || lh%int(every.Minutes()) == 0 {
				out = append(out, plot.Tick{Value: float64(t.Unix()), Label: "x"})
			} else if every >= time.Hour && t.Minute() == 0 {
				out = append(out, plot.Tick{Value: float64(t.Unix())})
			}
		}
		step := time.Hour
		if every < time.Hour {
			step = every
		}
		t = t.Add(step)
	}
	return out
}
