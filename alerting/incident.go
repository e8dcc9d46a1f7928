package alerting

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// An incident gathers the alerts of one serving unit whose anomalous
// windows overlap or follow each other within a gap: a model whose GPUs
// saturate fires a TTFT, a latency, a queue, a KV-cache and a GPU alert on
// each of its pods, and a person receives one incident that lists them in
// order, with a first diagnosis. Its lifecycle is opened → updated (an
// alert joins) → resolved (every member alert resolved and the gap passed
// since the last anomalous point). JoinIncident and TickIncident are pure
// functions of the previous incident, what happened and the time; the
// Incidents type keeps the open incidents and persists them.

// IncidentStatus is what an incident event announces.
type IncidentStatus string

// The statuses of incident events.
const (
	IncidentOpened   IncidentStatus = "opened"
	IncidentUpdated  IncidentStatus = "updated"
	IncidentResolved IncidentStatus = "resolved"
)

// Defaults of an IncidentPolicy.
const (
	DefaultIncidentGap        = 10 * time.Minute
	DefaultIncidentMaxAge     = 24 * time.Hour
	DefaultIncidentMaxMembers = 100
	DefaultIncidentMaxOpen    = 1000
	// DefaultIncidentChangeWithin is how long before an incident a label
	// change counts: a decay judged over a day's window starts hours after
	// the rollout that caused it.
	DefaultIncidentChangeWithin = 2 * time.Hour
)

// DefaultIncidentBy are the labels that name a serving unit, in order of
// preference: an alert belongs to the unit of the first of them it has.
var DefaultIncidentBy = []string{"model", "model_name"}

// DefaultIncidentList are the labels whose values an incident lists: the
// pods and nodes it spans.
var DefaultIncidentList = []string{"pod", "Hostname"}

// IncidentPolicy says how alerts form incidents.
type IncidentPolicy struct {
	// By are the labels that name a serving unit: an alert belongs to the
	// unit of the first of them it has (label=value); an alert with none
	// of them forms an incident of its own.
	By []string
	// List are the labels whose values an incident lists (its pods).
	List []string
	// Gap is how long after the last anomalous point of its members an
	// incident stays open for another alert to join.
	Gap time.Duration
	// Settle is how long after the gap an incident waits before it
	// resolves, for an alert whose window started within the gap but
	// which fires later (its rule's for): the longest for of the rules.
	Settle time.Duration
	// MaxAge closes an incident whose anomalous points span this long and
	// opens its continuation with the members still firing, with a note.
	MaxAge time.Duration
	// MaxMembers bounds the alerts one incident lists; past it they are
	// counted in Dropped.
	MaxMembers int
	// MaxOpen bounds the open incidents of one group (the Incidents
	// tracker enforces it).
	MaxOpen int
	// Signals names the signal of a rule's alerts (what it measures:
	// latency, queue, gpu_util, …) by rule name; an alert's "signal" label
	// overrides it.
	Signals map[string]string
	// Diagnoses are the diagnosis rules, in order of preference.
	Diagnoses []DiagnosisRule
	// ChangeWithin is how long before its start a label change of its
	// unit (a new version) counts for an incident (default
	// DefaultIncidentChangeWithin).
	ChangeWithin time.Duration
	// ChangeLabels are the labels whose new value on a unit's series is a
	// label change (nil: DefaultChangeLabels; empty: none).
	ChangeLabels []string
}

// withDefaults fills the zero fields.
func (p IncidentPolicy) withDefaults() IncidentPolicy {
	if p.By == nil {
		p.By = DefaultIncidentBy
	}
	if p.List == nil {
		p.List = DefaultIncidentList
	}
	if p.Gap <= 0 {
		p.Gap = DefaultIncidentGap
	}
	if p.MaxAge <= 0 {
		p.MaxAge = DefaultIncidentMaxAge
	}
	if p.MaxMembers <= 0 {
		p.MaxMembers = DefaultIncidentMaxMembers
	}
	if p.MaxOpen <= 0 {
		p.MaxOpen = DefaultIncidentMaxOpen
	}
	if p.ChangeWithin <= 0 {
		p.ChangeWithin = DefaultIncidentChangeWithin
	}
	if p.ChangeLabels == nil {
		p.ChangeLabels = DefaultChangeLabels
	}
	return p
}

