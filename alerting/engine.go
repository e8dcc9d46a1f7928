package alerting

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Querier is what the engine needs from a store: the samples of a query over
// a range. It must stop when ctx is cancelled. *ingest.Client implements it.
type Querier interface {
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]ingest.Series, error)
}

// Output receives findings. Publish hands over fs in order and returns how
// many it accepted; the engine keeps the rest and offers them again on the
// next cycle, so a finding is never dropped silently.
type Output interface {
	Publish(ctx context.Context, fs []Finding) (published int, err error)
}

// EngineOptions configures an Engine. Groups, Querier and Output are required.
type EngineOptions struct {
	Groups  []rulefmt.Group
	Querier Querier
	Output  Output
	// EvaluationDelay is subtracted from the evaluation time: the newest
	// point scored lies that far behind the clock (stores hide the most
	// recent samples while they are still arriving).
	EvaluationDelay time.Duration
	// Backfill makes the first evaluation of each rule also report the
	// anomalies of this much history (default 0: only the newest interval).
	Backfill time.Duration
	// MaxPending bounds the findings kept while the output fails
	// (default 100,000); past it the oldest are dropped, logged and counted.
	MaxPending int
	// Events receives the forecasts and scale signals of forecast and
	// scale rules; required when there are such rulefmt. EventPrefix is
	// the first part of their subjects (default "inferwatch"):
	// <prefix>.forecasts.<rule> and <prefix>.scale.<rule>.
	Events      EventOutput
	EventPrefix string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger (nil: discard) and Metrics (nil: unregistered) are for the
	// engine's own reporting.
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// Engine evaluates rule groups and publishes what they find. It holds the
// streaming state of every series it watches, so each cycle fetches and
// scores only the points that are new since the previous one. Engines share
// nothing: several can run in one process.
type Engine struct {
	o      EngineOptions
	log    *slog.Logger
	groups []*group

	mu      sync.Mutex
	pending []Finding

	m engineMetrics
}

type engineMetrics struct {
	set              *metrics.Set
	findingsPending  *metrics.Gauge
	findingsDropped  *metrics.Counter
	publishFailures  *metrics.Counter
	seriesTracked    *metrics.Gauge
	samplesScored    *metrics.Counter
	droppedNaN       *metrics.Counter
	droppedInf       *metrics.Counter
	droppedStale     *metrics.Counter
	trackedMu        sync.Mutex
	trackedPerGroups map[string]int
}

type group struct {
	cfg    rulefmt.Group
	offset time.Duration
	rules  []*rule

	evals, failures, missed *metrics.Counter
	duration                *metrics.Summary
}

type rule struct {
	cfg      rulefmt.Rule
	group    string
	interval time.Duration
	factory  analysis.Factory
	series   map[string]*seriesState
	next     time.Time // start of the next query range; zero before the first
	windows  []*window // the queries of a window rule (correlate, decay)
	fc       *forecastRule
	sc       *scaleRule
	failures *metrics.Counter
	findings *metrics.Counter
}

type seriesState struct {
	labels   ingest.Labels
	key      string
	det      analysis.Detector
	lastT    int64 // newest sample observed, unix ms
	lastSeen time.Time
	ep       episode
}

// episode is an unbroken run of anomalous samples of one series.
type episode struct {
	active, fired bool
	start         int64
	peak          analysis.Result
	peakV         float64
	peakT         int64
	peakDetails   map[string]any
}

// Compile checks what only the analysis package can check in a
// configuration (detector names and parameters) and reports every problem
// with the position of the rule's detector.
func Compile(cfg *rulefmt.Config) error {
	_, errs := compile(cfg.Groups)
	return errs.Err()
}

func compile(groups []rulefmt.Group) ([][]analysis.Factory, rulefmt.Errors) {
	var errs rulefmt.Errors
	out := make([][]analysis.Factory, len(groups))
	for gi, g := range groups {
		out[gi] = make([]analysis.Factory, len(g.Rules))
		for ri, r := range g.Rules {
			if r.Kind() == "forecast" {
				if _, err := newForecastRule(r); err != nil {
					errs.Add(r.Pos, g.Name, r.Name, "%v", err)
				}
				continue
			}
			if r.Kind() != "anomaly" {
				continue // a window, forecast or scale rule: no detector
			}
			f, err := analysis.Build(analysis.Spec{
				Name:   r.Detector.Name,
				Window: r.Lookback.Milliseconds(),
				Params: r.Detector.Params,
			})
			if err != nil {
				errs.Add(r.DetectorPos, g.Name, r.Name, "%v", err)
				continue
			}
			out[gi][ri] = f
		}
	}
	return out, errs
}

// NewEngine validates the groups' detectors and prepares their state.
func NewEngine(o EngineOptions) (*Engine, error) {
	if o.Querier == nil || o.Output == nil {
		return nil, errors.New("alerting: EngineOptions needs a Querier and an Output")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 100_000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	factories, errs := compile(o.Groups)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if o.EventPrefix == "" {
		o.EventPrefix = DefaultSubjectPrefix
	}
	if o.Events == nil {
		for _, g := range o.Groups {
			for _, r := range g.Rules {
				if k := r.Kind(); k == "forecast" || k == "scale" {
					return nil, fmt.Errorf("alerting: group %q rule %q is a %s rule: EngineOptions needs Events to publish it", g.Name, r.Name, k)
				}
			}
		}
	}
	e := &Engine{o: o, log: o.Logger}
	set := o.Metrics
	e.m = engineMetrics{
		set:              set,
		findingsDropped:  set.NewCounter("inferwatch_findings_dropped_total"),
		publishFailures:  set.NewCounter("inferwatch_output_failures_total"),
		samplesScored:    set.NewCounter("inferwatch_samples_scored_total"),
		droppedNaN:       set.NewCounter(`inferwatch_samples_dropped_total{reason="nan"}`),
		droppedInf:       set.NewCounter(`inferwatch_samples_dropped_total{reason="inf"}`),
		droppedStale:     set.NewCounter(`inferwatch_samples_dropped_total{reason="stale"}`),
		trackedPerGroups: map[string]int{},
	}
	e.m.findingsPending = set.NewGauge("inferwatch_findings_pending", func() float64 {
		e.mu.Lock()
		defer e.mu.Unlock()
		return float64(len(e.pending))
	})
	e.m.seriesTracked = set.NewGauge("inferwatch_series_tracked", func() float64 {
		e.m.trackedMu.Lock()
		defer e.m.trackedMu.Unlock()
		n := 0
		for _, v := range e.m.trackedPerGroups {
			n += v
		}
		return float64(n)
	})
	for gi, gc := range o.Groups {
		g := &group{
			cfg:      gc,
			offset:   groupOffset(gc.Name, gc.Interval),
			evals:    set.NewCounter(fmt.Sprintf(`inferwatch_group_evaluations_total{group=%q}`, gc.Name)),
			failures: set.NewCounter(fmt.Sprintf(`inferwatch_group_evaluation_failures_total{group=%q}`, gc.Name)),
			missed:   set.NewCounter(fmt.Sprintf(`inferwatch_group_missed_iterations_total{group=%q}`, gc.Name)),
			duration: set.NewSummary(fmt.Sprintf(`inferwatch_group_evaluation_duration_seconds{group=%q}`, gc.Name)),
		}
		var scales []*rule
		byName := map[string]*rule{}
		for ri, rc := range gc.Rules {
			var windows []*window
			if isWindowKind(rc.Kind()) {
				exprs, err := windowExprs(rc)
				if err != nil {
					return nil, err
				}
				for _, x := range exprs {
					windows = append(windows, newWindow(x))
				}
			}
			nr := &rule{
				windows:  windows,
				cfg:      rc,
				group:    gc.Name,
				interval: gc.Interval,
				factory:  factories[gi][ri],
				series:   map[string]*seriesState{},
				failures: set.NewCounter(fmt.Sprintf(`inferwatch_rule_evaluation_failures_total{group=%q,rule=%q}`, gc.Name, rc.Name)),
				findings: set.NewCounter(fmt.Sprintf(`inferwatch_findings_total{group=%q,rule=%q}`, gc.Name, rc.Name)),
			}
			byName[rc.Name] = nr
			switch rc.Kind() {
			case "forecast":
				fr, err := newForecastRule(rc)
				if err != nil {
					return nil, fmt.Errorf("group %q rule %q: %w", gc.Name, rc.Name, err)
				}
				nr.fc = fr
			case "scale":
				nr.sc = newScaleRule(rc, gc.Interval)
				scales = append(scales, nr)
				continue
			}
			g.rules = append(g.rules, nr)
		}
		// Scale rules read their forecast rule's newest outlook: they are
		// evaluated after the group's other rulefmt.
		for _, sr := range scales {
			fr := byName[sr.cfg.Scale.Forecast]
			if fr == nil || fr.fc == nil {
				return nil, fmt.Errorf("group %q rule %q: scale.forecast %q is not a forecast rule of the group", gc.Name, sr.cfg.Name, sr.cfg.Scale.Forecast)
			}
			sr.sc.fr = fr
			g.rules = append(g.rules, sr)
		}
		e.groups = append(e.groups, g)
	}
	return e, nil
}

// groupOffset spreads groups over their interval so they do not all
// evaluate at the same instant; it is stable for a group name.
func groupOffset(name string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	io.WriteString(h, name)
	return time.Duration(h.Sum64() % uint64(interval))
}

// nextTick returns the first evaluation time of a group strictly after t:
// the instants k·interval + offset since the Unix epoch.
func nextTick(t time.Time, interval, offset time.Duration) time.Time {
	n := t.UnixNano() - int64(offset)
	k := n / int64(interval)
	if n < 0 && n%int64(interval) != 0 {
		k--
	}
	return time.Unix(0, (k+1)*int64(interval)+int64(offset))
}

// RunOnce evaluates every group once at the current time and publishes what
// it found. It returns the joined errors of the evaluations that failed.
func (e *Engine) RunOnce(ctx context.Context) error {
	now := e.o.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, g := range e.groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.evalGroup(ctx, g, now); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Run evaluates each group on its interval until ctx is cancelled, then
// lets the evaluations in flight finish and returns. A tick missed because
// an evaluation overran is skipped and counted, never queued.
func (e *Engine) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, g := range e.groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.runGroup(ctx, g)
		}()
	}
	wg.Wait()
}

