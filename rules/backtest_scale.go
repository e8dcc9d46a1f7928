package rules

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting/capacity"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// ScaleBacktest is one backtest of the scale rule (BacktestScale): the
// load per step (requests per second, NaN where unknown) from T0 (unix
// ms), and with a sum its parts.
type ScaleBacktest struct {
	T0    int64
	Step  time.Duration
	Load  []float64
	Parts [][]float64
	// Capacity is the requests per second of one replica; when 0, the
	// peak load after the warm-up over PeakReplicas.
	Capacity     float64
	PeakReplicas int
	Startup      time.Duration
	// Warmup is the number of steps before the first decision.
	Warmup int
	// Forecast and Scale are the rules replayed, at each of Levels (its
	// Level is not used); Reactive the reactive policy, at each pair of
	// Targets and Windows (its own are not used). Each list holds at least
	// one value.
	Forecast        rulefmt.Forecast
	Scale           rulefmt.Scale
	Reactive        capacity.ReactivePolicy
	Levels, Targets []float64
	Windows         []time.Duration
	// ErrorScales are the what-if lanes of each level: the forecast with
	// every error scaled by each (capacity.ScaleErrors), decided on as the
	// forecast is.
	ErrorScales []float64
	// Trace keeps each decision in the report's Trace.
	Trace bool
	// Waiting, when set, is the requests waiting at each step, which the
	// scale rule reads as its scale.waiting query (ScaleReplayOptions).
	Waiting []float64
}

// ScaleSettings are the keys of the forecast and scale rules an offline
// replay sets; the others keep the rules' defaults.
type ScaleSettings struct {
	Model  string
	Period time.Duration
	// Horizon is forecast.horizon and scale.horizon, rounded up to whole
	// steps; 0: the rules' defaults (a forecast to 10m, and a decision on
	// the peak until the replicas the next decision asks for serve).
	Horizon                 time.Duration
	Startup, Cooldown, Hold time.Duration
	// BurstQuantile, BurstWindow, BurstMean and BurstPeriod are
	// scale.burst_quantile and the rest (rulefmt.Scale).
	BurstQuantile                             float64
	BurstWindow, BurstMean, BurstPeriod       time.Duration
	MinReplicas, MaxReplicas, StableIntervals int
	ScaleDownMargin, WaitingPerReplica        float64
	// BottomUp forecasts the sum of the parts (forecast.sum_by).
	BottomUp bool
}

// ScaleRules are the forecast and scale rules of s on a series of step,
// each decided once a step, as a configuration setting those keys gives
// them.
func ScaleRules(step time.Duration, s ScaleSettings) (rulefmt.Forecast, rulefmt.Scale) {
	fc := rulefmt.DefaultForecast(step)
	fc.Model, fc.Period, fc.BottomUp = s.Model, s.Period, s.BottomUp
	sc := rulefmt.DefaultScale()
	sc.MinReplicas, sc.MaxReplicas, sc.ScaleDownStableIntervals = s.MinReplicas, s.MaxReplicas, s.StableIntervals
	sc.Cooldown, sc.Hold, sc.Startup = s.Cooldown, s.Hold, s.Startup
	sc.BurstQuantile, sc.BurstWindow, sc.BurstMean, sc.BurstPeriod = s.BurstQuantile, s.BurstWindow, s.BurstMean, s.BurstPeriod
	sc.ScaleDownMargin, sc.WaitingPerReplica = s.ScaleDownMargin, s.WaitingPerReplica
	if s.Horizon == 0 {
		sc.Horizon = rulefmt.DefaultScaleHorizon(step, step, s.Startup, fc.Horizon)
		return fc, sc
	}
	fc.Horizon = (s.Horizon + step - 1) / step * step
	fc.Horizons = []time.Duration{fc.Horizon}
	sc.Horizon = fc.Horizon
	return fc, sc
}

