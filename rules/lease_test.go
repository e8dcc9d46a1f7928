package rules

import (
	"context"
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
	p.life.Process(ctx, &b)
	p.alerts = append(p.alerts, b.Alerts...)
	p.evals = append(p.evals, b.At)
	return nil
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

// A group handed from one process to another mid-episode: the alert
// fires once, on the first, and resolves once, on the second, which
// restored its state; every tick is evaluated by exactly one of them, and
// the second judges the points from where the first stopped.
func TestHandoverNeitherRepeatsNorMisses(t *testing.T) {
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 240, map[int]float64{148: 50, 149: 60, 150: 55, 151: 58})}}
	state := &memState{alerts: map[string][]byte{}, progress: map[string]time.Time{}}
	lease := map[string]*holder{}
	var now time.Time
	mk := func(name string) *member {
		t.Helper()
		p := &member{life: alerting.NewLifecycle(alerting.LifecycleOptions{Store: state})}
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
	a, b := mk("a"), mk("b")
	handTo := func(owner string, term uint64) {
		for _, h := range lease {
			h.mu.Lock()
			h.owner, h.term = owner, term
			h.mu.Unlock()
		}
	}
	ctx := context.Background()
	for i := 120; i < 200; i++ {
		if i == 151 {
			handTo("b", 2) // a's lease is taken over between two ticks
		}
		now = t0.Add(time.Duration(i) * time.Minute)
		for _, p := range []*member{a, b} {
			g := p.m.Groups()[0]
			p.m.evalHeld(ctx, g, now)
		}
	}
	if len(a.evals)+len(b.evals) != 80 || len(a.evals) != 31 {
		t.Errorf("a evaluated %d ticks and b %d, want 31 and 49", len(a.evals), len(b.evals))
	}
	count := func(p *member, st alerting.Status) int {
		n := 0
		for _, d := range p.alerts {
			if d.Status == st {
				n++
			}
		}
		return n
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
