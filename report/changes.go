package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/internal/dur"
)

// Changes computes the sentences of "what changed and why" from the
// figures of d, each pointing at the section holding its evidence, in
// this order: models that appeared or vanished, throughput decay,
// latency, traffic against the day before and the forecast, GPU ↔
// latency-jitter coupling, label values that appeared or vanished, the
// daemon's incidents with their diagnoses, the strongest of its findings,
// SLOs burning their budget. It
// returns none when no figure crossed its
// threshold (see the constants of Build).
func Changes(d *Document) []Change {
	loc, err := time.LoadLocation(d.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	clock := func(t time.Time) string { return fmtClock(t, d.Period.Start, loc) }
	out := []Change{}
	add := func(kind, model, evidence, format string, args ...any) {
		out = append(out, Change{Kind: kind, Model: model, Evidence: evidence, Text: fmt.Sprintf(format, args...)})
	}
	for _, c := range d.FleetChanges {
		if c.Change == "appeared" {
			add("appeared", "", "models", "%s appeared: its first samples came at %s, and it had none the day before.", c.Value, clock(c.At))
		} else {
			add("vanished", "", "models", "%s sent no samples in the period; its last, the day before, came at %s.", c.Value, clock(c.At))
		}
	}
	for _, m := range d.Models {
		if dc := m.Decay; dc.Available && dc.Significant && float64(dc.EtaCurrent) >= decayMinEta {
			prev := ""
			if float64(dc.DayOverDay) > 0 {
				prev = fmt.Sprintf("; the last day's mean η is %s higher than the day before's", fmtNum(float64(dc.DayOverDay), 2))
			}
			add("decay", m.Name, m.ID+"-throughput",
				"Throughput of %s is decaying: generation tokens per running request are %s below their weekly peak at the end of the period (η = %s), and η rose %s per day (95 %% interval %s to %s)%s.",
				m.Name, pct(float64(dc.EtaCurrent)), fmtNum(float64(dc.EtaCurrent), 2), fmtNum(float64(dc.TrendPerDay), 2),
				fmtNum(float64(dc.TrendLower), 2), fmtNum(float64(dc.TrendUpper), 2), prev)
		}
		if s := latencySentence(m, d.Comparisons); s != "" {
			add("latency", m.Name, m.ID+"-latency", "%s", s)
		}
		r := m.Traffic.Requests
		if float64(r.SurgeRatio) >= surgeRatio && r.SurgeAt != nil {
			add("traffic", m.Name, m.ID+"-traffic",
				"Traffic to %s surged: from %s its request rate held %s× the rate at the same time the day before for at least 15 minutes (peak %s req/s at %s).",
				m.Name, clock(*r.SurgeAt), fmtNum(float64(r.SurgeRatio), 1), fmtNum(float64(r.Peak), 3), clockPtr(r.PeakTime, clock))
		}
		for _, f := range d.Forecasts {
			if !sameModel(f.Labels, m.Labels) || !(float64(f.LongestAboveSeconds) >= aboveForecast.Seconds()) {
				continue
			}
			add("forecast", m.Name, "forecasts",
				"%s ran above the %s %% interval of forecast %s/%s for %s in a row: more traffic came than forecast.",
				m.Name, fmtNum(100*f.Level, 0), f.Group, f.Rule, dur.Approx(time.Duration(float64(f.LongestAboveSeconds))*time.Second))
		}
		for _, c := range m.Coupling.Coupled {
			add("coupling", m.Name, m.ID+"-coupling",
				"On %s the latency turned jittery while the GPU saturated: in the two-hour windows from %s to %s, GPU utilisation (up to %s %%) and the 15-minute jitter of time to first token were coupled (Pearson r up to %s, p %s).",
				c.Instance, clock(c.Start), clock(c.End), fmtNum(float64(c.GPUMax), 0), fmtNum(float64(c.Pearson), 2), fmtP(float64(c.PValue)))
		}
		for _, c := range m.LabelChanges {
			if c.Change == "appeared" {
				add("label", m.Name, m.ID+"-labels", "%s %s of %s appeared at %s; it had no samples the day before.", c.Label, c.Value, m.Name, clock(c.At))
			} else {
				add("label", m.Name, m.ID+"-labels", "%s %s of %s vanished: its last sample came the day before, at %s.", c.Label, c.Value, m.Name, clock(c.At))
			}
		}
	}
	for _, inc := range d.Incidents {
		model := ""
		for _, m := range d.Models {
			if sameModel(inc.Labels, m.Labels) {
				model = m.Name
			}
		}
		end := "still open at the end of the period"
		if inc.ResolvedAt != nil {
			end = "resolved at " + clock(*inc.ResolvedAt)
		}
		where := ""
		if pods := inc.Where["pod"]; len(pods) > 0 {
			where = " on " + plural(len(pods), "pod", "pods") + " " + strings.Join(pods, ", ")
		}
		diag := "no diagnosis fits its evidence"
		if inc.Diagnosis != "none" {
			diag = fmt.Sprintf("its first diagnosis is %s (%s of its conditions hold); what to check: %s", inc.Title, pct(float64(inc.Confidence)), inc.Check)
		}
		add("incident", model, "incidents", "An incident on %s: %d %s%s, anomalous from %s, %s; %s.",
			inc.Unit, inc.Alerts, plural(inc.Alerts, "alert", "alerts"), where, clock(inc.Start), end, diag)
	}
	if a := d.Anomalies; a.Count > 0 && len(a.Top) > 0 {
		top := a.Top[0]
		rule := strings.Trim(top.Group+"/"+top.Rule, "/")
		when := "from " + clock(top.Start) + " to " + clock(top.End)
		if !top.End.After(top.Start) {
			when = "at " + clock(top.End)
		}
		add("anomaly", "", "anomalies", "The daemon published %d %s in the period; the strongest, a%s %s finding of %s on %s, came %s (score %s).",
			a.Count, plural(a.Count, "finding", "findings"), article(top.Kind), top.Kind, rule, top.Series, when, fmtNum(float64(top.Score), 1))
	}
	for _, s := range d.SLOs {
		for _, ser := range s.Series {
			name := s.Name
			if l := labelText(ser.Labels); l != "" {
				name += " (" + l + ")"
			}
			switch {
			case ser.Met != nil && !*ser.Met:
				add("slo", "", ser.ID, "SLO %s is missed: %s of events were good over its %s window against an objective of %s %%; the period used %s of the window's error budget.",
					name, sliPct(float64(ser.SLIWindow)), dur.Approx(time.Duration(s.WindowSeconds)*time.Second), strconv.FormatFloat(s.ObjectivePct, 'f', -1, 64), pct(float64(ser.PeriodBudget)))
			case float64(ser.Burn1h) >= fastBurn:
				add("slo", "", ser.ID, "SLO %s burned its error budget %s× faster than sustainable over the last hour of the period.", name, fmtNum(float64(ser.Burn1h), 1))
			case float64(ser.Burn24h) >= 1:
				add("slo", "", ser.ID, "SLO %s spent its error budget %s× faster than sustainable over the last 24 hours; %s of the budget is left.",
					name, fmtNum(float64(ser.Burn24h), 1), pct(math.Max(0, float64(ser.BudgetLeft))))
			}
		}
	}
	return out
}

// latencySentence names the largest rise of a P95 or P99 against the day
// before, when one crossed the threshold.
func latencySentence(m Model, comps []Period) string {
	ci := -1
	for i, c := range comps {
		if c.Label == "day before" {
			ci = i
		}
	}
	if ci < 0 {
		return ""
	}
	best, text := 0.0, ""
	for _, l := range m.Latency {
		for _, q := range l.Quantiles {
			if q.Q < 0.95 {
				continue
			}
			ch, now, prev := float64(q.Change[ci]), float64(q.Value), float64(q.Previous[ci])
			if !(ch >= latencyChange) || now-prev < minLatencyDelta || ch <= best {
				continue
			}
			best = ch
			text = fmt.Sprintf("P%s %s of %s rose %s against the day before, from %s to %s.",
				strconv.FormatFloat(100*q.Q, 'f', -1, 64), strings.ToLower(l.Title), m.Name, pct(ch), fmtSeconds(prev), fmtSeconds(now))
		}
	}
	return text
}

func sameModel(labels, model map[string]string) bool {
	for k, v := range model {
		if labels[k] != v {
			return false
		}
	}
	return len(model) > 0
}

func labelText(ls map[string]string) string {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	sortStrings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + ls[k]
	}
	return strings.Join(parts, ", ")
}

