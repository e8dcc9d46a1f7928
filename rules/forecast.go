package rules

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/num"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// A forecast rule keeps a forecasting.Forecaster per series: the first
// evaluation fits it on the history, later ones feed it only the new
// points (refitting when it says a refit is due), and each evaluation
// publishes the outlook from the newest point. It hands its outlooks to
// the scale rules of its group as an Outlook. The forecaster keeps the
// series' history; the rule's window keeps only the samples not yet fed
// to it and the newest (what the next fetch needs), but with sum_by, where
// a group whose parts change fits afresh on the parts' samples, all of
// the history.

// Outlook is what a forecast rule's evaluation hands to the scale rules of
// its group: each series' outlook at each of the evaluation's times (the
// backfill's, when it replayed one, then the newest).
type Outlook struct {
	Rule  string
	Times []time.Time
	// Horizon is how far ahead the forecasts reach: the longest of
	// Horizons, the horizons the rule serves (ascending). Each Snapshot
	// holds the peaks over each of them.
	Horizon  time.Duration
	Horizons []time.Duration
	// Level is the coverage of the forecasts' interval, whose upper end
	// each Peak's Upper is; Levels are the further levels the rule hands
	// the upper end at (rulefmt.Forecast.ScaleLevels), each Peak's Plans.
	Level  float64
	Levels []float64
	// Series are the series forecast, in the order of their identities.
	Series []OutlookSeries
}

// OutlookSeries is one series' outlook at each of Outlook.Times, and the
// history its forecaster holds (nil before its first fit).
type OutlookSeries struct {
	Labels  ingest.Labels
	At      []Snapshot
	History observedHistory
}

// Snapshot is a series' outlook at one time: from its newest point at or
// before it, the peak of the forecast mean over the longest horizon and
// of its upper bound, and ByHorizon the same over each of
// Outlook.Horizons. OK is false where the series had no outlook yet.
type Snapshot struct {
	OK              bool
	Origin          time.Time
	Peak, Upper     float64
	Last            float64
	PeakTime        time.Time
	Model, Fallback string
	ByHorizon       []Peak
	// forecast is the forecast itself, kept for a replay that rewrites
	// what the scale rules decide on (Env.rewrite); nil otherwise.
	forecast *forecasting.Forecast
}

// Peak is the outlook over one horizon: the peak of the forecast mean,
// when it is expected, and the peak of the upper bound, at the
// interval's level (Upper) and at each of Outlook.Levels (Plans).
type Peak struct {
	Peak, Upper float64
	Plans       []float64
	PeakTime    time.Time
}

// UpperAt is the peak of the upper bound at level of an outlook whose
// interval is at own and that hands the upper end at levels; ok is false
// when it has none at level.
func (p Peak) UpperAt(level, own float64, levels []float64) (upper float64, ok bool) {
	if level == own {
		return p.Upper, true
	}
	i := slices.Index(levels, level)
	if i < 0 || i >= len(p.Plans) {
		return math.NaN(), false
	}
	return p.Plans[i], true
}

// At returns the snapshot's peaks over horizon i of Outlook.Horizons (the
// longest when ByHorizon was not filled).
func (s Snapshot) At(i int) Peak {
	if i >= 0 && i < len(s.ByHorizon) {
		return s.ByHorizon[i]
	}
	return Peak{Peak: s.Peak, Upper: s.Upper, PeakTime: s.PeakTime}
}

// forecastOptions maps a forecast rule to the forecaster's options. Each
// series keeps the rule's history (forecasting.Options.MaxHistory): its
// first fit reads that much, and its refits that much and up to as much
// again (an eighth more, for a history shorter than two periods), however
// long it runs, so its memory is set by the history and the step. A history of
// two weeks (fourteen periods) or more, or a weekly model, turns on
// forecasting.Options.Weekly: each series then keeps two weeks plus a
// calibration window of samples, and auto offers the weekly models once a
// series has that much.
func forecastOptions(fc *rulefmt.Forecast) forecasting.Options {
	h := 0
	for _, d := range handedHorizons(fc) {
		h = max(h, leads(d, fc.Step))
	}
	o := forecasting.Options{Step: fc.Step, Model: fc.Model, Horizon: h, Level: fc.Level, PlanLevels: fc.ScaleLevels,
		Period: int(fc.Period / fc.Step), Weekly: fc.Period > 0 && fc.History >= 2*7*fc.Period}
	if !o.Weekly && fc.Model != forecasting.ModelHWWeekly && fc.Model != forecasting.ModelHWWeeklyLog {
		o.MaxHistory = max(2, int(fc.History/fc.Step))
	}
	return o
}

