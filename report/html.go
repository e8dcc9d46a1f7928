package report

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/internal/dur"
)

//go:embed report.html.tmpl
var htmlTemplate string

// ContentSecurityPolicy is the policy the HTML declares: nothing may be
// loaded from anywhere; only its own inline styles apply. A report opened
// from a mail or a file share makes no request.
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// chartView is one chart of the page.
type chartView struct {
	ID, Title string
	SVG       template.HTML
	// Empty says why there is no chart.
	Empty string
}

type modelView struct {
	Model
	LatencyCharts []chartView
	TrafficChart  chartView
	EtaChart      chartView
	KneeChart     chartView
}

type sloView struct {
	SLOReport
	Charts []chartView
}

type pageView struct {
	*Document
	Loc     *time.Location
	Title   string
	CSP     string
	Models  []modelView
	SLOView []sloView
}

// HTML renders d as one self-contained HTML page: inline styles and SVG
// charts, no script, no external font or image, a table of contents, and
// print styles.
func HTML(d *Document) ([]byte, error) {
	loc, err := time.LoadLocation(d.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	v := pageView{Document: d, Loc: loc, CSP: ContentSecurityPolicy,
		Title: fmt.Sprintf("inferwatch report %s: %s", d.Name, periodText(d.Period, loc))}
	var errs []error
	chart := func(id, title string, c timeChart) chartView {
		cv := chartView{ID: id, Title: title}
		c.title, c.loc, c.from, c.to = title, loc, d.Period.Start, d.Period.End
		svg, err := c.draw(id)
		switch {
		case errors.Is(err, errNoData):
			cv.Empty = "No data to draw in the period."
		case err != nil:
			errs = append(errs, err)
			cv.Empty = "The chart could not be drawn."
		default:
			cv.SVG = template.HTML(svg)
		}
		return cv
	}
	gap := 3 * time.Duration(stepOf(d)) // a line breaks over a gap of three steps
	for _, m := range d.Models {
		mv := modelView{Model: m}
		for _, l := range m.Latency {
			lines := m.charts.latency[l.Kind]
			if !l.Available && len(lines[0]) == 0 {
				continue
			}
			hl, hn := math.NaN(), ""
			if t, ok := m.charts.sloLine[l.Kind]; ok {
				hl, hn = t, "SLO threshold "+fmtSeconds(t)
			}
			mv.LatencyCharts = append(mv.LatencyCharts, chart(m.ID+"-chart-"+l.Kind, l.Title+" of "+m.Name, timeChart{
				yLabel: "seconds", gap: gap, marks: m.charts.marks, hline: hl, hlineName: hn,
				lines: []line{{name: "P50", pts: lines[0], col: colP50}, {name: "P95", pts: lines[1], col: colP95}, {name: "P99", pts: lines[2], col: colP99}},
			}))
		}
		mv.TrafficChart = chart(m.ID+"-chart-traffic", "Request rate of "+m.Name, timeChart{
			yLabel: "requests/s", gap: gap, marks: m.charts.marks, hline: math.NaN(), band: m.charts.forecast, bandName: "forecast interval",
			lines: []line{{name: "day before", pts: m.charts.reqPrev, col: colPrev, dash: true}, {name: "requests/s (5 min)", pts: m.charts.requests, col: colP50}},
		})
		eta := timeChart{yLabel: "η (share below peak)", gap: gap, marks: m.charts.marks, hline: math.NaN(),
			lines: []line{{name: "η", pts: m.charts.eta, col: colP95}}}
		if tr := m.charts.trend; tr[0].T != 0 {
			eta.lines = append(eta.lines, line{name: "trend (Theil–Sen)", pts: tr[:], col: colP99, dash: true, whole: true})
		}
		mv.EtaChart = chart(m.ID+"-chart-eta", "Throughput decay η of "+m.Name, eta)
		mv.KneeChart = chartView{ID: m.ID + "-chart-knee", Title: "QPS against concurrency of " + m.Name}
		svg, err := scatterChart(mv.KneeChart.Title, m.charts.kneeAll, m.charts.kneeNow, [2]float64{float64(m.Knee.Concurrency), float64(m.Knee.QPS)}, mv.KneeChart.ID)
		switch {
		case errors.Is(err, errNoData):
			mv.KneeChart.Empty = "No concurrency and request-rate samples to draw."
		case err != nil:
			errs = append(errs, err)
		default:
			mv.KneeChart.SVG = template.HTML(svg)
		}
		v.Models = append(v.Models, mv)
	}
	for _, s := range d.SLOs {
		sv := sloView{SLOReport: s}
		for _, ser := range s.Series {
			title := "SLI of " + s.Name
			if l := labelText(ser.Labels); l != "" {
				title += " (" + l + ")"
			}
			sv.Charts = append(sv.Charts, chart(ser.ID+"-chart", title, timeChart{yLabel: "good events, % (1 h)", gap: gap, percent: true,
				hline: s.ObjectivePct, hlineName: "objective " + strconv.FormatFloat(s.ObjectivePct, 'f', -1, 64) + " %",
				lines: []line{{name: "SLI", pts: ser.chart, col: colP50}}}))
		}
		v.SLOView = append(v.SLOView, sv)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	t, err := template.New("report").Funcs(funcs(d, loc)).Parse(htmlTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("rendering the HTML of report %s: %w", d.Name, err)
	}
	return buf.Bytes(), nil
}

// stepOf is the resolution of the period's series.
func stepOf(d *Document) time.Duration {
	if d.Period.End.Sub(d.Period.Start) < 6*time.Hour {
		return time.Minute
	}
	return 5 * time.Minute
}

func periodText(p Period, loc *time.Location) string {
	s, e := p.Start.In(loc), p.End.In(loc)
	if s.Year() == e.Year() {
		return s.Format("Mon 2 Jan 15:04") + " – " + e.Format("Mon 2 Jan 2006 15:04 MST")
	}
	return s.Format("Mon 2 Jan 2006 15:04") + " – " + e.Format("Mon 2 Jan 2006 15:04 MST")
}

// funcs are the template's formatting functions; none prints NaN.
func funcs(d *Document, loc *time.Location) template.FuncMap {
	return template.FuncMap{
		"num":  func(x F, prec int) string { return cell(fmtNum(float64(x), prec)) },
		"secs": func(x F) string { return cell(fmtSeconds(float64(x))) },
		"pct":  func(x F) string { return cell(pct(float64(x))) },
		"sli":  func(x F) string { return cell(sliPct(float64(x))) },
		"change": func(x F) string {
			if !finite(float64(x)) {
				return "—"
			}
			s := pct(float64(x))
			if x > 0 {
				s = "+" + s
			}
			return s
		},
		"changeClass": func(x F) string {
			switch v := float64(x); {
			case !finite(v):
				return ""
			case v >= latencyChange:
				return "up"
			case v <= -latencyChange:
				return "down"
			}
			return ""
		},
		"clock": func(t time.Time) string { return fmtClock(t, d.Period.Start, loc) },
		"clockOr": func(t *time.Time, none string) string {
			if t == nil {
				return none
			}
			return fmtClock(*t, d.Period.Start, loc)
		},
		"clockp": func(t *time.Time) string {
			return clockPtr(t, func(t time.Time) string { return fmtClock(t, d.Period.Start, loc) })
		},
		"full":   func(t time.Time) string { return t.In(loc).Format("Mon 2 Jan 2006 15:04 MST") },
		"period": func(p Period) string { return periodText(p, loc) },
		"dur":    func(s F) string { return cell(dur.Approx(time.Duration(float64(s)) * time.Second)) },
		"spanDur": func(a, b time.Time) string {
			return dur.Approx(b.Sub(a))
		},
		"q":      func(q float64) string { return "P" + strconv.FormatFloat(100*q, 'f', -1, 64) },
		"labels": labelText,
		"plural": func(n int, one, many string) string {
			if n == 1 {
				return one
			}
			return many
		},
		"yesno": func(b *bool) string {
			switch {
			case b == nil:
				return "—"
			case *b:
				return "met"
			}
			return "missed"
		},
		"add":   func(a, b int) int { return a + b },
		"deref": func(b *bool) bool { return b != nil && *b },
		"e2eMetric": func(ls []Latency) string {
			for _, l := range ls {
				if l.Kind == "e2e" {
					return l.Metric
				}
			}
			return "end-to-end latency"
		},
		"pair": func(a any, b any) struct{ A, B any } { return struct{ A, B any }{a, b} },
		"fsec": func(s float64) F { return F(s) },
		"join": strings.Join,
		"burnClass": func(x F) string {
			switch v := float64(x); {
			case v >= fastBurn:
				return "up"
			case v >= 1:
				return "warn"
			}
			return ""
		},
	}
}

// cell shows an undefined figure as a dash in a table.
func cell(s string) string {
	if s == "no data" {
		return "—"
	}
	return s
}
