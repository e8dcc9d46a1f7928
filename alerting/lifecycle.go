package alerting

import (
	"math"
	"time"
)

// The lifecycle of an alert, per (group, rule, series), as Prometheus and
// vmalert define it: inactive → pending (anomalous, for not yet elapsed) →
// firing (anomalous for at least for) → resolved (a normal point once
// keep_firing_for has passed since the last anomalous one), with a repeat
// of a firing alert every repeat interval. An active alert whose series
// has no point for its rule's resolve_after_absent ends too, as a series
// Prometheus no longer returns. Step, Absent and Tick are pure functions
// of the previous state, what was judged and the time; the Lifecycle type
// keeps the states and persists them.

// AlertState is where an alert is in its lifecycle.
type AlertState uint8

// The states of an alert. A resolved alert is inactive again.
const (
	StateInactive AlertState = iota
	StatePending
	StateFiring
)

func (s AlertState) String() string {
	switch s {
	case StatePending:
		return "pending"
	case StateFiring:
		return "firing"
	}
	return "inactive"
}

// Policy holds a rule's lifecycle settings.
type Policy struct {
	// For is how long a series must stay anomalous before its alert fires
	// (0: at the first anomalous point).
	For time.Duration
	// KeepFiringFor keeps a firing alert firing this long after its last
	// anomalous point, so a flapping series does not resolve and fire
	// again (0: it resolves at the first normal point).
	KeepFiringFor time.Duration
	// RepeatInterval is how often a firing alert is announced again (0:
	// never).
	RepeatInterval time.Duration
}

// Observation is one judged point of a series a rule watches: anomalous
// or not, with what was measured there. Rules send the points of series
// whose alert is or may become active: every anomalous point, the first
// normal point after them, and Gone when a series stops being returned.
type Observation struct {
	Group, Rule string
	// Kind is the rule's kind ("anomaly", "correlation", …) and Detector
	// what judged the point.
	Kind, Detector string
	// Series is the series' own identity in selector syntax (the labels a
	// rule adds do not change it); Labels are its labels plus the rule's.
	Series string
	Labels map[string]string
	Policy Policy
	// At is the point's time.
	At        time.Time
	Anomalous bool
	// Gone says the rule forgot the series: an active alert ends at At.
	Gone bool
	// Value, the detector's estimate and band, and the score (≥ 1 when
	// anomalous); Severity as the rule or the analysis graded it ("" to
	// grade by score); Details what the rule kind measured.
	Value, Expected, Lower, Upper, Score float64
	Severity                             string
	Details                              map[string]any
}

// Alert is the lifecycle state of one (group, rule, series).
type Alert struct {
	State AlertState
	// Policy is the rule's, as of the newest point.
	Policy Policy
	// ActiveAt is the first anomalous point of the episode, LastAnomalous
	// its newest, FiredAt when the alert fired, LastSent when it was last
	// announced (fired or repeated).
	ActiveAt, LastAnomalous, FiredAt, LastSent time.Time
	// LastSeen is the newest point of the series the alert was told of,
	// and LastValue its value.
	LastSeen  time.Time
	LastValue float64
	// Peak is the strangest point of the episode so far.
	Peak Observation

	savedSeen time.Time // the LastSeen last given to the Store
}

// seen is the newest point the alert knows its series had: LastSeen, or
// for a state kept before LastSeen was, its newest anomalous point.
func (a *Alert) seen() time.Time {
	if a.LastSeen.IsZero() {
		return a.LastAnomalous
	}
	return a.LastSeen
}

// Transition is something that happened to an alert: it became pending,
// fired, repeated, resolved or inactive again, at At; an alert that ends
// says why in Reason.
type Transition struct {
	Status Status
	At     time.Time
	Alert  Alert
	Reason Reason
}

// Reason is why an alert ended.
type Reason string

// The reasons an alert ends.
const (
	// ReasonNormal: its series was judged normal again (after
	// keep_firing_for, when firing).
	ReasonNormal Reason = "normal"
	// ReasonAbsent: its series had no point for the rule's
	// resolve_after_absent.
	ReasonAbsent Reason = "absent"
	// ReasonForgotten: the rule forgot its series (forget_after).
	ReasonForgotten Reason = "forgotten"
	// ReasonRuleRemoved: a reload removed its rule.
	ReasonRuleRemoved Reason = "rule_removed"
)

// Status is what a Transition announces.
type Status string