func (e *Engine) runGroup(ctx context.Context, g *group) {
	interval := g.cfg.Interval
	tick := nextTick(e.o.Now(), interval, g.offset)
	timer := time.NewTimer(time.Until(tick))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		// The evaluation in flight finishes even when a stop is asked for;
		// it is bounded by the group interval (and at least a minute).
		evalCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(interval, time.Minute))
		if err := e.evalGroup(evalCtx, g, tick); err != nil {
			e.log.Error("group evaluation failed", "group", g.cfg.Name, "err", err)
		}
		cancel()
		next := nextTick(e.o.Now(), interval, g.offset)
		if skipped := int((next.Sub(tick) / interval) - 1); skipped > 0 {
			g.missed.Add(skipped)
			e.log.Warn("group evaluation overran its interval; ticks skipped",
				"group", g.cfg.Name, "interval", interval, "skipped", skipped)
		}
		tick = next
		timer.Reset(time.Until(tick))
	}
}

// evalGroup evaluates the rules of g at time at and publishes the findings.
// A failing rule does not stop the others.
func (e *Engine) evalGroup(ctx context.Context, g *group, at time.Time) error {
	start := time.Now()
	g.evals.Inc()
	var errs []error
	var found []Finding
	tracked := 0
	for _, r := range g.rules {
		var fs []Finding
		var err error
		switch {
		case r.fc != nil:
			err = e.evalForecastRule(ctx, r, at)
		case r.sc != nil:
			err = e.evalScaleRule(ctx, r, at)
		case r.windows != nil:
			fs, err = e.evalWindowRule(ctx, r, at)
		default:
			fs, err = e.evalRule(ctx, r, at)
		}
		if err != nil {
			r.failures.Inc()
			e.log.Error("rule evaluation failed", "group", g.cfg.Name, "rule", r.cfg.Name, "err", err)
			errs = append(errs, fmt.Errorf("group %q rule %q: %w", g.cfg.Name, r.cfg.Name, err))
		}
		r.findings.Add(len(fs))
		found = append(found, fs...)
		tracked += len(r.series)
		if r.fc != nil {
			tracked += len(r.fc.series)
		}
	}
	e.m.trackedMu.Lock()
	e.m.trackedPerGroups[g.cfg.Name] = tracked
	e.m.trackedMu.Unlock()
	if err := e.publish(ctx, found); err != nil {
		errs = append(errs, fmt.Errorf("group %q: %w", g.cfg.Name, err))
	}
	g.duration.UpdateDuration(start)
	if len(errs) > 0 {
		g.failures.Inc()
	}
	return errors.Join(errs...)
}

