package rules

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/internal/num"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// scaleRule decides, for each target (each series of its replicas query),
// a desired number of replicas from the outlook of its forecast rule (the
// hand-over of Env.Outlooks: the group evaluates the forecast rule first)
// and the target's current state, by forecasting.Decide.
type scaleRule struct {
	base
	c                       *rulefmt.Scale
	replicas                *window
	gpu, waiting, p99, conc *window
	states                  map[string]*forecasting.ScaleState
	policy                  forecasting.ScalePolicy
	buf, season             []float64
}

func newScaleRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	s := r.Spec.(*rulefmt.Scale)
	sr := &scaleRule{base: newBase(g, r), c: s, replicas: newWindow(s.Replicas), states: map[string]*forecasting.ScaleState{}}
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
	sr.policy = scalePolicy(s)
	return sr, nil
}

// observedHistory is what a scale rule reads of a forecast series'
// history: the highest load observed over its hold, from one time to
// another (unix ms).
type observedHistory interface {
	ObservedPeak(from, to int64) (v float64, at int64, ok bool)
	Observed(dst []float64, from, to int64) []float64
}

// burstInputs sets in's BurstLoad to forecasting.BurstLoad over the
// samples h holds over the last scale.burst_window up to origin, at the
// horizon's lead, with the samples a scale.burst_period before (0: none).
// buf and season are reused between calls. Without a burst_quantile or
// a history, in is left as it is.
func burstInputs(in *forecasting.ScaleInputs, h observedHistory, c *rulefmt.Scale, horizon, step time.Duration, origin time.Time, buf, season *[]float64) {
	window, period, q := c.BurstWindow, c.BurstPeriod, c.BurstQuantile
	if window <= 0 || h == nil || !(q > 0 && q < 1) {
		return
	}
	from := origin.Add(-window).UnixMilli() + 1
	*buf = h.Observed((*buf)[:0], from, origin.UnixMilli())
	var ss []float64
	if period > 0 && len(*buf) > 0 {
		// The samples a period before, aligned on the newest of buf; a
		// history that does not reach back that far leaves NaN first.
		lead := leads(horizon, step)
		n := len(*buf) + lead
		first := origin.Add(-time.Duration(len(*buf)-1)*step - period)
		*season = h.Observed((*season)[:0], first.UnixMilli(), first.Add(time.Duration(n-1)*step).UnixMilli())
		if short := n - len(*season); short > 0 {
			*season = append(slices.Repeat([]float64{math.NaN()}, short), *season...)
		}
		ss = *season
	}
	in.BurstLoad = forecasting.BurstLoad(*buf, ss, leads(c.BurstMean, step), leads(horizon, step), q)
}

// holdInputs sets in's HeldPeak and HeldAt to the highest load h observed
// over the hold up to the forecast's origin, the newest sample: the
// samples after origin − hold, as a scale rule does at each decision. A
// sample stamped t measures the step before t, so at a 10m step a hold of
// 30m reads the three newest. Without a hold or a history, or with
// nothing observed there, in is left as it is.
func holdInputs(in *forecasting.ScaleInputs, h observedHistory, hold time.Duration, origin time.Time) {
	if hold <= 0 || h == nil {
		return
	}
	if v, t, ok := h.ObservedPeak(origin.Add(-hold).UnixMilli()+1, origin.UnixMilli()); ok {
		in.HeldPeak, in.HeldAt = v, time.UnixMilli(t)
	}
}

// scalePolicy is the policy of forecasting.Decide a scale rule decides by
// (its ValidFor is set at each evaluation).
func scalePolicy(s *rulefmt.Scale) forecasting.ScalePolicy {
	p := forecasting.ScalePolicy{MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas, ScaleDownStableIntervals: s.ScaleDownStableIntervals,
		Cooldown: s.Cooldown, Hold: s.Hold, ScaleDownMargin: s.ScaleDownMargin, GPUMemoryHigh: s.GPUMemoryHigh, WaitingPerReplica: s.WaitingPerReplica, P99Near: s.P99Near}
	if s.SLO != nil {
		p.SLOP99 = s.SLO.P99.Seconds()
	}
	return p
}

