package rules

import (
	"context"
	"math"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/forecasting"
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
	// Scores says which of the points anomaly and window rules judged
	// they hand on in Result.Scores.
	Scores ScorePoints
	// Readings says which series' levels anomaly rules hand on in
	// Result.Readings (nil: none).
	Readings ReadingFilter
	// CatchUp bounds what an evaluation after a gap (a store outage, a slow
	// cycle, a restart) reports: everything judged since the previous
	// evaluation, back to at most this long before now.
	CatchUp time.Duration
	// Outlooks are the outlooks of the forecast rules of the group that
	// were evaluated earlier in this cycle, by rule name: a scale rule
	// reads its forecast rule's here. A forecast rule whose evaluation
	// failed has none.
	Outlooks map[string]*Outlook
	// rewrite, set by Replay, rewrites the forecast a scale rule decides
	// on (ReplayOptions.Rewrite): the forecast rules then keep each
	// snapshot's forecast.
	rewrite func(group, rule string, fc *forecasting.Forecast)
}

// Result is what one evaluation of a rule produced.
type Result struct {
	// Observations are the judged points the alert lifecycle needs.
	Observations []alerting.Observation
	Forecasts    []alerting.ForecastData
	Scales       []alerting.ScaleData
	Scores       []alerting.Scores
	// Readings are the levels of the series an anomaly rule reported on.
	Readings []alerting.Readings
	// Misses are the points a forecast rule saw above its last
	// forecast's interval.
	Misses []alerting.ForecastMiss
	// Outlook is a forecast rule's outlook for the scale rules.
	Outlook *Outlook
	// Scored counts the samples judged, Dropped the non-finite and stale
	// ones skipped, Series the series (or pairs) the rule keeps state for.
	Scored  int
	Dropped ingest.Dropped
	Series  int
	// Unreported is the stretch a delayed evaluation did not report
	// because it lay beyond the catch-up horizon (zero when none).
	Unreported Gap
	// Through is the newest point the rule has asked the store for,
	// Newest the newest sample it has judged (zero: none yet); Late counts
	// the samples judged in this evaluation that were not there when
	// first asked for, Lag how far behind the evaluation delay the rule
	// judges since (see base.learn), and Forgotten the series whose state
	// was dropped after forget_after without a point.
	Through, Newest time.Time
	Late, Forgotten int
	Lag             time.Duration
	// ForgottenSome names a few of the series forgotten, for the log.
	ForgottenSome []string
	// SetAside counts the samples the detectors left out of what defines
	// normal as extreme (auto's incidents' samples, those sigma clipped),
	// Accepted the incidents auto took for a new normal; Aside is the
	// first series in the evaluation that set a sample aside, for the log.
	SetAside, Accepted int
	Aside              *Aside
	// Notes are what a person should know about the rule's evaluation,
	// reported once (a detector that cannot run all its tests at the
	// rule's step, a store that returned less history than asked for).
	Notes []string
}

// Aside is a sample a detector set aside: the series, and, of its
// samples judged in the evaluation, the one that scored highest.
type Aside struct {
	Series string
	At     time.Time
	Value  float64
}