// DefaultWarmup is the steps of history before a replay's first
// decision: one period, at most a quarter of the n steps replayed.
func DefaultWarmup(period, step time.Duration, n int) int {
	return min(int(period/step), n/4)
}

// ScaleReport is what a replay measured.
type ScaleReport struct {
	Input          string  `json:"input"`
	Steps          int     `json:"steps"`
	StepSeconds    float64 `json:"step_seconds"`
	Start          string  `json:"start"`
	WarmupSteps    int     `json:"warmup_steps"`
	Decisions      int     `json:"decisions"`
	Capacity       float64 `json:"capacity_per_replica"`
	CapacityFrom   string  `json:"capacity_from,omitempty"`
	PeakLoad       float64 `json:"peak_load"`
	StartupSeconds float64 `json:"startup_seconds"`
	// HorizonSeconds is the scale rule's horizon, ForecastHorizonSeconds
	// how far the forecast reaches.
	HorizonSeconds         float64 `json:"horizon_seconds"`
	ForecastHorizonSeconds float64 `json:"forecast_horizon_seconds"`
	HPAWindowSecs          float64 `json:"hpa_window_seconds"`
	// Model is the forecast rule's forecast.model; ScalePolicy the scale
	// rule's settings the forecast policy ran with.
	Model       string              `json:"model"`
	ScalePolicy ScalePolicySettings `json:"scale_policy"`
	// Policies are the forecast policy's figures (one a level), the
	// reactive's (one a target), and those of perfect foresight (a bound,
	// not a policy).
	Policies []PolicyFigures `json:"policies"`
	// Frontier is there when several levels or targets were replayed.
	Frontier *ScaleFrontier `json:"frontier,omitempty"`
	// Trace is each decision of every forecast level, every reactive
	// policy and foresight (--write-decisions).
	Trace []ScaleStep `json:"-"`
}

// ScaleStep is one decision of a replay: at Time, the load of the step
// that starts then, and what each policy asked for.
type ScaleStep struct {
	Time time.Time
	Load float64
	// Forecast is the scale signal of each forecast level, in the order
	// of the report's policies; Reactive the replicas each reactive
	// policy asked for; WhatIf the scale signal of each what-if lane, in
	// the order of the report's policies; and Foresight the replicas
	// foresight asked for.
	Forecast  []alerting.ScaleData
	Reactive  []int
	WhatIf    []alerting.ScaleData
	Foresight int
}

// ScaleFrontier sets each policy against the other at the other's
// figures: the forecast policy within the first reactive row's
// replica-minutes, and the reactive policy within the first forecast
// row's under-provisioned minutes.
type ScaleFrontier struct {
	// ForecastWithin is the forecast row short the fewest minutes among
	// those paying at most the first reactive row's replica-minutes;
	// CheapestForecast the forecast row paying the least, when none does.
	ForecastWithin   *PolicyFigures `json:"forecast_within_reactive_replica_minutes,omitempty"`
	CheapestForecast *PolicyFigures `json:"cheapest_forecast,omitempty"`
	// ReactiveWithin is the reactive row paying the fewest replica-minutes
	// among those short at most as many minutes as the first forecast
	// row; LeastShortReactive the reactive row short the fewest minutes,
	// when none is.
	ReactiveWithin     *PolicyFigures `json:"reactive_within_forecast_under_minutes,omitempty"`
	LeastShortReactive *PolicyFigures `json:"least_short_reactive,omitempty"`
	// ReactiveAtCost is the reactive row short the fewest minutes among
	// those paying at most the first forecast row's replica-minutes: the
	// reactive policy at the forecast's cost (nil: every one pays more).
	ReactiveAtCost *PolicyFigures `json:"reactive_within_forecast_replica_minutes,omitempty"`
}

