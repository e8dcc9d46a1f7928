package rules

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting/capacity"
)

// FrontierOptions say what a frontier study (StudyFrontier) sweeps.
type FrontierOptions struct {
	// Startups are the start-up delays replayed, ascending.
	Startups []time.Duration
	// Targets are the HPA's targets swept to draw its frontier; HPA the
	// controller's other settings (its Target is not used; its
	// MinReplicas and MaxReplicas are the scale rule's).
	Targets []float64
	HPA     capacity.HPA
	// Margins are the scale rule's scale-down margins replayed with each
	// of the backtest's Levels.
	Margins []float64
	// Models are the forecast models the scale rule is replayed on: the
	// backtest's own first, then the ablations (naive, seasonal_naive).
	Models []string
	// FixedHorizon is the scale rule's horizon when a user set it; 0: the
	// rules' default for each start-up (a step and the start-up, at most
	// the forecast's).
	FixedHorizon time.Duration
	// Bootstrap is how many resamples of whole days give each ratio's
	// interval (0, or a load of one day: none), at Level, from Seed.
	Bootstrap int
	Level     float64
	Seed      uint64
}

// DefaultFrontierTargets are the HPA targets a frontier study sweeps
// unless asked for others: 0.4 to 1 by 0.05.
func DefaultFrontierTargets() []float64 {
	var ts []float64
	for i := 8; i <= 20; i++ {
		ts = append(ts, float64(i)/20)
	}
	return ts
}

// FrontierReport is a frontier study's result.
type FrontierReport struct {
	Input       string  `json:"input"`
	StepSeconds float64 `json:"step_seconds"`
	Start       string  `json:"start"`
	Decisions   int     `json:"decisions"`
	Days        int     `json:"days"`
	Capacity    float64 `json:"capacity_per_replica"`
	// Startups hold, for each start-up delay, the HPA's sweep and the
	// scale signal's points set against it.
	Startups []FrontierStartup `json:"startups"`
	// Crossovers are, for each signal of the sweep (in the order of each
	// start-up's Signal), the start-up above which it is short less often
	// than the HPA that costs the same.
	Crossovers []FrontierCrossover `json:"crossovers"`
}

// FrontierStartup is one start-up delay of a frontier study.
type FrontierStartup struct {
	StartupSeconds float64         `json:"startup_seconds"`
	HorizonSeconds float64         `json:"horizon_seconds"`
	HPA            []FrontierPoint `json:"hpa"`
	Signal         []FrontierPoint `json:"signal"`
}

// FrontierPoint is one policy of a sweep: what it paid, how often it was
// short, and for a signal the HPA frontier at its cost.
type FrontierPoint struct {
	// Target is an HPA point's; Model, Level and Margin a signal's.
	Target         float64 `json:"hpa_target,omitempty"`
	Model          string  `json:"model,omitempty"`
	Level          float64 `json:"level,omitempty"`
	Margin         float64 `json:"scale_down_margin,omitempty"`
	ReplicaMinutes float64 `json:"replica_minutes"`
	UnderMinutes   float64 `json:"under_provisioned_minutes"`
	Changes        int     `json:"scale_changes"`
	// HPAUnderAtCost is the HPA frontier's under-provisioned minutes at
	// this point's replica-minutes, Ratio this point's over it, and Lo
	// and Hi the bootstrap interval of Ratio (all NaN outside the sweep's
	// range).
	HPAUnderAtCost alerting.JSONFloat `json:"hpa_under_at_cost"`
	Ratio          alerting.JSONFloat `json:"ratio"`
	Lo             alerting.JSONFloat `json:"ratio_lo"`
	Hi             alerting.JSONFloat `json:"ratio_hi"`
}

// FrontierCrossover is where one signal starts to beat the HPA.
type FrontierCrossover struct {
	Model  string  `json:"model"`
	Level  float64 `json:"level"`
	Margin float64 `json:"scale_down_margin"`
	// Seconds is the start-up delay above which its ratio is below 1;
	// Below says that it is below 1 at every start-up replayed (the
	// crossover lies below the first); Known is false when it is not
	// below 1 at the last, or a ratio is not known.
	Seconds float64 `json:"startup_seconds"`
	Below   bool    `json:"below_first"`
	Known   bool    `json:"known"`
}

// day is the span a bootstrap resamples.
const day = 24 * time.Hour