// keep makes each series keep at least d of history besides the rule's
// own (a scale rule reading it reaches back that far). A rule whose
// forecasters keep their default (two weeks for the weekly models) is
// left as it is.
func (r *forecastRule) keep(d time.Duration) {
	if r.opts.MaxHistory > 0 && d > 0 {
		r.opts.MaxHistory = max(r.opts.MaxHistory, int(d/r.opts.Step)+1)
	}
}

// horizons are the horizons a forecast rule serves, ascending: its
// Horizons, or its one Horizon when a rule built in code set only that.
func horizons(fc *rulefmt.Forecast) []time.Duration {
	if len(fc.Horizons) > 0 {
		return fc.Horizons
	}
	return []time.Duration{fc.Horizon}
}

// handedHorizons are the horizons whose peaks a forecast rule hands to
// the scale rules of its group: those it serves and their ScaleHorizons.
func handedHorizons(fc *rulefmt.Forecast) []time.Duration {
	return append(slices.Clone(horizons(fc)), fc.ScaleHorizons...)
}

// leadsOf are the steps of the horizons ds, ascending and each once.
func leadsOf(ds []time.Duration, step time.Duration) []int {
	var ls []int
	for _, d := range ds {
		ls = append(ls, leads(d, step))
	}
	slices.Sort(ls)
	return slices.Compact(ls)
}

// leads is the number of steps a horizon covers, rounded up, at least 1.
func leads(d, step time.Duration) int { return max(int((d+step-1)/step), 1) }

type forecastRule struct {
	base
	opts forecasting.Options
	// leads are the steps of each horizon served (published), ascending;
	// handed are those and the scale rules' ScaleHorizons, whose peaks
	// the outlook hands to them. The last of handed is opts.Horizon.
	leads, handed []int
	w             *window
	// from is the newest time the window has dropped (unix ms): the
	// samples after it are those of the history a fit uses.
	from   int64
	series map[string]*fcSeries // by series, or by group with sum_by
	// bottomUp forecasts the sums of the series grouped by sumBy; grids
	// keeps each group's arrays from one evaluation to the next.
	bottomUp bool
	sumBy    []string
	grids    map[string]*fcGrid
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
	acc      forecasting.Accuracy
	lastPub  int64
	lastSeen time.Time
}

func newForecastRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	fc := r.Spec.(*rulefmt.Forecast)
	opts := forecastOptions(fc)
	if _, err := forecasting.New(opts); err != nil {
		return nil, specError(r, g, err)
	}
	ls := leadsOf(horizons(fc), fc.Step)
	handed := leadsOf(handedHorizons(fc), fc.Step)
	return &forecastRule{base: newBase(g, r), opts: opts, leads: ls, handed: handed, w: newWindow(r.Expr), series: map[string]*fcSeries{},
		bottomUp: fc.BottomUp, sumBy: fc.SumBy, grids: map[string]*fcGrid{}}, nil
}

