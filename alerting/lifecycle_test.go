package alerting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

var lt0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func at(min int) time.Time { return lt0.Add(time.Duration(min) * time.Minute) }

// point is one judged point of a test sequence: minute, anomalous, score.
type point struct {
	min   int
	anom  bool
	score float64
}

func obsAt(p point) Observation {
	return Observation{Group: "g", Rule: "r", Kind: "anomaly", Detector: "sigma", Series: `ttft{pod="p0"}`,
		Labels: map[string]string{"pod": "p0"}, At: at(p.min), Anomalous: p.anom, Score: p.score, Value: p.score * 10,
		Expected: 1, Lower: 0, Upper: 2}
}

// run steps an alert through points and returns what happened as
// "status@minute" strings.
func run(p Policy, points ...point) (Alert, []string) {
	var a Alert
	var got []string
	for _, pt := range points {
		var trs []Transition
		a, trs = Step(a, obsAt(pt), p)
		for _, tr := range trs {
			got = append(got, fmt.Sprintf("%s@%d", tr.Status, int(tr.At.Sub(lt0)/time.Minute)))
		}
	}
	return a, got
}

func TestStepSequences(t *testing.T) {
	y, n := true, false
	f := func(name string, p Policy, want string, points ...point) {
		t.Helper()
		_, got := run(p, points...)
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %v, want %q", name, got, want)
		}
	}
	f("fires at the first anomalous point without for, resolves at the first normal one", Policy{},
		"firing@1 resolved@3", point{0, n, 0}, point{1, y, 3}, point{2, y, 4}, point{3, n, 0}, point{4, n, 0})
	f("for: pending until it has lasted, then firing", Policy{For: 2 * time.Minute},
		"pending@10 firing@12 resolved@14", point{10, y, 3}, point{11, y, 3}, point{12, y, 3}, point{13, y, 3}, point{14, n, 0})
	f("for: a pending alert that clears is inactive again", Policy{For: 2 * time.Minute},
		"pending@10 inactive@12 pending@13 inactive@14", point{10, y, 3}, point{11, y, 3}, point{12, n, 0}, point{13, y, 3}, point{14, n, 0})
	f("keep_firing_for: a flapping series stays one alert", Policy{KeepFiringFor: 3 * time.Minute},
		"firing@1 resolved@6", point{1, y, 3}, point{2, n, 0}, point{3, y, 5}, point{4, n, 0}, point{5, n, 0}, point{6, n, 0},
		point{7, n, 0}, point{8, n, 0}, point{9, n, 0})
	f("keep_firing_for: resolved at the first normal point past it", Policy{KeepFiringFor: 3 * time.Minute},
		"firing@1 resolved@5", point{1, y, 3}, point{5, n, 0})
	f("two episodes, two alerts", Policy{},
		"firing@1 resolved@2 firing@5 resolved@6", point{1, y, 3}, point{2, n, 0}, point{5, y, 3}, point{6, n, 0})
}

func TestStepKeepsThePeakAndTheWindow(t *testing.T) {
	a, _ := run(Policy{For: 2 * time.Minute}, point{10, true, 3}, point{11, true, 9}, point{12, true, 4}, point{13, true, 20})
	if a.State != StateFiring || !a.ActiveAt.Equal(at(10)) || !a.FiredAt.Equal(at(12)) || !a.LastAnomalous.Equal(at(13)) ||
		a.Peak.Score != 20 || !a.Peak.At.Equal(at(13)) {
		t.Fatalf("alert %+v", a)
	}
	// The finding at firing reports the episode up to the firing point and
	// its strangest point until then.
	b, _ := run(Policy{For: 2 * time.Minute}, point{10, true, 3}, point{11, true, 9}, point{12, true, 4})
	f := b.Finding(b.FiredAt)
	if !f.WindowStart.Equal(at(10)) || !f.WindowEnd.Equal(at(12)) || f.Score != 9 || !f.ValueTime.Equal(at(11)) ||
		f.Value != 90 || f.Severity != "critical" || f.Kind != "anomaly" || f.Series != `ttft{pod="p0"}` {
		t.Fatalf("finding %+v", f)
	}
}

