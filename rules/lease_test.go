package rules

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
)

// memState is a shared alert-state and progress store, as the state
// bucket is for the processes of one configuration.
type memState struct {
	mu       sync.Mutex
	alerts   map[string][]byte
	progress map[string]time.Time
}

func (s *memState) Load(context.Context) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.alerts), nil
}

func (s *memState) Save(_ context.Context, key string, state []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state == nil {
		delete(s.alerts, key)
	} else {
		s.alerts[key] = state
	}
	return nil
}

func (s *memState) LoadProgress(context.Context) (map[string]time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.progress), nil
}

func (s *memState) SaveProgress(_ context.Context, ps map[string]time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.progress, ps)
	return nil
}

// holder hands out a group's lease as the test says: to whom, under
// which term.
type holder struct {
	mu    sync.Mutex
	owner string
	term  uint64
	me    string
}

func (h *holder) Acquire(string) (uint64, func(), bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owner != h.me {
		return 0, nil, false
	}
	return h.term, func() {}, true
}

// member is one process of the test: a manager, its lifecycle and what it
// published.
type member struct {
	m      *Manager
	life   *alerting.Lifecycle
	alerts []alerting.AlertData
	evals  []time.Time
	gained []string
	lost   []string
}

func (p *member) Send(ctx context.Context, b alerting.Batch) error {
	err := p.life.Process(ctx, &b)
	p.alerts = append(p.alerts, b.Alerts...)
	p.evals = append(p.evals, b.At)
	return err
}

func (p *member) Gained(ctx context.Context, group string) error {
	p.gained = append(p.gained, group)
	_, err := p.life.RestoreGroup(ctx, group)
	return err
}

func (p *member) Lost(group string) {
	p.lost = append(p.lost, group)
	p.life.ForgetGroup(group)
}

// flaky is a's view of the shared store: its alert states do not reach
// it while fail says so.
type flaky struct {
	*memState
	fail func() bool
}

func (f flaky) Save(ctx context.Context, key string, state []byte) error {
	if f.fail() {
		return errors.New("bucket unreachable")
	}
	return f.memState.Save(ctx, key, state)
}

