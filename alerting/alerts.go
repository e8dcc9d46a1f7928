package alerting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/internal/metricname"
)

// AlertData is the data of an alert event, published on
// <prefix>.alerts.<group>.<rule>: an alert is pending (its for has not
// passed yet), fired, is still firing (repeat), resolved, or inactive again
// (a pending alert that cleared before it fired).
type AlertData struct {
	Status   Status `json:"status"`
	Group    string `json:"group"`
	Rule     string `json:"rule"`
	Kind     string `json:"kind"`
	Detector string `json:"detector"`
	// Series is the series' own identity; Labels its labels plus the
	// rule's.
	Series   string            `json:"series"`
	Labels   map[string]string `json:"labels"`
	Severity string            `json:"severity"`
	// ActiveAt is the episode's first anomalous point, FiredAt when the
	// alert fired (absent before it has), LastAnomalousAt its newest
	// anomalous point, ResolvedAt when it resolved (resolved events only);
	// Time is the event's time.
	ActiveAt        time.Time  `json:"active_at"`
	FiredAt         *time.Time `json:"fired_at,omitempty"`
	LastAnomalousAt time.Time  `json:"last_anomalous_at"`
	ResolvedAt      *time.Time `json:"resolved_at,omitempty"`
	Time            time.Time  `json:"time"`
	// Reason says why an alert ended (resolved and inactive events only):
	// normal, absent, forgotten or rule_removed.
	Reason Reason `json:"reason,omitempty"`
	// LastSeenAt is the newest point of the series the alert was told of,
	// LastValue its value: where a series that vanished stood last.
	LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
	LastValue  JSONFloat  `json:"last_value"`
	// The strangest point of the episode.
	Value     JSONFloat `json:"value"`
	ValueTime time.Time `json:"value_time"`
	Expected  JSONFloat `json:"expected"`
	Lower     JSONFloat `json:"lower"`
	Upper     JSONFloat `json:"upper"`
	Score     JSONFloat `json:"score"`
	// Summary and Description are for people (and Alertmanager's
	// annotations).
	Summary     string         `json:"summary"`
	Description string         `json:"description"`
	Details     map[string]any `json:"details,omitempty"`
}

// alertData is the event of a transition.
func alertData(tr Transition) AlertData {
	a := &tr.Alert
	p := &a.Peak
	d := AlertData{
		Status: tr.Status, Group: p.Group, Rule: p.Rule, Kind: p.Kind, Detector: p.Detector,
		Series: p.Series, Labels: p.Labels, Severity: a.Severity(),
		ActiveAt: a.ActiveAt.UTC(), LastAnomalousAt: a.LastAnomalous.UTC(), Time: tr.At.UTC(), Reason: tr.Reason,
		Value: JSONFloat(p.Value), ValueTime: p.At.UTC(), Expected: JSONFloat(p.Expected),
		Lower: JSONFloat(p.Lower), Upper: JSONFloat(p.Upper), Score: JSONFloat(p.Score), Details: p.Details,
		LastValue: JSONFloat(math.NaN()),
	}
	if !a.FiredAt.IsZero() {
		at := a.FiredAt.UTC()
		d.FiredAt = &at
	}
	if seen := a.seen(); !seen.IsZero() {
		at := seen.UTC()
		d.LastSeenAt = &at
		d.LastValue = JSONFloat(a.LastValue)
		if a.LastSeen.IsZero() {
			d.LastValue = JSONFloat(math.NaN()) // a state kept before last values were
		}
	}
	if tr.Status == StatusResolved {
		at := tr.At.UTC()
		d.ResolvedAt = &at
	}
	d.Summary, d.Description = describe(a, tr)
	return d
}

