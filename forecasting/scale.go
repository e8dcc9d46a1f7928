package forecasting

import (
	"math"
	"slices"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// ScalePolicy holds the thresholds and limits of a scale decision.
type ScalePolicy struct {
	// MinReplicas and MaxReplicas clamp the desired replicas (MaxReplicas
	// 0: no maximum).
	MinReplicas, MaxReplicas int
	// ScaleDownStableIntervals is how many decisions in a row must ask for
	// fewer replicas before the signal goes down (at least 1).
	ScaleDownStableIntervals int
	// Cooldown is the least time between a change of the signal and a
	// step down.
	Cooldown time.Duration
	// GPUMemoryHigh (a fraction) and WaitingPerReplica are the tier-1
	// thresholds; P99Near the share of the SLO at which tier 2 fires.
	GPUMemoryHigh, WaitingPerReplica, P99Near float64
	// SLOP99 is the latency objective in seconds (0: no tier 2).
	SLOP99 float64
	// ScaleDownMargin is the hysteresis band of the forecast tier, a share
	// of the capacity in [0, 1) (0: no band; a value outside the range is
	// no band too): the signal steps down only to a number of replicas
	// that carry the forecast's upper bound and would run the predicted
	// load (the peak of the mean) at no more than (1 − ScaleDownMargin) of
	// their capacity, so a load hovering at one replica's capacity does
	// not make the signal go up and down. The band is measured on the
	// predicted load: the upper bound is headroom already, and an interval
	// wider than the band is hysteresis enough. A scale rule sets it from
	// scale.scale_down_margin (DefaultScaleDownMargin unless set).
	ScaleDownMargin float64
	// ValidFor is how long a signal holds: its valid_until is now +
	// ValidFor.
	ValidFor time.Duration
	// Hold is how long a load observed keeps asking for its replicas: the
	// forecast tier asks for at least what ScaleInputs.HeldPeak, the
	// highest load observed over the last Hold, needs (0: none). Bursts of
	// requests come in clusters, and a burst just seen tells the next
	// minutes' load better than the forecast's interval, which is
	// calibrated on about a day of errors.
	Hold time.Duration
}

// ScaleInputs are what one decision knows about a target. A NaN means
// "not known": the decision goes on with what is known and says so.
type ScaleInputs struct {
	// Observed is the number of replicas serving now (NaN: unknown).
	Observed float64
	// CapacityPerReplica is the request rate one replica sustains, in
	// requests per second (NaN or ≤ 0: unknown).
	CapacityPerReplica float64
	// HasForecast tells whether a forecast is known; PredictedLoad is its
	// peak mean over the horizon and PredictedUpper the peak of its upper
	// bound, in requests per second; PeakTime when the peak is expected.
	HasForecast                   bool
	PredictedLoad, PredictedUpper float64
	PeakTime                      time.Time
	// Fallback is the forecast's fallback note, if any.
	Fallback string
	// GPUMemory is the highest GPU memory use of the target's replicas, a
	// fraction; Waiting the requests waiting over all its replicas; P99
	// the 99th percentile of latency in seconds.
	GPUMemory, Waiting, P99 float64
	// NoForecast, when there is no forecast, says why (default: "no
	// forecast yet"); Notes are said in the reason as they are.
	NoForecast string
	Notes      []string
	// HeldPeak is the highest load observed over the last
	// ScalePolicy.Hold, in requests per second, at HeldAt (NaN: none or
	// unknown; not used without a Hold).
	HeldPeak float64
	HeldAt   time.Time
	// BurstLoad is the load the target's own past moves say to be ready
	// for (the function BurstLoad), in requests per second: the forecast
	// tier asks for at least what it needs (NaN or ≤ 0: none).
	BurstLoad float64
}

// ScaleState is what a decision remembers for the next one.
type ScaleState struct {
	// Decided tells whether a decision was made; Desired is the last one,
	// the previous decision of the next.
	Decided bool
	Desired int
	// Changed is when Desired last changed.
	Changed time.Time
	// Below counts the decisions in a row that asked for fewer than
	// Desired; BelowMax is the most replicas any of them asked for.
	Below, BelowMax int
}

// ScaleSignal is one decision: the new decision, how long it holds and
// why. Reason writes the why as the sentence people read.
type ScaleSignal struct {
	// Desired is the new decision: the replicas the target should run.
	Desired int
	// ValidUntil is the decision's time plus ScalePolicy.ValidFor.
	ValidUntil time.Time
	// Why is what the decision saw and what held it back.
	Why ScaleReason
}

// Decide turns what is known about a target into a desired number of
// replicas. It is a pure function of the previous state, the inputs, the
// policy and the time.
//
//   - Tier 1 (now): GPU memory use above GPUMemoryHigh asks for
//     ⌈counted · use / GPUMemoryHigh⌉ replicas, and more than
//     WaitingPerReplica waiting requests per replica for
//     ⌈waiting / WaitingPerReplica⌉, at least one more than counted.
//   - Tier 2: P99 at or above P99Near · SLO asks for ⌈counted · P99 /
//     (P99Near · SLO)⌉, at least one more than counted.
//   - Tier 3: the upper bound of the forecast peak over the horizon asks
//     for ⌈upper / capacity per replica⌉, up or down; with a Hold, for at
//     least ⌈HeldPeak / capacity per replica⌉; with a BurstLoad, for at
//     least ⌈BurstLoad / capacity per replica⌉.
//
// The replicas counted are the observed ones, or when they are unknown
// the previous decision (without one, MinReplicas, at least 1). The
// highest ask wins (the lower tier on a tie); with none, the replicas
// counted stand. A rise is signalled at once; a fall only to a number of
// replicas that would run the forecast peak within the hysteresis band
// (ScaleDownMargin), after ScaleDownStableIntervals decisions in a row ask
// for fewer and Cooldown has passed since the last change, and then to
// the most any of them asked for. The result is clamped to [MinReplicas,
// MaxReplicas]. Without a forecast or a capacity only tiers 1 and 2 can
// act. The signal's Why holds every figure the decision used.
func Decide(prev ScaleState, in ScaleInputs, p ScalePolicy, now time.Time) (ScaleSignal, ScaleState) {
	margin := p.ScaleDownMargin
	if !(margin > 0 && margin < 1) {
		margin = 0
	}
	minR := max(p.MinReplicas, 0)
	clamp := func(n int) int {
		n = max(n, minR)
		if p.MaxReplicas > 0 {
			n = min(n, p.MaxReplicas)
		}
		return n
	}
	nan := math.NaN()
	why := ScaleReason{At: now, MinReplicas: minR, MaxReplicas: p.MaxReplicas, Band: margin,
		HasForecast: in.HasForecast, NoForecast: in.NoForecast, Notes: slices.Clone(in.Notes),
		Saw: ScaleSeen{GPUMemory: in.GPUMemory, GPUMemoryHigh: p.GPUMemoryHigh, WaitingPerReplica: nan, WaitingHigh: p.WaitingPerReplica,
			P99: in.P99, SLOP99: p.SLOP99, P99Near: p.P99Near, CapacityPerReplica: nan,
			PredictedLoad: nan, PredictedUpper: nan, HeldPeak: nan}}
	if prev.Decided {
		why.Previous = prev.Desired
	}
	if num.Finite(in.Observed) && in.Observed >= 0 {
		why.Observed, why.ObservedKnown = int(math.Round(in.Observed)), true
		why.Counted = why.Observed
	} else {
		why.Counted = why.Previous
		if why.Counted == 0 {
			why.Counted = max(minR, 1)
		}
	}
	cur := why.Counted
	base := max(cur, 1) // per-replica figures of an empty target count one replica

	var asks []scaleAsk
	// Tier 1: saturated now.
	if num.Finite(in.GPUMemory) && p.GPUMemoryHigh > 0 && in.GPUMemory > p.GPUMemoryHigh {
		asks = append(asks, scaleAsk{CauseGPUMemory, max(ceil(float64(base)*in.GPUMemory/p.GPUMemoryHigh), cur+1)})
	}
	if num.Finite(in.Waiting) {
		why.Saw.WaitingPerReplica = in.Waiting / float64(base)
		if p.WaitingPerReplica > 0 && why.Saw.WaitingPerReplica > p.WaitingPerReplica {
			asks = append(asks, scaleAsk{CauseWaiting, max(ceil(in.Waiting/p.WaitingPerReplica), cur+1)})
		}
	}
	// Tier 2: the tail nears the objective.
	if p.SLOP99 > 0 && p.P99Near > 0 && num.Finite(in.P99) && in.P99 >= p.P99Near*p.SLOP99 {
		asks = append(asks, scaleAsk{CauseP99, max(ceil(float64(base)*in.P99/(p.P99Near*p.SLOP99)), cur+1)})
	}
	// Tier 3: the forecast. floor is the fewest replicas it lets a step
	// down go to: its need with the hysteresis band.
	floor := 0
	if num.Finite(in.CapacityPerReplica) && in.CapacityPerReplica > 0 {
		why.Saw.CapacityPerReplica = in.CapacityPerReplica
		if in.HasForecast {
			why.Saw.PredictedLoad, why.Saw.PredictedUpper, why.Saw.PeakTime = in.PredictedLoad, in.PredictedUpper, in.PeakTime
		}
	}
	if p.Hold > 0 && num.Finite(in.HeldPeak) {
		why.Saw.Hold, why.Saw.HeldPeak, why.Saw.HeldAt = p.Hold, in.HeldPeak, in.HeldAt
	}
	if b := in.BurstLoad; num.Finite(b) && b > 0 {
		why.Saw.BurstLoad = b
	}
	if upper := why.Saw.upper(); num.Finite(upper) {
		c := in.CapacityPerReplica
		ask := scaleAsk{CauseForecast, ceil(upper / c)}
		floor = ask.n
		if num.Finite(in.PredictedLoad) {
			floor = max(floor, ceil(in.PredictedLoad/(c*(1-margin))))
		}
		if why.Saw.Hold > 0 && why.Saw.HeldPeak > upper {
			// A load seen within the hold asks for more than the
			// forecast: it speaks first.
			ask = scaleAsk{CauseHeldPeak, ceil(why.Saw.HeldPeak / c)}
			floor = max(floor, ask.n)
		}
		if b := why.Saw.BurstLoad; ceil(b/c) > ask.n {
			// The rises seen before ask for more headroom than the
			// forecast's interval and the hold.
			ask = scaleAsk{CauseBurst, ceil(b / c)}
			floor = max(floor, ask.n)
		}
		asks = append(asks, ask)
		why.Fallback = in.Fallback
	}

	win := scaleAsk{CauseNone, cur}
	for i, a := range asks {
		if i == 0 || a.n > win.n || (a.n == win.n && a.cause.Tier() < win.cause.Tier()) {
			win = a
		}
	}
	why.Cause, why.Needed = win.cause, win.n
	switch {
	case p.MaxReplicas > 0 && win.n > p.MaxReplicas:
		why.Limits |= LimitMaxReplicas
	case win.n < minR:
		why.Limits |= LimitMinReplicas
	}
	want := clamp(win.n)

	next := prev
	switch {
	case !prev.Decided:
		why.Change = ScaleStart
		next = ScaleState{Decided: true, Desired: want, Changed: now}
	case want > prev.Desired:
		why.Change = ScaleUp
		next = ScaleState{Decided: true, Desired: want, Changed: now}
	case want == prev.Desired:
		why.Change = ScaleHold
		next.Below, next.BelowMax = 0, 0
	default: // fewer would do: as few as the band allows, when it has held
		why.Change = ScaleHold
		why.StepDownTo = clamp(max(want, floor))
		if why.StepDownTo > want {
			why.Limits |= LimitBand
		}
		if why.StepDownTo >= prev.Desired {
			next.Below, next.BelowMax = 0, 0
			break
		}
		next.Below++
		next.BelowMax = max(next.BelowMax, why.StepDownTo)
		if prev.Below == 0 {
			next.BelowMax = why.StepDownTo
		}
		why.InARow, why.Stable = next.Below, max(p.ScaleDownStableIntervals, 1)
		why.CooldownEnds = prev.Changed.Add(p.Cooldown)
		stable, cooled := why.InARow >= why.Stable, now.Sub(prev.Changed) >= p.Cooldown
		if !stable {
			why.Limits |= LimitStable
		}
		if !cooled {
			why.Limits |= LimitCooldown
		}
		if stable && cooled {
			why.Change = ScaleDown
			next = ScaleState{Decided: true, Desired: next.BelowMax, Changed: now}
		}
	}
	return ScaleSignal{Desired: next.Desired, ValidUntil: now.Add(p.ValidFor), Why: why}, next
}

// scaleAsk is what one tier's cause asks for: n replicas.
type scaleAsk struct {
	cause ScaleCause
	n     int
}

// PeakWithin returns the peak of the mean over leads 1..leads (the first
// lead where it is largest) and the peak of the upper bound, as Peak,
// PeakLead and UpperPeak are over the whole horizon. leads is clamped to
// [1, horizon]; an empty forecast gives NaN and lead 0.
func (fc *Forecast) PeakWithin(leads int) (peak float64, lead int, upper float64) {
	n := min(max(leads, 1), len(fc.Mean), len(fc.Upper))
	if n == 0 {
		return math.NaN(), 0, math.NaN()
	}
	peak, upper = math.Inf(-1), math.Inf(-1)
	for i := range n {
		if fc.Mean[i] > peak {
			peak, lead = fc.Mean[i], i+1
		}
		upper = max(upper, fc.Upper[i])
	}
	return peak, lead, upper
}

// UpperWithin returns the peak over leads 1..leads (clamped as in
// PeakWithin) of the upper end of the interval at level: Upper's when
// level is the forecast's Level, else that of the one of Plans at level.
// ok is false when the forecast carries none at level; an empty forecast
// gives NaN.
func (fc *Forecast) UpperWithin(level float64, leads int) (upper float64, ok bool) {
	path := fc.Upper
	if level != fc.Level {
		i := slices.IndexFunc(fc.Plans, func(p PlanUpper) bool { return p.Level == level })
		if i < 0 {
			return math.NaN(), false
		}
		path = fc.Plans[i].Upper
	}
	n := min(max(leads, 1), len(path))
	if n == 0 {
		return math.NaN(), true
	}
	upper = math.Inf(-1)
	for _, u := range path[:n] {
		upper = max(upper, u)
	}
	return upper, true
}

// DefaultScaleDownMargin is the hysteresis band of a scale rule whose
// configuration does not set scale.scale_down_margin.
const DefaultScaleDownMargin = 0.15

// ceil is ⌈x⌉ as an int, tolerant of rounding just above a whole number.
func ceil(x float64) int {
	if !num.Finite(x) || x <= 0 {
		return 0
	}
	return int(math.Ceil(x - 1e-9))
}