// dependsOn names the forecast rule a scale rule reads: the group
// evaluates it first.
func (r *scaleRule) dependsOn() string { return r.c.Forecast }

// reach is how far back from a decision the rule reads its forecast
// rule's history: its hold, and its burst window with the period before
// it.
func (r *scaleRule) reach() time.Duration {
	d := r.c.Hold
	if q := r.c.BurstQuantile; r.c.BurstWindow > 0 && q > 0 && q < 1 {
		d = max(d, r.c.BurstWindow+r.c.BurstPeriod)
	}
	return d
}

func (r *scaleRule) windows() []*window {
	var out []*window
	for _, w := range []*window{r.replicas, r.gpu, r.waiting, r.p99, r.conc} {
		if w != nil {
			out = append(out, w)
		}
	}
	return out
}

// Eval decides, for each target, the desired replicas at each time of its
// forecast rule's outlook, and returns the newest decision and, through a
// backfill, every decision that changed the desired replicas.
func (r *scaleRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	var res Result
	step := r.cfg.Step
	end := r.end(at, env)
	out := env.Outlooks[r.c.Forecast]
	times := []time.Time{end}
	noForecast := fmt.Sprintf("no outlook from forecast rule %q this cycle", r.c.Forecast)
	if out != nil {
		times, noForecast = out.Times, ""
	}
	look := max(5*step, 2*r.interval)
	first := times[0].Add(-look)
	last := end
	if tl := times[len(times)-1]; tl.After(last) {
		last = tl
	}
	for _, w := range r.windows() {
		f, err := w.fetch(ctx, env.Querier, step, first, last, at)
		res.Dropped.Add(f.dropped)
		res.Late += f.late
		if err != nil {
			return res, err
		}
	}
	r.learn(&res)
	// The horizon served: the one named (Load fills in the default), or
	// the forecast rule's longest for a rule built without Load.
	hi, horizon := -1, r.c.Horizon
	if out != nil {
		if horizon == 0 {
			horizon = out.Horizon
		}
		hi = slices.Index(out.Horizons, horizon)
		if hi < 0 && len(out.Horizons) == 0 && horizon == out.Horizon {
			hi = 0 // an outlook of one horizon that did not list it
		}
		if hi < 0 {
			served := make([]string, len(out.Horizons))
			for i, d := range out.Horizons {
				served[i] = dur.Format(d)
			}
			noForecast = fmt.Sprintf("forecast rule %q serves the horizons %s, not %s", r.c.Forecast, strings.Join(served, ", "), dur.Format(horizon))
			out = nil
		}
	}
	r.policy.ValidFor = max(horizon, r.interval)
	level := r.c.Level
	if level == 0 && out != nil {
		level = out.Level // a rule built in code that sets none
	}
	forecasts := newMatcher[*OutlookSeries]()
	if out != nil {
		for i := range out.Series {
			forecasts.add(out.Series[i].Labels, &out.Series[i])
		}
	}
	inputs := map[string]*matcher[*buffered]{}
	for name, w := range map[string]*window{"gpu_memory": r.gpu, "waiting": r.waiting, "p99": r.p99, "slo.concurrency": r.conc} {
		if w == nil {
			continue
		}
		m := newMatcher[*buffered]()
		for _, b := range w.series {
			m.add(b.labels, b)
		}
		inputs[name] = m
	}
	for _, b := range sortedSeries(r.replicas) {
		on := r.c.On
		if len(on) == 0 {
			for _, l := range b.labels {
				if l.Name != "__name__" {
					on = append(on, l.Name)
				}
			}
		}
		key := matchKey(b.labels, on)
		target := key.String()
		st := r.states[target]
		if st == nil {
			st = &forecasting.ScaleState{}
			r.states[target] = st
		}
		var notes []string
		fs := forecasts.match(on, target, false)
		var fc *OutlookSeries
		switch {
		case out == nil:
		case len(fs) == 1:
			fc = fs[0]
		case len(fs) == 0:
			noForecast = fmt.Sprintf("forecast rule %q has no series matching %s", r.c.Forecast, target)
		default:
			noForecast = fmt.Sprintf("%d series of forecast rule %q match %s (%s); aggregate the forecast (sum_by) or set scale.on",
				len(fs), r.c.Forecast, target, seriesNames(fs))
		}
		input := func(name string, from, to int64) float64 {
			m := inputs[name]
			if m == nil {
				return math.NaN()
			}
			bs := m.match(on, target, true)
			if len(bs) > 1 {
				notes = append(notes, fmt.Sprintf("%s unknown: %d of its series match %s; aggregate it by the on labels", name, len(bs), target))
				return math.NaN()
			}
			if len(bs) == 0 {
				return math.NaN()
			}
			return lastIn(bs[0], from, to)
		}
		for k, τ := range times {
			ms := τ.UnixMilli()
			from := ms - look.Milliseconds()
			notes = notes[:0]
			in := forecasting.ScaleInputs{
				HeldPeak: math.NaN(), BurstLoad: math.NaN(),
				Observed:  lastIn(b, from, ms),
				GPUMemory: input("gpu_memory", from, ms),
				Waiting:   input("waiting", from, ms),
				P99:       input("p99", from, ms),
			}
			in.CapacityPerReplica = r.c.CapacityPerReplica
			if in.CapacityPerReplica == 0 {
				in.CapacityPerReplica = sloCapacity(input("slo.concurrency", from, ms), r.c.SLO)
			}
			var model string
			in.NoForecast = noForecast
			if fc != nil && fc.At[k].OK {
				sn := fc.At[k]
				pk := sn.At(hi)
				if env.rewrite != nil && sn.forecast != nil {
					pk, sn = r.rewritten(env, sn, horizon, out)
				}
				if upper, ok := pk.UpperAt(level, out.Level, out.Levels); ok {
					in.HasForecast, in.PredictedLoad, in.PredictedUpper = true, pk.Peak, upper
					in.PeakTime, in.Fallback, model = pk.PeakTime, sn.Fallback, sn.Model
					holdInputs(&in, fc.History, r.c.Hold, sn.Origin)
					burstInputs(&in, fc.History, r.c, horizon, step, sn.Origin, &r.buf, &r.season)
				} else {
					in.NoForecast = fmt.Sprintf("forecast rule %q hands the upper bound at levels %s, not at scale.level %g", r.c.Forecast, levelList(out.Level, out.Levels), level)
				}
			}
			in.Notes = notes
			prev := st.Desired
			sig, next := forecasting.Decide(*st, in, r.policy, τ)
			*st = next
			if k != len(times)-1 && sig.Desired == prev {
				continue
			}
			labels := key.Map()
			for lk, lv := range r.cfg.Labels {
				labels[lk] = lv
			}
			why := &sig.Why
			sd := alerting.ScaleData{Group: r.group, Rule: r.cfg.Name, Target: target, Labels: labels, Time: τ.UTC(),
				DesiredReplicas: sig.Desired, CurrentReplicas: why.Observed, CurrentKnown: why.ObservedKnown,
				PredictedLoad: alerting.JSONFloat(why.Saw.PredictedLoad), PredictedUpper: alerting.JSONFloat(why.Saw.PredictedUpper),
				CapacityPerReplica: alerting.JSONFloat(why.Saw.CapacityPerReplica), Tier: why.Cause.Tier(), Reason: sig.Reason(),
				ValidUntil: sig.ValidUntil.UTC(), ForecastModel: model, HorizonSeconds: horizon.Seconds()}
			if why.Change != forecasting.ScaleStart {
				sd.PreviousDesiredReplicas = &why.Previous
			}
			res.Scales = append(res.Scales, sd)
		}
	}
	forget := max(look, 10*r.interval)
	for _, w := range r.windows() {
		w.trim(end.Add(-look).UnixMilli(), at, forget)
	}
	res.Series = len(r.states)
	return res, nil
}