// ScalePolicySettings are the scale rule's keys a replay ran with, so a
// report says what it replayed.
type ScalePolicySettings struct {
	HoldSeconds              float64 `json:"hold_seconds"`
	ScaleDownMargin          float64 `json:"scale_down_margin"`
	ScaleDownStableIntervals int     `json:"scale_down_stable_intervals"`
	CooldownSeconds          float64 `json:"cooldown_seconds"`
	MinReplicas              int     `json:"min_replicas"`
	MaxReplicas              int     `json:"max_replicas"` // 0: none
}

type PolicyFigures struct {
	Policy         string  `json:"policy"`
	ReplicaMinutes float64 `json:"replica_minutes"`
	UnderMinutes   float64 `json:"under_provisioned_minutes"`
	WorstShortfall float64 `json:"worst_shortfall"`
	Changes        int     `json:"scale_changes"`
	Minutes        float64 `json:"minutes"`
	UnknownMinutes float64 `json:"unknown_minutes,omitempty"`
	// FallbackDecisions counts the forecast policy's decisions on a
	// forecast that fell back for lack of history.
	FallbackDecisions int `json:"fallback_decisions,omitempty"`
	// Level is a forecast or what-if row's forecast.level, ErrorScale a
	// what-if row's scale of the forecast's errors; HPATarget and
	// HPAWindowSecs a reactive row's target and scale-down window.
	Level         float64 `json:"level,omitempty"`
	ErrorScale    float64 `json:"error_scale,omitempty"` // on a what-if row, absent: 0, a perfect forecast
	HPATarget     float64 `json:"hpa_target,omitempty"`
	HPAWindowSecs float64 `json:"hpa_window_seconds,omitempty"` // absent: 0, none
}

// name is the row's name: its policy, and its level or target (and
// window, when several were replayed) when the report replayed several.
func (p PolicyFigures) Name(rep *ScaleReport) string {
	if p.Policy == "what-if" {
		s := "what-if (errors ×" + strconv.FormatFloat(p.ErrorScale, 'g', -1, 64)
		if rep.SeveralLevels() {
			s += ", level " + strconv.FormatFloat(p.Level, 'g', -1, 64)
		}
		return s + ")"
	}
	if rep.Frontier == nil {
		return p.Policy
	}
	switch {
	case p.Level > 0:
		return p.Policy + " (level " + strconv.FormatFloat(p.Level, 'g', -1, 64) + ")"
	case p.HPATarget > 0:
		s := p.Policy + " (target " + strconv.FormatFloat(p.HPATarget, 'g', -1, 64)
		if rep.SeveralWindows() {
			s += ", window " + dur.Format(time.Duration(p.HPAWindowSecs*float64(time.Second)))
		}
		return s + ")"
	}
	return p.Policy
}

// SeveralLevels reports whether the report replayed more than one
// forecast level.
func (rep *ScaleReport) SeveralLevels() bool {
	n := 0
	for _, p := range rep.Policies {
		if p.Policy == "forecast" {
			n++
		}
	}
	return n > 1
}

// SeveralWindows reports whether the reactive rows replayed more than one
// scale-down window.
func (rep *ScaleReport) SeveralWindows() bool {
	for _, p := range rep.Policies {
		if p.Policy == "reactive" && p.HPAWindowSecs != rep.HPAWindowSecs {
			return true
		}
	}
	return false
}

// frontier compares the rows of several levels or targets (nil for one
// of each), as capacity.Compare sets them against each other.
func frontier(rows []PolicyFigures) *ScaleFrontier {
	var fs, rs []*PolicyFigures
	var fp, rp []capacity.Point
	for i := range rows {
		p := &rows[i]
		switch p.Policy {
		case "forecast":
			fs, fp = append(fs, p), append(fp, p.point())
		case "reactive":
			rs, rp = append(rs, p), append(rp, p.point())
		}
	}
	if len(fs) == 0 || len(rs) == 0 || (len(fs) == 1 && len(rs) == 1) {
		return nil
	}
	pick := func(ps []*PolicyFigures, i int) *PolicyFigures {
		if i < 0 {
			return nil
		}
		c := *ps[i]
		return &c
	}
	fr := capacity.Compare(fp, rp)
	return &ScaleFrontier{ForecastWithin: pick(fs, fr.ForecastWithin), CheapestForecast: pick(fs, fr.CheapestForecast),
		ReactiveWithin: pick(rs, fr.ReactiveWithin), LeastShortReactive: pick(rs, fr.LeastShortReactive), ReactiveAtCost: pick(rs, fr.ReactiveAtCost)}
}

