package alerting

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Levels tells the incident tracker what a serving unit's signals read,
// anomalous or not (a GPU at 95 % that is steady raises no alert but is
// evidence of saturation), and which of its labels changed (a new
// version or image shortly before an incident is evidence of a
// regression).
type Levels interface {
	// Peak returns the highest reading of signal on the series of unit
	// (label=value, as IncidentUnit names it) with a time in [from, to],
	// and false when there is none.
	Peak(unit, signal string, from, to time.Time) (Level, bool)
	// Changes returns the label changes of unit in [from, to], oldest
	// first.
	Changes(unit string, from, to time.Time) []LabelChange
	// Missed returns the point of unit in [from, to] furthest above its
	// forecast's interval (by value over upper bound), and false when
	// none was above it.
	Missed(unit string, from, to time.Time) (ForecastMiss, bool)
	// Scale returns the newest scale signal of unit at or before to, and
	// false when there is none.
	Scale(unit string, to time.Time) (IncidentScale, bool)
}

// IncidentScale is what a scale rule last asked for the unit: the
// replicas a diagnosis that says to scale out means.
type IncidentScale struct {
	Rule            string    `json:"rule"`
	Target          string    `json:"target"`
	Time            time.Time `json:"time"`
	DesiredReplicas int       `json:"desired_replicas"`
	// CurrentReplicas is what it saw running; absent when unknown.
	CurrentReplicas *int `json:"current_replicas,omitempty"`
}

// LabelChange is a label of a unit's series that took a new value: the
// first series with it was judged at Time, the newest before it had Old.
type LabelChange struct {
	Label  string    `json:"label"`
	Old    string    `json:"old"`
	New    string    `json:"new"`
	Time   time.Time `json:"time"`
	Series string    `json:"series"`
}

// DefaultChangeLabels are the labels whose change on a unit a LevelStore
// reports (IncidentPolicy.ChangeLabels): what a rollout changes.
var DefaultChangeLabels = []string{"version", "image", "model_version", "revision"}

// Level is one reading of a signal: the value a rule judged on a series
// at a time.
type Level struct {
	Rule   string    `json:"rule"`
	Series string    `json:"series"`
	Time   time.Time `json:"time"`
	Value  JSONFloat `json:"value"`
}

// LevelOptions configure a LevelStore.
type LevelOptions struct {
	// Policy names the unit (By) and the signal (Signals, or a series'
	// signal label) of a reading, as it does for an alert, and the labels
	// whose changes count (ChangeLabels).
	Policy IncidentPolicy
	// Retain is how far before the oldest reading of a batch the store
	// keeps readings (default: the policy's MaxAge plus its Gap, the
	// longest window an incident's diagnosis asks about).
	Retain time.Duration
}

// LevelStore keeps the readings of the batches it records, by unit and
// signal, for Levels. It is safe for concurrent use.
type LevelStore struct {
	p      IncidentPolicy
	retain time.Duration
	change []string

	mu sync.Mutex
	// units maps unit and signal to the readings of each series.
	units map[levelKey]map[string]*levelSeries
	// values maps unit and change label to when each value was first and
	// last seen.
	values map[levelKey]map[string]*seenValue
	// misses maps unit to its forecast misses, oldest first.
	misses map[string][]ForecastMiss
	// scales maps unit to its newest scale signal.
	scales map[string]IncidentScale
}

// seenValue is when a label value of a unit was first and last seen
// (unix ms), and on which series first.
type seenValue struct {
	first, last int64
	series      string
}

type levelKey struct{ unit, signal string }

type levelSeries struct {
	rule, series string
	t            []int64
	v            []float64
}

// NewLevelStore returns an empty store.
func NewLevelStore(o LevelOptions) *LevelStore {
	p := o.Policy.withDefaults()
	if o.Retain <= 0 {
		o.Retain = p.MaxAge + p.Gap
	}
	return &LevelStore{p: p, retain: o.Retain, change: p.ChangeLabels, units: map[levelKey]map[string]*levelSeries{},
		values: map[levelKey]map[string]*seenValue{}, misses: map[string][]ForecastMiss{}, scales: map[string]IncidentScale{}}
}

