package rules

import (
	"context"
	"math"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Rule is one rule of a group: one type per kind (anomaly, correlation,
// decay, knee, spikiness, imbalance, forecast, scale), each keeping the
// streaming state of the series it watches from one evaluation to the
// next. A Rule is evaluated by one goroutine at a time.
type Rule interface {
	// Name is the rule's name, unique in its group.
	Name() string
	// Kind is what the rule computes.
	Kind() rulefmt.Kind
	// Config is the rule as the configuration wrote it.
	Config() rulefmt.Rule
	// Eval evaluates the rule at the group's evaluation time at: it
	// fetches what is new since its previous evaluation and judges it.
	Eval(ctx context.Context, at time.Time, env *Env) (Result, error)
}

// Env is what a rule's evaluation is given besides the time.
type Env struct {
	// Querier is the store.
	Querier Querier
	// Delay is subtracted from the evaluation time: the newest point judged
	// lies that far behind it (stores hide the most recent samples while
	// they are still arriving).
	Delay time.Duration
	// Backfill makes a rule's first evaluation also report what it finds
	// in this much history, as if the daemon had been running (0: only the
	// newest interval).
	Backfill time.Duration
	// Interval is the group's evaluation interval.
	Interval time.Duration
	// Scores asks anomaly and window rules for what they judged, point by
	// point (Result.Scores), for outputs that write it back or expose it.
	Scores bool
	// Outlooks are the outlooks of the forecast rules of the group that
	// were evaluated earlier in this cycle, by rule name: a scale rule
	// reads its forecast rule's here. A forecast rule whose evaluation
	// failed has none.
	Outlooks map[string]*Outlook
}

// Result is what one evaluation of a rule produced.
type Result struct {
	Findings  []alerting.Finding
	Forecasts []alerting.ForecastData
	Scales    []alerting.ScaleData
	Scores    []alerting.Scores
	// Outlook is a forecast rule's outlook for the scale rules.
	Outlook *Outlook
	// Scored counts the samples judged, Dropped the non-finite and stale
	// ones skipped, Series the series (or pairs) the rule keeps state for.
	Scored  int
	Dropped ingest.Dropped
	Series  int
}

// constructor makes the rule of one kind from its configuration. It checks
// what only evaluation can check (detector names and parameters, forecast
// models), reporting at the rule's block.
type constructor func(g rulefmt.Group, r rulefmt.Rule) (Rule, error)

// constructors are the rule kinds. Adding a kind: its block in rulefmt,
// its type here with its constructor.
var constructors = map[rulefmt.Kind]constructor{
	rulefmt.KindAnomaly:     newAnomalyRule,
	rulefmt.KindCorrelation: newCorrelateRule,
	rulefmt.KindDecay:       newDecayRule,
	rulefmt.KindKnee:        newKneeRule,
	rulefmt.KindSpikiness:   newSpikinessRule,
	rulefmt.KindImbalance:   newImbalanceRule,
	rulefmt.KindForecast:    newForecastRule,
	rulefmt.KindScale:       newScaleRule,
}

// base is what every kind shares: its configuration and group.
type base struct {
	cfg      rulefmt.Rule
	group    string
	interval time.Duration
}

func newBase(g rulefmt.Group, r rulefmt.Rule) base {
	return base{cfg: r, group: g.Name, interval: g.Interval}
}

func (b *base) Name() string         { return b.cfg.Name }
func (b *base) Kind() rulefmt.Kind   { return b.cfg.Kind }
func (b *base) Config() rulefmt.Rule { return b.cfg }

// end is the newest point a rule evaluated at at judges: the evaluation
// time less the delay, on the rule's step.
func (b *base) end(at time.Time, env *Env) time.Time {
	return at.Add(-env.Delay).Truncate(b.cfg.Step)
}

// forget is how long a series unseen keeps its state: as long as it could
// still matter to a window.
func (b *base) forget() time.Duration { return max(b.cfg.Lookback, 10*b.interval) }

// seriesState is the state of one series (or pair) of an anomaly or
// window rule: its identity and its current episode.
type seriesState struct {
	labels   ingest.Labels
	key      string
	det      analysis.Detector // anomaly rules
	lastT    int64             // newest sample observed, unix ms
	lastSeen time.Time
	ep       episode
}

// episode is an unbroken run of anomalous samples (or evaluation times of
// a window rule) of one series.
type episode struct {
	active, fired bool
	start         int64
	peak          analysis.Result
	peakV         float64
	peakT         int64
	peakDetails   map[string]any
}

// episodes tracks the episodes of the series of one rule and turns those
// that last the rule's for into findings.
type episodes struct {
	series map[string]*seriesState
}

// state returns the state of the series key, making it with mk when new.
func (e *episodes) state(key string, labels ingest.Labels, mk func() analysis.Detector) *seriesState {
	if e.series == nil {
		e.series = map[string]*seriesState{}
	}
	st := e.series[key]
	if st == nil {
		st = &seriesState{labels: labels, key: key, lastT: math.MinInt64}
		if mk != nil {
			st.det = mk()
		}
		e.series[key] = st
	}
	return st
}

// sweep forgets the series not seen for longer than forget.
func (e *episodes) sweep(at time.Time, forget time.Duration) {
	for k, st := range e.series {
		if at.Sub(st.lastSeen) > forget {
			delete(e.series, k)
		}
	}
}

// track advances the episode of st with one judged sample at t and
// returns a finding when the episode has lasted the rule's For. With emit
// false the episode advances but fires silently (history before the range
// reported).
func (b *base) track(st *seriesState, t int64, v float64, res analysis.Result, details map[string]any, detector string, emit bool) (alerting.Finding, bool) {
	ep := &st.ep
	if !anomalous(res, v, b.cfg.MinDev) {
		*ep = episode{}
		return alerting.Finding{}, false
	}
	if !ep.active {
		*ep = episode{active: true, start: t}
	}
	if res.Score > ep.peak.Score {
		ep.peak, ep.peakV, ep.peakT, ep.peakDetails = res, v, t, details
	}
	if ep.fired || time.Duration(t-ep.start)*time.Millisecond < b.cfg.For {
		return alerting.Finding{}, false
	}
	ep.fired = true
	if !emit {
		return alerting.Finding{}, false
	}
	return b.finding(st, t, detector), true
}

// anomalous reports whether a judged sample counts against its series: the
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

func (b *base) finding(st *seriesState, t int64, detector string) alerting.Finding {
	ep := &st.ep
	labels := st.labels.Map()
	for k, v := range b.cfg.Labels {
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
	return alerting.Finding{
		Kind:        string(b.cfg.Kind),
		Group:       b.group,
		Rule:        b.cfg.Name,
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

// scores starts the Scores of st for this evaluation.
func (b *base) scores(st *seriesState, n int) alerting.Scores {
	labels := st.labels.Map()
	for k, v := range b.cfg.Labels {
		labels[k] = v
	}
	return alerting.Scores{Group: b.group, Rule: b.cfg.Name, Kind: string(b.cfg.Kind), Labels: labels, Series: st.key,
		T: make([]int64, 0, n), Value: make([]float64, 0, n), Score: make([]float64, 0, n),
		Expected: make([]float64, 0, n), Lower: make([]float64, 0, n), Upper: make([]float64, 0, n)}
}

// addScore appends one judged point.
func addScore(s *alerting.Scores, t int64, v float64, r analysis.Result) {
	score := r.Score
	if !r.Ready {
		score = math.NaN()
	}
	s.T, s.Value, s.Score = append(s.T, t), append(s.Value, v), append(s.Score, score)
	s.Expected, s.Lower, s.Upper = append(s.Expected, r.Expected), append(s.Lower, r.Lower), append(s.Upper, r.Upper)
}

// num makes a float safe for JSON: nil for NaN and ±Inf.
func num(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

// specError is err positioned at the rule's block, in its group.
func specError(r rulefmt.Rule, g rulefmt.Group, err error) error {
	var errs rulefmt.Errors
	errs.Add(r.SpecPos, g.Name, r.Name, "%v", err)
	return errs
}