// IncidentMember is one alert of an incident: its series, its window and
// its strangest point.
type IncidentMember struct {
	Group    string            `json:"group"`
	Rule     string            `json:"rule"`
	Kind     string            `json:"kind"`
	Detector string            `json:"detector"`
	Series   string            `json:"series"`
	Labels   map[string]string `json:"labels"`
	Severity string            `json:"severity"`
	// Signal is what the rule measures (latency, queue, gpu_util, …);
	// empty when the incident policy does not know it.
	Signal string `json:"signal,omitempty"`
	// Direction is "up" when the strangest point lies above the expected
	// value, "down" below it, "" when the detector gives none.
	Direction       string         `json:"direction,omitempty"`
	ActiveAt        time.Time      `json:"active_at"`
	FiredAt         time.Time      `json:"fired_at"`
	LastAnomalousAt time.Time      `json:"last_anomalous_at"`
	ResolvedAt      *time.Time     `json:"resolved_at,omitempty"`
	Value           JSONFloat      `json:"value"`
	Expected        JSONFloat      `json:"expected"`
	Score           JSONFloat      `json:"score"`
	Details         map[string]any `json:"details,omitempty"`
}

// Firing reports whether the member's alert has not resolved.
func (m *IncidentMember) Firing() bool { return m.ResolvedAt == nil }

func (m *IncidentMember) key() string { return alertKey(m.Group, m.Rule, m.Series) }

// IncidentEntry is one line of an incident's timeline: an alert fired or
// resolved, or a note.
type IncidentEntry struct {
	Time time.Time `json:"time"`
	// What is "fired", "resolved" or "note".
	What   string `json:"what"`
	Rule   string `json:"rule,omitempty"`
	Series string `json:"series,omitempty"`
	Text   string `json:"text"`
}

