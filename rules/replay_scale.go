package rules

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/forecasting/capacity"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// ScaleReplayOptions configure ReplayScale.
type ScaleReplayOptions struct {
	// Load is the load, in requests per second: Values[k] is the load over
	// [Start + k·Step, Start + (k+1)·Step), NaN where it is not known.
	// With Parts, it is their sum, and the forecast rules forecast it
	// bottom-up (sum_by) from the parts, each as long as Load.
	Load  capacity.Load
	Parts [][]float64
	// Warmup is the number of steps before the first decision (at least
	// 2, fewer than Load's).
	Warmup int
	// Forecast and Scale are the rules' settings, the scale rule's at
	// each of Levels, its scale.level (the Forecast's Expr, Step,
	// BottomUp and SumBy, and the Scale's Forecast, Replicas and Level,
	// are not used; the Forecast's Level, the interval it publishes, is
	// DefaultForecastLevel when 0). Scale.Horizon must be set, and so
	// must Scale.CapacityPerReplica.
	Forecast rulefmt.Forecast
	Scale    rulefmt.Scale
	Levels   []float64
	// ErrorScales are each level's what-if lanes: the level's forecast
	// with every error scaled by each (capacity.ScaleErrors).
	ErrorScales []float64
	// Replicas is the number of replicas serving before the first
	// decision.
	Replicas int
	// Waiting, when set, is the requests waiting at each step of Load
	// (summed over the target's replicas, NaN where unknown), which the
	// scale rules read as their scale.waiting query: a floor on the
	// forecast tier once it passes Scale.WaitingPerReplica a replica.
	Waiting []float64
}

// ScaleLane is what one scale rule of a scale replay asked for.
type ScaleLane struct {
	// Level is its scale rule's scale.level; on a what-if lane (WhatIf),
	// ErrorScale is the scale of the forecast's errors.
	Level      float64
	WhatIf     bool
	ErrorScale float64
	// Signals are its scale signals, one a decision.
	Signals []alerting.ScaleData
	// Fallbacks counts its decisions on a forecast that fell back for
	// lack of history.
	Fallbacks int
}

// Asks are the replicas the lane asked for at each decision.
func (l ScaleLane) Asks() []int {
	asks := make([]int, len(l.Signals))
	for i, s := range l.Signals {
		asks[i] = s.DesiredReplicas
	}
	return asks
}