func TestTickRepeatsAFiringAlert(t *testing.T) {
	p := Policy{RepeatInterval: 4 * time.Hour}
	a, _ := run(p, point{0, true, 3})
	var got []string
	for _, h := range []int{1, 3, 4, 5, 8, 12} {
		var trs []Transition
		a, trs = Tick(a, lt0.Add(time.Duration(h)*time.Hour), p)
		for _, tr := range trs {
			got = append(got, fmt.Sprintf("%s@%dh", tr.Status, int(tr.At.Sub(lt0)/time.Hour)))
		}
	}
	if strings.Join(got, " ") != "repeat@4h repeat@8h repeat@12h" {
		t.Fatalf("repeats %v", got)
	}
	if _, trs := Tick(Alert{State: StatePending}, lt0.Add(time.Hour), Policy{RepeatInterval: time.Minute}); len(trs) != 0 {
		t.Fatal("a pending alert repeated")
	}
	if _, trs := Tick(a, lt0.Add(100*time.Hour), Policy{}); len(trs) != 0 {
		t.Fatal("repeated without a repeat interval")
	}
}

func TestGoneResolves(t *testing.T) {
	a, _ := run(Policy{}, point{0, true, 3})
	gone := obsAt(point{5, false, 0})
	gone.Gone = true
	next, trs := Step(a, gone, Policy{})
	if next.State != StateInactive || len(trs) != 1 || trs[0].Status != StatusResolved || !trs[0].At.Equal(at(5)) {
		t.Fatalf("gone: %+v %+v", next, trs)
	}
	if trs[0].Reason != ReasonForgotten {
		t.Errorf("gone: reason %q, want %q", trs[0].Reason, ReasonForgotten)
	}
	pending, _ := run(Policy{For: time.Hour}, point{0, true, 3})
	if next, trs := Step(pending, gone, Policy{For: time.Hour}); next.State != StateInactive || len(trs) != 1 || trs[0].Status != StatusInactive {
		t.Fatalf("gone while pending: %+v %+v", next, trs)
	}
}

func TestAbsentEndsAnAlertWhoseSeriesStopped(t *testing.T) {
	firing, _ := run(Policy{}, point{0, true, 3}, point{1, true, 4})
	pending, _ := run(Policy{For: time.Hour}, point{0, true, 3}, point{1, true, 4})
	old := firing
	old.LastSeen, old.LastValue = time.Time{}, 0 // kept before LastSeen was
	after := 5 * time.Minute
	for _, c := range []struct {
		name    string
		a       Alert
		through time.Time
		want    Status // "" for none
	}{
		{"firing, absent for less than the bound", firing, at(5), ""},
		{"firing, absent for the bound", firing, at(6), StatusResolved},
		{"pending, absent for the bound", pending, at(7), StatusInactive},
		{"inactive", Alert{}, at(60), ""},
		{"a state without LastSeen counts from its newest anomalous point", old, at(6), StatusResolved},
		{"a state without LastSeen, within the bound", old, at(5), ""},
	} {
		next, trs := Absent(c.a, c.through, after)
		switch {
		case c.want == "" && (len(trs) != 0 || next.State != c.a.State):
			t.Errorf("%s: %+v, want nothing", c.name, trs)
		case c.want != "" && (len(trs) != 1 || trs[0].Status != c.want || trs[0].Reason != ReasonAbsent ||
			!trs[0].At.Equal(c.through) || next.State != StateInactive):
			t.Errorf("%s: %+v (state %v), want %s for absence at %v", c.name, trs, next.State, c.want, c.through)
		}
	}
	if !firing.LastSeen.Equal(at(1)) || firing.LastValue != 40 {
		t.Errorf("the alert knows its series last at %v = %v, want %v = 40", firing.LastSeen, firing.LastValue, at(1))
	}
}

func TestSeverity(t *testing.T) {
	a := Alert{Peak: Observation{Score: 1.5}}
	if a.Severity() != "warning" {
		t.Error(a.Severity())
	}
	a.Peak.Score = 2
	if a.Severity() != "critical" {
		t.Error(a.Severity())
	}
	a.Peak.Severity = "warning" // the analysis graded it
	if a.Severity() != "warning" {
		t.Error(a.Severity())
	}
	a.Peak.Labels = map[string]string{"severity": "page"} // the rule's label wins
	if a.Severity() != "page" {
		t.Error(a.Severity())
	}
}

// memStore is a StateStore in memory.
type memStore struct {
	mu   sync.Mutex
	m    map[string][]byte
	fail bool
}

func (s *memStore) Load(context.Context) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.m {
		out[k] = v
	}
	return out, nil
}

