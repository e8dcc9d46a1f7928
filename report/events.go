package report

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
)

// Subjects are the subjects a report reads under prefix.
func Subjects(prefix string) []string {
	return []string{prefix + ".findings.>", prefix + ".alerts.>", prefix + ".forecasts.>", prefix + ".scale.>", prefix + ".incidents.>"}
}

// readLead is how long before the period events are read from: a
// forecast whose target lies in the period was made up to its horizon
// earlier.
const readLead = 2 * time.Hour

func (b *builder) events(ctx context.Context) {
	subjects := Subjects(b.r.o.Prefix)
	b.doc.Events.Subjects = subjects
	if b.r.o.Events == nil {
		b.doc.Events.Error = "no event stream configured"
		b.note("The daemon's events were not read (no NATS stream): anomalies, alerts, forecasts and scale signals are not reported.")
		return
	}
	evs, err := b.r.o.Events.ReadEvents(ctx, subjects, b.start.Add(-readLead))
	if err != nil {
		b.doc.Events.Error = err.Error()
		b.note("The daemon's events could not be read: %v", err)
		return
	}
	b.doc.Events.Read = true
	var findings []alerting.Finding
	var alerts []alerting.AlertData
	var forecasts []alerting.ForecastData
	var scales []alerting.ScaleData
	incidents := map[string]alerting.IncidentData{}
	for _, rc := range evs {
		ev := rc.Event
		var err error
		switch {
		case ev.Type == alerting.FindingEventType || strings.HasPrefix(ev.Type, "io.inferwatch.finding."):
			var f alerting.Finding
			if err = decodeData(ev.Data, &f); err == nil && b.inPeriod(f.WindowEnd) && b.wanted(f.Group, f.Rule) {
				findings = append(findings, f)
			}
		case ev.Type == alerting.AlertEventType:
			var a alerting.AlertData
			if err = decodeData(ev.Data, &a); err == nil && b.wanted(a.Group, a.Rule) {
				alerts = append(alerts, a)
			}
		case ev.Type == alerting.ForecastEventType || ev.Type == "io.inferwatch.forecast":
			var d alerting.ForecastData
			if err = decodeData(ev.Data, &d); err == nil {
				forecasts = append(forecasts, d)
			}
		case ev.Type == alerting.ScaleEventType || ev.Type == "io.inferwatch.scale":
			var d alerting.ScaleData
			if err = decodeData(ev.Data, &d); err == nil && b.inPeriod(d.Time) && b.wanted(d.Group, d.Rule) {
				scales = append(scales, d)
			}
		case ev.Type == alerting.IncidentEventType:
			var d alerting.IncidentData
			if err = decodeData(ev.Data, &d); err == nil {
				if old, ok := incidents[d.ID]; !ok || d.Version > old.Version {
					incidents[d.ID] = d
				}
			}
		default:
			continue
		}
		if err != nil {
			b.doc.Events.Undecoded++
			continue
		}
		b.doc.Events.Count++
	}
	if n := b.doc.Events.Undecoded; n > 0 {
		b.note("%d events on %s could not be decoded and were left out.", n, strings.Join(subjects, ", "))
	}
	b.findings(findings)
	b.alerts(alerts)
	b.forecastChecks(ctx, forecasts)
	b.scaleSignals(scales)
	b.incidents(incidents)
}

// overlaps reports whether an incident was open at some time of the
// period.
func (b *builder) overlaps(d alerting.IncidentData) bool {
	return d.Start.Before(b.end) && (d.ResolvedAt == nil || d.ResolvedAt.After(b.start))
}

// wantedIncident reports whether the report covers an alert of the
// incident.
func (b *builder) wantedIncident(d alerting.IncidentData) bool {
	for _, m := range d.Members {
		if b.wanted(m.Group, m.Rule) {
			return true
		}
	}
	return false
}

// incidents keeps the newest event of each incident open in the period
// with an alert the report covers, in the order of their starts.
func (b *builder) incidents(byID map[string]alerting.IncidentData) {
	b.doc.Incidents = []Incident{}
	for _, d := range byID {
		if !b.overlaps(d) || !b.wantedIncident(d) {
			continue
		}
		b.doc.Incidents = append(b.doc.Incidents, Incident{ID: d.ID, Group: d.Group, Unit: d.Unit, Labels: d.UnitLabels,
			Start: d.Start.UTC(), End: d.End.UTC(), ResolvedAt: d.ResolvedAt, Alerts: len(d.Members) + d.Dropped, Where: d.Where,
			Diagnosis: d.Diagnosis.Name, Title: d.Diagnosis.Title, Confidence: F(d.Diagnosis.Confidence), Check: d.Diagnosis.Check,
			Evidence: append([]string{}, d.Diagnosis.Evidence...)})
	}
	sort.Slice(b.doc.Incidents, func(i, j int) bool {
		a, c := b.doc.Incidents[i], b.doc.Incidents[j]
		if !a.Start.Equal(c.Start) {
			return a.Start.Before(c.Start)
		}
		return a.ID < c.ID
	})
}