// publish hands the pending findings and the new ones to the output, in
// order, and keeps what the output did not accept.
func (e *Engine) publish(ctx context.Context, found []Finding) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending = append(e.pending, found...)
	if len(e.pending) == 0 {
		return nil
	}
	var err error
	for len(e.pending) > 0 {
		var n int
		n, err = e.o.Output.Publish(ctx, e.pending)
		e.pending = append(e.pending[:0], e.pending[n:]...)
		if err == nil || !errors.Is(err, ErrRejected) || len(e.pending) == 0 {
			break
		}
		// The output can never take this finding: say so, count it, and
		// go on with the rest rather than block them behind it.
		f := e.pending[0]
		e.m.findingsDropped.Inc()
		e.log.Error("output rejected a finding; dropping it", "group", f.Group, "rule", f.Rule,
			"series", f.Series, "err", err)
		e.pending = append(e.pending[:0], e.pending[1:]...)
		err = nil
	}
	if over := len(e.pending) - e.o.MaxPending; over > 0 {
		e.m.findingsDropped.Add(over)
		e.log.Error("output has failed for too long; dropping the oldest pending findings",
			"dropped", over, "kept", e.o.MaxPending)
		e.pending = append(e.pending[:0], e.pending[over:]...)
	}
	if err != nil {
		e.m.publishFailures.Inc()
		return fmt.Errorf("publishing findings (%d kept for the next cycle): %w", len(e.pending), err)
	}
	return nil
}

