// Package rules evaluates inferwatch's rule groups: a Manager owns the
// groups (Build makes them from the configuration, Update replaces them on
// reload), schedules each on its interval, and hands what each evaluation
// produced to a Sink. One type per rule kind implements Rule; the
// statistics and verdicts they apply are package analysis' and
// forecasting's, and the file format is package rulefmt's.
package rules

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/metricname"
	"github.com/inferwatch/inferwatch/internal/tick"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Querier is what rules need from a store: the samples of a query over a
// range. It must stop when ctx is cancelled. *ingest.Client implements it.
type Querier interface {
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]ingest.Series, error)
}

// PartQuerier is a Querier that also hands a range over in parts as they
// arrive (*ingest.Client): the range in time chunks, oldest first, each
// complete at its Part.Done, within a chunk series shards. Anomaly rules
// judge each part as it comes, so a cold evaluation of a large selector
// holds a few parts at a time, not the whole range.
type PartQuerier interface {
	Querier
	QueryRangeParts(ctx context.Context, query string, start, end time.Time, step time.Duration) iter.Seq2[ingest.Part, error]
}

// Sink receives what one evaluation of a group produced. It must not hold
// evaluation up for long: *alerting.Publisher queues what it cannot send at
// once and keeps the findings its output has not taken.
type Sink interface {
	Send(ctx context.Context, b alerting.Batch) error
}

