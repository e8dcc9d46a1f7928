package alerting

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// A first diagnosis of an incident comes from a table of rules, each a set
// of conditions on the incident's members (which signals are anomalous
// and in which direction, and the values they showed) and on the levels
// of the unit's signals around it, anomalous or not. A rule
// applies when all its required conditions (When) hold; its confidence is
// the share of all its conditions (When and Also) that hold. The rule
// with the highest confidence wins, the earlier on a tie; when none
// applies, the incident has no diagnosis and lists its evidence.

// DiagnosisNone is the name of the diagnosis of an incident no rule fits.
const DiagnosisNone = "none"

// The directions a Condition can ask of a signal.
const (
	IsUp        = "up"        // a member of the signal is anomalous upwards
	IsDown      = "down"      // downwards
	IsAnomalous = "anomalous" // either way
	IsNormal    = "normal"    // no member of the signal
)

// Condition is one condition of a diagnosis rule on the members of one
// signal: Is asks for a direction (up, down, anomalous, normal), Above and
// Below for a reading (the members' value, or their Detail when set: a
// figure the rule kind measured, e.g. a correlation's x_max). Above holds
// when a member's reading is at least it, Below when every member's
// reading is under it (and there is one). A condition with Any holds when
// one of them holds. LevelAbove and LevelBelow ask for the signal's level
// instead, alerts or not: the highest reading of the unit's series of it
// around the incident (Incident.Levels) is at least LevelAbove, under
// LevelBelow. LabelChanged asks for a change of one of Labels (none: any
// label) on the unit shortly before or during the incident
// (Incident.Changes), and ForecastMissed for load above a forecast's
// interval around it (Incident.ForecastMiss); neither needs a Signal.
type Condition struct {
	Signal     string
	Is         string
	Detail     string
	Above      *float64
	Below      *float64
	LevelAbove *float64
	LevelBelow *float64
	// LabelChanged and Labels ask for a label change.
	LabelChanged bool
	Labels       []string
	// ForecastMissed asks for load above a forecast's interval.
	ForecastMissed bool
	Any            []Condition
}

func (c Condition) String() string {
	if len(c.Any) > 0 {
		var parts []string
		for _, a := range c.Any {
			parts = append(parts, a.String())
		}
		return "(" + strings.Join(parts, " or ") + ")"
	}
	if c.ForecastMissed {
		return "load above the forecast's interval"
	}
	if c.LabelChanged {
		if len(c.Labels) == 0 {
			return "a label changed"
		}
		return strings.Join(c.Labels, " or ") + " changed"
	}
	var parts []string
	if c.LevelAbove != nil {
		parts = append(parts, fmt.Sprintf("reads ≥ %g", *c.LevelAbove))
	}
	if c.LevelBelow != nil {
		parts = append(parts, fmt.Sprintf("reads < %g", *c.LevelBelow))
	}
	if c.Is != "" {
		parts = append(parts, c.Is)
	}
	what := "value"
	if c.Detail != "" {
		what = c.Detail
	}
	if c.Above != nil {
		parts = append(parts, fmt.Sprintf("%s ≥ %g", what, *c.Above))
	}
	if c.Below != nil {
		parts = append(parts, fmt.Sprintf("%s < %g", what, *c.Below))
	}
	return c.Signal + " " + strings.Join(parts, ", ")
}

// DiagnosisRule is one row of the diagnosis table.
type DiagnosisRule struct {
	// Name identifies the diagnosis (e.g. gpu_saturation), Title names it
	// for people, Check says what to check and do.
	Name, Title, Check string
	// When are the conditions that must all hold; Also those that add to
	// the confidence.
	When, Also []Condition
}

// Diagnosis is the first diagnosis of an incident.
type Diagnosis struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Check string `json:"check,omitempty"`
	// Confidence is Held of Total conditions.
	Confidence float64 `json:"confidence"`
	Held       int     `json:"held"`
	Total      int     `json:"total"`
	// Evidence says, condition by condition, whether it holds and on what;
	// for no diagnosis, what the members found.
	Evidence []string `json:"evidence"`
	// Others are the other diagnoses that apply, with less confidence.
	Others []string `json:"others,omitempty"`
}