// decodeData decodes an event's data, whose undefined figures are null.
func decodeData(data json.RawMessage, v any) error {
	return json.Unmarshal(data, v)
}

func (b *builder) inPeriod(t time.Time) bool { return t.After(b.start) && !t.After(b.end) }

// wanted reports whether the report covers the results of rule r of
// group g: its groups and its rules (a name or group/rule), when set.
func (b *builder) wanted(g, r string) bool {
	return (len(b.spec.Groups) == 0 || slices.Contains(b.spec.Groups, g)) &&
		(len(b.spec.Rules) == 0 || slices.Contains(b.spec.Rules, r) || slices.Contains(b.spec.Rules, g+"/"+r))
}

func (b *builder) findings(fs []alerting.Finding) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].WindowEnd.Before(fs[j].WindowEnd) })
	eps := make([]Episode, 0, len(fs))
	for _, f := range fs {
		eps = append(eps, Episode{Kind: f.Kind, Group: f.Group, Rule: f.Rule, Series: f.Series, Labels: f.Labels,
			Start: f.WindowStart.UTC(), End: f.WindowEnd.UTC(), Severity: f.Severity, Score: F(f.Score), Value: F(f.Value)})
		if m := b.model(ingest.LabelsFromMap(f.Labels)); m != nil {
			m.charts.marks = append(m.charts.marks, Span{Start: f.WindowStart, End: f.WindowEnd})
		}
	}
	b.doc.Anomalies = summarize(eps)
}

func (b *builder) alerts(as []alerting.AlertData) {
	// An alert announces each transition of one episode (pending, firing,
	// repeat, resolved), all with the episode's first anomalous point: one
	// episode per group, rule, series and start, counted when it fired,
	// from when it became active to when it resolved (the period's end
	// while it fires).
	type key struct {
		group, rule, series string
		start               int64
	}
	byKey := map[key]*Episode{}
	fired := map[key]bool{}
	var order []key
	sort.SliceStable(as, func(i, j int) bool { return as[i].Time.Before(as[j].Time) })
	for _, a := range as {
		k := key{a.Group, a.Rule, a.Series, a.ActiveAt.UnixMilli()}
		e, ok := byKey[k]
		if !ok {
			e = &Episode{Kind: "alert", Group: a.Group, Rule: a.Rule, Series: a.Series, Labels: a.Labels, Start: a.ActiveAt.UTC(),
				End: b.end.UTC(), Severity: a.Severity, Score: F(math.NaN()), Value: F(math.NaN())}
			byKey[k] = e
			order = append(order, k)
		}
		if a.FiredAt != nil {
			fired[k] = true
		}
		if a.Status == alerting.StatusResolved && a.ResolvedAt != nil {
			e.End = a.ResolvedAt.UTC()
		}
		if sc := float64(a.Score); finite(sc) && (!finite(float64(e.Score)) || sc > float64(e.Score)) {
			e.Score, e.Value = a.Score, a.Value
		}
		if a.Severity != "" {
			e.Severity = a.Severity
		}
	}
	eps := []Episode{}
	for _, k := range order {
		e := byKey[k]
		if !fired[k] || !e.End.After(b.start) || e.Start.After(b.end) {
			continue
		}
		if e.Start.Before(b.start) {
			e.Start = b.start.UTC() // the part in the period
		}
		if e.End.After(b.end) {
			e.End = b.end.UTC()
		}
		eps = append(eps, *e)
	}
	b.doc.Alerts = summarize(eps)
}

// summarize counts episodes and keeps the five strongest (by score, then
// by length).
func summarize(eps []Episode) Episodes {
	out := emptyEpisodes()
	out.Count = len(eps)
	var total float64
	for _, e := range eps {
		total += e.End.Sub(e.Start).Seconds()
		out.ByKind[e.Kind]++
	}
	out.TotalSeconds = F(total)
	top := append([]Episode(nil), eps...)
	sort.SliceStable(top, func(i, j int) bool {
		si, sj := float64(top[i].Score), float64(top[j].Score)
		if finite(si) && finite(sj) && si != sj {
			return si > sj
		}
		if finite(si) != finite(sj) {
			return finite(si)
		}
		return top[i].End.Sub(top[i].Start) > top[j].End.Sub(top[j].Start)
	})
	if len(top) > 5 {
		top = top[:5]
	}
	out.Top = append(out.Top, top...)
	return out
}