// ManagerOptions configure a Manager. Querier and Sink are required.
type ManagerOptions struct {
	// Querier is the store. For groups with shards it must also be a
	// LabelValuer: each shard lists the values of its label to read only
	// its own series.
	Querier Querier
	Sink    Sink
	// EvaluationDelay is subtracted from the evaluation time: the newest
	// point judged lies that far behind the clock.
	EvaluationDelay time.Duration
	// Backfill makes the first evaluation of each rule also report what it
	// finds in this much history (default 0: only the newest interval).
	Backfill time.Duration
	// CatchUp bounds what an evaluation after a gap — a store outage, a
	// cycle that overran, a restart — reports: everything judged since the
	// previous evaluation, back to at most this long before now (default
	// 1h; what lies beyond is logged and counted). Backfill is for the
	// history before the first start.
	CatchUp time.Duration
	// Progress, when set, keeps the newest point each rule judged, so that
	// a restarted daemon reports what happened while it was down.
	Progress ProgressStore
	// Scores asks the anomaly and window rules for their scores, expected
	// values and bands (alerting.Batch.Scores): each series' newest, for
	// outputs that expose them (ScoresNewest), or every point judged, for
	// outputs that write them back to the store (ScoresEvery).
	Scores ScorePoints
	// Readings says which series' levels anomaly rules hand on
	// (alerting.Batch.Readings, for the incidents' diagnoses); nil: none.
	Readings ReadingFilter
	// MaxConcurrentRules bounds the rules of one group evaluated at once
	// (default 4; 1 evaluates them one after another). A rule that reads
	// another's result (a scale rule its forecast rule's outlook) starts
	// once that rule has finished.
	MaxConcurrentRules int
	// SummaryEvery is how often Run logs a summary of what it did at info
	// level (default 10m; negative: never).
	SummaryEvery time.Duration
	// Forgotten, when set, is told after each group evaluation that
	// forgot series (forget_after) how many it forgot and how many series
	// the manager tracks now: the daemon returns the memory of a burst of
	// series that stopped to the system.
	Forgotten func(forgotten, tracked int)
	// Leases, when set, says which groups this process evaluates: the
	// processes of one configuration share its groups, and each evaluates
	// a group only while it holds the group's lease. Handover, when set,
	// is told when this process gains a group and loses one. Nil: every
	// group is evaluated here.
	Leases   Leases
	Handover Handover
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger (nil: discard) and Metrics (nil: unregistered) are for the
	// manager's own reporting.
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// DefaultSummaryEvery is how often Run logs its summary by default.
const DefaultSummaryEvery = 10 * time.Minute

// DefaultMaxConcurrentRules is how many rules of a group are evaluated at
// once by default.
const DefaultMaxConcurrentRules = 4

// DefaultCatchUp is the default catch-up horizon.
const DefaultCatchUp = time.Hour

// ProgressStore keeps, per rule (keyed group/rule), the newest point the
// rule judged. natsjs.KV implements it.
type ProgressStore interface {
	LoadProgress(ctx context.Context) (map[string]time.Time, error)
	SaveProgress(ctx context.Context, progress map[string]time.Time) error
}

// Leases says whether this process may evaluate a group now.
// *cluster.Member implements it.
type Leases interface {
	// Acquire is asked before each evaluation of group. When ok, term
	// identifies this holding of the group's lease (a new term: another
	// process may have evaluated the group since) and done is called once
	// the evaluation has finished.
	Acquire(group string) (term uint64, done func(), ok bool)
}

// Takeovers is what Leases may also do: tell when this process takes a
// group's lease, so that the group is evaluated at once, at its newest
// tick, rather than at its next one. *cluster.Member implements it.
type Takeovers interface {
	// Taken delivers the name of each group whose lease this process
	// takes.
	Taken() <-chan string
}

// Handover is told when a group changes hands between the processes of
// one configuration.
type Handover interface {
	// Gained is called before the first evaluation of group under a new
	// lease term, with the group's rules fresh and resumed from their
	// progress: the alerts' states are restored here. An error leaves
	// the group unevaluated until the next tick.
	Gained(ctx context.Context, group string) error
	// Lost is called when this process no longer holds group's lease.
	Lost(group string)
}

// ProgressKey is the key of a rule's progress in a ProgressStore.
func ProgressKey(group, rule string) string { return group + "/" + rule }

// evaluatedKey is the key in a ProgressStore of the newest tick a group
// was evaluated at by any process, kept when Leases are: the rule name
// "", which no rule has. A process that takes the group over does not
// evaluate that tick again.
func evaluatedKey(group string) string { return ProgressKey(group, "") }

// Manager evaluates rule groups and hands what they find to a Sink. Its
// rules keep the streaming state of every series they watch, so each cycle
// fetches and judges only the points that are new since the previous one.
// Managers share nothing: several can run in one process.
type Manager struct {
	o   ManagerOptions
	log *slog.Logger
	set *metrics.Set

	mu      sync.Mutex // guards groups, gm, tracked
	groups  []*Group
	gm      map[string]*groupMetrics // by group name
	tracked map[string]int           // series with state, by group
	terms   map[string]uint64        // the lease term each group's rules run under, by group
	changed chan struct{}

	scored                 *metrics.Counter
	droppedNaN, droppedInf *metrics.Counter
	droppedStale           *metrics.Counter
	unreported             *metrics.Counter
	progressFailures       *metrics.Counter
	progressHeld           *metrics.Counter
	late, forgotten        *metrics.Counter
	paused                 *metrics.Counter

	// since the last summary
	sumEvals, sumFailures, sumObservations, sumForecasts, sumScales, sumMissed atomic.Int64
	sumForgotten, sumLate                                                      atomic.Int64

	// rewrite is Replay's ReplayOptions.Rewrite, handed to the rules.
	rewrite func(group, rule string, fc *forecasting.Forecast)
}

// ruleHealth is what the manager knows of whether a rule still judges:
// the newest sample it judged, how many evaluations in a row judged
// nothing new, and what the store held beyond that when last asked.
type ruleHealth struct {
	group, rule string
	mu          sync.Mutex
	newest      time.Time
	quiet       int
	behind      int       // samples the store held that the rule had not judged
	storeNewest time.Time // the newest of them
	lag         time.Duration
}

// quietEvaluations is how many evaluations in a row may judge nothing new
// before the manager asks the store whether it holds samples the rule has
// not judged (and again every as many evaluations while it stays quiet).
const quietEvaluations = 3

type groupMetrics struct {
	names                   []string // to unregister
	evals, failures, missed *metrics.Counter
	duration                *metrics.PrometheusHistogram
	ruleFailures            map[string]*metrics.Counter
	setAside, accepted      map[string]*metrics.Counter // anomaly rules
	health                  map[string]*ruleHealth      // by rule
}

// NewManager prepares the groups Build made.
func NewManager(o ManagerOptions, groups []*Group) (*Manager, error) {
	if o.Querier == nil || o.Sink == nil {
		return nil, errors.New("rules: ManagerOptions needs a Querier and a Sink")
	}
	for _, g := range groups {
		if g.shard != nil {
			if _, err := newShardQuerier(o.Querier, g.shard); err != nil {
				return nil, fmt.Errorf("rules: %w", err)
			}
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SummaryEvery == 0 {
		o.SummaryEvery = DefaultSummaryEvery
	}
	if o.CatchUp == 0 {
		o.CatchUp = DefaultCatchUp
	}
	if o.MaxConcurrentRules <= 0 {
		o.MaxConcurrentRules = DefaultMaxConcurrentRules
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	m := &Manager{o: o, log: o.Logger, set: o.Metrics, gm: map[string]*groupMetrics{}, tracked: map[string]int{},
		terms: map[string]uint64{}, changed: make(chan struct{}, 1)}
	set := o.Metrics
	m.scored = set.GetOrCreateCounter("inferwatch_samples_scored_total")
	m.droppedNaN = set.GetOrCreateCounter(metricname.Name("inferwatch_samples_dropped_total", "reason", "nan"))
	m.droppedInf = set.GetOrCreateCounter(metricname.Name("inferwatch_samples_dropped_total", "reason", "inf"))
	m.droppedStale = set.GetOrCreateCounter(metricname.Name("inferwatch_samples_dropped_total", "reason", "stale"))
	m.unreported = set.GetOrCreateCounter("inferwatch_points_not_reported_total")
	m.progressFailures = set.GetOrCreateCounter("inferwatch_progress_save_failures_total")
	m.progressHeld = set.GetOrCreateCounter("inferwatch_progress_held_total")
	m.late = set.GetOrCreateCounter("inferwatch_samples_late_total")
	m.forgotten = set.GetOrCreateCounter("inferwatch_series_forgotten_total")
	m.paused = set.GetOrCreateCounter("inferwatch_evaluation_pauses_total")
	set.GetOrCreateGauge("inferwatch_series_tracked", func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		n := 0
		for _, v := range m.tracked {
			n += v
		}
		return float64(n)
	})
	m.setGroups(groups)
	return m, nil
}

// Resume loads the newest point each rule judged before a restart, so
// that the first evaluations report what happened since, within the
// catch-up horizon. It returns how many rules resume.
func (m *Manager) Resume(ctx context.Context) (int, error) {
	if m.o.Progress == nil {
		return 0, nil
	}
	p, err := m.o.Progress.LoadProgress(ctx)
	if err != nil {
		return 0, fmt.Errorf("loading the rules' progress: %w", err)
	}
	n := 0
	for _, g := range m.Groups() {
		for _, r := range g.rules {
			if rr, ok := r.(resumer); ok {
				if t, ok := p[ProgressKey(g.cfg.Name, r.Name())]; ok && !t.IsZero() {
					rr.resume(t)
					n++
				}
			}
		}
	}
	m.log.Info("rules resume from where they stopped", "rules", n, "catch_up", m.o.CatchUp)
	return n, nil
}

// Groups are the groups being evaluated.
func (m *Manager) Groups() []*Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groups
}

// Update replaces the groups, as after a reload of the configuration. A
// rule whose group and configuration are unchanged (positions aside) keeps
// its state: its series' detectors, windows and forecasters, and its
// schedule. Run picks the new groups up once the evaluations in flight have
// finished. It returns how many rules kept their state.
func (m *Manager) Update(groups []*Group) (kept int) {
	m.mu.Lock()
	old := map[string]*Group{}
	for _, g := range m.groups {
		old[g.cfg.Name] = g
	}
	for _, g := range groups {
		og := old[g.cfg.Name]
		if og == nil || og.cfg.Interval != g.cfg.Interval || !sameShard(og.shard, g.shard) {
			continue
		}
		byName := map[string]Rule{}
		for _, r := range og.rules {
			byName[r.Name()] = r
		}
		for i, r := range g.rules {
			if or := byName[r.Name()]; or != nil && sameRule(or.Config(), r.Config()) && sameKeep(or, r) {
				g.rules[i] = or
				kept++
			}
		}
	}
	m.mu.Unlock()
	m.setGroups(groups)
	select {
	case m.changed <- struct{}{}:
	default:
	}
	return kept
}

// setGroups installs groups and their metrics, unregistering those of
// groups and rules that are gone.
func (m *Manager) setGroups(groups []*Group) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := map[string]bool{}
	gm := map[string]*groupMetrics{}
	for _, g := range groups {
		name := g.cfg.Name
		x := &groupMetrics{ruleFailures: map[string]*metrics.Counter{}, setAside: map[string]*metrics.Counter{}, accepted: map[string]*metrics.Counter{}}
		counter := func(n string) *metrics.Counter {
			x.names = append(x.names, n)
			keep[n] = true
			return m.set.GetOrCreateCounter(n)
		}
		x.evals = counter(metricname.Name("inferwatch_group_evaluations_total", "group", name))
		x.failures = counter(metricname.Name("inferwatch_group_evaluation_failures_total", "group", name))
		x.missed = counter(metricname.Name("inferwatch_group_missed_iterations_total", "group", name))
		dn := metricname.Name("inferwatch_group_evaluation_duration_seconds", "group", name)
		x.names = append(x.names, dn)
		keep[dn] = true
		x.duration = m.set.GetOrCreatePrometheusHistogramExt(dn, metricname.EvaluationBuckets())
		x.health = map[string]*ruleHealth{}
		for _, r := range g.rules {
			x.ruleFailures[r.Name()] = counter(metricname.Name("inferwatch_rule_evaluation_failures_total", "group", name, "rule", r.Name()))
			if _, ok := r.(*anomalyRule); ok {
				x.setAside[r.Name()] = counter(metricname.Name("inferwatch_rule_samples_set_aside_total", "group", name, "rule", r.Name()))
				x.accepted[r.Name()] = counter(metricname.Name("inferwatch_rule_shifts_accepted_total", "group", name, "rule", r.Name()))
			}
			h := &ruleHealth{group: name, rule: r.Name()}
			if old := m.gm[name]; old != nil && old.health[r.Name()] != nil {
				h = old.health[r.Name()]
			}
			x.health[r.Name()] = h
			gauge := func(n string, f func() float64) {
				x.names = append(x.names, n)
				keep[n] = true
				m.set.UnregisterMetric(n) // a kept rule's gauge reads its kept health
				m.set.GetOrCreateGauge(n, f)
			}
			gauge(metricname.Name("inferwatch_rule_newest_sample_timestamp_seconds", "group", name, "rule", r.Name()), func() float64 {
				h.mu.Lock()
				defer h.mu.Unlock()
				if h.newest.IsZero() {
					return math.NaN()
				}
				return float64(h.newest.UnixMilli()) / 1e3
			})
			gauge(metricname.Name("inferwatch_rule_samples_behind", "group", name, "rule", r.Name()), func() float64 {
				h.mu.Lock()
				defer h.mu.Unlock()
				return float64(h.behind)
			})
		}
		gm[name] = x
	}
	for _, x := range m.gm {
		for _, n := range x.names {
			if !keep[n] {
				m.set.UnregisterMetric(n)
			}
		}
	}
	for name := range m.tracked {
		if gm[name] == nil {
			delete(m.tracked, name)
		}
	}
	m.groups, m.gm = groups, gm
}

// RunOnce evaluates every group once at the current time and hands what
// each found to the sink. It returns the joined errors of the evaluations
// that failed. It must not run while Run does.
func (m *Manager) RunOnce(ctx context.Context) error {
	now := m.o.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, g := range m.Groups() {
		wg.Go(func() {
			if err := m.evalGroup(ctx, g, now); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Run evaluates each group on its interval until ctx is cancelled, then
// lets the evaluations in flight finish and returns. A tick missed because
// an evaluation overran is skipped and counted, never queued. After an
// Update it goes on with the new groups.
func (m *Manager) Run(ctx context.Context) {
	var summary sync.WaitGroup
	if m.o.SummaryEvery > 0 {
		summary.Go(func() { m.summarise(ctx) })
	}
	defer summary.Wait()
	for {
		gctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		taken := map[string]chan struct{}{}
		for _, g := range m.Groups() {
			c := make(chan struct{}, 1)
			taken[g.cfg.Name] = c
			wg.Go(func() { m.runGroup(gctx, g, c) })
		}
		if t, ok := m.o.Leases.(Takeovers); ok {
			wg.Go(func() { forwardTaken(gctx, t.Taken(), taken) })
		}
		select {
		case <-ctx.Done():
			cancel()
			wg.Wait()
			return
		case <-m.changed:
			cancel()
			wg.Wait()
			m.log.Info("evaluating the new groups", "groups", len(m.Groups()))
		}
	}
}

// forwardTaken hands each group name from taken to that group's channel
// in to, until ctx is done. A group whose channel is full has a wake-up
// due already.
func forwardTaken(ctx context.Context, taken <-chan string, to map[string]chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-taken:
			if c := to[name]; c != nil {
				select {
				case c <- struct{}{}:
				default:
				}
			}
		}
	}
}

// runGroup evaluates g at each of its ticks until ctx is done, and, when
// this process takes g's lease (taken), at once at its newest tick.
func (m *Manager) runGroup(ctx context.Context, g *Group, taken <-chan struct{}) {
	interval := g.cfg.Interval
	tick := nextTick(m.o.Now(), interval, g.offset)
	timer := time.NewTimer(time.Until(tick))
	defer timer.Stop()
	var prev time.Time // the previous evaluation's time
	for {
		select {
		case <-ctx.Done():
			return
		case <-taken:
			// The newest tick, which the previous owner did not evaluate
			// (its lease had lapsed or been released by then), unless the
			// group's progress says it did: its catch-up reports what
			// happened since the previous owner's last judged point, and
			// the next tick comes as usual.
			at := nextTick(m.o.Now(), interval, g.offset).Add(-interval)
			evalCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(interval, time.Minute))
			g = m.evalTaken(evalCtx, g, at)
			cancel()
			if !tick.After(at) {
				// The timer's tick was due too and is done now: on to
				// the next.
				timer.Stop()
				prev, tick = at, nextTick(m.o.Now(), interval, g.offset)
				timer.Reset(time.Until(tick))
			}
			continue
		case <-timer.C:
		}
		if w := wakeUp(tick, m.o.Now(), interval, g.offset); w.skipped > 0 {
			// The timer fired intervals late: the process did not run
			// (stopped, frozen with its container or machine) or the clock
			// jumped ahead. Evaluating at the stale tick would judge old
			// points now and the newest only at the next tick.
			m.skip(g, w.skipped, prev, tick, w.at)
			tick = w.at
		}
		began := time.Now()
		// The evaluation in flight finishes even when a stop is asked for;
		// it is bounded by the group interval (and at least a minute).
		evalCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(interval, time.Minute))
		g = m.evalHeld(evalCtx, g, tick)
		cancel()
		took := time.Since(began)
		next := nextTick(m.o.Now(), interval, g.offset)
		switch skipped := int((next.Sub(tick) / interval) - 1); {
		case skipped > 0 && took >= interval:
			m.metrics(g).missed.Add(skipped)
			m.sumMissed.Add(int64(skipped))
			m.log.Warn("group evaluation overran its interval; ticks skipped",
				"group", g.cfg.Name, "interval", interval, "took", took, "skipped", skipped)
		case skipped > 0:
			// The evaluation took less than an interval, yet intervals
			// passed on the clock: a pause or a jump, not an overrun.
			m.skip(g, skipped, tick, tick.Add(interval), next)
		case !next.After(tick):
			m.log.Warn("the clock went back; evaluations go on from the time it shows, judging only points after those judged",
				"group", g.cfg.Name, "from", tick.UTC(), "to", m.o.Now().UTC())
			next = nextTick(tick, interval, g.offset)
		}
		prev, tick = tick, next
		timer.Reset(time.Until(tick))
	}
}

// evalHeld evaluates g at tick when this process holds its lease (or no
// leases are kept), and returns the group to evaluate from now on: a new
// one after a gain.
func (m *Manager) evalHeld(ctx context.Context, g *Group, tick time.Time) *Group {
	g, done, ok := m.lease(ctx, g, tick, false)
	if !ok {
		return g
	}
	defer done()
	if err := m.evalGroup(ctx, g, tick); err != nil {
		m.log.Error("group evaluation failed", "group", g.cfg.Name, "err", err)
	}
	return g
}

// evalTaken evaluates g at tick when this process has just taken its
// lease (a new term) and no process evaluated the group at tick, and
// returns the group to evaluate from now on.
func (m *Manager) evalTaken(ctx context.Context, g *Group, tick time.Time) *Group {
	g, done, ok := m.lease(ctx, g, tick, true)
	if !ok {
		return g
	}
	defer done()
	m.log.Debug("evaluating the group at once: its lease was just taken", "group", g.cfg.Name, "at", tick.UTC())
	if err := m.evalGroup(ctx, g, tick); err != nil {
		m.log.Error("group evaluation failed", "group", g.cfg.Name, "err", err)
	}
	return g
}

// lease says whether this process evaluates g at tick. On a new lease
// term the group starts afresh, as after a restart: new rules resumed
// from their progress, and the Handover told; a tick the group's
// progress says was evaluated already (by the previous owner) is not
// evaluated again. On a lost lease the Handover is told. With gainOnly,
// g is evaluated only on a new term.
func (m *Manager) lease(ctx context.Context, g *Group, tick time.Time, gainOnly bool) (cur *Group, done func(), ok bool) {
	if m.o.Leases == nil {
		return g, func() {}, !gainOnly
	}
	name := g.cfg.Name
	term, done, ok := m.o.Leases.Acquire(name)
	m.mu.Lock()
	had := m.terms[name]
	m.mu.Unlock()
	if !ok {
		if had != 0 {
			m.lost(g)
		}
		return g, nil, false
	}
	if term == had {
		if gainOnly {
			done()
			return g, nil, false
		}
		return g, done, true
	}
	ng, last, err := m.gain(ctx, g)
	if err != nil {
		done()
		m.log.Error("taking the group over failed; tried again at the next tick", "group", name, "err", err)
		return g, nil, false
	}
	m.mu.Lock()
	m.terms[name] = term
	m.mu.Unlock()
	if !tick.After(last) {
		done()
		m.log.Debug("the group's previous owner evaluated this tick; evaluated here from the next", "group", name,
			"at", tick.UTC(), "evaluated", last.UTC())
		return ng, nil, false
	}
	return ng, done, true
}

// gain replaces g with a group of fresh rules resumed from their
// progress, and tells the Handover: the state this process kept of g, if
// any, is stale. It returns the new group and the newest tick the group
// was evaluated at (zero: not known).
func (m *Manager) gain(ctx context.Context, g *Group) (ng *Group, last time.Time, err error) {
	fresh, err := Build([]rulefmt.Group{g.cfg})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("building the rules of group %q: %w", g.cfg.Name, err)
	}
	rs := fresh[0].rules
	n := 0
	if m.o.Progress != nil {
		p, err := m.o.Progress.LoadProgress(ctx)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("loading the progress of group %q: %w", g.cfg.Name, err)
		}
		last = p[evaluatedKey(g.cfg.Name)]
		for _, r := range rs {
			if rr, ok := r.(resumer); ok {
				if t, ok := p[ProgressKey(g.cfg.Name, r.Name())]; ok && !t.IsZero() {
					rr.resume(t)
					n++
				}
			}
		}
	}
	if m.o.Handover != nil {
		if err := m.o.Handover.Gained(ctx, g.cfg.Name); err != nil {
			return nil, time.Time{}, err
		}
	}
	ng = &Group{cfg: g.cfg, offset: g.offset, rules: rs, shard: g.shard}
	m.mu.Lock()
	groups := slices.Clone(m.groups) // readers of Groups keep theirs
	for i, x := range groups {
		if x == g {
			groups[i] = ng
		}
	}
	m.groups = groups
	m.mu.Unlock()
	m.log.Info("evaluating the group here: its rules resume from their progress", "group", g.cfg.Name, "rules_resumed", n)
	return ng, last, nil
}

