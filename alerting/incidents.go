package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/internal/metricname"
)

// IncidentOptions configure an Incidents tracker.
type IncidentOptions struct {
	Policy IncidentPolicy
	// Store, when set, keeps the open incidents across restarts
	// (natsjs.KV's Incidents).
	Store StateStore
	// Levels, when set, gives the diagnoses the levels of the units'
	// signals (a LevelStore the pipeline records the batches in).
	Levels Levels
	// Logger (nil: discard) and Metrics (nil: unregistered).
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// Incidents turns the alert events of every group into incidents, one
// open incident per serving unit, and keeps them, in its Store when it has
// one. It is safe for concurrent use by the groups' evaluations.
type Incidents struct {
	o   IncidentOptions
	p   IncidentPolicy
	log *slog.Logger

	mu     sync.Mutex
	open   map[string]*Incident // unit → its open incident
	recent map[string]*Incident // unit → its last resolved incident, for alerts that come late (at most MaxOpen)
	groups map[string]int       // group → open incidents
	// waiting are the groups whose first batch Expect awaits, held the
	// alerts of the first batches come so far, from heldSince (the first
	// one's time) for at most hold.
	waiting   map[string]bool
	held      []AlertData
	heldSince time.Time
	hold      time.Duration

	events                 map[IncidentStatus]*metrics.Counter
	overOpen, overMembers  *metrics.Counter
	saveFailures, restored *metrics.Counter
}

// NewIncidents returns a tracker with no incidents; Restore loads the
// stored ones.
func NewIncidents(o IncidentOptions) *Incidents {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	t := &Incidents{o: o, p: o.Policy.withDefaults(), log: o.Logger, open: map[string]*Incident{}, recent: map[string]*Incident{}, groups: map[string]int{},
		events: map[IncidentStatus]*metrics.Counter{}}
	set := o.Metrics
	for _, s := range []IncidentStatus{IncidentOpened, IncidentUpdated, IncidentResolved} {
		t.events[s] = set.GetOrCreateCounter(metricname.Name("inferwatch_incident_events_total", "status", string(s)))
	}
	t.overOpen = set.GetOrCreateCounter(metricname.Name("inferwatch_incident_alerts_dropped_total", "reason", "max_open"))
	t.overMembers = set.GetOrCreateCounter(metricname.Name("inferwatch_incident_alerts_dropped_total", "reason", "max_members"))
	t.saveFailures = set.GetOrCreateCounter("inferwatch_incident_state_save_failures_total")
	t.restored = set.GetOrCreateCounter("inferwatch_incidents_restored_total")
	set.RegisterMetricsWriter(t.writeOpen)
	return t
}

// writeOpen writes inferwatch_incidents_open: the open incidents.
func (t *Incidents) writeOpen(w io.Writer) {
	t.mu.Lock()
	n := len(t.open)
	t.mu.Unlock()
	name := metricname.Name("inferwatch_incidents_open")
	metrics.WriteMetadataIfNeeded(w, name, "gauge")
	fmt.Fprintf(w, "%s %d\n", name, n)
}

// Expect tells the tracker the groups whose first batches are coming: it
// holds the alerts of each first batch until every one of them has come, or
// until a batch comes hold or more after the first, and then takes them all
// at once, in the order of their times. A first evaluation with a backfill
// judges much history at once, and the groups' evaluations finish in any
// order: without it, an incident would belong to whichever group's batch
// came first (its id and subject are its opening alert's group's), not to
// the group whose alert fired first.
func (t *Incidents) Expect(groups []string, hold time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiting, t.held, t.heldSince, t.hold = map[string]bool{}, nil, time.Time{}, hold
	for _, g := range groups {
		t.waiting[g] = true
	}
	if len(t.waiting) == 0 {
		t.waiting = nil
	}
}

// SetPolicy makes p the policy of what comes next (a reload): open
// incidents keep their members and diagnosis until their next event,
// which follows p; the MaxOpen of a group bounds only new incidents.
func (t *Incidents) SetPolicy(p IncidentPolicy) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.o.Policy, t.p = p, p.withDefaults()
}

// alertsBefore orders alerts by their times, then by their windows'
// starts, groups, rules and series: the same alerts come out in one order
// whatever order their batches came in.
func alertsBefore(a, b *AlertData) bool {
	switch {
	case !a.Time.Equal(b.Time):
		return a.Time.Before(b.Time)
	case !a.ActiveAt.Equal(b.ActiveAt):
		return a.ActiveAt.Before(b.ActiveAt)
	case a.Group != b.Group:
		return a.Group < b.Group
	case a.Rule != b.Rule:
		return a.Rule < b.Rule
	}
	return a.Series < b.Series
}