// describe writes an alert's summary and description.
func describe(a *Alert, tr Transition) (summary, description string) {
	p := &a.Peak
	what := map[string]string{
		"anomaly":     "anomalous",
		"correlation": "coupled with its pair",
		"decay":       "decaying against its peak",
		"knee":        "past the knee of its throughput curve",
		"spikiness":   "spiking above its P99",
		"imbalance":   "imbalanced",
	}[p.Kind]
	if what == "" {
		what = p.Kind
	}
	summary = fmt.Sprintf("%s/%s: %s %s", p.Group, p.Rule, p.Series, what)
	band := ""
	if isNum(p.Lower) || isNum(p.Upper) {
		band = fmt.Sprintf(", band %s…%s", fmtNum(p.Lower), fmtNum(p.Upper))
	}
	description = fmt.Sprintf("%s is %s since %s (%s, score %.3g): value %s at %s against an expected %s%s.",
		p.Series, what, a.ActiveAt.UTC().Format(time.RFC3339), p.Detector, p.Score, fmtNum(p.Value),
		p.At.UTC().Format(time.RFC3339), fmtNum(p.Expected), band)
	switch tr.Status {
	case StatusResolved:
		description += fmt.Sprintf(" Resolved at %s, %s after it fired%s.", tr.At.UTC().Format(time.RFC3339), tr.At.Sub(a.FiredAt), why(a, tr.Reason))
	case StatusInactive:
		description += fmt.Sprintf(" Inactive again at %s, before it fired%s.", tr.At.UTC().Format(time.RFC3339), why(a, tr.Reason))
	}
	return summary, description
}

// why says in words why an alert ended.
func why(a *Alert, r Reason) string {
	switch r {
	case ReasonAbsent:
		last := ""
		if !a.LastSeen.IsZero() {
			last = fmt.Sprintf(", at %s", fmtNum(a.LastValue))
		}
		return fmt.Sprintf(": the series has had no point since %s%s", a.seen().UTC().Format(time.RFC3339), last)
	case ReasonForgotten:
		return ": the rule no longer watches the series"
	case ReasonRuleRemoved:
		return ": its rule was removed from the configuration"
	}
	return ""
}

func isNum(x float64) bool { return x-x == 0 }

func fmtNum(x float64) string {
	if !isNum(x) {
		return "—"
	}
	return fmt.Sprintf("%.4g", x)
}

// StateStore keeps alert states across restarts. natsjs.KV implements it
// over a JetStream key-value bucket. Save with a nil state deletes.
type StateStore interface {
	Load(ctx context.Context) (map[string][]byte, error)
	Save(ctx context.Context, key string, state []byte) error
}