// lost forgets the term of g, whose lease another process holds now.
func (m *Manager) lost(g *Group) {
	name := g.cfg.Name
	m.mu.Lock()
	delete(m.terms, name)
	delete(m.tracked, name)
	if x := m.gm[name]; x != nil {
		for _, h := range x.health {
			h.mu.Lock()
			h.behind, h.quiet = 0, 0
			h.mu.Unlock()
		}
	}
	m.mu.Unlock()
	if m.o.Handover != nil {
		m.o.Handover.Lost(name)
	}
	m.log.Info("no longer evaluating the group here: another member holds its lease", "group", name)
}

// skip counts and reports the ticks from first up to (not including) at
// that were not evaluated because the process did not run or the clock
// jumped; prev is the evaluation before them (zero: none).
func (m *Manager) skip(g *Group, skipped int, prev, first, at time.Time) {
	m.metrics(g).missed.Add(skipped)
	m.sumMissed.Add(int64(skipped))
	m.paused.Inc()
	since := prev
	if since.IsZero() {
		since = first.Add(-g.cfg.Interval)
	}
	m.log.Warn(fmt.Sprintf("no evaluation for %s: process paused or clock jumped; catching up from %s", at.Sub(since).Round(time.Second),
		since.UTC().Format(time.RFC3339)), "group", g.cfg.Name, "interval", g.cfg.Interval, "skipped", skipped, "catch_up", m.o.CatchUp)
}