// evalRule fetches the samples of r that are new since its previous
// evaluation, scores them, and returns the findings that fired.
func (e *Engine) evalRule(ctx context.Context, r *rule, at time.Time) ([]Finding, error) {
	step := r.cfg.Step
	end := at.Add(-e.o.EvaluationDelay).Truncate(step)
	// On the first evaluation, warm the detectors up on a lookback of
	// history before the span whose anomalies are reported.
	report := e.o.Backfill
	if report <= 0 {
		report = r.interval
	}
	emitFrom := end.Add(-report)
	start := r.next
	if start.IsZero() {
		start = emitFrom.Add(-r.cfg.Lookback)
	} else if oldest := end.Add(-r.cfg.Lookback - report); start.Before(oldest) {
		// After a long pause the skipped stretch is not worth fetching:
		// the detectors only look back one lookback.
		start = oldest
	}
	if start.After(end) {
		return nil, nil
	}
	series, err := e.o.Querier.QueryRange(ctx, r.cfg.Expr, start, end, step)
	if err != nil {
		return nil, err
	}
	r.next = end.Add(step)

	var found []Finding
	var dropped ingest.Dropped
	scored := 0
	emitFromMs := emitFrom.UnixMilli()
	var bt []int64           // the new samples of a series
	var bv []float64         // their values
	var br []analysis.Result // their results
	var key []byte           // a series' identity, looked up without a string
	for i := range series {
		s := &series[i]
		dropped.Add(s.Clean())
		key = s.Labels.AppendString(key[:0])
		st := r.series[string(key)]
		if st == nil {
			st = &seriesState{labels: s.Labels, key: string(key), det: r.factory(), lastT: -1 << 63}
			r.series[st.key] = st
		}
		st.lastSeen = at
		// The samples not yet scored, in order, scored in one call where the
		// detector can batch them.
		bt, bv = bt[:0], bv[:0]
		for j, t := range s.Timestamps {
			if t > st.lastT {
				bt, bv = append(bt, t), append(bv, s.Values[j])
				st.lastT = t
			}
		}
		br = slices.Grow(br[:0], len(bt))[:len(bt)]
		if bd, ok := st.det.(analysis.BatchDetector); ok {
			bd.ObserveBatch(bt, bv, br)
		} else {
			for j, t := range bt {
				br[j] = st.det.Observe(t, bv[j])
			}
		}
		scored += len(bt)
		for j, t := range bt {
			if f, ok := e.track(r, st, t, bv[j], br[j], nil, t >= emitFromMs); ok {
				found = append(found, f)
			}
		}
	}
	e.m.samplesScored.Add(scored)
	e.m.droppedNaN.Add(dropped.NaN)
	e.m.droppedInf.Add(dropped.Inf)
	e.m.droppedStale.Add(dropped.Stale)

	// Forget series that have not been seen for longer than they could
	// still matter to a detector.
	forget := max(r.cfg.Lookback, 10*r.interval)
	for k, st := range r.series {
		if at.Sub(st.lastSeen) > forget {
			delete(r.series, k)
		}
	}
	return found, nil
}

