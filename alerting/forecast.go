package alerting

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Forecast rules keep a forecasting.Forecaster per series over the window
// machinery of window.go: the first evaluation fits it on the history,
// later ones feed it only the new points (refitting when it says a refit is
// due), and each evaluation publishes the outlook from the newest point on
// <prefix>.forecasts.<rule>. Scale rules read the outlook of a forecast
// rule of their group and publish a desired number of replicas per target
// on <prefix>.scale.<rule>.

// EventOutput publishes one CloudEvent on a subject. *JetStream implements
// it. Forecasts and scale signals go through it: one that fails is logged
// and counted, not kept, since the next cycle's supersedes it.
type EventOutput interface {
	PublishEvent(ctx context.Context, subject string, ev Event) error
}

// CloudEvents types of forecasts and scale signals.
const (
	ForecastEventType = "io.inferwatch.forecast"
	ScaleEventType    = "io.inferwatch.scale"
)

// accuracyWindow is how many recent forecasts the accuracy of a series is
// measured over.
const accuracyWindow = 1000

// ForecastPoint is the forecast at one lead.
type ForecastPoint struct {
	Time  time.Time `json:"time"`
	Mean  jsonFloat `json:"mean"`
	Lower jsonFloat `json:"lower"`
	Upper jsonFloat `json:"upper"`
}

// Accuracy measures a series' own recent forecasts at the horizon against
// what came: MAE, the share of actuals inside the interval, and the MAE of
// the naive forecast (the value at the origin) on the same origins.
type Accuracy struct {
	LeadSeconds float64   `json:"lead_seconds"`
	N           int       `json:"n"`
	MAE         jsonFloat `json:"mae"`
	Coverage    jsonFloat `json:"coverage"`
	NaiveMAE    jsonFloat `json:"naive_mae"`
}

// ForecastData is the data of a forecast event.
type ForecastData struct {
	Group          string            `json:"group"`
	Rule           string            `json:"rule"`
	Labels         map[string]string `json:"labels"`
	Series         string            `json:"series"`
	Origin         time.Time         `json:"origin"`
	LastValue      jsonFloat         `json:"last_value"`
	StepSeconds    float64           `json:"step_seconds"`
	HorizonSeconds float64           `json:"horizon_seconds"`
	Model          string            `json:"model"`
	Fallback       string            `json:"fallback,omitempty"`
	Level          float64           `json:"level"`
	Points         []ForecastPoint   `json:"points"`
	Peak           jsonFloat         `json:"peak"`
	PeakTime       time.Time         `json:"peak_time"`
	UpperPeak      jsonFloat         `json:"upper_peak"`
	GapsFilled     int               `json:"gaps_filled"`
	Accuracy       Accuracy          `json:"accuracy"`
}

// ScaleData is the data of a scale signal.
type ScaleData struct {
	Group              string            `json:"group"`
	Rule               string            `json:"rule"`
	Target             string            `json:"target"`
	Labels             map[string]string `json:"labels"`
	Time               time.Time         `json:"time"`
	DesiredReplicas    int               `json:"desired_replicas"`
	CurrentReplicas    int               `json:"current_replicas"`
	CurrentKnown       bool              `json:"current_known"`
	PredictedLoad      jsonFloat         `json:"predicted_load"`
	PredictedUpper     jsonFloat         `json:"predicted_upper"`
	CapacityPerReplica jsonFloat         `json:"capacity_per_replica"`
	Tier               int               `json:"tier"`
	Reason             string            `json:"reason"`
	ValidUntil         time.Time         `json:"valid_until"`
	ForecastModel      string            `json:"forecast_model,omitempty"`
}