// rewritten is the outlook sn of out with its forecast rewritten by a
// replay (Env.rewrite), and its peaks over horizon.
func (r *scaleRule) rewritten(env *Env, sn Snapshot, horizon time.Duration, out *Outlook) (Peak, Snapshot) {
	fc := cloneForecast(sn.forecast)
	env.rewrite(r.group, r.cfg.Name, fc)
	n := leads(horizon, fc.Step)
	peak, lead, upper := fc.PeakWithin(n)
	pk := Peak{Peak: peak, Upper: upper, PeakTime: time.UnixMilli(fc.Origin + int64(lead)*fc.Step.Milliseconds())}
	for _, l := range out.Levels {
		u, _ := fc.UpperWithin(l, n)
		pk.Plans = append(pk.Plans, u)
	}
	sn.Fallback, sn.Model, sn.forecast = fc.Fallback, fc.Model, fc
	return pk, sn
}

// levelList lists the level own and levels, for a message.
func levelList(own float64, levels []float64) string {
	all := append([]float64{own}, levels...)
	slices.Sort(all)
	s := make([]string, len(all))
	for i, l := range all {
		s[i] = strconv.FormatFloat(l, 'g', -1, 64)
	}
	return strings.Join(s, ", ")
}

// matcher finds the items whose labels match a target's on the labels on,
// through an index built once per on-list: one map lookup per target
// instead of a scan of every series with a string built per comparison.
type matcher[T any] struct {
	items  []matchItem[T]
	byOn   map[string]map[string][]T // on-list → key → items
	global map[string][]T            // on-list → items without any on label
}