// Eval fetches the new points of the rule's series, feeds them to each
// series' forecaster and publishes the outlook from the newest point. On
// the first evaluation with a backfill it fits on the history before the
// backfill and replays it, keeping the outlook at each evaluation time for
// the scale rules; it publishes only the newest.
func (r *forecastRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	var res Result
	step := r.cfg.Step
	stepMs := step.Milliseconds()
	end := r.end(at, env)
	replay := time.Duration(0)
	if r.w.asked.IsZero() && env.Backfill > 0 {
		replay = env.Backfill
	}
	first := end.Add(-replay - r.cfg.Lookback)
	if r.w.asked.IsZero() {
		r.from = first.UnixMilli() - 1
	}
	f, err := r.w.fetch(ctx, env.Querier, step, first, end, at)
	res.Dropped, res.Late = f.dropped, f.late
	if err != nil {
		return res, err
	}
	r.learn(&res)
	out := &Outlook{Rule: r.cfg.Name, Times: evalTimes(end, replay, max(r.interval, step)),
		Horizon: time.Duration(r.opts.Horizon) * step, Level: r.opts.Level, Levels: r.opts.PlanLevels}
	for _, l := range r.handed {
		out.Horizons = append(out.Horizons, time.Duration(l)*step)
	}

	var errs []error
	items := r.items(stepMs)
	refits := r.refitBudget(len(items))
	for _, it := range items {
		key, b := it.key, it.b
		s := r.series[key]
		if s == nil {
			s = &fcSeries{labels: b.labels, lastT: math.MinInt64}
			r.series[key] = s
		}
		if it.parts != nil && !slices.Equal(s.parts, it.names) {
			// Parts came or went: fit the sum of the new set afresh.
			s.f, s.sum, s.lastT = nil, nil, math.MinInt64
		}
		s.lastSeen = at
		snaps := make([]Snapshot, len(out.Times))
		k := 0
		snapTo := func(t int64) { // record the outlook at every evaluation time before t
			for ; k < len(out.Times) && out.Times[k].UnixMilli() < t; k++ {
				if (s.f != nil || s.sum != nil) && s.lastT <= out.Times[k].UnixMilli() {
					snaps[k] = s.snap(stepMs, r.handed)
					if env.rewrite != nil {
						snaps[k].forecast = cloneForecast(&s.fc)
					}
				}
			}
		}
		res.Scored += len(b.t) - sort.Search(len(b.t), func(i int) bool { return b.t[i] > s.lastT })
		if s.f == nil && s.sum == nil {
			// Fit on what lies at or before the first evaluation time (at
			// least the first sample). The last part of it (up to a period)
			// is held back and fed point by point, so the first outlook
			// already comes with its accuracy on forecasts it did not see
			// the answers to.
			cut := out.Times[0].UnixMilli()
			n := sort.Search(len(b.t), func(i int) bool { return b.t[i] > cut })
			n = max(n-min(n/4, r.opts.Period), 1)
			if err := s.fit(r.opts, &it, 0, n, stepMs); err != nil {
				errs = append(errs, fmt.Errorf("series %s: %w", key, err))
				continue
			}
		}
		for i, t := range b.t {
			if t <= s.lastT {
				continue
			}
			snapTo(t)
			if up, ok := s.missedAt(t, b.v[i], stepMs); ok {
				res.Misses = append(res.Misses, r.miss(s, t, b.v[i], up))
			}
			if err := s.update(r.opts, &it, i, r.from, stepMs, refits); err != nil {
				errs = append(errs, fmt.Errorf("series %s: %w", key, err))
				break
			}
		}
		snapTo(math.MaxInt64)
		ser := OutlookSeries{Labels: b.labels, At: snaps}
		switch {
		case s.sum != nil:
			ser.History = s.sum
		case s.f != nil:
			ser.History = s.f
		}
		out.Series = append(out.Series, ser)
		if s.lastT == s.lastPub || s.lastT < end.Add(-r.cfg.Lookback).UnixMilli() {
			continue // nothing new, or nothing recent
		}
		res.Forecasts = append(res.Forecasts, r.forecastData(s))
		s.lastPub = s.lastT
	}
	forget := r.forget()
	r.from = end.Add(-r.cfg.Lookback).UnixMilli()
	r.w.trim(r.from, at, forget)
	if !r.bottomUp {
		r.dropFed()
	}
	for k, s := range r.series {
		if at.Sub(s.lastSeen) > forget {
			delete(r.series, k)
		}
	}
	res.Outlook, res.Series = out, len(r.series)
	return res, errors.Join(errs...)
}