// wake is when a group evaluates after its timer fired: at the tick it was
// set for, or, when that is an interval or more behind the clock, at the
// newest tick, skipping those between.
type wake struct {
	at      time.Time
	skipped int
}

func wakeUp(tick, now time.Time, interval, offset time.Duration) wake {
	if now.Sub(tick) < interval {
		return wake{at: tick}
	}
	newest := nextTick(now, interval, offset).Add(-interval)
	return wake{at: newest, skipped: int(newest.Sub(tick) / interval)}
}

func (m *Manager) metrics(g *Group) *groupMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gm[g.cfg.Name]
}

// evalGroup evaluates the rules of g at time at, up to MaxConcurrentRules
// at once (a rule that reads another's result after it), and hands the
// results to the sink in the rules' order. A failing rule does not stop
// the others.
func (m *Manager) evalGroup(ctx context.Context, g *Group, at time.Time) error {
	start := time.Now()
	gm := m.metrics(g)
	gm.evals.Inc()
	m.sumEvals.Add(1)
	results := m.evalRules(ctx, g, at)
	var errs []error
	batch := alerting.Batch{Group: g.cfg.Name, At: at}
	tracked, forgotten := 0, 0
	progress := map[string]time.Time{}
	for i, r := range g.rules {
		res, err, took := results[i].res, results[i].err, results[i].took
		if err != nil {
			gm.ruleFailures[r.Name()].Inc()
			m.log.Error("rule evaluation failed", "group", g.cfg.Name, "rule", r.Name(), "err", err)
			errs = append(errs, fmt.Errorf("group %q rule %q: %w", g.cfg.Name, r.Name(), err))
		}
		for _, n := range res.Notes {
			m.log.Warn(n, "group", g.cfg.Name, "rule", r.Name())
		}
		if gap := res.Unreported; gap.Points > 0 {
			m.unreported.Add(gap.Points)
			m.log.Warn("the evaluation was delayed past the catch-up horizon; points not reported", "group", g.cfg.Name,
				"rule", r.Name(), "from", gap.From.UTC(), "to", gap.To.UTC(), "points_per_series", gap.Points, "catch_up", m.o.CatchUp)
		}
		if rr, ok := r.(resumer); ok && !rr.judged().IsZero() {
			progress[ProgressKey(g.cfg.Name, r.Name())] = rr.judged()
		}
		if err == nil && !res.Through.IsZero() {
			cfg := r.Config()
			batch.Evaluated = append(batch.Evaluated, alerting.RuleEvaluated{Rule: r.Name(), Through: res.Through, AbsentAfter: cfg.AbsentAfter()})
		}
		if err == nil {
			m.watch(ctx, g, r, gm.health[r.Name()], res, at)
		}
		if res.SetAside > 0 || res.Accepted > 0 {
			if c := gm.setAside[r.Name()]; c != nil {
				c.Add(res.SetAside)
				gm.accepted[r.Name()].Add(res.Accepted)
			}
			// Once an evaluation at most: one series and sample for all.
			if m.log.Enabled(ctx, slog.LevelInfo) {
				args := []any{"group", g.cfg.Name, "rule", r.Name(), "samples", res.SetAside, "shifts_accepted", res.Accepted}
				if a := res.Aside; a != nil {
					args = append(args, "series", a.Series, "value", a.Value, "at", a.At.UTC())
				}
				m.log.Info("samples set aside as extreme: left out of what defines normal", args...)
			}
		}
		m.scored.Add(res.Scored)
		m.late.Add(res.Late)
		m.sumLate.Add(int64(res.Late))
		m.forgotten.Add(res.Forgotten)
		m.sumForgotten.Add(int64(res.Forgotten))
		forgotten += res.Forgotten
		if res.Forgotten > 0 {
			m.log.Debug("series forgotten: no point for forget_after", "group", g.cfg.Name, "rule", r.Name(),
				"series", res.Forgotten, "forget_after", r.Config().Forget(), "some", strings.Join(res.ForgottenSome, " "))
		}
		m.droppedNaN.Add(res.Dropped.NaN)
		m.droppedInf.Add(res.Dropped.Inf)
		m.droppedStale.Add(res.Dropped.Stale)
		tracked += res.Series
		batch.Observations = append(batch.Observations, res.Observations...)
		batch.Forecasts = append(batch.Forecasts, res.Forecasts...)
		batch.Scales = append(batch.Scales, res.Scales...)
		batch.Scores = append(batch.Scores, res.Scores...)
		batch.Readings = append(batch.Readings, res.Readings...)
		batch.Misses = append(batch.Misses, res.Misses...)
		m.log.Debug("rule evaluated", "group", g.cfg.Name, "rule", r.Name(), "kind", r.Kind(), "at", at.UTC(),
			"scored", res.Scored, "series", res.Series, "observations", len(res.Observations), "forecasts", len(res.Forecasts),
			"scale_signals", len(res.Scales), "took", took)
	}
	m.mu.Lock()
	m.tracked[g.cfg.Name] = tracked
	all := 0
	for _, n := range m.tracked {
		all += n
	}
	m.mu.Unlock()
	if forgotten > 0 && m.o.Forgotten != nil {
		m.o.Forgotten(forgotten, all)
	}
	m.sumObservations.Add(int64(len(batch.Observations)))
	m.sumForecasts.Add(int64(len(batch.Forecasts)))
	m.sumScales.Add(int64(len(batch.Scales)))
	// An empty batch is sent too: it retries what the sink kept, and
	// moves the alerts' clocks.
	err, unsaved := splitUnsaved(m.o.Sink.Send(ctx, batch))
	if err != nil {
		errs = append(errs, fmt.Errorf("group %q: %w", g.cfg.Name, err))
	}
	// Progress is saved once the results are handed over: a restart
	// between the two reports them again, which the stable event ids make
	// harmless, rather than not at all. While alert states are unsaved it
	// stays: a process that takes the group over judges those points
	// again and restores the alerts they raise.
	if unsaved != nil {
		m.progressHeld.Inc()
		m.log.Debug("the rules' progress is kept back until the alert states are saved", "group", g.cfg.Name, "err", unsaved)
	}
	if unsaved != nil {
		clear(progress)
	}
	if m.o.Leases != nil {
		progress[evaluatedKey(g.cfg.Name)] = at
	}
	if m.o.Progress != nil && len(progress) > 0 {
		if err := m.o.Progress.SaveProgress(ctx, progress); err != nil {
			m.progressFailures.Inc()
			m.log.Debug("saving the rules' progress failed; retried after the next evaluation", "group", g.cfg.Name, "err", err)
		}
	}
	gm.duration.UpdateDuration(start)
	if len(errs) > 0 {
		gm.failures.Inc()
		m.sumFailures.Add(1)
	}
	m.log.Debug("group evaluated", "group", g.cfg.Name, "at", at.UTC(), "findings", len(batch.Findings), "alerts", len(batch.Alerts),
		"forecasts", len(batch.Forecasts), "scale_signals", len(batch.Scales), "failed", len(errs) > 0, "took", time.Since(start))
	return errors.Join(errs...)
}