func (s *memStore) Save(_ context.Context, key string, state []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("store down")
	}
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	if state == nil {
		delete(s.m, key)
	} else {
		s.m[key] = state
	}
	return nil
}

func batchOf(points ...point) *Batch {
	b := &Batch{Group: "g", At: at(points[len(points)-1].min)}
	for _, p := range points {
		o := obsAt(p)
		o.Policy = Policy{For: time.Minute}
		b.Observations = append(b.Observations, o)
	}
	return b
}

func statuses(b *Batch) string {
	var s []string
	for _, a := range b.Alerts {
		s = append(s, fmt.Sprintf("%s@%d", a.Status, int(a.Time.Sub(lt0)/time.Minute)))
	}
	return strings.Join(s, " ")
}

// TestLifecycleReplaysAnEpisodeWithItsOwnTimes: a backfill's observations
// go through in one batch, and an episode that started and ended inside it
// yields its firing and its resolved event at their own times.
func TestLifecycleReplaysAnEpisodeWithItsOwnTimes(t *testing.T) {
	l := NewLifecycle(LifecycleOptions{})
	b := batchOf(point{100, true, 3}, point{101, true, 5}, point{102, true, 4}, point{103, false, 0}, point{200, true, 3})
	l.Process(context.Background(), b)
	if got := statuses(b); got != "pending@100 firing@101 resolved@103 pending@200" || len(b.Findings) != 1 || !b.Findings[0].WindowEnd.Equal(at(101)) {
		t.Fatalf("events %q, findings %+v", got, b.Findings)
	}
	if d := b.Alerts[2]; d.ResolvedAt == nil || !d.ResolvedAt.Equal(at(103)) || !d.FiredAt.Equal(at(101)) || !d.ActiveAt.Equal(at(100)) ||
		!strings.Contains(d.Description, "Resolved at") || d.Summary != `g/r: ttft{pod="p0"} anomalous` {
		t.Fatalf("resolved event %+v", d)
	}
	if len(l.Firing()) != 0 {
		t.Fatalf("firing after the replay: %+v", l.Firing())
	}
	if b.Observations != nil {
		t.Fatal("observations not consumed")
	}
}

// TestLifecycleStateSurvivesARestart: a new Lifecycle restored from the
// store neither fires again what was firing nor forgets what was pending,
// and resolves what cleared while it was down.
func TestLifecycleStateSurvivesARestart(t *testing.T) {
	store := &memStore{}
	ctx := context.Background()
	l1 := NewLifecycle(LifecycleOptions{Store: store})
	b := batchOf(point{0, true, 3}, point{1, true, 3})
	b.Observations = append(b.Observations, func() Observation {
		o := obsAt(point{1, true, 3})
		o.Series, o.Policy = `ttft{pod="p1"}`, Policy{For: 10 * time.Minute}
		return o
	}())
	l1.Process(ctx, b)
	if statuses(b) != "pending@0 firing@1 pending@1" || len(store.m) != 2 {
		t.Fatalf("before the restart: %q, %d stored", statuses(b), len(store.m))
	}
	// Garbage in the bucket is skipped, never fatal.
	store.m["junk"] = []byte("{not json")
	store.m["foreign"] = []byte(`{"v":7}`)

	l2 := NewLifecycle(LifecycleOptions{Store: store})
	n, err := l2.Restore(ctx, 0)
	if err != nil || n != 2 {
		t.Fatalf("restored %d, %v", n, err)
	}
	b = batchOf(point{2, true, 3}, point{3, true, 3})
	l2.Process(ctx, b)
	if statuses(b) != "" {
		t.Fatalf("a restored firing alert fired again: %q", statuses(b))
	}
	// p1 was pending since minute 1; with for 10m it fires at minute 11,
	// counted from before the restart.
	o := obsAt(point{11, true, 3})
	o.Series, o.Policy = `ttft{pod="p1"}`, Policy{For: 10 * time.Minute}
	b = &Batch{Group: "g", At: at(11), Observations: []Observation{o}}
	l2.Process(ctx, b)
	if statuses(b) != "firing@11" || !b.Alerts[0].ActiveAt.Equal(at(1)) {
		t.Fatalf("the restored pending alert: %q %+v", statuses(b), b.Alerts)
	}
	// p0 cleared while the daemon was down: its first normal point resolves it.
	b = batchOf(point{12, false, 0})
	l2.Process(ctx, b)
	if statuses(b) != "resolved@12" {
		t.Fatalf("after clearing: %q", statuses(b))
	}
	if _, ok := store.m[alertKey("g", "r", `ttft{pod="p0"}`)]; ok {
		t.Fatal("a resolved alert stayed in the store")
	}
}