type matchItem[T any] struct {
	labels ingest.Labels
	v      T
}

func newMatcher[T any]() *matcher[T] {
	return &matcher[T]{byOn: map[string]map[string][]T{}, global: map[string][]T{}}
}

func (m *matcher[T]) add(ls ingest.Labels, v T) { m.items = append(m.items, matchItem[T]{ls, v}) }

// match returns the items whose on labels equal key's, in the order they
// were added; with constants, when there are none, the items that have
// none of the on labels (a constant such as `4` applies to every target).
func (m *matcher[T]) match(on []string, key string, constants bool) []T {
	sig := strings.Join(on, "\x00")
	idx, ok := m.byOn[sig]
	if !ok {
		idx = map[string][]T{}
		for _, it := range m.items {
			mk := matchKey(it.labels, on)
			if len(mk) == 0 {
				m.global[sig] = append(m.global[sig], it.v)
				continue
			}
			k := mk.String()
			idx[k] = append(idx[k], it.v)
		}
		m.byOn[sig] = idx
	}
	if got := idx[key]; len(got) > 0 || !constants {
		return got
	}
	return m.global[sig]
}

func seriesNames(fs []*OutlookSeries) string {
	names := make([]string, 0, min(len(fs), 3))
	for i, f := range fs {
		if i == 3 {
			names = append(names, "…")
			break
		}
		names = append(names, f.Labels.String())
	}
	return strings.Join(names, ", ")
}

// sloCapacity is the per-replica capacity by Little's law from the
// concurrency a replica holds within the SLO and the SLO's latency; NaN
// when either is unknown.
func sloCapacity(conc float64, slo *rulefmt.SLO) float64 {
	if slo == nil || !num.Finite(conc) || conc <= 0 {
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
		if num.Finite(v[i]) {
			return v[i]
		}
	}
	return math.NaN()
}