// StudyFrontier sets the scale signal against Kubernetes' HPA at equal
// cost: for each start-up delay it replays the HPA as it runs (15-second
// syncs, capacity.HPA) at each target, draws its frontier of
// replica-minutes against under-provisioned minutes, replays the scale
// rule at each model, level and margin (ReplayScale), and takes each
// signal's under-provisioned minutes over the frontier's at its
// replica-minutes, with a bootstrap interval over whole days. b gives the
// load, the rules and the levels (its Targets, Windows, ErrorScales and
// Startup are not used).
func StudyFrontier(ctx context.Context, b ScaleBacktest, o FrontierOptions) (*FrontierReport, error) {
	n := len(b.Load)
	switch {
	case len(b.Levels) == 0 || len(o.Targets) == 0 || len(o.Startups) == 0 || len(o.Margins) == 0 || len(o.Models) == 0:
		return nil, errors.New("a frontier study needs at least one level, HPA target, start-up, margin and model")
	case !slices.IsSorted(o.Startups):
		return nil, errors.New("the start-ups of a frontier study are not ascending")
	case b.Warmup < 2 || b.Warmup >= n:
		return nil, fmt.Errorf("a warm-up of %d steps leaves no decision in %d steps; want at least 2 steps of warm-up and one after", b.Warmup, n)
	case b.Step > time.Minute || day%b.Step != 0:
		return nil, fmt.Errorf("a frontier study decides at minute steps or finer, a whole number a day; the load's step is %v (give --step 1m, or a load at minute steps)", b.Step)
	}
	load := capacity.Load{Start: time.UnixMilli(b.T0), Step: b.Step, Values: b.Load}
	perReplica := b.Capacity
	if perReplica <= 0 {
		peak := load.Peak(b.Warmup)
		if b.PeakReplicas < 1 || peak <= 0 {
			return nil, fmt.Errorf("no capacity: give one, or a peak load above 0 and a number of replicas at the peak (the peak is %g)", peak)
		}
		perReplica = peak / float64(b.PeakReplicas)
	}
	decisions := n - b.Warmup
	rep := &FrontierReport{StepSeconds: b.Step.Seconds(), Start: load.At(b.Warmup).UTC().Format(time.RFC3339),
		Decisions: decisions, Days: (decisions*int(b.Step) + int(day) - 1) / int(day), Capacity: perReplica}
	n0 := capacity.Needed(b.Load[b.Warmup-1], perReplica, b.Scale.MinReplicas, b.Scale.MaxReplicas)
	// tally is how asks carried the load, day by day, and in all.
	tally := func(asks []capacity.Ask, startup time.Duration) (days []capacity.Point, all capacity.Provisioning) {
		for _, d := range capacity.ServeAsksBy(load, b.Warmup, asks, n0, perReplica, startup, day) {
			days = append(days, capacity.Point{ReplicaMinutes: d.ReplicaMinutes, UnderMinutes: d.UnderMinutes})
			all.Add(d)
		}
		return days, all
	}
	ratios := map[[3]float64][]float64{} // by model index, level, margin: the ratio at each start-up
	for _, startup := range o.Startups {
		st := FrontierStartup{StartupSeconds: startup.Seconds()}
		// The HPA's sweep: its days, target by target.
		hpaDays := make([][]capacity.Point, rep.Days) // [day][target]
		var hpaPoints []capacity.Point
		for _, target := range o.Targets {
			h := o.HPA
			h.Target, h.MinReplicas, h.MaxReplicas = target, b.Scale.MinReplicas, b.Scale.MaxReplicas
			days, all := tally(h.Run(load, b.Warmup, n0, perReplica), startup)
			for d, p := range days {
				hpaDays[d] = append(hpaDays[d], p)
			}
			p := capacity.Point{ReplicaMinutes: all.ReplicaMinutes, UnderMinutes: all.UnderMinutes}
			hpaPoints = append(hpaPoints, p)
			nan := alerting.JSONFloat(math.NaN())
			st.HPA = append(st.HPA, FrontierPoint{Target: target, ReplicaMinutes: p.ReplicaMinutes, UnderMinutes: p.UnderMinutes, Changes: all.Changes,
				HPAUnderAtCost: nan, Ratio: nan, Lo: nan, Hi: nan})
		}
		sc := b.Scale
		sc.CapacityPerReplica, sc.Startup = perReplica, startup
		sc.Horizon = o.FixedHorizon
		if sc.Horizon == 0 {
			sc.Horizon = min((b.Step+startup+b.Step-1)/b.Step*b.Step, b.Forecast.Horizon)
		}
		st.HorizonSeconds = sc.Horizon.Seconds()
		for mi, model := range o.Models {
			fc := b.Forecast
			fc.Model = model
			for _, margin := range o.Margins {
				sc.ScaleDownMargin = margin
				lanes, err := ReplayScale(ctx, ScaleReplayOptions{Load: load, Parts: b.Parts, Warmup: b.Warmup, Forecast: fc, Scale: sc,
					Levels: b.Levels, Replicas: n0, Waiting: b.Waiting})
				if err != nil {
					return nil, fmt.Errorf("start-up %v, model %s, margin %g: %w", startup, model, margin, err)
				}
				for _, l := range lanes {
					days, all := tally(capacity.StepAsks(load, b.Warmup, l.Asks()), startup)
					p := capacity.Point{ReplicaMinutes: all.ReplicaMinutes, UnderMinutes: all.UnderMinutes}
					ratio := capacity.RatioAtCost(p, hpaPoints)
					short, _ := capacity.ShortAtCost(hpaPoints, p.ReplicaMinutes)
					lo, hi := math.NaN(), math.NaN()
					if o.Bootstrap > 0 && rep.Days >= 2 && !math.IsNaN(ratio) {
						lo, hi, _ = capacity.BootstrapRatio(days, hpaDays, o.Bootstrap, o.Seed, o.Level)
					}
					st.Signal = append(st.Signal, FrontierPoint{Model: model, Level: l.Level, Margin: margin, ReplicaMinutes: p.ReplicaMinutes,
						UnderMinutes: p.UnderMinutes, Changes: all.Changes, HPAUnderAtCost: alerting.JSONFloat(short),
						Ratio: alerting.JSONFloat(ratio), Lo: alerting.JSONFloat(lo), Hi: alerting.JSONFloat(hi)})
					k := [3]float64{float64(mi), l.Level, margin}
					ratios[k] = append(ratios[k], ratio)
				}
			}
		}
		rep.Startups = append(rep.Startups, st)
	}
	for mi, model := range o.Models {
		for _, margin := range o.Margins {
			for _, level := range b.Levels {
				at, below, ok := capacity.Crossover(o.Startups, ratios[[3]float64{float64(mi), level, margin}])
				rep.Crossovers = append(rep.Crossovers, FrontierCrossover{Model: model, Level: level, Margin: margin,
					Seconds: at.Seconds(), Below: below, Known: ok})
			}
		}
	}
	return rep, nil
}
