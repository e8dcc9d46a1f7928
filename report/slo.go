package report

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// sliQueries returns the good and total queries of an SLO, each with
// {{.window}} where the range goes; errors is true when the first counts
// errors rather than good events.
func (b *builder) sliQueries(s rulefmt.ServiceLevel) (first, total string, errors bool) {
	if e := s.Events; e != nil {
		if e.ErrorQuery != "" {
			return e.ErrorQuery, e.TotalQuery, true
		}
		return e.GoodQuery, e.TotalQuery, false
	}
	l := s.Latency
	by := l.By
	if len(by) == 0 {
		by = b.spec.By
	}
	sel := l.Selector
	if sel == "" {
		sel = b.spec.Selector
	}
	byS := strings.Join(by, ", ")
	good := fmt.Sprintf("sum by (%s) (rate(%s[%s]))", byS, withMatchers(l.Metric+"_bucket", sel, "le=~"+strconv.Quote(leRegexp(l.Threshold))), rulefmt.WindowPlaceholder)
	tot := fmt.Sprintf("sum by (%s) (rate(%s[%s]))", byS, withMatchers(l.Metric+"_count", sel), rulefmt.WindowPlaceholder)
	return good, tot, false
}

// leRegexp matches the le label of a bucket bound as exporters write it:
// 2.5, or 1 and 1.0 for a whole number.
func leRegexp(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'g', -1, 64)
	alts := []string{regexp.QuoteMeta(s)}
	if !strings.ContainsAny(s, ".e") {
		alts = append(alts, regexp.QuoteMeta(s+".0"))
	}
	return strings.Join(alts, "|")
}

func window(q string, d time.Duration) string {
	return strings.ReplaceAll(q, rulefmt.WindowPlaceholder, secs(d))
}

// ratios evaluates the error ratio of each series of an SLI at t over d.
func (b *builder) ratios(ctx context.Context, what, first, total string, errs bool, t time.Time, d time.Duration) (map[string]float64, map[string]ingest.Labels, int) {
	f := b.instant(ctx, what, window(first, d), t)
	tot := b.instant(ctx, what, window(total, d), t)
	out := map[string]float64{}
	labels := map[string]ingest.Labels{}
	fb := map[string]float64{}
	for _, s := range f {
		if n := len(s.Values); n > 0 {
			fb[s.Labels.String()] = s.Values[n-1]
		}
	}
	for _, s := range tot {
		n := len(s.Values)
		if n == 0 {
			continue
		}
		k := s.Labels.String()
		labels[k] = s.Labels
		g := fb[k] // absent: no good (or error) events at all
		if errs {
			if s.Values[n-1] > 0 {
				out[k] = math.Min(1, math.Max(0, g/s.Values[n-1]))
			} else {
				out[k] = math.NaN()
			}
		} else {
			out[k] = ErrorRatio(g, s.Values[n-1])
		}
	}
	return out, labels, len(f)
}