// splitUnsaved takes the alerting.ErrStatesUnsaved out of a Sink's error:
// rest is what is left of err, unsaved the part that says so (nil: none).
func splitUnsaved(err error) (rest, unsaved error) {
	if !errors.Is(err, alerting.ErrStatesUnsaved) {
		return err, nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil, err
	}
	var others []error
	for _, e := range j.Unwrap() {
		if errors.Is(e, alerting.ErrStatesUnsaved) {
			unsaved = e
		} else {
			others = append(others, e)
		}
	}
	return errors.Join(others...), unsaved
}

// watch follows whether rule r still judges: the newest sample it judged,
// samples that came late, and, when it has judged nothing new for
// quietEvaluations evaluations while it tracks series, whether the store
// holds samples it has not judged.
func (m *Manager) watch(ctx context.Context, g *Group, r Rule, h *ruleHealth, res Result, at time.Time) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if res.Lag > h.lag {
		m.log.Warn("samples reach the store after the rule first asks for them: the rule now judges further behind the evaluation delay; raise source.evaluation_delay to that",
			"group", g.cfg.Name, "rule", r.Name(), "late", res.Late, "evaluation_delay", m.o.EvaluationDelay, "behind_by", res.Lag,
			"judged_behind", m.o.EvaluationDelay+res.Lag)
	}
	h.lag = res.Lag
	if res.Newest.After(h.newest) {
		if h.behind > 0 {
			m.log.Info("the rule judges new samples again", "group", g.cfg.Name, "rule", r.Name(), "newest", res.Newest)
		}
		h.newest, h.quiet, h.behind, h.storeNewest = res.Newest, 0, 0, time.Time{}
		return
	}
	if res.Series == 0 {
		h.quiet = 0
		return
	}
	h.quiet++
	p, ok := r.(prober)
	if !ok || h.quiet%quietEvaluations != 0 {
		return
	}
	q, err := m.querier(g)
	if err != nil {
		return
	}
	env := &Env{Querier: q, Delay: m.o.EvaluationDelay, Interval: g.cfg.Interval, CatchUp: m.o.CatchUp}
	behind, newest, err := p.probe(ctx, env, max(m.o.CatchUp, time.Hour))
	if err != nil {
		m.log.Debug("asking the store for samples a quiet rule has not judged failed", "group", g.cfg.Name, "rule", r.Name(), "err", err)
		return
	}
	h.behind, h.storeNewest = behind, newest
	if behind > 0 {
		m.log.Warn("the rule has judged no new sample for several evaluations while the store holds newer ones: they reached the store later than the rule asks again; raise source.evaluation_delay",
			"group", g.cfg.Name, "rule", r.Name(), "evaluations", h.quiet, "judged_newest", h.newest, "store_samples", behind,
			"store_newest", newest, "evaluation_delay", m.o.EvaluationDelay)
	}
}