// The statuses of alert events. An alert with a for announces that it is
// pending, so a subscriber sees it coming, and that it is inactive again
// when it clears before it fires; Alertmanager is told of firing and
// resolved alerts only.
const (
	StatusPending  Status = "pending"
	StatusFiring   Status = "firing"
	StatusRepeat   Status = "repeat"
	StatusResolved Status = "resolved"
	StatusInactive Status = "inactive"
)

// Step advances an alert by one judged point of its series, in time order,
// and returns the alert and what happened to it (at most one transition).
func Step(prev Alert, obs Observation, p Policy) (Alert, []Transition) {
	if obs.Gone {
		return end(prev, obs.At, ReasonForgotten)
	}
	next := prev
	next.Policy = p
	if !math.IsNaN(obs.Value) && !math.IsInf(obs.Value, 0) {
		next.LastSeen, next.LastValue = obs.At, obs.Value
	}
	if !obs.Anomalous {
		switch {
		case prev.State == StatePending:
			return end(next, obs.At, ReasonNormal)
		case prev.State == StateFiring && (p.KeepFiringFor <= 0 || obs.At.Sub(prev.LastAnomalous) >= p.KeepFiringFor):
			return end(next, obs.At, ReasonNormal)
		}
		return next, nil
	}
	if prev.State == StateInactive {
		next = Alert{State: StatePending, Policy: p, ActiveAt: obs.At, Peak: obs, LastSeen: next.LastSeen, LastValue: next.LastValue}
	}
	next.LastAnomalous = obs.At
	if obs.Score > next.Peak.Score {
		next.Peak = obs
	}
	if next.State == StatePending && obs.At.Sub(next.ActiveAt) >= p.For {
		next.State, next.FiredAt, next.LastSent = StateFiring, obs.At, obs.At
		return next, []Transition{{Status: StatusFiring, At: obs.At, Alert: next}}
	}
	if prev.State == StateInactive {
		return next, []Transition{{Status: StatusPending, At: obs.At, Alert: next}}
	}
	return next, nil
}

// end ends an active alert at at: a firing one resolves, a pending one
// is inactive again.
func end(prev Alert, at time.Time, why Reason) (Alert, []Transition) {
	switch prev.State {
	case StateFiring:
		return Alert{}, []Transition{{Status: StatusResolved, At: at, Alert: prev, Reason: why}}
	case StatePending:
		return Alert{}, []Transition{{Status: StatusInactive, At: at, Alert: prev, Reason: why}}
	}
	return Alert{}, nil
}

// Absent ends an active alert whose series has had no point for after by
// through, the newest point its rule judged.
func Absent(prev Alert, through time.Time, after time.Duration) (Alert, []Transition) {
	if prev.State == StateInactive || through.Sub(prev.seen()) < after {
		return prev, nil
	}
	return end(prev, through, ReasonAbsent)
}

// Tick advances a firing alert to the time now: it repeats the alert when
// the repeat interval has passed since it was last announced.
func Tick(prev Alert, now time.Time, p Policy) (Alert, []Transition) {
	if prev.State != StateFiring || p.RepeatInterval <= 0 || now.Sub(prev.LastSent) < p.RepeatInterval {
		return prev, nil
	}
	next := prev
	next.LastSent = now
	return next, []Transition{{Status: StatusRepeat, At: now, Alert: next}}
}

// Severity is the severity an alert reports: the rule's severity label,
// then what the analysis graded, then critical for a score of 2 or more
// and warning below.
func (a *Alert) Severity() string {
	if s := a.Peak.Labels["severity"]; s != "" {
		return s
	}
	if a.Peak.Severity != "" {
		return a.Peak.Severity
	}
	if a.Peak.Score >= 2 {
		return "critical"
	}
	return "warning"
}

// Finding is the finding an alert that fired at t reports: its episode
// from ActiveAt to t and its strangest point.
func (a *Alert) Finding(t time.Time) Finding {
	p := &a.Peak
	return Finding{
		Kind:        p.Kind,
		Group:       p.Group,
		Rule:        p.Rule,
		Detector:    p.Detector,
		Labels:      p.Labels,
		Series:      p.Series,
		WindowStart: a.ActiveAt.UTC(),
		WindowEnd:   t.UTC(),
		Value:       p.Value,
		ValueTime:   p.At.UTC(),
		Expected:    p.Expected,
		Lower:       p.Lower,
		Upper:       p.Upper,
		Score:       p.Score,
		Severity:    a.Severity(),
		Details:     p.Details,
	}
}