func (b *builder) slos(ctx context.Context) {
	for _, s := range b.spec.SLOs {
		r := SLOReport{Name: s.Name, Description: s.Description, ObjectivePct: s.Objective, WindowSeconds: s.Window.Seconds(),
			Threshold: F(math.NaN()), Series: []SLOSeries{}, Kind: "events"}
		if s.Latency != nil {
			r.Kind = "latency"
			r.Threshold = F(s.Latency.Threshold.Seconds())
			for _, m := range b.models {
				for _, lk := range b.latencyKinds() {
					if slices.Contains(lk.metrics, s.Latency.Metric) {
						m.charts.sloLine[lk.kind] = s.Latency.Threshold.Seconds()
					}
				}
			}
		}
		first, total, errs := b.sliQueries(s)
		obj := s.Objective / 100
		what := "SLO " + s.Name
		type wr struct {
			d   time.Duration
			val map[string]float64
		}
		ws := []wr{{d: time.Hour}, {d: 6 * time.Hour}, {d: day}, {d: b.end.Sub(b.start)}, {d: s.Window}}
		labels := map[string]ingest.Labels{}
		firstFound := 0
		for i := range ws {
			var ls map[string]ingest.Labels
			var n int
			ws[i].val, ls, n = b.ratios(ctx, what, first, total, errs, b.end, ws[i].d)
			firstFound += n
			for k, v := range ls {
				labels[k] = v
			}
		}
		if s.Latency != nil && firstFound == 0 && len(labels) > 0 {
			r.Reason = fmt.Sprintf("no bucket le=%q of %s: the threshold must be one of the histogram's bucket bounds",
				strconv.FormatFloat(s.Latency.Threshold.Seconds(), 'g', -1, 64), s.Latency.Metric)
			b.doc.SLOs = append(b.doc.SLOs, r)
			continue
		}
		// Hourly totals over the window: how much of it the store holds.
		hourly := b.query(ctx, what+" data", window(total, time.Hour), b.end.Add(-s.Window), b.end, time.Hour)
		have := map[string]int{}
		for _, h := range hourly {
			have[h.Labels.String()] = len(h.Timestamps)
		}
		// The SLI over the period, one-hour windows.
		fr := b.query(ctx, what+" over time", window(first, time.Hour), b.start, b.end, b.step)
		tr := b.query(ctx, what+" over time", window(total, time.Hour), b.start, b.end, b.step)
		frBy := map[string]ingest.Series{}
		for _, x := range fr {
			frBy[x.Labels.String()] = x
		}
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			get := func(i int) float64 {
				if v, ok := ws[i].val[k]; ok {
					return v
				}
				return math.NaN()
			}
			ser := SLOSeries{ID: "slo-" + strings.Trim(idRE.ReplaceAllString(strings.ToLower(s.Name+"-"+k), "-"), "-"),
				Labels: labels[k].Map(), SLIPeriod: F(1 - get(3)), SLIWindow: F(1 - get(4)),
				WindowData:  F(math.Min(1, float64(have[k])/math.Max(1, s.Window.Hours()))),
				BudgetSpent: F(BudgetSpent(get(4), obj)),
				Burn1h:      F(BurnRate(get(0), obj)), Burn6h: F(BurnRate(get(1), obj)), Burn24h: F(BurnRate(get(2), obj))}
			ser.BudgetLeft = F(1 - float64(ser.BudgetSpent))
			// The period's share of the window's budget, the window's events
			// taken as spread evenly over the part of it the store holds.
			if wd := float64(ser.WindowData); wd > 0 {
				ser.PeriodBudget = F(BudgetSpent(get(3), obj) * b.end.Sub(b.start).Seconds() / (s.Window.Seconds() * wd))
			} else {
				ser.PeriodBudget = F(math.NaN())
			}
			if finite(float64(ser.SLIWindow)) {
				met := float64(ser.SLIWindow) >= obj
				ser.Met = &met
			}
			for _, t := range tr {
				if t.Labels.String() != k {
					continue
				}
				g := frBy[k]
				for i, ts := range t.Timestamps {
					gv := ValueAt(g.Timestamps, g.Values, ts, 0)
					if !finite(gv) {
						gv = 0
					}
					er := ErrorRatio(gv, t.Values[i])
					if errs && t.Values[i] > 0 {
						er = math.Min(1, gv/t.Values[i])
					}
					if finite(er) {
						ser.chart = append(ser.chart, point{ts, 100 * (1 - er)})
					}
				}
			}
			r.Series = append(r.Series, ser)
		}
		if len(r.Series) == 0 {
			r.Reason = "the SLI's total query returned no series at the end of the period"
			if s.Latency != nil {
				r.Reason = fmt.Sprintf("no series of %s_count%s at the end of the period", s.Latency.Metric, b.spec.Selector)
			}
		}
		b.doc.SLOs = append(b.doc.SLOs, r)
	}
}