func TestLifecycleRetriesStateSavesAndResolvesRemovedRules(t *testing.T) {
	store := &memStore{fail: true}
	ctx := context.Background()
	l := NewLifecycle(LifecycleOptions{Store: store})
	if err := l.Process(ctx, batchOf(point{0, true, 3}, point{1, true, 3})); !errors.Is(err, ErrStatesUnsaved) {
		t.Fatalf("a failed save returned %v, want ErrStatesUnsaved", err)
	}
	if len(store.m) != 0 {
		t.Fatal("saved while the store fails")
	}
	if err := l.Process(ctx, &Batch{Group: "other", At: at(2)}); err != nil {
		t.Fatalf("another group's batch returned %v: its states are saved", err)
	}
	store.fail = false
	if err := l.Process(ctx, &Batch{Group: "g", At: at(2)}); err != nil {
		t.Fatalf("the retried save returned %v", err)
	}
	if len(store.m) != 1 {
		t.Fatalf("the failed save was not retried: %d stored", len(store.m))
	}
	evs := l.Retain(at(3), func(group, rule string) bool { return rule != "r" })
	if len(evs) != 1 || evs[0].Status != StatusResolved || len(l.Firing()) != 0 {
		t.Fatalf("removed rule's alert: %+v", evs)
	}
	l.Process(ctx, &Batch{Group: "g", At: at(4)})
	if len(store.m) != 0 {
		t.Fatal("the removed rule's alert stayed in the store")
	}
}

// TestRetainStored: a process that holds no alerts resolves, once, the
// stored alerts of a rule its configuration no longer has, and deletes
// them; those of kept rules stay.
func TestRetainStored(t *testing.T) {
	store := &memStore{}
	ctx := context.Background()
	owner := NewLifecycle(LifecycleOptions{Store: store})
	if err := owner.Process(ctx, batchOf(point{0, true, 3}, point{1, true, 3})); err != nil {
		t.Fatal(err)
	}
	if len(owner.Firing()) != 1 || len(store.m) != 1 {
		t.Fatalf("%d firing, %d stored; want 1 and 1", len(owner.Firing()), len(store.m))
	}
	saved := maps.Clone(store.m)
	other := NewLifecycle(LifecycleOptions{Store: store})
	evs, err := other.RetainStored(ctx, at(5), func(group, rule string) bool { return true })
	if err != nil || len(evs) != 0 || len(store.m) != 1 {
		t.Fatalf("keeping every rule: %d events, %d stored, %v", len(evs), len(store.m), err)
	}
	evs, err = other.RetainStored(ctx, at(5), func(group, rule string) bool { return rule != "r" })
	if err != nil || len(evs) != 1 || evs[0].Status != StatusResolved || evs[0].Reason != ReasonRuleRemoved || !evs[0].Time.Equal(at(5)) {
		t.Fatalf("the removed rule's alert: %+v, %v", evs, err)
	}
	if len(store.m) != 0 {
		t.Fatal("the removed rule's alert stayed in the store")
	}
	if evs, _ := NewLifecycle(LifecycleOptions{Store: store}).RetainStored(ctx, at(6), func(string, string) bool { return false }); len(evs) != 0 {
		t.Fatalf("resolved again by a third process: %+v", evs)
	}
	// The owner holds the alert: RetainStored leaves it to Retain.
	store.m = saved
	if evs, _ := owner.RetainStored(ctx, at(8), func(string, string) bool { return false }); len(evs) != 0 {
		t.Fatalf("resolved an alert the process holds: %+v", evs)
	}
	if len(store.m) != 1 {
		t.Fatal("deleted the state of an alert the process holds")
	}
}