func (p PolicyFigures) point() capacity.Point {
	return capacity.Point{ReplicaMinutes: p.ReplicaMinutes, UnderMinutes: p.UnderMinutes}
}

// WhatIfAtCost returns, for each scale of the errors among the what-if
// rows (in their order), the row capacity.AtCost picks within r's
// replica-minutes.
func WhatIfAtCost(rows []PolicyFigures, r *PolicyFigures) []PolicyFigures {
	var scales []float64
	byScale := map[float64][]PolicyFigures{}
	for _, p := range rows {
		if p.Policy != "what-if" {
			continue
		}
		if _, ok := byScale[p.ErrorScale]; !ok {
			scales = append(scales, p.ErrorScale)
		}
		byScale[p.ErrorScale] = append(byScale[p.ErrorScale], p)
	}
	var out []PolicyFigures
	for _, f := range scales {
		ps := byScale[f]
		points := make([]capacity.Point, len(ps))
		for i, p := range ps {
			points[i] = p.point()
		}
		i, _ := capacity.AtCost(points, r.ReplicaMinutes)
		out = append(out, ps[i])
	}
	return out
}

// BacktestScale replays b: the forecast and scale rules through
// ReplayScale, the reactive policies and foresight on the load
// itself, and capacity judges what each asked for.
func BacktestScale(ctx context.Context, b ScaleBacktest) (*ScaleReport, error) {
	n := len(b.Load)
	if len(b.Levels) == 0 || len(b.Targets) == 0 || len(b.Windows) == 0 {
		return nil, errors.New("no forecast level or no reactive target and window to replay")
	}
	if b.Warmup < 2 || b.Warmup >= n {
		return nil, fmt.Errorf("a warm-up of %d steps leaves no decision in %d steps; want at least 2 steps of warm-up and one after", b.Warmup, n)
	}
	load := capacity.Load{Start: time.UnixMilli(b.T0), Step: b.Step, Values: b.Load}
	rep := &ScaleReport{Steps: n, StepSeconds: b.Step.Seconds(), WarmupSteps: b.Warmup, Decisions: n - b.Warmup,
		Start:          load.At(b.Warmup).UTC().Format(time.RFC3339),
		StartupSeconds: b.Startup.Seconds(), HorizonSeconds: b.Scale.Horizon.Seconds(), ForecastHorizonSeconds: b.Forecast.Horizon.Seconds(), HPAWindowSecs: b.Windows[0].Seconds(),
		Model: b.Forecast.Model, ScalePolicy: ScalePolicySettings{HoldSeconds: b.Scale.Hold.Seconds(), ScaleDownMargin: b.Scale.ScaleDownMargin,
			ScaleDownStableIntervals: b.Scale.ScaleDownStableIntervals, CooldownSeconds: b.Scale.Cooldown.Seconds(),
			MinReplicas: b.Scale.MinReplicas, MaxReplicas: b.Scale.MaxReplicas},
		PeakLoad: load.Peak(b.Warmup)}
	perReplica := b.Capacity
	if perReplica <= 0 {
		if b.PeakReplicas < 1 || rep.PeakLoad <= 0 {
			return nil, fmt.Errorf("no capacity: give one, or a peak load above 0 and a number of replicas at the peak (the peak is %g)", rep.PeakLoad)
		}
		perReplica = rep.PeakLoad / float64(b.PeakReplicas)
		rep.CapacityFrom = fmt.Sprintf("the peak load %.4g req/s over %d replicas", rep.PeakLoad, b.PeakReplicas)
	}
	rep.Capacity = perReplica
	// Every policy starts with what the last warm-up step needed, serving.
	n0 := capacity.Needed(b.Load[b.Warmup-1], perReplica, b.Scale.MinReplicas, b.Scale.MaxReplicas)

	sc := b.Scale
	sc.CapacityPerReplica, sc.Startup = perReplica, b.Startup
	lanes, err := ReplayScale(ctx, ScaleReplayOptions{Load: load, Parts: b.Parts, Warmup: b.Warmup, Forecast: b.Forecast, Scale: sc,
		Levels: b.Levels, ErrorScales: b.ErrorScales, Replicas: n0, Waiting: b.Waiting})
	if err != nil {
		return nil, err
	}
	var reactive [][]int
	for _, window := range b.Windows {
		for _, target := range b.Targets {
			p := b.Reactive
			p.Target, p.ScaleDownWindow = target, window
			asks := capacity.Reactive(load, b.Warmup, n0, perReplica, p)
			reactive = append(reactive, asks)
			f := figures("reactive", capacity.Serve(load, b.Warmup, asks, n0, perReplica, b.Startup))
			f.HPATarget, f.HPAWindowSecs = target, window.Seconds()
			rep.Policies = append(rep.Policies, f)
		}
	}
	var forecastRows, whatIfRows []PolicyFigures
	for _, l := range lanes {
		f := figures("forecast", capacity.Serve(load, b.Warmup, l.Asks(), n0, perReplica, b.Startup))
		f.Level, f.FallbackDecisions = l.Level, l.Fallbacks
		if l.WhatIf {
			f.Policy, f.ErrorScale = "what-if", l.ErrorScale
			whatIfRows = append(whatIfRows, f)
		} else {
			forecastRows = append(forecastRows, f)
		}
	}
	rep.Policies = append(append(forecastRows, rep.Policies...), whatIfRows...)
	foresight := capacity.Foresight(load, b.Warmup, perReplica, b.Startup, b.Scale.MinReplicas, b.Scale.MaxReplicas)
	rep.Policies = append(rep.Policies, figures("foresight", capacity.Serve(load, b.Warmup, foresight, foresight[0], perReplica, b.Startup)))
	rep.Frontier = frontier(rep.Policies)
	if b.Trace {
		rep.Trace = make([]ScaleStep, n-b.Warmup)
		for j := range rep.Trace {
			s := ScaleStep{Time: load.At(b.Warmup + j), Load: b.Load[b.Warmup+j], Foresight: foresight[j]}
			for _, l := range lanes {
				if l.WhatIf {
					s.WhatIf = append(s.WhatIf, l.Signals[j])
				} else {
					s.Forecast = append(s.Forecast, l.Signals[j])
				}
			}
			for _, asks := range reactive {
				s.Reactive = append(s.Reactive, asks[j])
			}
			rep.Trace[j] = s
		}
	}
	return rep, nil
}

// figures are a policy's row of the report.
func figures(policy string, p capacity.Provisioning) PolicyFigures {
	return PolicyFigures{Policy: policy, ReplicaMinutes: p.ReplicaMinutes, UnderMinutes: p.UnderMinutes, WorstShortfall: p.WorstShortfall,
		Changes: p.Changes, Minutes: p.Minutes, UnknownMinutes: p.UnknownMinutes}
}

// CheckLoad refuses a load below 0, naming its time: a request rate
// cannot be negative, and a replay that took one as no load would judge
// the policies on a series that is not traffic.
func CheckLoad(name string, s *ingest.EvenSeries) error {
	for i, v := range s.Values {
		if v < 0 {
			at := time.UnixMilli(s.Start + int64(i)*s.Step.Milliseconds()).UTC()
			return fmt.Errorf("%s: the load at %s (unix %d) is %g; a request rate cannot be negative (a counter reset taken as a rate?)",
				name, at.Format(time.RFC3339), at.Unix(), v)
		}
	}
	return nil
}
