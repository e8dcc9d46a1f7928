package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/internal/dur"
)

// JSON encodes d, indented, in the schema of schema/report.v1.json.
func JSON(d *Document) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding report %s: %w", d.Name, err)
	}
	return append(b, '\n'), nil
}

// Markdown renders the summary and the tables of d.
func Markdown(d *Document) []byte {
	loc, err := time.LoadLocation(d.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	clock := func(t time.Time) string { return fmtClock(t, d.Period.Start, loc) }
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	row := func(cells ...string) {
		for i := range cells {
			cells[i] = strings.ReplaceAll(cells[i], "|", `\|`)
		}
		w("| %s |\n", strings.Join(cells, " | "))
	}
	head := func(cells ...string) {
		row(cells...)
		w("|%s|\n", strings.Repeat(" --- |", len(cells)))
	}
	w("# inferwatch report %s: %s\n\n", d.Name, periodText(d.Period, loc))
	if d.Period.ClockChange != "" {
		w("The period is %s.\n\n", d.Period.ClockChange)
	}
	var comps []string
	for _, c := range d.Comparisons {
		comps = append(comps, "the "+c.Label+" ("+periodText(c, loc)+")")
	}
	if len(comps) > 0 {
		w("Compared with %s.\n\n", strings.Join(comps, " and "))
	}
	w("## What changed and why\n\n")
	if len(d.Changes) == 0 {
		w("Nothing crossed a threshold in this period.\n\n")
	}
	for _, c := range d.Changes {
		w("- %s\n", c.Text)
	}
	if len(d.Changes) > 0 {
		w("\n")
	}
	w("## Models\n\n")
	if len(d.Models) == 0 {
		w("No model of this fleet has samples in the period.\n\n")
	}
	for _, m := range d.Models {
		w("### %s\n\n", m.Name)
		if m.Coverage.FirstSample == nil {
			w("No samples in the period.\n\n")
			continue
		}
		w("Samples cover %s of the period; %d replicas at its end.\n\n", pct(float64(m.Coverage.Share)), m.Replicas.AtEnd)
		cols := []string{"latency", "quantile", "period"}
		for _, c := range d.Comparisons {
			cols = append(cols, c.Label, "change")
		}
		head(cols...)
		for _, l := range m.Latency {
			if !l.Available {
				row(append([]string{l.Title, "—", "no data"}, make([]string, 2*len(d.Comparisons))...)...)
				continue
			}
			for _, q := range l.Quantiles {
				cells := []string{l.Title, "P" + strconv.FormatFloat(100*q.Q, 'f', -1, 64), cell(fmtSeconds(float64(q.Value)))}
				for i := range q.Previous {
					cells = append(cells, cell(fmtSeconds(float64(q.Previous[i]))), signedPct(q.Change[i]))
				}
				row(cells...)
			}
		}
		w("\n")
		r := m.Traffic.Requests
		w("Requests: mean %s req/s, peak %s at %s", cell(fmtNum(float64(r.Mean), 3)), cell(fmtNum(float64(r.Peak), 3)), clockPtr(r.PeakTime, clock))
		for i, c := range d.Comparisons {
			w("; %s %s (%s)", c.Label, cell(fmtNum(float64(r.Previous[i]), 3)), signedPct(r.Change[i]))
		}
		w(".\n\n")
		if m.Decay.Available {
			w("Throughput decay: η %s at the end, trend %s per day (95 %% interval %s to %s), %s.\n\n",
				fmtNum(float64(m.Decay.EtaCurrent), 2), fmtNum(float64(m.Decay.TrendPerDay), 2), fmtNum(float64(m.Decay.TrendLower), 2),
				fmtNum(float64(m.Decay.TrendUpper), 2), map[bool]string{true: "significant", false: "not significant"}[m.Decay.Significant])
		}
		if m.Knee.Found {
			w("Knee: %s running at %s req/s; median concurrency in the period %s, %s of it at or past the knee.\n\n",
				fmtNum(float64(m.Knee.Concurrency), 3), fmtNum(float64(m.Knee.QPS), 3), fmtNum(float64(m.Knee.MedianConcurrency), 3), pct(float64(m.Knee.ShareBeyond)))
		}
		if m.Capacity.Available {
			w("Capacity: the knee's %s req/s (%s per replica); the peak used %s of it, headroom %s.",
				fmtNum(float64(m.Capacity.KneeRPS), 3), fmtNum(float64(m.Capacity.PerReplica), 3), pct(float64(m.Capacity.Utilization)), pct(float64(m.Capacity.Headroom)))
			if m.Capacity.WithinSLO != nil {
				w(" P99 end-to-end latency %s against SLO %s's %s: %s.", fmtSeconds(float64(m.Capacity.P99)), m.Capacity.SLO,
					fmtSeconds(float64(m.Capacity.SLOThreshold)), map[bool]string{true: "within", false: "over"}[*m.Capacity.WithinSLO])
			}
			w("\n\n")
		}
		for _, c := range m.Coupling.Coupled {
			w("- GPU ↔ latency jitter coupled on %s from %s to %s (r = %s).\n", c.Instance, clock(c.Start), clock(c.End), fmtNum(float64(c.Pearson), 2))
		}
		for _, c := range m.LabelChanges {
			w("- %s %s %s at %s.\n", c.Label, c.Value, c.Change, clock(c.At))
		}
		if len(m.Coupling.Coupled)+len(m.LabelChanges) > 0 {
			w("\n")
		}
	}
	w("## Service-level objectives\n\n")
	if len(d.SLOs) == 0 {
		w("No SLO is configured for this report.\n\n")
	} else {
		head("SLO", "series", "SLI period", "SLI window", "budget left", "burn 1 h", "burn 6 h", "burn 24 h")
		for _, s := range d.SLOs {
			if len(s.Series) == 0 {
				row(s.Name, "—", "not measured: "+s.Reason, "", "", "", "", "")
			}
			for _, ser := range s.Series {
				row(s.Name, labelText(ser.Labels), cell(sliPct(float64(ser.SLIPeriod))), cell(sliPct(float64(ser.SLIWindow))), cell(pct(float64(ser.BudgetLeft))),
					cell(fmtNum(float64(ser.Burn1h), 2)), cell(fmtNum(float64(ser.Burn6h), 2)), cell(fmtNum(float64(ser.Burn24h), 2)))
			}
		}
		w("\n")
	}
	w("## Anomalies and alerts\n\n")
	if !d.Events.Read {
		w("The daemon's events were not read: %s.\n\n", d.Events.Error)
	} else {
		for _, e := range []struct {
			name string
			ep   Episodes
		}{{"Findings", d.Anomalies}, {"Alert episodes", d.Alerts}} {
			w("%s: %d, %s in all.\n\n", e.name, e.ep.Count, dur.Approx(time.Duration(float64(e.ep.TotalSeconds))*time.Second))
			if len(e.ep.Top) > 0 {
				head("kind", "rule", "series", "from", "to", "score")
				for _, t := range e.ep.Top {
					row(t.Kind, strings.Trim(t.Group+"/"+t.Rule, "/"), t.Series, clock(t.Start), clock(t.End), cell(fmtNum(float64(t.Score), 2)))
				}
				w("\n")
			}
		}
	}
	w("## Incidents\n\n")
	switch {
	case !d.Events.Read:
		w("The daemon's events were not read: %s.\n\n", d.Events.Error)
	case len(d.Incidents) == 0:
		w("No incident in the period.\n\n")
	default:
		head("unit", "pods", "alerts", "from", "resolved", "diagnosis", "confidence")
		for _, inc := range d.Incidents {
			resolved := "open"
			if inc.ResolvedAt != nil {
				resolved = clock(*inc.ResolvedAt)
			}
			row(inc.Unit, strings.Join(inc.Where["pod"], ", "), strconv.Itoa(inc.Alerts), clock(inc.Start), resolved, inc.Title, cell(pct(float64(inc.Confidence))))
		}
		w("\n")
	}
	w("## Forecast accuracy and scale signals\n\n")
	if len(d.Forecasts) == 0 {
		w("No forecast event in the period.\n\n")
	} else {
		head("rule", "series", "checked", "MAE", "naive MAE", "ratio", "coverage")
		for _, f := range d.Forecasts {
			row(f.Group+"/"+f.Rule, f.Series, strconv.Itoa(f.Checked), cell(fmtNum(float64(f.MAE), 3)), cell(fmtNum(float64(f.NaiveMAE), 3)),
				cell(fmtNum(float64(f.Ratio), 3)), cell(pct(float64(f.Coverage))))
		}
		w("\n")
	}
	if len(d.Scale) == 0 {
		w("No scale signal in the period.\n\n")
	} else {
		head("rule", "target", "signals", "min", "max", "last desired")
		for _, s := range d.Scale {
			row(s.Group+"/"+s.Rule, s.Target, strconv.Itoa(s.Signals), strconv.Itoa(s.Min), strconv.Itoa(s.Max), strconv.Itoa(s.Desired))
		}
		w("\n")
	}
	if len(d.Notes) > 0 {
		w("## Notes on the data\n\n")
		for _, n := range d.Notes {
			w("- %s\n", n)
		}
	}
	return b.Bytes()
}

func signedPct(x F) string {
	if !finite(float64(x)) {
		return "—"
	}
	s := pct(float64(x))
	if x > 0 {
		s = "+" + s
	}
	return s
}