// Stalled reports the rules that judge no new sample while the store holds
// samples they have not judged, for a readiness check; nil when none.
func (m *Manager) Stalled() error {
	m.mu.Lock()
	var hs []*ruleHealth
	for _, x := range m.gm {
		for _, h := range x.health {
			hs = append(hs, h)
		}
	}
	m.mu.Unlock()
	var errs []error
	for _, h := range hs {
		h.mu.Lock()
		if h.behind > 0 {
			errs = append(errs, fmt.Errorf("rule %s/%s has judged nothing since %s, and the store holds %d newer samples (the newest at %s)",
				h.group, h.rule, h.newest.UTC().Format(time.RFC3339), h.behind, h.storeNewest.UTC().Format(time.RFC3339)))
		}
		h.mu.Unlock()
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// prober is a rule that can ask the store how many samples newer than
// those it judged it holds since the newest sample it judged (at most
// span before the newest point it asked for), and the newest of them.
type prober interface {
	probe(ctx context.Context, env *Env, span time.Duration) (int, time.Time, error)
}

// ruleResult is what one rule's evaluation returned.
type ruleResult struct {
	res  Result
	err  error
	took time.Duration
}

// evalRules evaluates the rules of g at time at, up to MaxConcurrentRules
// at once, and returns their results in the rules' order. A rule that
// depends on another starts once that one has finished, with its outlook.
func (m *Manager) evalRules(ctx context.Context, g *Group, at time.Time) []ruleResult {
	results := make([]ruleResult, len(g.rules))
	q, err := m.querier(g)
	if err != nil {
		for i := range results {
			results[i].err = err
		}
		return results
	}
	done := make(map[string]chan struct{}, len(g.rules))
	for _, r := range g.rules {
		done[r.Name()] = make(chan struct{})
	}
	var (
		mu       sync.Mutex
		outlooks = map[string]*Outlook{}
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, m.o.MaxConcurrentRules)
	for i, r := range g.rules {
		// In the rules' order, dependencies first: a rule waiting for its
		// dependency holds no slot.
		if d, ok := r.(dependent); ok {
			if dep := done[d.dependsOn()]; dep != nil {
				<-dep
			}
		}
		sem <- struct{}{}
		// Each rule sees the outlooks finished before it started, its
		// dependency's among them, in a map of its own.
		mu.Lock()
		env := &Env{Querier: q, Delay: m.o.EvaluationDelay, Backfill: m.o.Backfill, Interval: g.cfg.Interval,
			CatchUp: m.o.CatchUp, Scores: m.o.Scores, Readings: m.o.Readings, Outlooks: maps.Clone(outlooks), rewrite: m.rewrite}
		mu.Unlock()
		wg.Go(func() {
			defer func() { <-sem }()
			defer close(done[r.Name()])
			began := time.Now()
			res, err := r.Eval(ctx, at, env)
			results[i] = ruleResult{res: res, err: err, took: time.Since(began)}
			if res.Outlook != nil {
				mu.Lock()
				outlooks[r.Name()] = res.Outlook
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return results
}

// querier is the store as g reads it: only its shard's series when it
// evaluates one shard of a group.
func (m *Manager) querier(g *Group) (Querier, error) {
	if g.shard == nil {
		return m.o.Querier, nil
	}
	return newShardQuerier(m.o.Querier, g.shard)
}

// summarise logs what the manager did every SummaryEvery until ctx is done.
func (m *Manager) summarise(ctx context.Context) {
	tick.Every(ctx, m.o.SummaryEvery, func(context.Context, time.Time) {
		m.mu.Lock()
		series := 0
		for _, n := range m.tracked {
			series += n
		}
		m.mu.Unlock()
		m.log.Info("evaluation summary", "since", m.o.SummaryEvery, "evaluations", m.sumEvals.Swap(0),
			"failed", m.sumFailures.Swap(0), "points_observed", m.sumObservations.Swap(0), "forecasts", m.sumForecasts.Swap(0),
			"scale_signals", m.sumScales.Swap(0), "ticks_skipped", m.sumMissed.Swap(0), "series_tracked", series,
			"series_forgotten", m.sumForgotten.Swap(0), "samples_late", m.sumLate.Swap(0))
	})
}