// Process runs the alert events of b through the incidents, in the order
// of their times, resolves the incidents whose gap has passed by b.At,
// appends the incident events to b and saves the incidents that changed.
// While Expect awaits first batches, it holds b's alerts instead.
func (t *Incidents) Process(ctx context.Context, b *Batch) {
	t.mu.Lock()
	var alerts []AlertData
	if t.waiting != nil {
		if t.heldSince.IsZero() {
			t.heldSince = b.At
		}
		delete(t.waiting, b.Group)
		t.held = append(t.held, b.Alerts...)
		if len(t.waiting) > 0 && b.At.Sub(t.heldSince) < t.hold {
			t.mu.Unlock()
			return
		}
		if len(t.waiting) > 0 {
			t.log.Warn("incidents waited as long as the longest group interval for the first evaluations of some groups; they go on without them",
				"groups", slices.Sorted(maps.Keys(t.waiting)))
		}
		alerts, t.held, t.waiting = t.held, nil, nil
	} else {
		alerts = slices.Clone(b.Alerts)
	}
	sort.SliceStable(alerts, func(i, j int) bool { return alertsBefore(&alerts[i], &alerts[j]) })
	changed := map[string]bool{}
	for _, d := range alerts {
		// The unit's incident is brought to the alert's time first: one
		// whose gap passed before the alert's window starts resolves
		// there. The others are brought to b.At at the end.
		at := d.Time
		if d.Status == StatusFiring {
			at = d.ActiveAt
		}
		k, _ := IncidentUnit(&d, t.p.By)
		if p := t.open[k]; p != nil {
			next, evs := TickIncident(*p, at, t.p, t.o.Levels)
			if len(evs) > 0 {
				if gone := t.set(k, *p, next); gone != "" {
					changed[gone] = true
				}
				changed[k] = true
				b.Incidents = append(b.Incidents, t.record(evs)...)
			}
		}
		var prev Incident
		if p := t.open[k]; p != nil {
			prev = *p
		} else if r := t.recent[k]; r != nil && d.Status == StatusFiring {
			prev = *r
		} else if d.Status == StatusFiring && t.groups[d.Group] >= t.p.MaxOpen {
			t.overOpen.Inc()
			t.log.Warn("an alert forms no incident: its group has as many open incidents as incidents.max_open allows",
				"group", d.Group, "rule", d.Rule, "series", d.Series, "max_open", t.p.MaxOpen)
			continue
		}
		next, evs := JoinIncident(prev, d, t.p, t.o.Levels)
		if next.Dropped > prev.Dropped && next.ID == prev.ID {
			t.overMembers.Add(next.Dropped - prev.Dropped)
		}
		if gone := t.set(k, prev, next); gone != "" {
			changed[gone] = true
		}
		changed[k] = true
		b.Incidents = append(b.Incidents, t.record(evs)...)
	}
	if !b.At.IsZero() {
		b.Incidents = append(b.Incidents, t.tick(b.At, changed)...)
	}
	save := t.encode(changed)
	t.mu.Unlock()
	t.save(ctx, save)
}

// tick advances every open incident to now; t.mu is held.
func (t *Incidents) tick(now time.Time, changed map[string]bool) []IncidentData {
	var out []IncidentData
	for _, k := range slices.Sorted(maps.Keys(t.open)) {
		prev := *t.open[k]
		next, evs := TickIncident(prev, now, t.p, t.o.Levels)
		if len(evs) == 0 {
			continue
		}
		if gone := t.set(k, prev, next); gone != "" {
			changed[gone] = true
		}
		changed[k] = true
		out = append(out, t.record(evs)...)
	}
	return out
}

// set makes next the unit k's incident, keeping the count of open
// incidents per group, and returns the unit whose resolved incident it
// forgot to keep within MaxOpen (""); t.mu is held.
func (t *Incidents) set(k string, prev, next Incident) string {
	if prev.Open() {
		t.groups[prev.Group]--
	}
	if next.Open() {
		t.groups[next.Group]++
		t.open[k] = &next
		delete(t.recent, k)
		return ""
	}
	delete(t.open, k)
	if next.ID == "" {
		return ""
	}
	t.recent[k] = &next
	return t.forgetOldest()
}