// Incident is the state of one incident.
type Incident struct {
	// ID is the incident's stable identity: its unit, group and start.
	ID string `json:"id"`
	// Group is the rule group of the alert that opened it; the subject is
	// <prefix>.incidents.<group>.
	Group string `json:"group"`
	// Unit is the serving unit, label=value (e.g. model=llama-3-8b), or
	// the series of an alert without the unit labels.
	Unit       string            `json:"unit"`
	UnitLabels map[string]string `json:"unit_labels"`
	// Where lists, per label of the policy's List, the values the members
	// have (e.g. the pods), sorted.
	Where map[string][]string `json:"where,omitempty"`
	// Start is the earliest anomalous point of the members, End the
	// newest; OpenedAt when the first member fired; ResolvedAt when it
	// resolved.
	Start      time.Time  `json:"start"`
	End        time.Time  `json:"end"`
	OpenedAt   time.Time  `json:"opened_at"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	// Version counts the incident's events: 1 for the opening.
	Version  int              `json:"version"`
	Members  []IncidentMember `json:"members"`
	Timeline []IncidentEntry  `json:"timeline"`
	// Dropped counts the alerts past the policy's MaxMembers.
	Dropped int `json:"dropped,omitempty"`
	// Continues is the ID of the incident this one continues, closed for
	// its age.
	Continues string `json:"continues,omitempty"`
	// Levels are the readings the diagnosis rules ask about, by signal:
	// the highest of the unit's series from the gap before Start to End.
	Levels map[string]Level `json:"levels,omitempty"`
	// Changes are the label changes of the unit (a new version or image)
	// from ChangeWithin before Start to End, oldest first.
	Changes []LabelChange `json:"changes,omitempty"`
	// ForecastMiss is the unit's point furthest above its forecast's
	// interval from the gap before Start to End, if one was.
	ForecastMiss *ForecastMiss `json:"forecast_miss,omitempty"`
	// Scale is the newest scale signal of the unit when it was diagnosed:
	// the replicas to scale out to.
	Scale     *IncidentScale `json:"scale,omitempty"`
	Diagnosis Diagnosis      `json:"diagnosis"`
}

// Open reports whether the incident has not resolved.
func (inc *Incident) Open() bool { return inc.ID != "" && inc.ResolvedAt == nil }

// IncidentData is the data of an incident event, published on
// <prefix>.incidents.<group>: the incident as it stands after what the
// status announces, with a summary and description for people.
type IncidentData struct {
	Status IncidentStatus `json:"status"`
	Time   time.Time      `json:"time"`
	Incident
	Summary     string `json:"summary"`
	Description string `json:"description"`
}

// IncidentUnit returns the unit of an alert: label=value of the first
// label of by it has, with the unit's labels; an alert with none of them is
// a unit of its own (its group, rule and series).
func IncidentUnit(d *AlertData, by []string) (unit string, labels map[string]string) {
	for _, l := range by {
		if v := d.Labels[l]; v != "" {
			return l + "=" + v, map[string]string{l: v}
		}
	}
	return d.Group + "/" + d.Rule + "/" + d.Series, map[string]string{}
}

// lastEnd is the newest anomalous point of the members.
func (inc *Incident) lastEnd() time.Time {
	var t time.Time
	for i := range inc.Members {
		if m := &inc.Members[i]; m.LastAnomalousAt.After(t) {
			t = m.LastAnomalousAt
		}
	}
	return t
}

func (inc *Incident) firing() bool {
	for i := range inc.Members {
		if inc.Members[i].Firing() {
			return true
		}
	}
	return false
}

func (inc *Incident) member(key string) int {
	for i := range inc.Members {
		if inc.Members[i].key() == key {
			return i
		}
	}
	return -1
}

// JoinIncident adds an alert event to prev, the open incident of the
// alert's unit (zero: none), and returns the incident and the events it
// makes: a firing alert opens an incident or joins it (updated); a repeat
// moves its member's window; a resolved alert marks its member resolved
// (the incident resolves later, in TickIncident). Pending and inactive
// alerts are not incidents yet. prev may be the unit's last resolved
// incident: a firing alert whose window starts within it (give or take
// the gap) opens it again, as happens when one group's backfill resolved
// it before another group's alerts came.
func JoinIncident(prev Incident, d AlertData, p IncidentPolicy, lv Levels) (Incident, []IncidentData) {
	p = p.withDefaults()
	switch d.Status {
	case StatusFiring:
	case StatusRepeat, StatusResolved:
		if !prev.Open() {
			return prev, nil
		}
		next := prev.clone()
		i := next.member(alertKey(d.Group, d.Rule, d.Series))
		if i < 0 {
			return prev, nil
		}
		m := &next.Members[i]
		if d.LastAnomalousAt.After(m.LastAnomalousAt) {
			m.LastAnomalousAt = d.LastAnomalousAt
		}
		if d.Status == StatusResolved && m.Firing() {
			at := d.Time.UTC()
			m.ResolvedAt = &at
			next.Timeline = append(next.Timeline, IncidentEntry{Time: at, What: "resolved", Rule: d.Rule, Series: d.Series,
				Text: fmt.Sprintf("%s resolved on %s", d.Rule, d.Series)})
		}
		next.End = maxTime(next.End, m.LastAnomalousAt)
		return next, nil
	default:
		return prev, nil
	}
	var out []IncidentData
	if prev.Open() && !prev.firing() && d.ActiveAt.Sub(prev.lastEnd()) > p.Gap {
		// The alert starts after the gap: the incident ended before it.
		var res []IncidentData
		prev, res = resolveIncident(prev, p, lv)
		out = append(out, res...)
	}
	if !prev.Open() && prev.ID != "" && !d.ActiveAt.Before(prev.Start.Add(-p.Gap)) && !d.ActiveAt.After(prev.lastEnd().Add(p.Gap)) {
		// The incident resolved before this alert, whose window lies
		// within it, came: a group whose evaluation ran behind (a
		// backfill, a catch-up). It opens again and takes the alert.
		next := prev.clone()
		next.ResolvedAt = nil
		next.Version++
		next.addMember(d, p)
		next.Timeline = append(next.Timeline, IncidentEntry{Time: d.Time.UTC(), What: "note",
			Text: fmt.Sprintf("open again: %s fired late, in the incident's window", d.Rule)})
		next.diagnose(p, lv)
		return next, append(out, incidentData(IncidentUpdated, d.Time.UTC(), next))
	}
	if !prev.Open() {
		unit, labels := IncidentUnit(&d, p.By)
		inc := Incident{Group: d.Group, Unit: unit, UnitLabels: labels, Start: d.ActiveAt.UTC(), End: d.LastAnomalousAt.UTC(),
			OpenedAt: d.Time.UTC(), Version: 1}
		inc.ID = eventIDOf("inferwatch.incident.v1", []string{unit, d.Group}, inc.Start.UnixMilli())
		inc.addMember(d, p)
		inc.diagnose(p, lv)
		return inc, append(out, incidentData(IncidentOpened, inc.OpenedAt, inc))
	}
	next := prev.clone()
	next.Version++
	next.addMember(d, p)
	next.diagnose(p, lv)
	return next, append(out, incidentData(IncidentUpdated, d.Time.UTC(), next))
}

// addMember adds (or fires again) the member of a firing alert.
func (inc *Incident) addMember(d AlertData, p IncidentPolicy) {
	fired := d.Time.UTC()
	if d.FiredAt != nil {
		fired = d.FiredAt.UTC()
	}
	inc.Start = minTime(inc.Start, d.ActiveAt.UTC())
	inc.End = maxTime(inc.End, d.LastAnomalousAt.UTC())
	entry := IncidentEntry{Time: fired, What: "fired", Rule: d.Rule, Series: d.Series, Text: alertLine(&d)}
	if i := inc.member(alertKey(d.Group, d.Rule, d.Series)); i >= 0 {
		m := &inc.Members[i]
		m.ResolvedAt, m.LastAnomalousAt = nil, maxTime(m.LastAnomalousAt, d.LastAnomalousAt.UTC())
		m.Value, m.Expected, m.Score, m.Details = d.Value, d.Expected, d.Score, d.Details
		m.Direction = direction(float64(d.Value), float64(d.Expected))
		inc.Timeline = append(inc.Timeline, entry)
		return
	}
	if len(inc.Members) >= p.MaxMembers {
		inc.Dropped++
		return
	}
	signal := p.Signals[d.Rule]
	if s := d.Labels["signal"]; s != "" {
		signal = s
	}
	inc.Members = append(inc.Members, IncidentMember{Group: d.Group, Rule: d.Rule, Kind: d.Kind, Detector: d.Detector,
		Series: d.Series, Labels: d.Labels, Severity: d.Severity, Signal: signal,
		Direction: direction(float64(d.Value), float64(d.Expected)),
		ActiveAt:  d.ActiveAt.UTC(), FiredAt: fired, LastAnomalousAt: d.LastAnomalousAt.UTC(),
		Value: d.Value, Expected: d.Expected, Score: d.Score, Details: d.Details})
	inc.Timeline = append(inc.Timeline, entry)
	for _, l := range p.List {
		v := d.Labels[l]
		if v == "" {
			continue
		}
		if inc.Where == nil {
			inc.Where = map[string][]string{}
		}
		if vs := inc.Where[l]; !slices.Contains(vs, v) {
			vs = append(vs, v)
			sort.Strings(vs)
			inc.Where[l] = vs
		}
	}
}

// TickIncident advances an open incident to the time now: it resolves
// when every member has resolved and the gap and the settle time have
// passed (strictly) since the newest anomalous point, at that point plus the gap (or
// when its last member resolved, if later); an incident whose anomalous
// points span MaxAge is closed at the newest and continued from there by
// a new one holding the members still firing.
func TickIncident(prev Incident, now time.Time, p IncidentPolicy, lv Levels) (Incident, []IncidentData) {
	p = p.withDefaults()
	if !prev.Open() {
		return prev, nil
	}
	if !prev.firing() && now.Sub(prev.lastEnd()) > p.Gap+p.Settle {
		return resolveIncident(prev, p, lv)
	}
	if prev.End.Sub(prev.Start) < p.MaxAge {
		return prev, nil
	}
	// Its evidence spans MaxAge: it is closed at its newest anomalous
	// point and continued from there by the members still firing.
	at := prev.End.UTC()
	old := prev.clone()
	old.ResolvedAt = &at
	old.Version++
	next := Incident{Group: prev.Group, Unit: prev.Unit, UnitLabels: prev.UnitLabels, Start: at, End: at, OpenedAt: at, Version: 1, Continues: prev.ID}
	for _, m := range prev.Members {
		if !m.Firing() {
			continue
		}
		next.Members = append(next.Members, m)
		for _, l := range p.List {
			if v := m.Labels[l]; v != "" {
				if next.Where == nil {
					next.Where = map[string][]string{}
				}
				if !slices.Contains(next.Where[l], v) {
					next.Where[l] = append(next.Where[l], v)
					sort.Strings(next.Where[l])
				}
			}
		}
	}
	next.ID = eventIDOf("inferwatch.incident.v1", []string{prev.Unit, prev.Group, prev.ID}, at.UnixMilli())
	note := fmt.Sprintf("anomalous for %s, as long as an incident lasts (%s): closed, continued as %s", at.Sub(prev.Start), p.MaxAge, next.ID)
	old.Timeline = append(old.Timeline, IncidentEntry{Time: at, What: "note", Text: note})
	next.Timeline = []IncidentEntry{{Time: at, What: "note",
		Text: fmt.Sprintf("continues %s, open since %s, with the %d alerts still firing", prev.ID, prev.OpenedAt.UTC().Format(time.RFC3339), len(next.Members))}}
	old.diagnose(p, lv)
	next.diagnose(p, lv)
	return next, []IncidentData{incidentData(IncidentResolved, at, old), incidentData(IncidentOpened, at, next)}
}

// diagnose makes the incident's diagnosis; with lv, it first reads the
// levels the diagnosis rules ask about, from the gap before its start to
// its newest anomalous point, the point furthest above its forecast's
// interval over the same span, and the label changes from ChangeWithin
// before its start (without, it keeps those it has).
func (inc *Incident) diagnose(p IncidentPolicy, lv Levels) {
	if lv != nil {
		inc.Changes = lv.Changes(inc.Unit, inc.Start.Add(-p.ChangeWithin), maxTime(inc.End, inc.Start))
		inc.ForecastMiss = nil
		if m, ok := lv.Missed(inc.Unit, inc.Start.Add(-p.Gap), maxTime(inc.End, inc.Start)); ok {
			inc.ForecastMiss = &m
		}
		inc.Scale = nil
		if sc, ok := lv.Scale(inc.Unit, maxTime(inc.End, inc.Start).Add(p.Gap)); ok {
			inc.Scale = &sc
		}
		inc.Levels = nil
		for _, sig := range levelSignals(p.Diagnoses) {
			if l, ok := lv.Peak(inc.Unit, sig, inc.Start.Add(-p.Gap), maxTime(inc.End, inc.Start)); ok {
				if inc.Levels == nil {
					inc.Levels = map[string]Level{}
				}
				inc.Levels[sig] = l
			}
		}
	}
	inc.Diagnosis = Diagnose(inc, p.Diagnoses)
}

// resolveIncident resolves an incident whose members have all resolved.
func resolveIncident(prev Incident, p IncidentPolicy, lv Levels) (Incident, []IncidentData) {
	at := prev.lastEnd().Add(p.Gap)
	for i := range prev.Members {
		if r := prev.Members[i].ResolvedAt; r != nil && r.After(at) {
			at = *r
		}
	}
	at = at.UTC()
	next := prev.clone()
	next.ResolvedAt = &at
	next.Version++
	next.diagnose(p, lv)
	return next, []IncidentData{incidentData(IncidentResolved, at, next)}
}

// clone copies the incident's slices and maps, so that events already
// made keep what they said.
func (inc Incident) clone() Incident {
	inc.Members = slices.Clone(inc.Members)
	inc.Timeline = slices.Clone(inc.Timeline)
	if inc.Where != nil {
		w := make(map[string][]string, len(inc.Where))
		for k, v := range inc.Where {
			w[k] = slices.Clone(v)
		}
		inc.Where = w
	}
	inc.UnitLabels = maps.Clone(inc.UnitLabels)
	inc.Levels = maps.Clone(inc.Levels)
	inc.Changes = slices.Clone(inc.Changes)
	if inc.ForecastMiss != nil {
		m := *inc.ForecastMiss
		inc.ForecastMiss = &m
	}
	return inc
}

// incidentData is the event of an incident with a status at t.
func incidentData(s IncidentStatus, t time.Time, inc Incident) IncidentData {
	d := IncidentData{Status: s, Time: t.UTC(), Incident: inc.clone()}
	d.Summary, d.Description = describeIncident(&d)
	return d
}

// alertLine says in a line what an alert of an incident found.
func alertLine(d *AlertData) string {
	dir := ""
	switch direction(float64(d.Value), float64(d.Expected)) {
	case "up":
		dir = " up"
	case "down":
		dir = " down"
	}
	return fmt.Sprintf("%s%s on %s: %s against an expected %s (score %.3g)", d.Rule, dir, d.Series,
		fmtNum(float64(d.Value)), fmtNum(float64(d.Expected)), float64(d.Score))
}

// describeIncident writes an incident's summary (one line) and description
// (what happened, in order, then the diagnosis).
func describeIncident(d *IncidentData) (summary, description string) {
	rules := map[string]bool{}
	for _, m := range d.Members {
		rules[m.Rule] = true
	}
	where := ""
	for _, l := range slices.Sorted(maps.Keys(d.Where)) {
		where += fmt.Sprintf(", %s %s", l, strings.Join(d.Where[l], " "))
	}
	diag := "no diagnosis"
	if d.Diagnosis.Name != DiagnosisNone {
		diag = fmt.Sprintf("%s (%d of %d conditions)", d.Diagnosis.Title, d.Diagnosis.Held, d.Diagnosis.Total)
	}
	summary = fmt.Sprintf("%s %s: %d alerts of %d rules%s: %s", d.Unit, d.Status, len(d.Members), len(rules), where, diag)
	var b strings.Builder
	fmt.Fprintf(&b, "Incident %s on %s, anomalous from %s to %s.", d.ID, d.Unit, d.Start.UTC().Format(time.RFC3339), d.End.UTC().Format(time.RFC3339))
	if d.ResolvedAt != nil {
		fmt.Fprintf(&b, " Resolved at %s.", d.ResolvedAt.UTC().Format(time.RFC3339))
	}
	b.WriteString("\n")
	for _, e := range d.Timeline {
		fmt.Fprintf(&b, "%s %s: %s\n", e.Time.UTC().Format("15:04:05"), e.What, e.Text)
	}
	if d.Dropped > 0 {
		fmt.Fprintf(&b, "%d more alerts are not listed.\n", d.Dropped)
	}
	b.WriteString(d.Diagnosis.String())
	return summary, b.String()
}

// direction is where value lies against expected: up, down, or "" when
// either is undefined or they are equal.
func direction(value, expected float64) string {
	switch {
	case !isNum(value) || !isNum(expected) || value == expected:
		return ""
	case value > expected:
		return "up"
	}
	return "down"
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