func clockPtr(t *time.Time, clock func(time.Time) string) string {
	if t == nil {
		return "an unknown time"
	}
	return clock(*t)
}

// The formatting helpers never print NaN: an undefined figure reads "no
// data" (or "—" in tables, see cell).

func fmtNum(x float64, prec int) string {
	if !finite(x) {
		return "no data"
	}
	if prec == 0 {
		return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	}
	if math.Abs(x) >= 1000 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', prec+1, 64)
}

func fmtSigned(x float64, prec int) string {
	if !finite(x) {
		return "no data"
	}
	s := fmtNum(x, prec)
	if x > 0 {
		s = "+" + s
	}
	return s
}

func pct(x float64) string {
	if !finite(x) {
		return "no data"
	}
	v := 100 * x
	switch {
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64) + " %"
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " %"
}

// sliPct formats a share of good events finely enough to tell it from an
// objective such as 99.9 %.
func sliPct(x float64) string {
	switch {
	case !finite(x):
		return "no data"
	case x == 1:
		return "100 %"
	}
	return strconv.FormatFloat(100*x, 'f', 3, 64) + " %"
}

func fmtSeconds(x float64) string {
	switch {
	case !finite(x):
		return "no data"
	case x < 1:
		return strconv.FormatFloat(x*1000, 'f', 0, 64) + " ms"
	case x < 10:
		return strconv.FormatFloat(x, 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + " s"
}

func fmtP(p float64) string {
	switch {
	case !finite(p):
		return "unknown"
	case p < 1e-4:
		return "< 0.0001"
	}
	return "= " + strconv.FormatFloat(p, 'g', 2, 64)
}

func sortStrings(s []string) { slices.Sort(s) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// article is "n" before a kind that starts with a vowel, for "a"/"an".
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "n"
	}
	return ""
}