// TestLifecycleEndsAlertsOfAbsentSeries: an evaluated rule's alerts whose
// series had no point for its AbsentAfter end, with the reason and the
// series' last value; a failed evaluation (no Evaluated entry) ends
// nothing; a series that comes back later opens a new episode.
func TestLifecycleEndsAlertsOfAbsentSeries(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	l := NewLifecycle(LifecycleOptions{Store: store})
	b := &Batch{Group: "g", At: at(1), Observations: []Observation{obsAt(point{0, true, 3}), obsAt(point{1, true, 5})}}
	pend := obsAt(point{1, true, 3})
	pend.Series, pend.Policy = `ttft{pod="p1"}`, Policy{For: time.Hour}
	b.Observations = append(b.Observations, pend)
	l.Process(ctx, b)
	if statuses(b) != "firing@0 pending@1" {
		t.Fatalf("setup: %q", statuses(b))
	}
	eval := func(min int) []RuleEvaluated {
		return []RuleEvaluated{{Rule: "r", Through: at(min), AbsentAfter: 5 * time.Minute}}
	}
	b = &Batch{Group: "g", At: at(5), Evaluated: eval(5)}
	l.Process(ctx, b)
	if statuses(b) != "" {
		t.Fatalf("ended within the bound: %q", statuses(b))
	}
	b = &Batch{Group: "g", At: at(9)} // the rule's evaluation failed
	l.Process(ctx, b)
	if statuses(b) != "" {
		t.Fatalf("ended without an evaluation: %q", statuses(b))
	}
	b = &Batch{Group: "g", At: at(6), Evaluated: []RuleEvaluated{{Rule: "other", Through: at(60), AbsentAfter: time.Minute}}}
	l.Process(ctx, b)
	if statuses(b) != "" {
		t.Fatalf("another rule's evaluation ended this rule's alerts: %q", statuses(b))
	}
	b = &Batch{Group: "g", At: at(6), Evaluated: eval(6)}
	l.Process(ctx, b)
	if statuses(b) != "resolved@6 inactive@6" {
		t.Fatalf("absent: %q", statuses(b))
	}
	d := b.Alerts[0]
	if d.Reason != ReasonAbsent || d.LastSeenAt == nil || !d.LastSeenAt.Equal(at(1)) || d.LastValue != 50 ||
		!strings.Contains(d.Description, "no point since 2026-11-01T12:01:00Z, at 50") {
		t.Errorf("resolved event: reason %q, last seen %v = %v, %q", d.Reason, d.LastSeenAt, d.LastValue, d.Description)
	}
	if d := b.Alerts[1]; d.Reason != ReasonAbsent || d.FiredAt != nil {
		t.Errorf("inactive event: reason %q, fired at %v", d.Reason, d.FiredAt)
	}
	if len(store.m) != 0 || len(l.Firing()) != 0 {
		t.Errorf("after ending: %d stored, %d firing", len(store.m), len(l.Firing()))
	}
	// The series comes back anomalous: a new episode, a new finding.
	b = &Batch{Group: "g", At: at(20), Observations: []Observation{obsAt(point{20, true, 4})}, Evaluated: eval(20)}
	l.Process(ctx, b)
	if statuses(b) != "firing@20" || len(b.Findings) != 1 || !b.Alerts[0].ActiveAt.Equal(at(20)) {
		t.Fatalf("the series came back: %q, %d findings", statuses(b), len(b.Findings))
	}
}

// TestRestoredAlertOfAVanishedSeriesEnds: after a restart, an alert whose
// series the store no longer holds ends at its rule's first evaluation,
// absent since the point before the restart.
func TestRestoredAlertOfAVanishedSeriesEnds(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	l1 := NewLifecycle(LifecycleOptions{Store: store})
	l1.Process(ctx, &Batch{Group: "g", At: at(0), Observations: []Observation{obsAt(point{0, true, 3})}})
	l2 := NewLifecycle(LifecycleOptions{Store: store})
	if n, err := l2.Restore(ctx, 0); n != 1 || err != nil {
		t.Fatalf("restored %d, %v", n, err)
	}
	b := &Batch{Group: "g", At: at(90), Evaluated: []RuleEvaluated{{Rule: "r", Through: at(90), AbsentAfter: 5 * time.Minute}}}
	l2.Process(ctx, b)
	if statuses(b) != "resolved@90" || b.Alerts[0].Reason != ReasonAbsent || !b.Alerts[0].LastSeenAt.Equal(at(0)) || b.Alerts[0].LastValue != 30 {
		t.Fatalf("after the restart: %q %+v", statuses(b), b.Alerts)
	}
	if len(store.m) != 0 {
		t.Error("the ended alert stayed in the store")
	}
}