// dropFed drops from the window the samples of each series that its
// forecaster holds, but the newest: the window then tells the next fetch
// what it has, and the forecaster keeps the history (a fit after a gap
// longer than it fills reads it there). The window's arrays shrink with
// it.
func (r *forecastRule) dropFed() {
	for k, b := range r.w.series {
		s := r.series[k]
		if s == nil || s.f == nil || len(b.t) == 0 {
			continue
		}
		i := min(sort.Search(len(b.t), func(i int) bool { return b.t[i] > s.lastT }), len(b.t)-1)
		if i == 0 {
			continue
		}
		n := len(b.t) - i
		if cap(b.t) > 4*n+8 {
			b.t, b.v = slices.Clone(b.t[i:]), slices.Clone(b.v[i:])
			continue
		}
		b.t = append(b.t[:0], b.t[i:]...)
		b.v = append(b.v[:0], b.v[i:]...)
	}
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
			if num.Finite(v[i]) {
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

// minRefitsPerStep is how many series of a rule may refit at one step
// whatever their number: a few refits are cheap.
const minRefitsPerStep = 16

// refitBudget says whether a series due for a refit at time t may refit
// now. Series fitted together fall due together — all of a rule's series
// after a cold start, every max(horizon, 10) steps while their history is
// short — and refitting 10,000 at once makes that cycle overrun. So at
// each step at most max(16, n/spread) of n series refit, spread being the
// shortest refit interval a forecaster asks for; the others stay due and
// refit at the next steps, which spreads the refits over that interval for
// good. A rule of up to 16 series refits exactly when due.
func (r *forecastRule) refitBudget(n int) func(t int64) bool {
	spread := max(r.opts.Horizon, 10)
	most := max(minRefitsPerStep, (n+spread-1)/spread)
	done := map[int64]int{}
	return func(t int64) bool {
		if done[t] >= most {
			return false
		}
		done[t]++
		return true
	}
}

// update feeds sample i of it; a gap longer than the forecaster fills
// makes it fit again on the history after from (unix ms): a series'
// forecaster on the samples it holds, a sum on its parts' samples in the
// window. A due refit is made when mayRefit allows it at the sample's
// time.
func (s *fcSeries) update(opts forecasting.Options, it *fcItem, i int, from, stepMs int64, mayRefit func(t int64) bool) error {
	tn, vn := it.b.t[i], it.b.v[i]
	// A sum fitted afresh replays samples whose targets were scored
	// before: the accuracy counts each target once.
	s.acc.Observe(tn, vn)
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
	case errors.Is(err, forecasting.ErrGap) && s.sum != nil:
		return s.fit(opts, it, max(0, i+1-o.Options().MaxHistory), i+1, stepMs)
	case errors.Is(err, forecasting.ErrGap):
		if err := s.f.FitAfterGap(from, tn, vn); err != nil {
			return err
		}
		s.lastT, s.lastV = tn, vn
		s.f.ForecastInto(&s.fc)
		s.track(stepMs)
		return nil
	case err != nil:
		return err
	}
	if o.RefitDue() && mayRefit(tn) {
		if err := o.Refit(); err != nil {
			return err
		}
	}
	s.lastT = tn
	if num.Finite(vn) { // a gap in a sum keeps the last known value
		s.lastV = vn
	}
	o.ForecastInto(&s.fc)
	s.track(stepMs)
	return nil
}

// missedAt reports whether v at t lies above the interval the series'
// last forecast gave for t by at least the interval's upper half-width
// (the upper bound less the mean; a millionth of the bound at least), and
// that bound. A point just above the bound is what the level leaves out
// (a 0.9 interval leaves out one point in twenty above it); one as far
// again above is not.
func (s *fcSeries) missedAt(t int64, v float64, stepMs int64) (float64, bool) {
	if (s.f == nil && s.sum == nil) || len(s.fc.Upper) == 0 || len(s.fc.Mean) != len(s.fc.Upper) || (t-s.fc.Origin)%stepMs != 0 || !num.Finite(v) {
		return 0, false
	}
	lead := int((t - s.fc.Origin) / stepMs)
	if lead < 1 || lead > len(s.fc.Upper) {
		return 0, false
	}
	up, mean := s.fc.Upper[lead-1], s.fc.Mean[lead-1]
	if !num.Finite(up) || !num.Finite(mean) {
		return 0, false
	}
	return up, v > up+max(up-mean, 1e-6*math.Abs(up))
}

// miss is the forecast miss of series s at t: v above the upper bound up
// of its last forecast.
func (r *forecastRule) miss(s *fcSeries, t int64, v, up float64) alerting.ForecastMiss {
	labels := s.labels.Map()
	for k, lv := range r.cfg.Labels {
		labels[k] = lv
	}
	return alerting.ForecastMiss{Group: r.group, Rule: r.cfg.Name, Labels: labels, Series: s.labels.String(),
		Time: time.UnixMilli(t).UTC(), Value: alerting.JSONFloat(v), Upper: alerting.JSONFloat(up),
		Origin: time.UnixMilli(s.fc.Origin).UTC()}
}

// track remembers the forecast at the horizon for scoring when its
// target arrives.
func (s *fcSeries) track(stepMs int64) {
	h := len(s.fc.Mean)
	if h == 0 {
		return
	}
	target := s.fc.Origin + int64(h)*stepMs
	s.acc.Forecast(target, s.fc.Mean[h-1], s.fc.Lower[h-1], s.fc.Upper[h-1], s.lastV)
}

func (s *fcSeries) snap(stepMs int64, leads []int) Snapshot {
	sn := Snapshot{OK: true, Origin: time.UnixMilli(s.fc.Origin), Peak: s.fc.Peak, Upper: s.fc.UpperPeak, Last: s.lastV,
		PeakTime: time.UnixMilli(s.fc.Origin + int64(s.fc.PeakLead)*stepMs), Model: s.fc.Model, Fallback: s.fc.Fallback,
		ByHorizon: make([]Peak, len(leads))}
	np := len(s.fc.Plans)
	plans := make([]float64, len(leads)*np)
	for i, l := range leads {
		peak, lead, upper := s.fc.PeakWithin(l)
		sn.ByHorizon[i] = Peak{Peak: peak, Upper: upper, PeakTime: time.UnixMilli(s.fc.Origin + int64(lead)*stepMs)}
		if np > 0 {
			sn.ByHorizon[i].Plans = plans[i*np : (i+1)*np : (i+1)*np]
			for j, p := range s.fc.Plans {
				sn.ByHorizon[i].Plans[j], _ = s.fc.UpperWithin(p.Level, l)
			}
		}
	}
	return sn
}

// cloneForecast is a copy of fc that shares nothing with it.
func cloneForecast(fc *forecasting.Forecast) *forecasting.Forecast {
	c := *fc
	c.Mean, c.Lower, c.Upper, c.Empirical = slices.Clone(fc.Mean), slices.Clone(fc.Lower), slices.Clone(fc.Upper), slices.Clone(fc.Empirical)
	c.Plans = slices.Clone(fc.Plans)
	for i := range c.Plans {
		c.Plans[i].Upper = slices.Clone(c.Plans[i].Upper)
	}
	return &c
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

// forecastData is the outlook of s from its newest point, as published.
func (r *forecastRule) forecastData(s *fcSeries) alerting.ForecastData {
	fc := &s.fc
	step := fc.Step
	labels := s.labels.Map()
	delete(labels, "__name__")
	for k, v := range r.cfg.Labels {
		labels[k] = v
	}
	horizon := time.Duration(len(fc.Mean)) * step
	acc := s.acc.Summary()
	d := alerting.ForecastData{
		Group: r.group, Rule: r.cfg.Name, Labels: labels, Series: s.labels.String(),
		Origin: time.UnixMilli(fc.Origin).UTC(), LastValue: alerting.JSONFloat(s.lastV),
		StepSeconds: step.Seconds(), HorizonSeconds: horizon.Seconds(),
		Model: fc.Model, Fallback: fc.Fallback, Level: fc.Level,
		Peak: alerting.JSONFloat(fc.Peak), PeakTime: time.UnixMilli(fc.Origin + int64(fc.PeakLead)*step.Milliseconds()).UTC(),
		UpperPeak: alerting.JSONFloat(fc.UpperPeak), GapsFilled: fc.Gaps,
		Accuracy: alerting.ForecastAccuracy{LeadSeconds: horizon.Seconds(), N: acc.N, MAE: alerting.JSONFloat(acc.MAE),
			Coverage: alerting.JSONFloat(acc.Coverage), NaiveMAE: alerting.JSONFloat(acc.NaiveMAE)},
	}
	for _, l := range r.leads {
		peak, lead, upper := fc.PeakWithin(l)
		d.Horizons = append(d.Horizons, alerting.ForecastHorizon{HorizonSeconds: (time.Duration(l) * step).Seconds(),
			Peak: alerting.JSONFloat(peak), PeakTime: time.UnixMilli(fc.Origin + int64(lead)*step.Milliseconds()).UTC(),
			UpperPeak: alerting.JSONFloat(upper)})
	}
	for i := range fc.Mean {
		d.Points = append(d.Points, alerting.ForecastPoint{Time: time.UnixMilli(fc.Origin + int64(i+1)*step.Milliseconds()).UTC(),
			Mean: alerting.JSONFloat(fc.Mean[i]), Lower: alerting.JSONFloat(fc.Lower[i]), Upper: alerting.JSONFloat(fc.Upper[i])})
	}
	return d
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
		for _, b := range sortedSeries(fr.w) {
			out = append(out, fcItem{key: b.labels.String(), b: b})
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
	gks := make([]string, 0, len(groups))
	for gk := range groups {
		gks = append(gks, gk)
	}
	slices.Sort(gks)
	for _, gk := range gks {
		g := groups[gk]
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