// LifecycleOptions configure a Lifecycle.
type LifecycleOptions struct {
	// Store, when set, keeps the alert states across restarts.
	Store StateStore
	// Logger (nil: discard) and Metrics (nil: unregistered).
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// Lifecycle turns the observations of rule evaluations into findings (one
// when an alert fires) and alert events (fired, repeated, resolved), per
// (group, rule, series), and keeps the alerts' states, in its Store when
// it has one. It is safe for concurrent use by the groups' evaluations.
type Lifecycle struct {
	o   LifecycleOptions
	log *slog.Logger

	mu     sync.Mutex
	alerts map[string]map[string]*Alert // group → key → alert
	dirty  map[string]string            // key → group, states not yet saved
	ended  map[string]time.Time         // key → when it ended, for deletes not yet saved

	findings               map[string]*metrics.Counter // by group/rule/severity
	severities             map[string]bool             // of the alerts seen, for inferwatch_alerts_active
	transitions            map[Status]*metrics.Counter
	saveFailures, restored *metrics.Counter
	restoreSkipped         *metrics.Counter
	absentEnded            *metrics.Counter
	yielded, overwrote     *metrics.Counter
}

// NewLifecycle returns a Lifecycle with no alerts; Restore loads the
// stored ones.
func NewLifecycle(o LifecycleOptions) *Lifecycle {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	l := &Lifecycle{o: o, log: o.Logger, alerts: map[string]map[string]*Alert{}, dirty: map[string]string{}, ended: map[string]time.Time{},
		transitions: map[Status]*metrics.Counter{}, findings: map[string]*metrics.Counter{},
		severities: map[string]bool{"warning": true, "critical": true}}
	set := o.Metrics
	for _, s := range []Status{StatusPending, StatusFiring, StatusRepeat, StatusResolved, StatusInactive} {
		l.transitions[s] = set.GetOrCreateCounter(metricname.Name("inferwatch_alert_events_total", "status", string(s)))
	}
	l.saveFailures = set.GetOrCreateCounter("inferwatch_alert_state_save_failures_total")
	l.restored = set.GetOrCreateCounter("inferwatch_alert_states_restored_total")
	l.restoreSkipped = set.GetOrCreateCounter("inferwatch_alert_states_skipped_total")
	l.absentEnded = set.GetOrCreateCounter("inferwatch_alerts_ended_absent_total")
	l.yielded = set.GetOrCreateCounter(metricname.Name("inferwatch_alert_state_conflicts_total", "outcome", "yielded"))
	l.overwrote = set.GetOrCreateCounter(metricname.Name("inferwatch_alert_state_conflicts_total", "outcome", "overwrote"))
	set.RegisterMetricsWriter(l.writeActive)
	return l
}

// writeActive writes inferwatch_alerts_active{status,severity}: the alerts
// pending and firing, by severity, each severity an alert has had (and
// warning and critical) written, at zero when none is active.
func (l *Lifecycle) writeActive(w io.Writer) {
	type key struct{ status, severity string }
	counts := map[key]int{}
	l.mu.Lock()
	for _, g := range l.alerts {
		for _, a := range g {
			sev := a.Severity()
			l.severities[sev] = true
			switch a.State {
			case StatePending:
				counts[key{string(StatusPending), sev}]++
			case StateFiring:
				counts[key{string(StatusFiring), sev}]++
			}
		}
	}
	sevs := slices.Sorted(maps.Keys(l.severities))
	l.mu.Unlock()
	metrics.WriteMetadataIfNeeded(w, "inferwatch_alerts_active", "gauge")
	for _, st := range []Status{StatusPending, StatusFiring} {
		for _, sev := range sevs {
			fmt.Fprintf(w, "%s %d\n", metricname.Name("inferwatch_alerts_active", "status", string(st), "severity", sev), counts[key{string(st), sev}])
		}
	}
}

func alertKey(group, rule, series string) string { return group + "\x00" + rule + "\x00" + series }

// storedAlert is an alert as its Store keeps it: Alert's fields by their
// Go names, with figures that may be undefined (NaN) written as null.
type storedAlert struct {
	Version int         `json:"v"`
	Key     string      `json:"key"`
	Alert   storedState `json:"alert"`
}

type storedState struct {
	State                                      AlertState
	Policy                                     Policy
	ActiveAt, LastAnomalous, FiredAt, LastSent time.Time
	LastSeen                                   time.Time
	LastValue                                  JSONFloat
	Peak                                       storedPoint
}

type storedPoint struct {
	Group, Rule, Kind, Detector, Series string
	Labels                              map[string]string
	Policy                              Policy
	At                                  time.Time
	Anomalous                           bool
	Value, Expected, Lower, Upper       JSONFloat
	Score                               JSONFloat
	Severity                            string
	Details                             map[string]any
}

func storeAlert(key string, a *Alert) ([]byte, error) {
	p := &a.Peak
	return json.Marshal(storedAlert{Version: 1, Key: key, Alert: storedState{
		State: a.State, Policy: a.Policy, ActiveAt: a.ActiveAt, LastAnomalous: a.LastAnomalous, FiredAt: a.FiredAt,
		LastSent: a.LastSent, LastSeen: a.LastSeen, LastValue: JSONFloat(a.LastValue),
		Peak: storedPoint{Group: p.Group, Rule: p.Rule, Kind: p.Kind, Detector: p.Detector, Series: p.Series,
			Labels: p.Labels, Policy: p.Policy, At: p.At, Anomalous: p.Anomalous, Value: JSONFloat(p.Value),
			Expected: JSONFloat(p.Expected), Lower: JSONFloat(p.Lower), Upper: JSONFloat(p.Upper),
			Score: JSONFloat(p.Score), Severity: p.Severity, Details: p.Details},
	}})
}

func (s *storedState) alert() Alert {
	p := &s.Peak
	return Alert{State: s.State, Policy: s.Policy, ActiveAt: s.ActiveAt, LastAnomalous: s.LastAnomalous, FiredAt: s.FiredAt,
		LastSent: s.LastSent, LastSeen: s.LastSeen, LastValue: float64(s.LastValue),
		Peak: Observation{Group: p.Group, Rule: p.Rule, Kind: p.Kind, Detector: p.Detector, Series: p.Series,
			Labels: p.Labels, Policy: p.Policy, At: p.At, Anomalous: p.Anomalous, Value: float64(p.Value),
			Expected: float64(p.Expected), Lower: float64(p.Lower), Upper: float64(p.Upper),
			Score: float64(p.Score), Severity: p.Severity, Details: p.Details}}
}

// Restore loads the stored alerts, at most max (0: no bound), and returns
// how many it restored. An entry it cannot read is logged, counted and
// skipped: it never stops the daemon.
func (l *Lifecycle) Restore(ctx context.Context, max int) (int, error) {
	if l.o.Store == nil {
		return 0, nil
	}
	entries, err := l.o.Store.Load(ctx)
	if err != nil {
		return 0, fmt.Errorf("restoring alert states: %w", err)
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, k := range keys {
		if max > 0 && n >= max {
			l.restoreSkipped.Add(len(keys) - n)
			l.log.Warn("more stored alert states than the restore bound; the rest are left", "restored", n, "left", len(keys)-n)
			break
		}
		var s storedAlert
		if err := json.Unmarshal(entries[k], &s); err != nil || s.Version != 1 || s.Alert.State == StateInactive {
			l.restoreSkipped.Inc()
			l.log.Warn("skipping a stored alert state that is not one of ours", "key", k, "err", err)
			continue
		}
		g := s.Alert.Peak.Group
		if alertKey(g, s.Alert.Peak.Rule, s.Alert.Peak.Series) != s.Key {
			l.restoreSkipped.Inc()
			l.log.Warn("skipping a stored alert state whose key does not match its alert", "key", k)
			continue
		}
		if l.alerts[g] == nil {
			l.alerts[g] = map[string]*Alert{}
		}
		a := s.Alert.alert()
		l.alerts[g][s.Key] = &a
		n++
	}
	l.restored.Add(n)
	l.log.Info("alert states restored", "alerts", n, "skipped", len(keys)-n)
	return n, nil
}

// RestoreGroup replaces the alerts of group with those its Store holds,
// and returns how many it restored: a process that takes a group over
// from another goes on with the alerts the other left.
func (l *Lifecycle) RestoreGroup(ctx context.Context, group string) (int, error) {
	if l.o.Store == nil {
		return 0, nil
	}
	entries, err := l.o.Store.Load(ctx)
	if err != nil {
		return 0, fmt.Errorf("restoring the alert states of group %q: %w", group, err)
	}
	as := map[string]*Alert{}
	for _, v := range entries {
		var s storedAlert
		if json.Unmarshal(v, &s) != nil || s.Version != 1 || s.Alert.State == StateInactive || s.Alert.Peak.Group != group ||
			alertKey(group, s.Alert.Peak.Rule, s.Alert.Peak.Series) != s.Key {
			continue
		}
		a := s.Alert.alert()
		a.savedSeen = a.LastSeen
		as[s.Key] = &a
	}
	l.mu.Lock()
	l.alerts[group] = as
	l.forget(group)
	l.mu.Unlock()
	l.restored.Add(len(as))
	return len(as), nil
}

// ForgetGroup drops the alerts of group from memory and leaves its Store
// as it is: another process evaluates the group now.
func (l *Lifecycle) ForgetGroup(group string) {
	l.mu.Lock()
	delete(l.alerts, group)
	l.forget(group)
	l.mu.Unlock()
}

// forget drops the unsaved changes of group's alerts; l.mu is held.
func (l *Lifecycle) forget(group string) {
	for k, g := range l.dirty {
		if g == group {
			delete(l.dirty, k)
			delete(l.ended, k)
		}
	}
}

// Retain resolves, at time now, the alerts of rules keep says are gone (a
// reload removed them) and forgets them. It returns the resolutions'
// events.
func (l *Lifecycle) Retain(now time.Time, keep func(group, rule string) bool) []AlertData {
	l.mu.Lock()
	var out []AlertData
	for g, as := range l.alerts {
		for k, a := range as {
			if keep(g, a.Peak.Rule) {
				continue
			}
			_, trs := end(*a, now, ReasonRuleRemoved)
			for _, tr := range trs {
				out = append(out, alertData(tr))
				l.transitions[tr.Status].Inc()
			}
			l.drop(as, g, k, now)
		}
	}
	l.mu.Unlock()
	return out
}

// ErrStatesUnsaved says that states of a group's alerts did not reach the
// Store: they are saved again with the group's next batch. Until then the
// group's progress must stay where it was, so that a process taking the
// group over judges those points again instead of going on without the
// alerts.
var ErrStatesUnsaved = errors.New("alert states not saved")

// RetainStored resolves, at time now, the alerts the Store holds of rules
// keep says are gone and that this lifecycle does not hold (Retain ends
// those): alerts that the processes sharing the Store left behind, such as
// the replicas of a configuration that removed a rule or a group. Each is
// deleted from the Store on the revision read, so that of several
// processes doing this at once only the one whose delete lands resolves
// it. It returns the resolutions' events.
func (l *Lifecycle) RetainStored(ctx context.Context, now time.Time, keep func(group, rule string) bool) ([]AlertData, error) {
	if l.o.Store == nil {
		return nil, nil
	}
	entries, err := l.o.Store.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the stored alert states: %w", err)
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []AlertData
	for _, k := range keys {
		var s storedAlert
		if json.Unmarshal(entries[k], &s) != nil || s.Version != 1 || s.Alert.State == StateInactive {
			continue
		}
		a := s.Alert.alert()
		g := a.Peak.Group
		if alertKey(g, a.Peak.Rule, a.Peak.Series) != s.Key || keep(g, a.Peak.Rule) {
			continue
		}
		l.mu.Lock()
		_, held := l.alerts[g][s.Key]
		l.mu.Unlock()
		if held {
			continue
		}
		if err := l.o.Store.Save(ctx, s.Key, nil); err != nil {
			continue // another process resolved it, or the next call does
		}
		_, trs := end(a, now, ReasonRuleRemoved)
		l.mu.Lock()
		for _, tr := range trs {
			out = append(out, alertData(tr))
			l.transitions[tr.Status].Inc()
		}
		l.mu.Unlock()
	}
	return out, nil
}

// Process runs the observations of b through the lifecycle, in order,
// appends to b the findings of the alerts that fired and the alert
// events, ticks the group's firing alerts at b.At (repeats), and saves the
// states that changed. Observations are consumed. When states of b's
// group are left unsaved, the error wraps ErrStatesUnsaved.
func (l *Lifecycle) Process(ctx context.Context, b *Batch) error {
	l.mu.Lock()
	as := l.alerts[b.Group]
	if as == nil {
		as = map[string]*Alert{}
		l.alerts[b.Group] = as
	}
	for i := range b.Observations {
		obs := &b.Observations[i]
		k := alertKey(obs.Group, obs.Rule, obs.Series)
		prev, had := as[k]
		if !had && !obs.Anomalous {
			continue
		}
		var cur Alert
		if had {
			cur = *prev
		}
		next, trs := Step(cur, *obs, obs.Policy)
		l.record(b, trs)
		switch {
		case next.State == StateInactive:
			if had {
				l.drop(as, b.Group, k, obs.At)
			}
		default:
			// The newest point seen is kept to the minute, so that a
			// restarted daemon knows how long a series has been absent.
			if !had || next.State != prev.State || !next.LastSent.Equal(prev.LastSent) || next.LastSeen.Sub(next.savedSeen) >= time.Minute {
				l.dirty[k] = b.Group
				next.savedSeen = next.LastSeen
			}
			as[k] = &next
		}
	}
	b.Observations = nil
	l.absent(b, as)
	if !b.At.IsZero() {
		keys := make([]string, 0, len(as))
		for k := range as {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			next, trs := Tick(*as[k], b.At, as[k].Policy)
			if len(trs) > 0 {
				l.record(b, trs)
				as[k] = &next
				l.dirty[k] = b.Group
			}
		}
	}
	if l.o.Store == nil {
		clear(l.dirty)
		clear(l.ended)
		l.mu.Unlock()
		return nil
	}
	save := map[string][]byte{}
	for k, g := range l.dirty {
		var state []byte
		if a := l.alerts[g][k]; a != nil {
			var err error
			if state, err = storeAlert(k, a); err != nil {
				l.log.Warn("an alert state cannot be encoded; it is not kept across a restart", "alert", strings.ReplaceAll(k, "\x00", "/"), "err", err)
				delete(l.dirty, k)
				continue
			}
		}
		save[k] = state
	}
	l.mu.Unlock()
	l.save(ctx, save)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, g := range l.dirty {
		if g == b.Group {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("group %q: %d %w; saved again with the next evaluation", b.Group, n, ErrStatesUnsaved)
	}
	return nil
}

// absent ends the alerts of the rules b says were evaluated whose series
// had no point for the rule's AbsentAfter, in the order of their keys.
func (l *Lifecycle) absent(b *Batch, as map[string]*Alert) {
	if len(b.Evaluated) == 0 || len(as) == 0 {
		return
	}
	runs := make(map[string]RuleEvaluated, len(b.Evaluated))
	for _, r := range b.Evaluated {
		runs[r.Rule] = r
	}
	var keys []string
	for k, a := range as {
		if r, ok := runs[a.Peak.Rule]; ok && r.Through.Sub(a.seen()) >= r.AbsentAfter {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := runs[as[k].Peak.Rule]
		_, trs := Absent(*as[k], r.Through, r.AbsentAfter)
		l.record(b, trs)
		l.drop(as, b.Group, k, r.Through)
	}
	l.absentEnded.Add(len(keys))
}

// drop forgets the alert k of group g, which ended at at, and marks its
// state to be deleted from the Store.
func (l *Lifecycle) drop(as map[string]*Alert, g, k string, at time.Time) {
	delete(as, k)
	l.dirty[k] = g
	l.ended[k] = at
}

// record appends the events of transitions to b.
func (l *Lifecycle) record(b *Batch, trs []Transition) {
	for _, tr := range trs {
		l.transitions[tr.Status].Inc()
		p := &tr.Alert.Peak
		if tr.Status == StatusFiring {
			f := tr.Alert.Finding(tr.At)
			b.Findings = append(b.Findings, f)
			k := p.Group + "\x00" + p.Rule + "\x00" + f.Severity
			c := l.findings[k]
			if c == nil {
				c = l.o.Metrics.GetOrCreateCounter(metricname.Name("inferwatch_findings_total", "group", p.Group, "rule", p.Rule, "severity", f.Severity))
				l.findings[k] = c
			}
			c.Inc()
		}
		l.log.Debug("alert", "status", tr.Status, "group", p.Group, "rule", p.Rule, "series", p.Series,
			"at", tr.At.UTC(), "active_at", tr.Alert.ActiveAt.UTC(), "severity", tr.Alert.Severity(), "score", p.Score, "value", p.Value)
		b.Alerts = append(b.Alerts, alertData(tr))
	}
}

// save writes the changed states outside the lock; a failure is logged,
// counted and retried with the next batch.
func (l *Lifecycle) save(ctx context.Context, states map[string][]byte) {
	if l.o.Store == nil || len(states) == 0 {
		l.mu.Lock()
		clear(l.dirty)
		l.mu.Unlock()
		return
	}
	var failed []string
	for k, s := range states {
		err := l.o.Store.Save(ctx, k, s)
		var ce *ConflictError
		if errors.As(err, &ce) {
			err = l.settle(ctx, k, s, ce.Stored)
		}
		if err != nil {
			l.saveFailures.Inc()
			failed = append(failed, k)
			l.log.Debug("saving an alert state failed; retried with the next evaluation", "alert", strings.ReplaceAll(k, "\x00", "/"), "err", err)
		}
	}
	l.mu.Lock()
	for k := range states {
		if !slices.Contains(failed, k) {
			delete(l.dirty, k)
			delete(l.ended, k)
		}
	}
	l.mu.Unlock()
}

// settle decides a write of ours (nil: a delete) that another writer beat
// to key k, which now holds stored (nil: deleted): the state with the
// newer evidence wins. When it is stored, this lifecycle takes it and
// writes nothing (yields); when it is ours, ours is written on the
// revision just read (overwrites).
func (l *Lifecycle) settle(ctx context.Context, k string, ours, stored []byte) error {
	theirs, ok := decodeAlertState(k, stored)
	l.mu.Lock()
	mine := l.ended[k] // when ours is a delete: when the alert ended
	if ours != nil {
		if s, ok := decodeAlertState(k, ours); ok {
			mine = s.evidence()
		}
	}
	yield := ok && theirs.evidence().After(mine)
	if yield {
		g := theirs.Peak.Group
		if l.alerts[g] == nil {
			l.alerts[g] = map[string]*Alert{}
		}
		theirs.savedSeen = theirs.LastSeen
		l.alerts[g][k] = &theirs
		delete(l.ended, k)
	}
	l.mu.Unlock()
	if yield {
		l.yielded.Inc()
		l.log.Warn("another writer changed an alert's state with newer evidence; taking its state", "alert", strings.ReplaceAll(k, "\x00", "/"))
		return nil
	}
	l.overwrote.Inc()
	l.log.Warn("another writer changed an alert's state with older evidence; writing ours over it", "alert", strings.ReplaceAll(k, "\x00", "/"))
	return l.o.Store.Save(ctx, k, ours)
}

// decodeAlertState reads a stored state of key k; ok is false for nil, a
// state that is not one of ours, or an inactive one.
func decodeAlertState(k string, b []byte) (Alert, bool) {
	var s storedAlert
	if b == nil || json.Unmarshal(b, &s) != nil || s.Version != 1 || s.Key != k || s.Alert.State == StateInactive {
		return Alert{}, false
	}
	return s.Alert.alert(), true
}

// evidence is the newest time an alert's state knows of.
func (a *Alert) evidence() time.Time {
	t := a.ActiveAt
	for _, u := range []time.Time{a.LastAnomalous, a.FiredAt, a.LastSent, a.LastSeen} {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// Firing returns the alerts that are firing now, as events with status
// firing, for outputs that re-send them (Alertmanager).
func (l *Lifecycle) Firing() []AlertData {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []AlertData
	for _, as := range l.alerts {
		for _, a := range as {
			if a.State == StateFiring {
				out = append(out, alertData(Transition{Status: StatusFiring, At: a.LastSent, Alert: *a}))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return alertKey(out[i].Group, out[i].Rule, out[i].Series) < alertKey(out[j].Group, out[j].Rule, out[j].Series)
	})
	return out
}

// Receiver takes the results of one evaluation of a group: the Publisher,
// and the outputs that act on whole batches (Alertmanager, the autoscaler
// feeds, the write-back to the store). Send must not hold evaluation up
// for long, and must not change the batch: receivers share it.
type Receiver interface {
	Send(ctx context.Context, b Batch) error
}

// Pipeline runs each batch through the alert lifecycle, then hands it to
// every receiver in order. It is the rules' Sink in the daemon.
type Pipeline struct {
	Lifecycle *Lifecycle
	// Levels, when set, records the batch's readings before the incidents
	// are made, for their diagnoses.
	Levels *LevelStore
	// Incidents, when set, groups the alert events into incidents.
	Incidents *Incidents
	Receivers []Receiver
}

// Send processes b and hands it on; it returns the lifecycle's and the
// receivers' joined errors. The batch is handed on with states unsaved:
// its events are out, and the group's progress waits for the states.
func (p *Pipeline) Send(ctx context.Context, b Batch) error {
	var errs []error
	if p.Lifecycle != nil {
		if err := p.Lifecycle.Process(ctx, &b); err != nil {
			errs = append(errs, err)
		}
	}
	if p.Levels != nil {
		p.Levels.Record(&b)
	}
	if p.Incidents != nil {
		p.Incidents.Process(ctx, &b)
	}
	for _, r := range p.Receivers {
		if err := r.Send(ctx, b); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ConflictError is a StateStore's answer to a Save that another writer
// beat: the key changed since the store last read or wrote it, and nothing
// was written. Stored is what the store holds now (nil: deleted); a Save
// after it writes on that.
type ConflictError struct {
	Key    string
	Stored []byte
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("alert state %s changed since it was last read", strings.ReplaceAll(e.Key, "\x00", "/"))
}