func (b *builder) forecastChecks(ctx context.Context, fs []alerting.ForecastData) {
	type key struct{ group, rule, series string }
	byKey := map[key][]alerting.ForecastData{}
	var keys []key
	for _, f := range fs {
		if len(f.Points) == 0 || !b.wanted(f.Group, f.Rule) {
			continue
		}
		target := f.Points[len(f.Points)-1].Time
		if !b.inPeriod(target) {
			continue
		}
		k := key{f.Group, f.Rule, f.Series}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], f)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, c := keys[i], keys[j]
		return a.group < c.group || a.group == c.group && (a.rule < c.rule || a.rule == c.rule && a.series < c.series)
	})
	actuals := map[[2]string][]ingest.Series{}
	for _, k := range keys {
		evs := byKey[k]
		sort.Slice(evs, func(i, j int) bool { return evs[i].Origin.Before(evs[j].Origin) })
		last := evs[len(evs)-1]
		fr := ForecastRule{Group: k.group, Rule: k.rule, Series: k.series, Labels: last.Labels, Events: len(evs),
			LeadSeconds: last.HorizonSeconds, Level: last.Level, Reported: last.Accuracy,
			MAE: F(math.NaN()), NaiveMAE: F(math.NaN()), Ratio: F(math.NaN()), Coverage: F(math.NaN()), LongestAboveSeconds: F(math.NaN())}
		var expr string
		var step time.Duration
		ok := false
		if b.r.o.Forecasts != nil {
			expr, step, ok = b.r.o.Forecasts(k.group, k.rule)
		}
		if !ok {
			fr.Reason = fmt.Sprintf("rule %s/%s is not in the configuration, so its forecasts cannot be checked against the store; its own accuracy is shown", k.group, k.rule)
			b.doc.Forecasts = append(b.doc.Forecasts, fr)
			continue
		}
		ak := [2]string{k.group, k.rule}
		ss, seen := actuals[ak]
		if !seen {
			if step <= 0 {
				step = time.Minute
			}
			ss = b.query(ctx, "The actuals of forecast rule "+k.group+"/"+k.rule, expr, b.start, b.end, step)
			actuals[ak] = ss
		}
		act, found := matchSeries(ss, k.series, last.Labels)
		if !found {
			fr.Reason = "the store has no series " + k.series + " of the rule's query in the period"
			b.doc.Forecasts = append(b.doc.Forecasts, fr)
			continue
		}
		tol := int64(last.StepSeconds*1000) / 2
		var outs []ForecastOutcome
		for _, f := range evs {
			p := f.Points[len(f.Points)-1]
			o := ForecastOutcome{Mean: float64(p.Mean), Lower: float64(p.Lower), Upper: float64(p.Upper), Naive: float64(f.LastValue),
				Actual: ValueAt(act.Timestamps, act.Values, p.Time.UnixMilli(), tol)}
			outs = append(outs, o)
			if m := b.model(ingest.LabelsFromMap(f.Labels)); m != nil && finite(o.Lower) && finite(o.Upper) {
				m.charts.forecast = append(m.charts.forecast, band{T: p.Time.UnixMilli(), Lower: o.Lower, Upper: o.Upper, Mean: o.Mean})
			}
		}
		a := ScoreForecasts(outs)
		fr.Checked, fr.MAE, fr.NaiveMAE, fr.Ratio, fr.Coverage = a.N, F(a.MAE), F(a.NaiveMAE), F(a.Ratio), F(a.Cover)
		fr.AboveUpper, fr.LongestAbove = a.AboveUpper, a.LongestAboveRun
		if len(evs) > 1 {
			spacing := evs[len(evs)-1].Origin.Sub(evs[0].Origin).Seconds() / float64(len(evs)-1)
			fr.LongestAboveSeconds = F(float64(a.LongestAboveRun) * spacing)
		}
		if a.N == 0 {
			fr.Reason = "no forecast of the period has an actual in the store yet"
		}
		b.doc.Forecasts = append(b.doc.Forecasts, fr)
	}
	for _, m := range b.models {
		sort.Slice(m.charts.forecast, func(i, j int) bool { return m.charts.forecast[i].T < m.charts.forecast[j].T })
	}
}

// matchSeries finds the series of a query result that a forecast was
// made for: by its identity, else by its labels.
func matchSeries(ss []ingest.Series, series string, labels map[string]string) (ingest.Series, bool) {
	for _, s := range ss {
		if s.Labels.String() == series {
			return s, true
		}
	}
	for _, s := range ss {
		ok := len(s.Labels) > 0
		for _, l := range s.Labels {
			if l.Name != "__name__" && labels[l.Name] != l.Value {
				ok = false
				break
			}
		}
		if ok {
			return s, true
		}
	}
	return ingest.Series{}, false
}

func (b *builder) scaleSignals(ss []alerting.ScaleData) {
	type key struct{ group, rule, target string }
	byKey := map[key]*ScaleTarget{}
	var keys []key
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Time.Before(ss[j].Time) })
	for _, s := range ss {
		k := key{s.Group, s.Rule, s.Target}
		t, ok := byKey[k]
		if !ok {
			t = &ScaleTarget{Group: s.Group, Rule: s.Rule, Target: s.Target, Min: s.DesiredReplicas, Max: s.DesiredReplicas}
			byKey[k] = t
			keys = append(keys, k)
		}
		t.Signals++
		t.Min, t.Max = min(t.Min, s.DesiredReplicas), max(t.Max, s.DesiredReplicas)
		t.Last, t.Desired, t.Current, t.Tier, t.Reason = s.Time.UTC(), s.DesiredReplicas, s.CurrentReplicas, s.Tier, s.Reason
	}
	for _, k := range keys {
		b.doc.Scale = append(b.doc.Scale, *byKey[k])
	}
}