// String writes the diagnosis for people, one line per item.
func (d Diagnosis) String() string {
	var b strings.Builder
	if d.Name == DiagnosisNone || d.Name == "" {
		b.WriteString("No diagnosis. Evidence:\n")
	} else {
		fmt.Fprintf(&b, "Diagnosis: %s (confidence %.2f, %d of %d conditions hold).\n", d.Title, d.Confidence, d.Held, d.Total)
	}
	for _, e := range d.Evidence {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	if d.Check != "" {
		fmt.Fprintf(&b, "Check: %s\n", d.Check)
	}
	if len(d.Others) > 0 {
		fmt.Fprintf(&b, "Also possible: %s\n", strings.Join(d.Others, ", "))
	}
	return b.String()
}

// Diagnose returns the first diagnosis of inc by the rules, in order of
// preference.
func Diagnose(inc *Incident, rules []DiagnosisRule) Diagnosis {
	best := Diagnosis{Name: DiagnosisNone, Title: "no diagnosis"}
	var applied []Diagnosis
	for _, r := range rules {
		d := Diagnosis{Name: r.Name, Title: r.Title, Check: r.Check, Total: len(r.When) + len(r.Also)}
		ok := true
		for i, c := range append(append([]Condition(nil), r.When...), r.Also...) {
			held, why := holds(inc, c)
			mark := "✗"
			if held {
				mark = "✓"
				d.Held++
			} else if i < len(r.When) {
				ok = false
			}
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s %s: %s", mark, c, why))
		}
		if !ok || d.Total == 0 {
			continue
		}
		d.Confidence = float64(d.Held) / float64(d.Total)
		applied = append(applied, d)
	}
	for _, d := range applied {
		if best.Name == DiagnosisNone || d.Confidence > best.Confidence {
			best = d
		}
	}
	if best.Name == DiagnosisNone {
		for i := range inc.Members {
			m := &inc.Members[i]
			best.Evidence = append(best.Evidence, memberEvidence(m))
		}
		return best
	}
	for _, d := range applied {
		if d.Name != best.Name {
			best.Others = append(best.Others, fmt.Sprintf("%s (%.2f)", d.Title, d.Confidence))
		}
	}
	if sc := inc.Scale; sc != nil {
		running := "running unknown"
		if sc.CurrentReplicas != nil {
			running = fmt.Sprintf("%d running", *sc.CurrentReplicas)
		}
		best.Evidence = append(best.Evidence, fmt.Sprintf("the scale signal asks for %d replicas of %s (%s; rule %s at %s)",
			sc.DesiredReplicas, sc.Target, running, sc.Rule, sc.Time.UTC().Format(time.RFC3339)))
	}
	return best
}

// holds says whether c holds on the incident's members and why.
func holds(inc *Incident, c Condition) (bool, string) {
	if len(c.Any) > 0 {
		var whys []string
		for _, a := range c.Any {
			ok, why := holds(inc, a)
			if ok {
				return true, why
			}
			whys = append(whys, why)
		}
		return false, strings.Join(whys, "; ")
	}
	if c.LabelChanged {
		return holdsChange(inc, c)
	}
	if c.ForecastMissed {
		m := inc.ForecastMiss
		if m == nil {
			return false, "no point above a forecast's interval around the incident"
		}
		return true, fmt.Sprintf("%s on %s read %s at %s, above the upper bound %s of its forecast from %s", m.Rule, m.Series,
			fmtNum(float64(m.Value)), m.Time.UTC().Format(time.RFC3339), fmtNum(float64(m.Upper)), m.Origin.UTC().Format(time.RFC3339))
	}
	if c.LevelAbove != nil || c.LevelBelow != nil {
		return holdsLevel(inc, c)
	}
	var ms []*IncidentMember
	for i := range inc.Members {
		if inc.Members[i].Signal == c.Signal {
			ms = append(ms, &inc.Members[i])
		}
	}
	if c.Is == IsNormal {
		if len(ms) == 0 {
			return true, "no alert of it"
		}
		return false, memberEvidence(ms[0])
	}
	if len(ms) == 0 {
		return false, "no alert of it"
	}
	var hit *IncidentMember
	for _, m := range ms {
		switch c.Is {
		case IsUp, IsDown:
			if m.Direction != c.Is {
				continue
			}
		}
		if c.Above == nil && c.Below == nil {
			hit = m
			break
		}
		x, ok := reading(m, c.Detail)
		if !ok {
			continue
		}
		if c.Above != nil && x < *c.Above {
			continue
		}
		if c.Below != nil && x >= *c.Below {
			// Below asks that every member reads under it.
			return false, memberEvidence(m)
		}
		if hit == nil {
			hit = m
		}
	}
	if hit == nil {
		return false, fmt.Sprintf("%d alerts of it, none fits: %s", len(ms), memberEvidence(ms[0]))
	}
	return true, memberEvidence(hit)
}

// holdsLevel says whether the level conditions of c hold on the
// incident's reading of the signal and why.
func holdsLevel(inc *Incident, c Condition) (bool, string) {
	l, ok := inc.Levels[c.Signal]
	if !ok {
		return false, "no reading of it around the incident"
	}
	x := float64(l.Value)
	held := (c.LevelAbove == nil || x >= *c.LevelAbove) && (c.LevelBelow == nil || x < *c.LevelBelow)
	return held, fmt.Sprintf("%s on %s read %s at %s, its highest from the gap before the start", l.Rule, l.Series, fmtNum(x),
		l.Time.UTC().Format(time.RFC3339))
}

// holdsChange says whether one of the label changes of the incident is
// of a label c asks about, and which.
func holdsChange(inc *Incident, c Condition) (bool, string) {
	for _, ch := range slices.Backward(inc.Changes) {
		if len(c.Labels) == 0 || slices.Contains(c.Labels, ch.Label) {
			return true, fmt.Sprintf("%s %s → %s at %s, on %s", ch.Label, ch.Old, ch.New, ch.Time.UTC().Format(time.RFC3339), ch.Series)
		}
	}
	return false, "no label change shortly before or during the incident"
}

// reading is a member's value, or its detail when named.
func reading(m *IncidentMember, detail string) (float64, bool) {
	if detail == "" {
		x := float64(m.Value)
		return x, isNum(x)
	}
	switch v := m.Details[detail].(type) {
	case float64:
		return v, isNum(v)
	case int:
		return float64(v), true
	case JSONFloat:
		return float64(v), isNum(float64(v))
	case interface{ Float64() (float64, error) }:
		x, err := v.Float64()
		return x, err == nil && isNum(x)
	}
	return math.NaN(), false
}

// memberEvidence says in a line what a member found.
func memberEvidence(m *IncidentMember) string {
	dir := ""
	if m.Direction != "" {
		dir = " " + m.Direction
	}
	s := fmt.Sprintf("%s%s on %s: %s against an expected %s (score %.3g)", m.Rule, dir, m.Series,
		fmtNum(float64(m.Value)), fmtNum(float64(m.Expected)), float64(m.Score))
	for _, k := range []string{"eta_current", "pearson", "best_lag_seconds", "x_max"} {
		if x, ok := reading(m, k); ok {
			s += fmt.Sprintf(", %s %.3g", k, x)
		}
	}
	return s
}

// levelSignals are the signals whose levels the rules ask about, sorted.
func levelSignals(rules []DiagnosisRule) []string {
	var out []string
	var walk func(cs []Condition)
	walk = func(cs []Condition) {
		for _, c := range cs {
			if (c.LevelAbove != nil || c.LevelBelow != nil) && !slices.Contains(out, c.Signal) {
				out = append(out, c.Signal)
			}
			walk(c.Any)
		}
	}
	for _, r := range rules {
		walk(r.When)
		walk(r.Also)
	}
	slices.Sort(out)
	return out
}
