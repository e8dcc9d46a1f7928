package alerting

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Levels tells the incident tracker what a serving unit's signals read,
// anomalous or not: a GPU at 95 % that is steady raises no alert but is
// evidence of saturation.
type Levels interface {
	// Peak returns the highest reading of signal on the series of unit
	// (label=value, as IncidentUnit names it) with a time in [from, to],
	// and false when there is none.
	Peak(unit, signal string, from, to time.Time) (Level, bool)
}

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
	// signal label) of a reading, as it does for an alert.
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

	mu sync.Mutex
	// units maps unit and signal to the readings of each series.
	units map[levelKey]map[string]*levelSeries
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
	return &LevelStore{p: p, retain: o.Retain, units: map[levelKey]map[string]*levelSeries{}}
}

// Record keeps the readings of b whose rule has a signal, then forgets
// the readings older than Retain before the oldest of b's: a backfill's
// batch stays whole until the next batch comes.
func (s *LevelStore) Record(b *Batch) {
	if len(b.Readings) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	oldest := int64(0)
	for i := range b.Readings {
		r := &b.Readings[i]
		if len(r.T) == 0 {
			continue
		}
		if oldest == 0 || r.T[0] < oldest {
			oldest = r.T[0]
		}
		signal := s.p.Signals[r.Rule]
		if v := r.Labels["signal"]; v != "" {
			signal = v
		}
		if signal == "" {
			continue
		}
		unit, _ := IncidentUnit(&AlertData{Group: r.Group, Rule: r.Rule, Series: r.Series, Labels: r.Labels}, s.p.By)
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