// SetPolicy makes p name the unit, signal and change labels of the
// readings recorded from now on (a reload); those recorded keep theirs.
func (s *LevelStore) SetPolicy(p IncidentPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p = p.withDefaults()
	s.change = s.p.ChangeLabels
}

// Reads says whether the levels of every series of rule are wanted: its
// signal (the policy's for the rule, or its signal label) is one a
// diagnosis asks the level of.
func (s *LevelStore) Reads(rule string, ruleLabels map[string]string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	signal := s.p.Signals[rule]
	if v := ruleLabels["signal"]; v != "" {
		signal = v
	}
	return signal != "" && slices.Contains(levelSignals(s.p.Diagnoses), signal)
}

// ChangeLabels are the labels whose changes the store reports: the
// levels of a series that carries one are wanted too.
func (s *LevelStore) ChangeLabels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.change
}

// Record keeps the readings of b whose rule has a signal, then forgets
// the readings older than Retain before the oldest of b's: a backfill's
// batch stays whole until the next batch comes.
func (s *LevelStore) Record(b *Batch) {
	if len(b.Readings) == 0 && len(b.Misses) == 0 && len(b.Scales) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range b.Scales {
		unit, _ := IncidentUnit(&AlertData{Group: sc.Group, Rule: sc.Rule, Series: sc.Target, Labels: sc.Labels}, s.p.By)
		if old, ok := s.scales[unit]; ok && old.Time.After(sc.Time) {
			continue
		}
		is := IncidentScale{Rule: sc.Rule, Target: sc.Target, Time: sc.Time, DesiredReplicas: sc.DesiredReplicas}
		if sc.CurrentKnown {
			n := sc.CurrentReplicas
			is.CurrentReplicas = &n
		}
		s.scales[unit] = is
	}
	oldest := int64(0)
	for _, m := range b.Misses {
		unit, _ := IncidentUnit(&AlertData{Group: m.Group, Rule: m.Rule, Series: m.Series, Labels: m.Labels}, s.p.By)
		s.misses[unit] = append(s.misses[unit], m)
		if t := m.Time.UnixMilli(); oldest == 0 || t < oldest {
			oldest = t
		}
	}
	for i := range b.Readings {
		r := &b.Readings[i]
		if len(r.T) == 0 {
			continue
		}
		if oldest == 0 || r.T[0] < oldest {
			oldest = r.T[0]
		}
		unit, _ := IncidentUnit(&AlertData{Group: r.Group, Rule: r.Rule, Series: r.Series, Labels: r.Labels}, s.p.By)
		s.see(unit, r)
		signal := s.p.Signals[r.Rule]
		if v := r.Labels["signal"]; v != "" {
			signal = v
		}
		if signal == "" {
			continue
		}
		k := levelKey{unit, signal}
		m := s.units[k]
		if m == nil {
			m = map[string]*levelSeries{}
			s.units[k] = m
		}
		id := r.Group + "\x00" + r.Rule + "\x00" + r.Series
		ls := m[id]
		if ls == nil {
			ls = &levelSeries{rule: r.Rule, series: r.Series}
			m[id] = ls
		}
		ls.add(r.T, r.V)
	}
	if oldest == 0 {
		return
	}
	cut := oldest - s.retain.Milliseconds()
	for k, m := range s.units {
		for id, ls := range m {
			i := sort.Search(len(ls.t), func(i int) bool { return ls.t[i] >= cut })
			if i == len(ls.t) {
				delete(m, id)
				continue
			}
			if i > 0 {
				ls.t, ls.v = slices.Clone(ls.t[i:]), slices.Clone(ls.v[i:])
			}
		}
		if len(m) == 0 {
			delete(s.units, k)
		}
	}
	for unit, ms := range s.misses {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Time.Before(ms[j].Time) })
		i := sort.Search(len(ms), func(i int) bool { return ms[i].Time.UnixMilli() >= cut })
		if i == len(ms) {
			delete(s.misses, unit)
			continue
		}
		s.misses[unit] = slices.Clone(ms[i:])
	}
	for k, m := range s.values {
		for v, seen := range m {
			if seen.last < cut {
				delete(m, v)
			}
		}
		if len(m) == 0 {
			delete(s.values, k)
		}
	}
}