// eventID is a stable id over a tag, the group, the rule, the labels and
// a time, each string length-prefixed (as FindingID).
func eventID(tag, group, rule string, labels map[string]string, ms int64) string {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	w := func(s string) {
		n := binary.PutUvarint(buf[:], uint64(len(s)))
		h.Write(buf[:n])
		h.Write([]byte(s))
	}
	w(tag)
	w(group)
	w(rule)
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		w(k)
		w(labels[k])
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(ms))
	h.Write(b[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func newEvent(typ, id, subject string, t time.Time, data any) (Event, error) {
	body, err := json.Marshal(data)
	if err != nil {
		return Event{}, err
	}
	return Event{SpecVersion: CloudEventsSpecVersion, ID: id, Source: DefaultEventSource, Type: typ,
		Subject: subject, Time: t.UTC(), DataContentType: "application/json", Data: body}, nil
}

// forecastOptions maps a forecast rule to the forecaster's options. A
// history of two weeks (fourteen periods) or more turns on
// forecasting.Options.Weekly: each series then keeps two weeks plus a
// calibration window of samples (seven periods otherwise, half the memory),
// and auto offers the weekly models once a series has that much. Shorter
// histories keep today's memory use.
func forecastOptions(fc *rulefmt.Forecast) forecasting.Options {
	h := int((fc.Horizon + fc.Step - 1) / fc.Step)
	return forecasting.Options{Step: fc.Step, Model: fc.Model, Horizon: max(h, 1), Level: fc.Level,
		Period: int(fc.Period / fc.Step), Weekly: fc.Period > 0 && fc.History >= 2*7*fc.Period}
}

type forecastRule struct {
	opts   forecasting.Options
	w      *window
	series map[string]*fcSeries // by series, or by group with sum_by
	// bottomUp forecasts the sums of the series grouped by sumBy; grids
	// keeps each group's arrays from one evaluation to the next.
	bottomUp bool
	sumBy    []string
	grids    map[string]*fcGrid
	// times are the evaluation times of the last evaluation (the backfill's
	// and the newest), and snaps each series' outlook at them.
	times []time.Time
	snaps map[string][]fcSnap
}

type fcSnap struct {
	ok                bool
	origin            int64
	peak, upper, last float64
	peakTime          int64
	model, fallback   string
}

type fcSeries struct {
	labels   ingest.Labels
	f        *forecasting.Forecaster // one series
	sum      *forecasting.Sum        // or the sum of a group's parts
	parts    []string                // the parts' keys, with sum
	ys       []float64               // a sample of each part, reused
	lastT    int64
	lastV    float64
	fc       forecasting.Forecast
	pending  map[int64][3]float64 // target time → mean, upper − lower packed as mean, lower, upper
	naiveAt  map[int64]float64    // target time → value at its origin
	acc      accRing
	scored   int64 // the newest target scored into acc
	lastPub  int64
	lastSeen time.Time
}

// accRing keeps the last accuracyWindow scored forecasts.
type accRing struct {
	ae, nae []float64
	in      []bool
	pos     int
}

func (a *accRing) push(ae, nae float64, in bool) {
	if len(a.ae) < accuracyWindow {
		a.ae, a.nae, a.in = append(a.ae, ae), append(a.nae, nae), append(a.in, in)
		return
	}
	a.ae[a.pos], a.nae[a.pos], a.in[a.pos] = ae, nae, in
	a.pos = (a.pos + 1) % accuracyWindow
}

func (a *accRing) summary(lead time.Duration) Accuracy {
	out := Accuracy{LeadSeconds: lead.Seconds(), N: len(a.ae), MAE: jsonFloat(math.NaN()), Coverage: jsonFloat(math.NaN()), NaiveMAE: jsonFloat(math.NaN())}
	if len(a.ae) == 0 {
		return out
	}
	var s, sn, c float64
	for i := range a.ae {
		s += a.ae[i]
		sn += a.nae[i]
		if a.in[i] {
			c++
		}
	}
	n := float64(len(a.ae))
	out.MAE, out.NaiveMAE, out.Coverage = jsonFloat(s/n), jsonFloat(sn/n), jsonFloat(c/n)
	return out
}

func newForecastRule(rc rulefmt.Rule) (*forecastRule, error) {
	opts := forecastOptions(rc.Forecast)
	if _, err := forecasting.New(opts); err != nil {
		return nil, err
	}
	return &forecastRule{opts: opts, w: newWindow(rc.Expr), series: map[string]*fcSeries{}, snaps: map[string][]fcSnap{},
		bottomUp: rc.Forecast.BottomUp, sumBy: rc.Forecast.SumBy, grids: map[string]*fcGrid{}}, nil
}

// evalForecastRule fetches the new points of the rule's series, feeds them
// to each series' forecaster and publishes the outlook from the newest
// point. On the first evaluation with a backfill it fits on the history
// before the backfill and replays it, keeping the outlook at each
// evaluation time for the scale rules; it publishes only the newest.
func (e *Engine) evalForecastRule(ctx context.Context, r *rule, at time.Time) error {
	fr := r.fc
	step := r.cfg.Step
	stepMs := step.Milliseconds()
	end := at.Add(-e.o.EvaluationDelay).Truncate(step)
	replay := time.Duration(0)
	if fr.w.next.IsZero() && e.o.Backfill > 0 {
		replay = e.o.Backfill
	}
	first := end.Add(-replay - r.cfg.Lookback)
	dropped, err := e.fetch(ctx, fr.w, step, first, end, at)
	if err != nil {
		return err
	}
	e.m.droppedNaN.Add(dropped.NaN)
	e.m.droppedInf.Add(dropped.Inf)
	e.m.droppedStale.Add(dropped.Stale)

	stride := max(r.interval, step)
	fr.times = fr.times[:0]
	for τ := end.Add(-replay).Truncate(stride); replay > 0 && τ.Before(end); τ = τ.Add(stride) {
		fr.times = append(fr.times, τ)
	}
	fr.times = append(fr.times, end)
	clear(fr.snaps)

	var errs []error
	for _, it := range fr.items(stepMs) {
		key, b := it.key, it.b
		s := fr.series[key]
		if s == nil {
			s = &fcSeries{labels: b.labels, lastT: math.MinInt64, scored: math.MinInt64, pending: map[int64][3]float64{}, naiveAt: map[int64]float64{}}
			fr.series[key] = s
		}
		if it.parts != nil && !slices.Equal(s.parts, it.names) {
			// Parts came or went: fit the sum of the new set afresh.
			s.f, s.sum, s.lastT = nil, nil, math.MinInt64
		}
		s.lastSeen = at
		snaps := make([]fcSnap, len(fr.times))
		k := 0
		snapTo := func(t int64) { // record the outlook at every evaluation time before t
			for ; k < len(fr.times) && fr.times[k].UnixMilli() < t; k++ {
				if s.f != nil && s.lastT <= fr.times[k].UnixMilli() {
					snaps[k] = s.snap(stepMs)
				}
			}
		}
		if s.f == nil && s.sum == nil {
			// Fit on what lies at or before the first evaluation time (at
			// least the first sample).
			// The last part of it (up to a period) is held back and fed
			// point by point, so the first outlook already comes with its
			// accuracy on forecasts it did not see the answers to.
			cut := fr.times[0].UnixMilli()
			n := sort.Search(len(b.t), func(i int) bool { return b.t[i] > cut })
			n = max(n-min(n/4, fr.opts.Period), 1)
			if err := s.fit(fr.opts, &it, 0, n, stepMs); err != nil {
				errs = append(errs, fmt.Errorf("series %s: %w", key, err))
				continue
			}
		}
		for i, t := range b.t {
			if t <= s.lastT {
				continue
			}
			snapTo(t)
			if err := s.update(fr.opts, &it, i, stepMs); err != nil {
				errs = append(errs, fmt.Errorf("series %s: %w", key, err))
				break
			}
		}
		snapTo(math.MaxInt64)
		fr.snaps[key] = snaps
		if s.lastT == s.lastPub || s.lastT < end.Add(-r.cfg.Lookback).UnixMilli() {
			continue // nothing new, or nothing recent
		}
		ev, subject, err := e.forecastEvent(r, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if e.publishEvent(ctx, r, "forecast", subject, ev) {
			s.lastPub = s.lastT
		}
	}
	forget := max(r.cfg.Lookback, 10*r.interval)
	fr.w.trim(end.Add(-r.cfg.Lookback).UnixMilli(), at, forget)
	for k, s := range fr.series {
		if at.Sub(s.lastSeen) > forget {
			delete(fr.series, k)
		}
	}
	return errors.Join(errs...)
}

// fit fits a new forecaster on the samples [from, to) of it (one series:
// sorted, on the step grid of the first, missing steps being gaps the
// forecaster fills; a sum: its parts on one grid).
func (s *fcSeries) fit(opts forecasting.Options, it *fcItem, from, to int, stepMs int64) error {
	t, v := it.b.t[from:to], it.b.v[from:to]
	if it.parts != nil {
		sum, err := forecasting.NewSum(opts, len(it.parts))
		if err != nil {
			return err
		}
		data := make([][]float64, len(it.parts))
		for k, p := range it.parts {
			data[k] = p[from:to]
		}
		if err := sum.Fit(t[0], data); err != nil {
			return err
		}
		s.f, s.sum, s.parts = nil, sum, it.names
		s.lastT = t[len(t)-1]
		// The newest known sum: a part's missing sample leaves a gap.
		for i := len(v) - 1; i >= 0; i-- {
			if known(v[i]) {
				s.lastV = v[i]
				break
			}
		}
		s.sum.ForecastInto(&s.fc)
		s.track(stepMs)
		return nil
	}
	f, err := forecasting.New(opts)
	if err != nil {
		return err
	}
	t0, y := grid(t, v, stepMs)
	if err := f.Fit(t0, y); err != nil {
		return err
	}
	s.f, s.sum = f, nil
	s.lastT = t0 + int64(len(y)-1)*stepMs
	s.lastV = y[len(y)-1]
	s.f.ForecastInto(&s.fc)
	s.track(stepMs)
	return nil
}

// outlook is what fcSeries needs of a fitted forecaster beyond an update.
type outlook interface {
	RefitDue() bool
	Refit() error
	ForecastInto(*forecasting.Forecast)
	Options() forecasting.Options
}

// update feeds sample i of it; a gap longer than the forecaster fills
// makes it fit again on the samples held.
func (s *fcSeries) update(opts forecasting.Options, it *fcItem, i int, stepMs int64) error {
	tn, vn := it.b.t[i], it.b.v[i]
	// A sum fitted afresh replays samples whose targets were scored
	// before: each target counts once.
	if p, ok := s.pending[tn]; ok && known(vn) && tn > s.scored {
		lo, hi := p[1], p[2]
		s.acc.push(math.Abs(vn-p[0]), math.Abs(vn-s.naiveAt[tn]), vn >= lo && vn <= hi)
		s.scored = tn
	}
	for k := range s.pending {
		if k <= tn {
			delete(s.pending, k)
			delete(s.naiveAt, k)
		}
	}
	var o outlook
	var err error
	if s.sum != nil {
		s.ys = slices.Grow(s.ys[:0], len(it.parts))[:len(it.parts)]
		for k, p := range it.parts {
			s.ys[k] = p[i]
		}
		o, err = s.sum, s.sum.Update(tn, s.ys)
	} else {
		o, err = s.f, s.f.Update(tn, vn)
	}
	switch {
	case errors.Is(err, forecasting.ErrGap):
		return s.fit(opts, it, max(0, i+1-o.Options().MaxHistory), i+1, stepMs)
	case err != nil:
		return err
	}
	if o.RefitDue() {
		if err := o.Refit(); err != nil {
			return err
		}
	}
	s.lastT = tn
	if known(vn) { // a gap in a sum keeps the last known value
		s.lastV = vn
	}
	o.ForecastInto(&s.fc)
	s.track(stepMs)
	return nil
}

// track remembers the forecast at the horizon for scoring when its
// target arrives.
func (s *fcSeries) track(stepMs int64) {
	h := len(s.fc.Mean)
	if h == 0 {
		return
	}
	target := s.fc.Origin + int64(h)*stepMs
	s.pending[target] = [3]float64{s.fc.Mean[h-1], s.fc.Lower[h-1], s.fc.Upper[h-1]}
	s.naiveAt[target] = s.lastV
}

func (s *fcSeries) snap(stepMs int64) fcSnap {
	return fcSnap{ok: true, origin: s.fc.Origin, peak: s.fc.Peak, upper: s.fc.UpperPeak, last: s.lastV,
		peakTime: s.fc.Origin + int64(s.fc.PeakLead)*stepMs, model: s.fc.Model, fallback: s.fc.Fallback}
}

// grid lays samples on the step grid of the first one, NaN where missing.
func grid(t []int64, v []float64, stepMs int64) (int64, []float64) {
	t0 := t[0]
	n := int((t[len(t)-1]-t0+stepMs/2)/stepMs) + 1
	y := make([]float64, n)
	for i := range y {
		y[i] = math.NaN()
	}
	for i, ti := range t {
		y[int((ti-t0+stepMs/2)/stepMs)] = v[i]
	}
	return t0, y
}

func (e *Engine) forecastEvent(r *rule, s *fcSeries) (Event, string, error) {
	fc := &s.fc
	step := fc.Step
	labels := s.labels.Map()
	delete(labels, "__name__")
	for k, v := range r.cfg.Labels {
		labels[k] = v
	}
	d := ForecastData{
		Group: r.group, Rule: r.cfg.Name, Labels: labels, Series: s.labels.String(),
		Origin: time.UnixMilli(fc.Origin).UTC(), LastValue: jsonFloat(s.lastV),
		StepSeconds: step.Seconds(), HorizonSeconds: (time.Duration(len(fc.Mean)) * step).Seconds(),
		Model: fc.Model, Fallback: fc.Fallback, Level: fc.Level,
		Peak: jsonFloat(fc.Peak), PeakTime: time.UnixMilli(fc.Origin + int64(fc.PeakLead)*step.Milliseconds()).UTC(),
		UpperPeak: jsonFloat(fc.UpperPeak), GapsFilled: fc.Gaps,
		Accuracy: s.acc.summary(time.Duration(len(fc.Mean)) * step),
	}
	for i := range fc.Mean {
		d.Points = append(d.Points, ForecastPoint{Time: time.UnixMilli(fc.Origin + int64(i+1)*step.Milliseconds()).UTC(),
			Mean: jsonFloat(fc.Mean[i]), Lower: jsonFloat(fc.Lower[i]), Upper: jsonFloat(fc.Upper[i])})
	}
	id := eventID("inferwatch.forecast.v1", r.group, r.cfg.Name, labels, fc.Origin)
	ev, err := newEvent(ForecastEventType, id, d.Series, d.Origin, d)
	if err != nil {
		return Event{}, "", fmt.Errorf("encoding the forecast of %s: %w", d.Series, err)
	}
	return ev, e.o.EventPrefix + ".forecasts." + r.cfg.Name, nil
}

// publishEvent publishes one forecast or scale signal, logging and
// counting a failure; the next cycle's event supersedes a lost one.
func (e *Engine) publishEvent(ctx context.Context, r *rule, kind, subject string, ev Event) bool {
	if err := e.o.Events.PublishEvent(ctx, subject, ev); err != nil {
		metricsCounter(e.m.set, fmt.Sprintf(`inferwatch_event_publish_failures_total{kind=%q}`, kind)).Inc()
		e.log.Error("publishing failed; the next evaluation's supersedes it", "group", r.group, "rule", r.cfg.Name,
			"kind", kind, "subject", subject, "id", ev.ID, "err", err)
		return false
	}
	metricsCounter(e.m.set, fmt.Sprintf(`inferwatch_events_published_total{kind=%q}`, kind)).Inc()
	return true
}

func metricsCounter(set *metrics.Set, name string) *metrics.Counter {
	return set.GetOrCreateCounter(name)
}

// scaleRule is the state of a scale rule.
type scaleRule struct {
	cfg                     *rulefmt.Scale
	fr                      *rule // the forecast rule
	replicas                *window
	gpu, waiting, p99, conc *window
	states                  map[string]*ScaleState
	policy                  ScalePolicy
}

func newScaleRule(rc rulefmt.Rule, interval time.Duration) *scaleRule {
	s := rc.Scale
	sr := &scaleRule{cfg: s, replicas: newWindow(s.Replicas), states: map[string]*ScaleState{}}
	opt := func(expr string) *window {
		if expr == "" {
			return nil
		}
		return newWindow(expr)
	}
	sr.gpu, sr.waiting, sr.p99 = opt(s.GPUMemory), opt(s.Waiting), opt(s.P99)
	if s.SLO != nil {
		sr.conc = opt(s.SLO.Concurrency)
	}
	sr.policy = ScalePolicy{MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas, ScaleDownStableIntervals: s.ScaleDownStableIntervals,
		Cooldown: s.Cooldown, GPUMemoryHigh: s.GPUMemoryHigh, WaitingPerReplica: s.WaitingPerReplica, P99Near: s.P99Near}
	if s.SLO != nil {
		sr.policy.SLOP99 = s.SLO.P99.Seconds()
	}
	return sr
}

func (sr *scaleRule) windows() []*window {
	var out []*window
	for _, w := range []*window{sr.replicas, sr.gpu, sr.waiting, sr.p99, sr.conc} {
		if w != nil {
			out = append(out, w)
		}
	}
	return out
}

// evalScaleRule decides, for each target (series of the replicas query),
// the desired replicas at each evaluation time of its forecast rule's last
// evaluation, and publishes the newest decision and, through a backfill,
// every decision that changed the desired replicas.
func (e *Engine) evalScaleRule(ctx context.Context, r *rule, at time.Time) error {
	sr := r.sc
	fr := sr.fr.fc
	step := r.cfg.Step
	end := at.Add(-e.o.EvaluationDelay).Truncate(step)
	times := fr.times
	if len(times) == 0 {
		times = []time.Time{end}
	}
	look := max(5*step, 2*r.interval)
	first := times[0].Add(-look)
	last := end
	if tl := times[len(times)-1]; tl.After(last) {
		last = tl
	}
	for _, w := range sr.windows() {
		if _, err := e.fetch(ctx, w, step, first, last, at); err != nil {
			return err
		}
	}
	validFor := max(time.Duration(fr.opts.Horizon)*sr.fr.cfg.Step, r.interval)
	sr.policy.ValidFor = validFor
	var errs []error
	for _, b := range sr.replicas.series {
		on := sr.cfg.On
		if len(on) == 0 {
			for _, l := range b.labels {
				if l.Name != "__name__" {
					on = append(on, l.Name)
				}
			}
		}
		key := matchKey(b.labels, on)
		keyS := key.String()
		var snaps []fcSnap
		for fk, fs := range fr.series {
			if matchKey(fs.labels, on).String() == keyS {
				snaps = fr.snaps[fk]
				break
			}
		}
		st := sr.states[keyS]
		if st == nil {
			st = &ScaleState{}
			sr.states[keyS] = st
		}
		for k, τ := range times {
			ms := τ.UnixMilli()
			from := ms - look.Milliseconds()
			in := ScaleInputs{
				Current:   lastIn(b, from, ms),
				GPUMemory: matched(sr.gpu, keyS, on, from, ms),
				Waiting:   matched(sr.waiting, keyS, on, from, ms),
				P99:       matched(sr.p99, keyS, on, from, ms),
			}
			in.CapacityPerReplica = sr.cfg.CapacityPerReplica
			if in.CapacityPerReplica == 0 {
				in.CapacityPerReplica = sloCapacity(matched(sr.conc, keyS, on, from, ms), sr.cfg.SLO)
			}
			var model string
			if k < len(snaps) && snaps[k].ok {
				sn := snaps[k]
				in.HasForecast, in.PredictedLoad, in.PredictedUpper = true, sn.peak, sn.upper
				in.PeakTime, in.Fallback, model = time.UnixMilli(sn.peakTime), sn.fallback, sn.model
			}
			prev := st.Desired
			sig, next := Decide(*st, in, sr.policy, τ)
			*st = next
			if k != len(times)-1 && sig.Desired == prev {
				continue
			}
			labels := key.Map()
			for lk, lv := range r.cfg.Labels {
				labels[lk] = lv
			}
			d := ScaleData{Group: r.group, Rule: r.cfg.Name, Target: r.cfg.Name, Labels: labels, Time: τ.UTC(),
				DesiredReplicas: sig.Desired, CurrentReplicas: sig.Current, CurrentKnown: sig.CurrentKnown,
				PredictedLoad: jsonFloat(sig.PredictedLoad), PredictedUpper: jsonFloat(sig.PredictedUpper),
				CapacityPerReplica: jsonFloat(sig.CapacityPerReplica), Tier: sig.Tier, Reason: sig.Reason,
				ValidUntil: sig.ValidUntil.UTC(), ForecastModel: model}
			ev, err := newEvent(ScaleEventType, eventID("inferwatch.scale.v1", r.group, r.cfg.Name, labels, ms), keyS, τ, d)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			e.publishEvent(ctx, r, "scale", e.o.EventPrefix+".scale."+r.cfg.Name, ev)
		}
	}
	forget := max(look, 10*r.interval)
	for _, w := range sr.windows() {
		w.trim(end.Add(-look).UnixMilli(), at, forget)
	}
	return errors.Join(errs...)
}

// sloCapacity is the per-replica capacity by Little's law from the
// concurrency a replica holds within the SLO and the SLO's latency; NaN
// when either is unknown.
func sloCapacity(conc float64, slo *rulefmt.SLO) float64 {
	if slo == nil || !known(conc) || conc <= 0 {
		return math.NaN()
	}
	c, err := analysis.SLOCapacity(analysis.CapacityInput{Concurrency: conc, Latency: slo.P99.Seconds()})
	if err != nil {
		return math.NaN()
	}
	return c.PerReplica
}

// lastIn is the newest finite value of b in (from, to]; NaN when none.
func lastIn(b *buffered, from, to int64) float64 {
	if b == nil {
		return math.NaN()
	}
	_, v := b.span(from, to)
	for i := len(v) - 1; i >= 0; i-- {
		if known(v[i]) {
			return v[i]
		}
	}
	return math.NaN()
}

// matched is the newest value in (from, to] of w's series matching key on
// the labels on, or of a series without any of them (a constant); NaN
// when there is none.
func matched(w *window, key string, on []string, from, to int64) float64 {
	if w == nil {
		return math.NaN()
	}
	var global *buffered
	for _, b := range w.series {
		mk := matchKey(b.labels, on)
		if mk.String() == key {
			return lastIn(b, from, to)
		}
		if len(mk) == 0 {
			global = b
		}
	}
	return lastIn(global, from, to)
}

// fcItem is one thing a forecast rule forecasts: a series, or with sum_by
// the sum of a group of series (its parts) laid on one step grid.
type fcItem struct {
	key   string
	b     *buffered   // the series; for a group, the sum on the grid, with the group's labels
	parts [][]float64 // the parts on the grid of b.t; nil for a series
	names []string    // the parts' keys, sorted
}

// items lists what the rule forecasts from the samples held. A group's
// labels are its values of the sum_by labels (those a series lacks are
// left out, as PromQL's sum by does). On the group's grid, from its
// earliest sample to its newest, a part is 0 before its own first sample
// (a client that had not started) and NaN where a step of its is missing
// after it; the sum is NaN where a part is.
func (fr *forecastRule) items(stepMs int64) []fcItem {
	var out []fcItem
	if !fr.bottomUp {
		for k, b := range fr.w.series {
			out = append(out, fcItem{key: k, b: b})
		}
		return out
	}
	type group struct {
		labels ingest.Labels
		names  []string
	}
	groups := map[string]*group{}
	for k, b := range fr.w.series {
		if len(b.t) == 0 {
			continue
		}
		var ls ingest.Labels
		for _, name := range fr.sumBy {
			if v := b.labels.Get(name); v != "" {
				ls = append(ls, ingest.Label{Name: name, Value: v})
			}
		}
		ls.Sort()
		gk := ls.String()
		g := groups[gk]
		if g == nil {
			g = &group{labels: ls}
			groups[gk] = g
		}
		g.names = append(g.names, k)
	}
	for gk := range fr.grids {
		if groups[gk] == nil {
			delete(fr.grids, gk)
		}
	}
	for gk, g := range groups {
		slices.Sort(g.names)
		first, last := int64(math.MaxInt64), int64(math.MinInt64)
		for _, k := range g.names {
			b := fr.w.series[k]
			first, last = min(first, b.t[0]), max(last, b.t[len(b.t)-1])
		}
		n := int((last-first+stepMs/2)/stepMs) + 1
		gr := fr.grids[gk]
		if gr == nil {
			gr = &fcGrid{}
			fr.grids[gk] = gr
		}
		gr.resize(n, len(g.names))
		sum := &buffered{labels: g.labels, t: gr.t, v: gr.v}
		for i := range sum.t {
			sum.t[i] = first + int64(i)*stepMs
		}
		clear(sum.v)
		for j, k := range g.names {
			b := fr.w.series[k]
			p := gr.parts[j]
			start := int((b.t[0] - first + stepMs/2) / stepMs)
			clear(p[:start])
			for i := start; i < n; i++ {
				p[i] = math.NaN()
			}
			for i, t := range b.t {
				p[(t-first+stepMs/2)/stepMs] = b.v[i]
			}
			for i, v := range p {
				sum.v[i] += v
			}
		}
		out = append(out, fcItem{key: gk, b: sum, parts: gr.parts, names: g.names})
	}
	return out
}

// fcGrid holds a group's arrays on its step grid: the times, the sum and
// each part, reused from one evaluation to the next (the forecasters copy
// what they keep).
type fcGrid struct {
	t     []int64
	v     []float64
	parts [][]float64
}

// resize makes the arrays hold n steps of k parts.
func (g *fcGrid) resize(n, k int) {
	if cap(g.t) < n {
		g.t, g.v = make([]int64, n), make([]float64, n)
	}
	g.t, g.v = g.t[:n], g.v[:n]
	if cap(g.parts) < k {
		g.parts = append(g.parts[:cap(g.parts)], make([][]float64, k-cap(g.parts))...)
	}
	g.parts = g.parts[:k]
	for j, p := range g.parts {
		if cap(p) < n {
			p = make([]float64, n)
		}
		g.parts[j] = p[:n]
	}
}