// track advances the episode of st with one scored sample and returns a
// finding when the episode has lasted the rule's For.
func (e *Engine) track(r *rule, st *seriesState, t int64, v float64, res analysis.Result, details map[string]any, emit bool) (Finding, bool) {
	ep := &st.ep
	if !anomalous(res, v, r.cfg.MinDev) {
		*ep = episode{}
		return Finding{}, false
	}
	if !ep.active {
		*ep = episode{active: true, start: t}
	}
	if res.Score > ep.peak.Score {
		ep.peak, ep.peakV, ep.peakT, ep.peakDetails = res, v, t, details
	}
	if ep.fired || time.Duration(t-ep.start)*time.Millisecond < r.cfg.For {
		return Finding{}, false
	}
	ep.fired = true
	if !emit {
		return Finding{}, false
	}
	return e.finding(r, st, t), true
}

// anomalous reports whether a scored sample counts against its series: the
// detector says so and, when the rule sets min_dev and the detector gives an
// expected value, the sample is at least min_dev away from it.
func anomalous(res analysis.Result, v, minDev float64) bool {
	if !res.Anomalous() {
		return false
	}
	if minDev > 0 && !math.IsNaN(res.Expected) && math.Abs(v-res.Expected) < minDev {
		return false
	}
	return true
}

func (e *Engine) finding(r *rule, st *seriesState, t int64) Finding {
	ep := &st.ep
	labels := st.labels.Map()
	for k, v := range r.cfg.Labels {
		labels[k] = v
	}
	// The rule's label wins, then what the analysis judged (spikiness
	// levels, imbalance levels), then the score.
	severity := labels["severity"]
	if s, ok := ep.peakDetails["severity"].(string); ok && severity == "" {
		severity = s
	}
	if severity == "" {
		severity = "warning"
		if ep.peak.Score >= 2 {
			severity = "critical"
		}
	}
	detector := r.cfg.Detector.Name
	switch {
	case r.cfg.Correlate != nil:
		detector = "correlate"
	case r.cfg.Decay != nil:
		detector = "decay"
	case r.cfg.Knee != nil:
		detector = "knee"
	case r.cfg.Spikiness != nil:
		detector = "spikiness"
	case r.cfg.Imbalance != nil:
		detector = "imbalance"
	}
	return Finding{
		Kind:        r.cfg.Kind(),
		Group:       r.group,
		Rule:        r.cfg.Name,
		Detector:    detector,
		Details:     ep.peakDetails,
		Labels:      labels,
		Series:      st.key,
		WindowStart: time.UnixMilli(ep.start).UTC(),
		WindowEnd:   time.UnixMilli(t).UTC(),
		Value:       ep.peakV,
		ValueTime:   time.UnixMilli(ep.peakT).UTC(),
		Expected:    ep.peak.Expected,
		Lower:       ep.peak.Lower,
		Upper:       ep.peak.Upper,
		Score:       ep.peak.Score,
		Severity:    severity,
	}
}