// see notes the values of the change labels the readings' series have.
func (s *LevelStore) see(unit string, r *Readings) {
	first, last := r.T[0], r.T[len(r.T)-1]
	for _, l := range s.change {
		v := r.Labels[l]
		if v == "" {
			continue
		}
		k := levelKey{unit, l}
		m := s.values[k]
		if m == nil {
			m = map[string]*seenValue{}
			s.values[k] = m
		}
		seen := m[v]
		if seen == nil {
			m[v] = &seenValue{first: first, last: last, series: r.Series}
			continue
		}
		if first < seen.first {
			seen.first, seen.series = first, r.Series
		}
		seen.last = max(seen.last, last)
	}
}

// Changes implements Levels: a value of a change label first seen in
// [from, to] after another value of it was seen is a change from the
// value seen last before it.
func (s *LevelStore) Changes(unit string, from, to time.Time) []LabelChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []LabelChange
	lo, hi := from.UnixMilli(), to.UnixMilli()
	for _, l := range s.change {
		m := s.values[levelKey{unit, l}]
		for _, v := range slices.Sorted(maps.Keys(m)) {
			seen := m[v]
			if seen.first < lo || seen.first > hi {
				continue
			}
			old, oldLast := "", int64(0)
			for w, o := range m {
				if w != v && o.first < seen.first && (old == "" || o.last > oldLast || o.last == oldLast && w < old) {
					old, oldLast = w, o.last
				}
			}
			if old == "" {
				continue // the first value seen: no change
			}
			out = append(out, LabelChange{Label: l, Old: old, New: v, Time: time.UnixMilli(seen.first).UTC(), Series: seen.series})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// add appends the readings after the newest held; one in the same span
// as the newest held replaces it when higher.
func (ls *levelSeries) add(ts []int64, vs []float64) {
	span := ReadingSpan.Milliseconds()
	for j, t := range ts {
		n := len(ls.t)
		switch {
		case n > 0 && floorDiv(ls.t[n-1], span) == floorDiv(t, span):
			if vs[j] > ls.v[n-1] {
				ls.t[n-1], ls.v[n-1] = t, vs[j]
			}
		case n > 0 && t < ls.t[n-1]:
			// Judged again after a restart or a reload: kept once.
		default:
			ls.t, ls.v = append(ls.t, t), append(ls.v, vs[j])
		}
	}
}

// Peak implements Levels.
func (s *LevelStore) Peak(unit, signal string, from, to time.Time) (Level, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.units[levelKey{unit, signal}]
	var best Level
	found := false
	lo, hi := from.UnixMilli(), to.UnixMilli()
	for _, id := range slices.Sorted(maps.Keys(m)) {
		ls := m[id]
		for i := sort.Search(len(ls.t), func(i int) bool { return ls.t[i] >= lo }); i < len(ls.t) && ls.t[i] <= hi; i++ {
			if !found || ls.v[i] > float64(best.Value) {
				best = Level{Rule: ls.rule, Series: ls.series, Time: time.UnixMilli(ls.t[i]).UTC(), Value: JSONFloat(ls.v[i])}
				found = true
			}
		}
	}
	return best, found
}

// Missed implements Levels.
func (s *LevelStore) Missed(unit string, from, to time.Time) (ForecastMiss, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best ForecastMiss
	found := false
	for _, m := range s.misses[unit] {
		if m.Time.Before(from) || m.Time.After(to) {
			continue
		}
		if !found || excess(m) > excess(best) {
			best, found = m, true
		}
	}
	return best, found
}

// Scale implements Levels.
func (s *LevelStore) Scale(unit string, to time.Time) (IncidentScale, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.scales[unit]
	if !ok || sc.Time.After(to) {
		return IncidentScale{}, false
	}
	return sc, true
}

// excess is how far a miss lies above the interval, as a share of its
// upper bound (the difference when the bound is not positive).
func excess(m ForecastMiss) float64 {
	if float64(m.Upper) > 0 {
		return float64(m.Value)/float64(m.Upper) - 1
	}
	return float64(m.Value - m.Upper)
}