// ReplayScale replays a forecast rule a level, each with its scale rule
// planning at that level and one scale rule a what-if lane, through Replay, on a clock stepped
// from the first decision (after the warm-up) to the last, over a
// MemoryStore that holds the load, each step's sample stamped at the
// step's end as a store stamps a rate. Each lane's replicas are a
// capacity.Fleet: those serving at a decision are the replicas its scale
// rule observes. It returns the forecast levels' lanes, then each level's
// what-if lanes.
func ReplayScale(ctx context.Context, o ScaleReplayOptions) ([]ScaleLane, error) {
	n := len(o.Load.Values)
	step := o.Load.Step
	switch {
	case o.Warmup < 2 || o.Warmup >= n:
		return nil, fmt.Errorf("rules: a warm-up of %d steps leaves no decision in %d steps", o.Warmup, n)
	case len(o.Levels) == 0:
		return nil, fmt.Errorf("rules: a scale replay needs a forecast level")
	case step <= 0 || o.Scale.Horizon <= 0 || !(o.Scale.CapacityPerReplica > 0):
		return nil, fmt.Errorf("rules: a scale replay needs a step, a horizon and a capacity per replica")
	}
	const load, waiting, target = "load", "waiting", "target"
	// The rules evaluate on the step's grid: the replay's clock is the
	// load's, moved back to the grid when it does not start on it.
	base := o.Load.Start.Truncate(step)
	targetLabel := ingest.Label{Name: target, Value: "replayed"}
	group := rulefmt.Group{Name: "replay", Interval: step}
	type lane struct {
		ScaleLane
		rule, replicas string
		fleet          *capacity.Fleet
		fallbacks      atomic.Int64 // counted as the rules evaluate, at once
	}
	var lanes, whatIfs []*lane
	for i, level := range o.Levels {
		fc := o.Forecast
		fc.Expr, fc.Step = load, step
		fc.Level = cmp.Or(fc.Level, rulefmt.DefaultForecastLevel)
		fc.ScaleLevels = nil
		if level != fc.Level {
			// The forecast rule hands the upper bound at the scale rule's
			// level over, as a configuration's does.
			fc.ScaleLevels = []float64{level}
		}
		fc.BottomUp, fc.SumBy = o.Parts != nil, nil
		if o.Parts != nil {
			fc.SumBy = []string{target}
		}
		fc.ScaleHorizons = nil
		if !slices.Contains(fc.Horizons, o.Scale.Horizon) {
			// The forecast rule hands the scale rules' horizon over, as a
			// configuration's does.
			fc.ScaleHorizons = []time.Duration{o.Scale.Horizon}
		}
		forecastRule := fmt.Sprintf("forecast_%d", i)
		group.Rules = append(group.Rules, rulefmt.Rule{Name: forecastRule, Kind: rulefmt.KindForecast, Spec: &fc, Expr: fc.Expr, Step: step,
			Lookback: fc.History, RepeatInterval: rulefmt.DefaultRepeatInterval})
		ofLevel := []*lane{{ScaleLane: ScaleLane{Level: level, ErrorScale: 1}, rule: fmt.Sprintf("scale_%d", i)}}
		for j, f := range o.ErrorScales {
			ofLevel = append(ofLevel, &lane{ScaleLane: ScaleLane{Level: level, WhatIf: true, ErrorScale: f}, rule: fmt.Sprintf("what_if_%d_%d", i, j)})
		}
		for _, l := range ofLevel {
			l.replicas = l.rule + "_replicas"
			sc := o.Scale
			sc.Forecast, sc.Replicas, sc.Level = forecastRule, l.replicas, level
			if o.Waiting != nil {
				sc.Waiting = waiting
			}
			group.Rules = append(group.Rules, rulefmt.Rule{Name: l.rule, Kind: rulefmt.KindScale, Spec: &sc, Expr: sc.Replicas, Step: step,
				Lookback: rulefmt.DefaultLookback, RepeatInterval: rulefmt.DefaultRepeatInterval})
		}
		lanes, whatIfs = append(lanes, ofLevel[0]), append(whatIfs, ofLevel[1:]...)
	}
	lanes = append(lanes, whatIfs...)

	store := NewMemoryStore()
	addAs := func(metric string, labels ingest.Labels, vs []float64) error {
		var t []int64
		var v []float64
		for k, x := range vs {
			if !math.IsNaN(x) {
				t, v = append(t, base.Add(time.Duration(k+1)*step).UnixMilli()), append(v, x)
			}
		}
		return store.Add(metric, labels, t, v)
	}
	add := func(labels ingest.Labels, vs []float64) error { return addAs(load, labels, vs) }
	if o.Waiting != nil {
		if len(o.Waiting) != n {
			return nil, fmt.Errorf("rules: %d steps of waiting requests for %d steps of load", len(o.Waiting), n)
		}
		if err := addAs(waiting, ingest.Labels{{Name: "__name__", Value: waiting}, targetLabel}, o.Waiting); err != nil {
			return nil, err
		}
	}
	name := ingest.Label{Name: "__name__", Value: load}
	if o.Parts == nil {
		if err := add(ingest.Labels{name, targetLabel}, o.Load.Values); err != nil {
			return nil, err
		}
	}
	for i, p := range o.Parts {
		// The rule sums the parts in the order of their labels: numbers of
		// one width keep it the parts' own, and so the sums' last digits.
		part := fmt.Sprintf("%0*d", len(strconv.Itoa(len(o.Parts)-1)), i)
		if err := add(ingest.Labels{name, {Name: "part", Value: part}, targetLabel}, p); err != nil {
			return nil, err
		}
	}
	decision := func(k int) time.Time { return base.Add(time.Duration(k) * step) }
	// serving stores the replicas of a lane serving at decision k, which
	// its scale rule reads as the replicas observed.
	serving := func(l *lane, k int) error {
		at := decision(k)
		return store.Add(l.replicas, ingest.Labels{{Name: "__name__", Value: l.replicas}, targetLabel}, []int64{at.UnixMilli()}, []float64{float64(l.fleet.Ready(at))})
	}
	byRule := map[string]*lane{}
	for _, l := range lanes {
		byRule[l.rule] = l
		l.fleet = &capacity.Fleet{Startup: o.Scale.Startup}
		l.fleet.Start(o.Replicas, decision(o.Warmup))
		if err := serving(l, o.Warmup); err != nil {
			return nil, err
		}
	}
	frame := capacity.Load{Start: base, Step: step, Values: o.Load.Values}
	ro := ReplayOptions{Groups: []rulefmt.Group{group}, Querier: store, From: decision(o.Warmup), To: decision(n - 1), Step: step,
		Rewrite: func(_, rule string, fc *forecasting.Forecast) {
			l := byRule[rule]
			if fc.Fallback != "" {
				l.fallbacks.Add(1)
			}
			if l.WhatIf {
				capacity.ScaleErrors(fc, frame, l.ErrorScale)
			}
		}}
	// A decision's time is reported in the load's clock.
	shift := o.Load.Start.Sub(base)
	err := Replay(ctx, ro, func(b alerting.Batch) error {
		for _, s := range b.Scales {
			l := byRule[s.Rule]
			if l == nil {
				return fmt.Errorf("internal error: a scale signal of rule %s, which the replay has no lane for", s.Rule)
			}
			k := o.Warmup + len(l.Signals)
			if !s.Time.Equal(decision(k)) {
				return fmt.Errorf("internal error: scale rule %s decided at %s, not at decision %d", s.Rule, s.Time, k)
			}
			l.fleet.Set(s.DesiredReplicas, s.Time)
			s.Time = s.Time.Add(shift)
			l.Signals = append(l.Signals, s)
			if k+1 < n {
				if err := serving(l, k+1); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]ScaleLane, len(lanes))
	for i, l := range lanes {
		if len(l.Signals) != n-o.Warmup {
			return nil, fmt.Errorf("rules: scale rule %s decided %d times in %d steps", l.rule, len(l.Signals), n-o.Warmup)
		}
		out[i] = l.ScaleLane
		out[i].Fallbacks = int(l.fallbacks.Load())
	}
	return out, nil
}