// forgetOldest forgets, past MaxOpen resolved incidents, the one that
// resolved first, and returns its unit (""); t.mu is held.
func (t *Incidents) forgetOldest() string {
	if len(t.recent) <= t.p.MaxOpen {
		return ""
	}
	oldest := ""
	for u, r := range t.recent {
		if oldest == "" || r.ResolvedAt.Before(*t.recent[oldest].ResolvedAt) || r.ResolvedAt.Equal(*t.recent[oldest].ResolvedAt) && u < oldest {
			oldest = u
		}
	}
	delete(t.recent, oldest)
	return oldest
}

// record counts and logs incident events.
func (t *Incidents) record(evs []IncidentData) []IncidentData {
	for _, e := range evs {
		t.events[e.Status].Inc()
		t.log.Debug("incident", "status", e.Status, "group", e.Group, "unit", e.Unit, "id", e.ID, "members", len(e.Members), "diagnosis", e.Diagnosis.Name)
	}
	return evs
}

// storedIncident is an incident as its Store keeps it.
type storedIncident struct {
	Version  int      `json:"v"`
	Key      string   `json:"key"`
	Incident Incident `json:"incident"`
}

// encode returns the states to save of the changed units: the open
// incident, else the last resolved one (kept for an alert that comes
// late, across a restart too), else nil (delete); t.mu is held.
func (t *Incidents) encode(changed map[string]bool) map[string][]byte {
	if t.o.Store == nil || len(changed) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(changed))
	for k := range changed {
		inc := t.open[k]
		if inc == nil {
			inc = t.recent[k]
		}
		if inc == nil {
			out[k] = nil
			continue
		}
		b, err := json.Marshal(storedIncident{Version: 1, Key: k, Incident: *inc})
		if err != nil {
			t.log.Warn("an incident cannot be encoded; it is not kept across a restart", "unit", k, "err", err)
			continue
		}
		out[k] = b
	}
	return out
}

// save writes the states outside the lock; a failure is logged and
// counted (the next change of the incident writes it again).
func (t *Incidents) save(ctx context.Context, states map[string][]byte) {
	for _, k := range slices.Sorted(maps.Keys(states)) {
		if err := t.o.Store.Save(ctx, k, states[k]); err != nil {
			t.saveFailures.Inc()
			t.log.Warn("saving an incident failed; it is saved with its next change", "unit", k, "err", err)
		}
	}
}

// Restore loads the stored incidents and returns how many open ones. The
// resolved ones are kept for alerts that come late, as before the
// restart. An entry it cannot read is logged and skipped.
func (t *Incidents) Restore(ctx context.Context) (int, error) {
	if t.o.Store == nil {
		return 0, nil
	}
	entries, err := t.o.Store.Load(ctx)
	if err != nil {
		return 0, fmt.Errorf("restoring incidents: %w", err)
	}
	t.mu.Lock()
	n, resolved := 0, 0
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		var s storedIncident
		if err := json.Unmarshal(entries[k], &s); err != nil || s.Version != 1 || s.Key == "" || s.Incident.ID == "" {
			t.log.Warn("skipping a stored incident that is not one of ours", "key", k, "err", err)
			continue
		}
		inc := s.Incident
		if inc.ResolvedAt != nil {
			if t.open[s.Key] == nil {
				t.recent[s.Key] = &inc
				resolved++
			}
			continue
		}
		delete(t.recent, s.Key)
		if old := t.open[s.Key]; old != nil {
			t.groups[old.Group]--
		}
		t.open[s.Key] = &inc
		t.groups[inc.Group]++
		n++
	}
	gone := map[string][]byte{}
	for k := t.forgetOldest(); k != ""; k = t.forgetOldest() {
		gone[k] = nil // past MaxOpen (a lower one than before the restart)
	}
	t.restored.Add(n)
	t.log.Info("incidents restored", "incidents", n, "resolved", resolved-len(gone))
	t.mu.Unlock()
	t.save(ctx, gone)
	return n, nil
}

// Open returns the open incidents as events with status updated at their
// newest anomalous point, for outputs that re-send them (Alertmanager),
// in the order of their units.
func (t *Incidents) Open() []IncidentData {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []IncidentData
	for _, k := range slices.Sorted(maps.Keys(t.open)) {
		inc := t.open[k]
		out = append(out, incidentData(IncidentUpdated, inc.End, *inc))
	}
	return out
}

// Reset forgets every incident and what Expect awaits, as a tracker just
// made: the member of a set of replicas that gives up the incidents role
// keeps nothing of them, and the one that takes it Restores them from the
// Store.
func (t *Incidents) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open, t.recent, t.groups = map[string]*Incident{}, map[string]*Incident{}, map[string]int{}
	t.waiting, t.held, t.heldSince = nil, nil, time.Time{}
}