// TestStoredAlertKeepsUndefinedFigures: an alert whose strangest point has
// no expected value or band (NaN) is kept and restored as it was.
func TestStoredAlertKeepsUndefinedFigures(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	l1 := NewLifecycle(LifecycleOptions{Store: store})
	o := obsAt(point{0, true, 3})
	o.Expected, o.Lower, o.Upper = math.NaN(), math.NaN(), math.NaN()
	l1.Process(ctx, &Batch{Group: "g", At: at(0), Observations: []Observation{o}})
	if len(store.m) != 1 {
		t.Fatalf("%d stored, want the alert", len(store.m))
	}
	l2 := NewLifecycle(LifecycleOptions{Store: store})
	if n, err := l2.Restore(ctx, 0); n != 1 || err != nil {
		t.Fatalf("restored %d, %v", n, err)
	}
	f := l2.Firing()
	if len(f) != 1 || !math.IsNaN(float64(f[0].Expected)) || !math.IsNaN(float64(f[0].Lower)) || f[0].Value != 30 || f[0].Score != 3 {
		t.Fatalf("restored %+v", f)
	}
}

// raceStore is a StateStore another writer has just written key to: the
// first Save of it is refused with what that writer stored; later Saves
// go through.
type raceStore struct {
	memStore
	theirs  []byte
	refused bool
}

func (s *raceStore) Save(ctx context.Context, key string, state []byte) error {
	if !s.refused {
		s.refused = true
		return &ConflictError{Key: key, Stored: s.theirs}
	}
	return s.memStore.Save(ctx, key, state)
}

// TestLifecycleSettlesAConflictByEvidence: a write another writer beat is
// settled by which state knows of the newer point: theirs is taken and
// nothing written; ours is written over theirs.
func TestLifecycleSettlesAConflictByEvidence(t *testing.T) {
	ctx := context.Background()
	k := alertKey("g", "r", `ttft{pod="p0"}`)
	stored := func(min int) []byte {
		a, _ := run(Policy{}, point{min, true, 9})
		b, err := storeAlert(k, &a)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name       string
		theirs     []byte
		wantPeakAt int // the firing alert's peak, in minutes
		wantSaved  bool
	}{
		{"theirs is newer: taken", stored(30), 30, false},
		{"theirs is older: ours written", stored(-30), 10, true},
		{"theirs was deleted: ours written", nil, 10, true},
	} {
		store := &raceStore{theirs: c.theirs}
		set := metrics.NewSet()
		l := NewLifecycle(LifecycleOptions{Store: store, Metrics: set})
		l.Process(ctx, &Batch{Group: "g", At: at(10), Observations: []Observation{obsAt(point{10, true, 3})}})
		f := l.Firing()
		if len(f) != 1 || !f[0].ValueTime.Equal(at(c.wantPeakAt)) {
			t.Errorf("%s: firing %+v, want the peak at minute %d", c.name, f, c.wantPeakAt)
		}
		if _, saved := store.m[k]; saved != c.wantSaved {
			t.Errorf("%s: saved %v, want %v", c.name, saved, c.wantSaved)
		}
		outcome := "overwrote"
		if !c.wantSaved {
			outcome = "yielded"
		}
		if n := set.GetOrCreateCounter(`inferwatch_alert_state_conflicts_total{outcome="` + outcome + `"}`).Get(); n != 1 {
			t.Errorf("%s: %d conflicts counted as %s, want 1", c.name, n, outcome)
		}
	}
}

// TestPendingEventsHaveNoFiredAt: a pending alert's event leaves fired_at
// out (it has not fired), and a pending alert that clears before it fires
// is announced inactive, so a subscriber is never left with a pending one.
func TestPendingEventsHaveNoFiredAt(t *testing.T) {
	l := NewLifecycle(LifecycleOptions{})
	b := batchOf(point{0, true, 3}, point{1, false, 0})
	l.Process(context.Background(), b)
	if statuses(b) != "pending@0 inactive@1" {
		t.Fatalf("events %q", statuses(b))
	}
	for _, d := range b.Alerts {
		ev, err := NewAlertEvent(d, "")
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "fired_at") {
			t.Errorf("%s event carries fired_at: %s", d.Status, raw)
		}
	}
	if b.Alerts[1].Reason != ReasonNormal {
		t.Errorf("inactive event: reason %q, want %q", b.Alerts[1].Reason, ReasonNormal)
	}
}