// Gap is a stretch of time [From, To) not reported, about Points points
// per series.
type Gap struct {
	From, To time.Time
	Points   int
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

// base is what every kind shares: its configuration and group, and how
// far behind the evaluation delay it judges.
type base struct {
	cfg      rulefmt.Rule
	group    string
	interval time.Duration
	// lag is how much further behind the evaluation delay the rule
	// judges, learnt from samples that reached the store after the rule
	// first asked for them: a step each time, up to lateBound.
	lag time.Duration
}

func newBase(g rulefmt.Group, r rulefmt.Rule) base {
	return base{cfg: r, group: g.Name, interval: g.Interval}
}

func (b *base) Name() string         { return b.cfg.Name }
func (b *base) Kind() rulefmt.Kind   { return b.cfg.Kind }
func (b *base) Config() rulefmt.Rule { return b.cfg }

// end is the newest point a rule evaluated at at judges: the evaluation
// time less the delay and the rule's lag, on the rule's step.
func (b *base) end(at time.Time, env *Env) time.Time {
	return at.Add(-env.Delay - b.lag).Truncate(b.cfg.Step)
}

// learn lags the rule a step more when late samples came in this
// evaluation, so that it asks for each point once its sample shows; a
// store fills a point whose own sample does not show yet with the one
// before (VictoriaMetrics within one and a half steps), which would judge
// a stale value in its place.
func (b *base) learn(res *Result) {
	if res.Late > 0 && b.lag+b.cfg.Step < lateBound(b.cfg.Step) {
		b.lag += b.cfg.Step
	}
	res.Lag = b.lag
}

// forget is how long a series unseen keeps its state: as long as it could
// still matter to a window.
func (b *base) forget() time.Duration { return max(b.cfg.Lookback, 10*b.interval) }

// lateness finds where a rule's next fetch starts. A store makes a sample
// visible a moment after it arrives (VictoriaMetrics within a few
// seconds), so a point asked for before then comes back empty; asked for
// only once it would be lost, and when every evaluation asks that early
// the rule would judge nothing at all. So the next fetch starts after the
// newest point the slowest series of the latest fetch delivered, at most
// lateBound before its end; a fetch that returned nothing asks again from
// where it began.
type lateness struct {
	settled time.Time // the series of the latest fetch delivered up to here
	// the least newest point of the series of the part being fetched and
	// of the last finished part, unix ms; any: some part returned series
	chunk, latest int64
	any           bool
}

// lateBound is how far back a fetch asks again for points not delivered:
// at least three steps and a minute.
func lateBound(step time.Duration) time.Duration {
	n := max(3, (time.Minute+step-1)/step)
	return time.Duration(n) * step
}

// from is where the fetch after one that asked up to last starts.
func (l *lateness) from(last, end time.Time, step time.Duration) time.Time {
	if l.settled.IsZero() || !l.settled.Before(last) {
		return last.Add(step)
	}
	from := l.settled.Add(step)
	if bound := end.Add(-lateBound(step)); from.Before(bound) {
		return bound
	}
	return from
}

func (l *lateness) begin()           { l.chunk, l.latest, l.any = math.MaxInt64, math.MaxInt64, false }
func (l *lateness) saw(newest int64) { l.chunk = min(l.chunk, newest) }

// chunkDone ends a part of the range: what the series of a later part
// delivered counts, not this one's.
func (l *lateness) chunkDone() {
	if l.chunk != math.MaxInt64 {
		l.latest, l.any = l.chunk, true
	}
	l.chunk = math.MaxInt64
}

// settle ends a fetch of [start, end].
func (l *lateness) settle(start, end time.Time, step time.Duration) {
	l.chunkDone()
	switch {
	case !l.any:
		if before := start.Add(-step); l.settled.IsZero() || before.Before(l.settled) {
			l.settled = before
		}
	case l.latest >= end.UnixMilli():
		l.settled = end
	default:
		l.settled = time.UnixMilli(l.latest)
	}
}

// msTime is a time in unix ms, zero for math.MinInt64 (none).
func msTime(ms int64) time.Time {
	if ms == math.MinInt64 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// seriesState is the state of one series (or pair) of an anomaly or
// window rule.
type seriesState struct {
	labels   ingest.Labels
	key      string
	det      analysis.Detector // anomaly rules
	lastT    int64             // newest sample observed, unix ms
	lastSeen time.Time
	// anomalous tells whether the newest point judged was anomalous; open
	// whether an episode may still be active in the lifecycle: anomalous
	// points, then normal ones until one at or after quietFrom (the last
	// anomalous point plus keep_firing_for), which resolves it.
	anomalous, open bool
	// reads caches whether the series carries a change label, for the
	// anomaly rule's readings generation readGen.
	reads     bool
	readGen   uint32
	quietFrom int64
}

// series holds the states of the series of one rule.
type series struct {
	series map[string]*seriesState
}

// state returns the state of the series key, making it with mk when new.
func (e *series) state(key string, labels ingest.Labels, mk func() analysis.Detector) *seriesState {
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

// sweep forgets the series not seen for longer than forget; one whose
// alert may still be active is reported gone, so that alert ends.
func (b *base) sweep(e *series, res *Result, at time.Time, forget time.Duration, detector string) {
	forgotten := res.Forgotten
	defer func() {
		// A map keeps the room of the most it ever held: after a burst of
		// series, the few left move to one their size.
		if n := res.Forgotten - forgotten; n > 1000 && n > len(e.series) {
			m := make(map[string]*seriesState, len(e.series))
			for k, st := range e.series {
				m[k] = st
			}
			e.series = m
		}
	}()
	for k, st := range e.series {
		if at.Sub(st.lastSeen) > forget {
			if st.open {
				o := b.observation(st, at.UnixMilli(), math.NaN(), analysis.Result{}, nil, detector)
				o.Gone = true
				res.Observations = append(res.Observations, o)
			}
			delete(e.series, k)
			res.Forgotten++
			if len(res.ForgottenSome) < 5 {
				res.ForgottenSome = append(res.ForgottenSome, st.labels.String())
			}
		}
	}
}

// observe records one judged point of st: a point the alert lifecycle
// needs — anomalous, or the first normal one after anomalous ones —
// becomes an Observation when report is set (it is not for the history a
// first evaluation warms its detectors up on).
func (b *base) observe(res *Result, st *seriesState, t int64, v float64, r analysis.Result, details map[string]any, detector string, report bool) {
	anom := anomalous(r, v, b.cfg.MinDev)
	if anom {
		st.quietFrom = t + b.cfg.KeepFiringFor.Milliseconds()
	}
	if report && (anom || st.open) {
		o := b.observation(st, t, v, r, details, detector)
		o.Anomalous = anom
		res.Observations = append(res.Observations, o)
	}
	st.anomalous = anom
	st.open = anom || st.open && t < st.quietFrom
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

func (b *base) observation(st *seriesState, t int64, v float64, r analysis.Result, details map[string]any, detector string) alerting.Observation {
	labels := st.labels.Map()
	for k, lv := range b.cfg.Labels {
		labels[k] = lv
	}
	severity, _ := details["severity"].(string)
	return alerting.Observation{
		Group: b.group, Rule: b.cfg.Name, Kind: string(b.cfg.Kind), Detector: detector,
		Series: st.key, Labels: labels,
		Policy: alerting.Policy{For: b.cfg.For, KeepFiringFor: b.cfg.KeepFiringFor, RepeatInterval: b.cfg.RepeatInterval},
		At:     time.UnixMilli(t).UTC(), Value: v, Expected: r.Expected, Lower: r.Lower, Upper: r.Upper, Score: r.Score,
		Severity: severity, Details: details,
	}
}

// ReadingFilter says which series' levels anomaly rules hand on in
// Result.Readings: every series of the rules Reads accepts, and the
// series that carry one of ChangeLabels. *alerting.LevelStore implements
// it.
type ReadingFilter interface {
	Reads(rule string, ruleLabels map[string]string) bool
	ChangeLabels() []string
}

// ScorePoints says which judged points rules hand on in Result.Scores.
type ScorePoints int

const (
	// ScoresNone: none.
	ScoresNone ScorePoints = iota
	// ScoresNewest: each series' newest point with a score (the newest
	// point when none has one yet), what a gauge exposes. A cold
	// evaluation of a long history then holds one point per series, not
	// every point.
	ScoresNewest
	// ScoresEvery: every point judged, for outputs that write them back.
	ScoresEvery
)

// scores starts the Scores of st for this evaluation, with room for n
// points.
func (b *base) scores(st *seriesState, n int, sp ScorePoints) alerting.Scores {
	if sp == ScoresNewest {
		n = 1
	}
	labels := st.labels.Map()
	for k, v := range b.cfg.Labels {
		labels[k] = v
	}
	return alerting.Scores{Group: b.group, Rule: b.cfg.Name, Kind: string(b.cfg.Kind), Labels: labels, Series: st.key,
		T: make([]int64, 0, n), Value: make([]float64, 0, n), Score: make([]float64, 0, n),
		Expected: make([]float64, 0, n), Lower: make([]float64, 0, n), Upper: make([]float64, 0, n)}
}

// readings starts the Readings of st for this evaluation.
func (b *base) readings(st *seriesState) alerting.Readings {
	labels := st.labels.Map()
	for k, v := range b.cfg.Labels {
		labels[k] = v
	}
	return alerting.Readings{Group: b.group, Rule: b.cfg.Name, Labels: labels, Series: st.key}
}

// addScore appends one judged point, or with ScoresNewest keeps it in
// place of the one held unless that one has a score and it has not.
func addScore(s *alerting.Scores, t int64, v float64, r analysis.Result, sp ScorePoints) {
	score := r.Score
	if !r.Ready {
		score = math.NaN()
	}
	if sp == ScoresNewest && len(s.T) > 0 {
		if math.IsNaN(score) && !math.IsNaN(s.Score[0]) {
			return
		}
		s.T, s.Value, s.Score = s.T[:0], s.Value[:0], s.Score[:0]
		s.Expected, s.Lower, s.Upper = s.Expected[:0], s.Lower[:0], s.Upper[:0]
	}
	s.T, s.Value, s.Score = append(s.T, t), append(s.Value, v), append(s.Score, score)
	s.Expected, s.Lower, s.Upper = append(s.Expected, r.Expected), append(s.Lower, r.Lower), append(s.Upper, r.Upper)
}

// resumer is a rule that can go on from where a previous run of the
// daemon stopped: it reports what it judges after the time it is given,
// within the catch-up horizon, instead of only the newest interval.
type resumer interface {
	// judged is the newest point the rule has judged (zero before its
	// first evaluation).
	judged() time.Time
	// resume makes the first evaluation report from after t.
	resume(t time.Time)
}

// reportFrom is where an evaluation ending at end starts reporting: after
// the point judged last (resumed from, on a first evaluation after a
// restart), back to at most the catch-up horizon; on a first evaluation,
// the backfill or the group's interval. It returns the stretch the horizon
// cut off.
func reportFrom(last time.Time, first bool, end time.Time, step time.Duration, env *Env) (time.Time, Gap) {
	if first && last.IsZero() {
		report := env.Backfill
		if report <= 0 {
			report = env.Interval
		}
		return end.Add(-report), Gap{}
	}
	from := last.Add(step)
	if env.CatchUp > 0 {
		if oldest := end.Add(-env.CatchUp); from.Before(oldest) {
			return oldest, Gap{From: from, To: oldest, Points: int(oldest.Sub(from) / step)}
		}
	}
	return from, Gap{}
}

// jsonNumber makes a float safe for JSON: nil for NaN and ±Inf.
func jsonNumber(x float64) any {
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