// handOver runs one group on processes a and b from minute 120 to 199,
// over a series with a spike at minutes 148 to 151; a holds the lease
// until minute 151, b after. a's alert states do not reach the shared
// store from minute unsavedFrom up to the handover (0: they all do).
func handOver(t *testing.T, unsavedFrom int) (a, b *member, state *memState) {
	t.Helper()
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 240, map[int]float64{148: 50, 149: 60, 150: 55, 151: 58})}}
	state = &memState{alerts: map[string][]byte{}, progress: map[string]time.Time{}}
	lease := map[string]*holder{}
	var now time.Time
	minute := 0
	mk := func(name string) *member {
		t.Helper()
		var st alerting.StateStore = state
		if name == "a" && unsavedFrom > 0 {
			st = flaky{state, func() bool { return minute >= unsavedFrom }}
		}
		p := &member{life: alerting.NewLifecycle(alerting.LifecycleOptions{Store: st})}
		groups, err := Build(testGroups(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		h := &holder{me: name, owner: "a", term: 1}
		lease[name] = h
		p.m, err = NewManager(ManagerOptions{Querier: store, Sink: p, Progress: state, Leases: h, Handover: p,
			Now: func() time.Time { return now }}, groups)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b = mk("a"), mk("b")
	handTo := func(owner string, term uint64) {
		for _, h := range lease {
			h.mu.Lock()
			h.owner, h.term = owner, term
			h.mu.Unlock()
		}
	}
	ctx := context.Background()
	for minute = 120; minute < 200; minute++ {
		if minute == 151 {
			handTo("b", 2) // a's lease is taken over between two ticks
		}
		now = t0.Add(time.Duration(minute) * time.Minute)
		for _, p := range []*member{a, b} {
			g := p.m.Groups()[0]
			p.m.evalHeld(ctx, g, now)
		}
	}
	return a, b, state
}

func count(p *member, st alerting.Status) int {
	n := 0
	for _, d := range p.alerts {
		if d.Status == st {
			n++
		}
	}
	return n
}

// A group handed from one process to another mid-episode: the alert
// fires once, on the first, and resolves once, on the second, which
// restored its state; every tick is evaluated by exactly one of them, and
// the second judges the points from where the first stopped.
func TestHandoverNeitherRepeatsNorMisses(t *testing.T) {
	a, b, state := handOver(t, 0)
	if len(a.evals)+len(b.evals) != 80 || len(a.evals) != 31 {
		t.Errorf("a evaluated %d ticks and b %d, want 31 and 49", len(a.evals), len(b.evals))
	}
	if count(a, alerting.StatusFiring) != 1 || count(b, alerting.StatusFiring) != 0 {
		t.Errorf("firing: a %d, b %d; want 1 and 0", count(a, alerting.StatusFiring), count(b, alerting.StatusFiring))
	}
	if count(a, alerting.StatusResolved) != 0 || count(b, alerting.StatusResolved) != 1 {
		t.Errorf("resolved: a %d, b %d; want 0 and 1", count(a, alerting.StatusResolved), count(b, alerting.StatusResolved))
	}
	for _, d := range b.alerts {
		if d.Status == alerting.StatusResolved && !d.ActiveAt.Equal(t0.Add(148*time.Minute)) {
			t.Errorf("b resolved an episode that began at %v, want minute 148", d.ActiveAt)
		}
	}
	if len(b.gained) != 1 || len(a.gained) != 1 || len(a.lost) != 1 || len(b.lost) != 0 {
		t.Errorf("gained: a %v b %v; lost: a %v b %v", a.gained, b.gained, a.lost, b.lost)
	}
	if len(state.alerts) != 0 {
		t.Errorf("%d alert states left in the store after the resolution", len(state.alerts))
	}
}

// The first process's alert fires but its state never reaches the store
// before the group is handed over: its progress stays before the episode,
// so the second judges the episode again, fires the same alert (one event
// id: the stream keeps one) and resolves it.
func TestHandoverOfUnsavedStates(t *testing.T) {
	a, b, state := handOver(t, 148)
	if got := state.progress[ProgressKey("latency", "ttft")]; !got.Equal(t0.Add(199 * time.Minute)) {
		t.Errorf("progress %v at the end, want minute 199", got)
	}
	fired := map[time.Time]int{}
	for _, p := range []*member{a, b} {
		for _, d := range p.alerts {
			if d.Status == alerting.StatusFiring {
				fired[d.ActiveAt]++
			}
		}
	}
	if count(a, alerting.StatusFiring) != 1 || count(b, alerting.StatusFiring) != 1 || fired[t0.Add(148*time.Minute)] != 2 {
		t.Errorf("firing: a %d, b %d, by start %v; want one each, of the episode at minute 148", count(a, alerting.StatusFiring), count(b, alerting.StatusFiring), fired)
	}
	if count(a, alerting.StatusResolved) != 0 || count(b, alerting.StatusResolved) != 1 {
		t.Errorf("resolved: a %d, b %d; want 0 and 1", count(a, alerting.StatusResolved), count(b, alerting.StatusResolved))
	}
	if len(state.alerts) != 0 {
		t.Errorf("%d alert states left in the store after the resolution", len(state.alerts))
	}
}

// A process that takes a group's lease between two ticks evaluates the
// group at once at its newest tick, unless the previous owner evaluated
// that tick (the group's progress says so): then from the next tick. No
// tick is evaluated twice or missed, and the taker's catch-up judges the
// points from where the previous owner stopped.
func TestTakenGroupIsEvaluatedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lastByA  int // the last minute a evaluates
		takenAt  int // the minute b takes the lease in, half a minute after its tick
		firstByB int // b's first evaluation, at once when a did not evaluate the minute
	}{
		{name: "the previous owner evaluated the newest tick", lastByA: 150, takenAt: 150, firstByB: 151},
		{name: "the previous owner died before the newest tick", lastByA: 150, takenAt: 151, firstByB: 151},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memStore{series: []ingest.Series{minuteSeries("ttft", 240, nil)}}
			state := &memState{alerts: map[string][]byte{}, progress: map[string]time.Time{}}
			var now time.Time
			mk := func(name string, h *holder) *member {
				p := &member{life: alerting.NewLifecycle(alerting.LifecycleOptions{Store: state})}
				groups, err := Build(testGroups(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				p.m, err = NewManager(ManagerOptions{Querier: store, Sink: p, Progress: state, Leases: h, Handover: p,
					Now: func() time.Time { return now }}, groups)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			ha, hb := &holder{me: "a", owner: "a", term: 1}, &holder{me: "b", owner: "a", term: 1}
			a, b := mk("a", ha), mk("b", hb)
			ctx := context.Background()
			minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
			for m := 120; m <= tc.lastByA; m++ {
				now = minute(m)
				a.m.evalHeld(ctx, a.m.Groups()[0], now)
				b.m.evalHeld(ctx, b.m.Groups()[0], now)
			}
			// a stops (its lease lapses or it releases it); b takes the
			// lease half a minute after minute takenAt.
			ha.mu.Lock()
			ha.owner, ha.term = "b", 2
			ha.mu.Unlock()
			for m := tc.lastByA + 1; m <= tc.takenAt; m++ {
				now = minute(m)
				b.m.evalHeld(ctx, b.m.Groups()[0], now) // b does not hold the lease yet at these ticks
			}
			hb.mu.Lock()
			hb.owner, hb.term = "b", 2
			hb.mu.Unlock()
			now = minute(tc.takenAt).Add(30 * time.Second)
			b.m.evalTaken(ctx, b.m.Groups()[0], minute(tc.takenAt))
			for m := tc.takenAt + 1; m < 160; m++ {
				now = minute(m)
				b.m.evalHeld(ctx, b.m.Groups()[0], now)
			}
			if got := a.evals[len(a.evals)-1]; !got.Equal(minute(tc.lastByA)) {
				t.Errorf("a's last evaluation at %v, want minute %d", got, tc.lastByA)
			}
			if len(b.evals) == 0 || !b.evals[0].Equal(minute(tc.firstByB)) || len(b.evals) != 160-tc.firstByB {
				t.Fatalf("b evaluated %d ticks from %v, want %d from minute %d", len(b.evals), b.evals, 160-tc.firstByB, tc.firstByB)
			}
			if got := state.progress[evaluatedKey("latency")]; !got.Equal(minute(159)) {
				t.Errorf("the group's evaluated tick is %v, want minute 159", got)
			}
			if got := state.progress[ProgressKey("latency", "ttft")]; !got.Equal(minute(159)) {
				t.Errorf("the rule's progress is %v, want minute 159", got)
			}
		})
	}
}
