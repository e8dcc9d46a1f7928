package forecasting

import (
	"fmt"
	"math"
	"strings"
	"time"
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
	// ScaleDownMargin is the hysteresis band of the forecast tier: the
	// signal steps down only to a number of replicas that would carry the
	// predicted upper bound at (1 − ScaleDownMargin) of their capacity, so
	// a load hovering at one replica's capacity does not make the signal
	// go up and down (0: DefaultScaleDownMargin; negative: no band).
	ScaleDownMargin float64
	// ValidFor is how long a signal holds: its valid_until is now +
	// ValidFor.
	ValidFor time.Duration
}

// ScaleInputs are what one decision knows about a target. A NaN means
// "not known": the decision goes on with what is known and says so.
type ScaleInputs struct {
	// Current is the number of replicas serving now (NaN: unknown).
	Current float64
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
}

// ScaleState is what a decision remembers for the next one.
type ScaleState struct {
	// Desired is the last desired replicas signalled (0: none yet).
	Desired int
	// Changed is when Desired last changed.
	Changed time.Time
	// Below counts the decisions in a row that asked for fewer than
	// Desired; BelowMax is the most replicas any of them asked for.
	Below, BelowMax int
}

// ScaleSignal is one decision.
type ScaleSignal struct {
	Desired, Current int
	// CurrentKnown is false when the current replicas were not known and
	// Current is the previous desired value (or the minimum) instead.
	CurrentKnown                  bool
	PredictedLoad, PredictedUpper float64
	CapacityPerReplica            float64
	// Tier is 1 (saturated now: GPU memory or waiting requests), 2 (P99
	// near the SLO), 3 (the forecast over the horizon) or 0 (nothing to
	// act on: hold).
	Tier int
	// Want is what the tiers ask for before hysteresis and clamps.
	Want       int
	Reason     string
	ValidUntil time.Time
}

// Decide turns what is known about a target into a desired number of
// replicas. It is a pure function of the previous state, the inputs, the
// policy and the time.
//
//   - Tier 1 (now): GPU memory use above GPUMemoryHigh asks for
//     ⌈current · use / GPUMemoryHigh⌉ replicas, and more than
//     WaitingPerReplica waiting requests per replica for
//     ⌈waiting / WaitingPerReplica⌉, at least one more than now.
//   - Tier 2: P99 at or above P99Near · SLO asks for ⌈current · P99 /
//     (P99Near · SLO)⌉, at least one more than now.
//   - Tier 3: the upper bound of the forecast peak over the horizon asks
//     for ⌈upper / capacity per replica⌉, up or down.
//
// The highest ask wins (the lower tier on a tie). A rise is signalled at
// once; a fall only after ScaleDownStableIntervals decisions in a row ask
// for fewer and Cooldown has passed since the last change, and then to the
// most any of them asked for. The result is clamped to [MinReplicas,
// MaxReplicas]. Without a forecast or a capacity only tiers 1 and 2 can
// act, and the reason says so.
func Decide(prev ScaleState, in ScaleInputs, p ScalePolicy, now time.Time) (ScaleSignal, ScaleState) {
	margin := p.ScaleDownMargin
	switch {
	case margin == 0:
		margin = DefaultScaleDownMargin
	case margin < 0 || margin >= 1:
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
	sig := ScaleSignal{PredictedLoad: math.NaN(), PredictedUpper: math.NaN(), CapacityPerReplica: math.NaN(), ValidUntil: now.Add(p.ValidFor)}
	var notes []string
	cur := 0
	if isFinite(in.Current) && in.Current >= 0 {
		cur = int(math.Round(in.Current))
		sig.CurrentKnown = true
	} else {
		cur = prev.Desired
		if cur == 0 {
			cur = max(minR, 1)
		}
		notes = append(notes, fmt.Sprintf("current replicas unknown, taken as %d", cur))
	}
	sig.Current = cur
	base := max(cur, 1) // per-replica figures of an empty target count one replica

	type ask struct {
		tier int
		n    int
		why  string
	}
	var asks []ask
	// hold is the number of replicas the forecast tier asks to keep when
	// stepping down: the forecast's need with the hysteresis band.
	hold := 0
	// Tier 1: saturated now.
	if isFinite(in.GPUMemory) && p.GPUMemoryHigh > 0 && in.GPUMemory > p.GPUMemoryHigh {
		n := max(ceil(float64(base)*in.GPUMemory/p.GPUMemoryHigh), cur+1)
		asks = append(asks, ask{1, n, fmt.Sprintf("GPU memory use %.0f%% above %.0f%%", 100*in.GPUMemory, 100*p.GPUMemoryHigh)})
	}
	if isFinite(in.Waiting) && p.WaitingPerReplica > 0 && in.Waiting/float64(base) > p.WaitingPerReplica {
		n := max(ceil(in.Waiting/p.WaitingPerReplica), cur+1)
		asks = append(asks, ask{1, n, fmt.Sprintf("%.1f waiting requests per replica, above %g", in.Waiting/float64(base), p.WaitingPerReplica)})
	}
	// Tier 2: the tail nears the objective.
	if p.SLOP99 > 0 && p.P99Near > 0 {
		if isFinite(in.P99) && in.P99 >= p.P99Near*p.SLOP99 {
			n := max(ceil(float64(base)*in.P99/(p.P99Near*p.SLOP99)), cur+1)
			asks = append(asks, ask{2, n, fmt.Sprintf("P99 %.3gs is %.0f%% of the %.3gs SLO", in.P99, 100*in.P99/p.SLOP99, p.SLOP99)})
		} else if !isFinite(in.P99) {
			notes = append(notes, "P99 unknown")
		}
	}
	// Tier 3: the forecast.
	capOK := isFinite(in.CapacityPerReplica) && in.CapacityPerReplica > 0
	if capOK {
		sig.CapacityPerReplica = in.CapacityPerReplica
	}
	switch {
	case !in.HasForecast:
		why := in.NoForecast
		if why == "" {
			why = "no forecast yet"
		}
		notes = append(notes, why+": tiers 1 and 2 only")
	case !capOK:
		notes = append(notes, "capacity per replica unknown: tiers 1 and 2 only")
	default:
		sig.PredictedLoad, sig.PredictedUpper = in.PredictedLoad, in.PredictedUpper
		upper := in.PredictedUpper
		if !isFinite(upper) {
			upper = in.PredictedLoad
		}
		if isFinite(upper) {
			n := ceil(upper / in.CapacityPerReplica)
			hold = ceil(upper / (in.CapacityPerReplica * (1 - margin)))
			why := fmt.Sprintf("forecast peak %.3g req/s (upper %.3g) at %.3g req/s per replica", in.PredictedLoad, upper, in.CapacityPerReplica)
			if !in.PeakTime.IsZero() {
				why += " by " + in.PeakTime.UTC().Format(time.RFC3339)
			}
			if in.Fallback != "" {
				why += " (fallback forecast: " + in.Fallback + ")"
			}
			asks = append(asks, ask{3, n, why})
		}
	}

	want, best := cur, -1
	for i, a := range asks {
		if best < 0 || a.n > asks[best].n || (a.n == asks[best].n && a.tier < asks[best].tier) {
			best = i
		}
	}
	if best >= 0 {
		want = asks[best].n
		sig.Tier = asks[best].tier
	}
	want = clamp(want)
	sig.Want = want

	ref := prev.Desired
	if ref == 0 {
		ref = clamp(cur)
	}
	next := prev
	var reason string
	switch {
	case prev.Desired == 0 || want > ref:
		next = ScaleState{Desired: want, Changed: now}
		if prev.Desired != 0 {
			reason = fmt.Sprintf("up from %d", ref)
		}
	case want == ref:
		next.Below, next.BelowMax = 0, 0
	case clamp(max(want, hold)) >= ref:
		// Fewer replicas would do, but not with the hysteresis band.
		next.Below, next.BelowMax = 0, 0
		reason = fmt.Sprintf("holding %d: %d would run above %.0f%% of capacity", ref, want, 100*(1-margin))
	default: // want < ref, and the band allows it
		want = clamp(max(want, hold))
		next.Below++
		next.BelowMax = max(next.BelowMax, want)
		if prev.Below == 0 {
			next.BelowMax = want
		}
		cooled := now.Sub(prev.Changed) >= p.Cooldown
		if next.Below >= max(p.ScaleDownStableIntervals, 1) && cooled {
			down := next.BelowMax
			reason = fmt.Sprintf("down from %d after %d stable intervals", ref, next.Below)
			next = ScaleState{Desired: down, Changed: now}
		} else {
			why := fmt.Sprintf("%d of %d intervals", next.Below, max(p.ScaleDownStableIntervals, 1))
			if !cooled {
				why += fmt.Sprintf(", cooldown until %s", prev.Changed.Add(p.Cooldown).UTC().Format(time.RFC3339))
			}
			reason = fmt.Sprintf("holding %d: %d asked for (%s)", ref, want, why)
		}
	}
	sig.Desired = next.Desired
	parts := []string{}
	if best >= 0 {
		parts = append(parts, fmt.Sprintf("tier %d: %s → %d", asks[best].tier, asks[best].why, asks[best].n))
	} else {
		parts = append(parts, "nothing to act on: holding")
	}
	if reason != "" {
		parts = append(parts, reason)
	}
	if p.MaxReplicas > 0 && best >= 0 && asks[best].n > p.MaxReplicas {
		parts = append(parts, fmt.Sprintf("capped at max_replicas %d", p.MaxReplicas))
	}
	if best >= 0 && asks[best].n < minR {
		parts = append(parts, fmt.Sprintf("raised to min_replicas %d", minR))
	}
	parts = append(parts, notes...)
	parts = append(parts, in.Notes...)
	sig.Reason = strings.Join(parts, "; ")
	return sig, next
}

// DefaultScaleDownMargin is the default hysteresis band of ScalePolicy.
const DefaultScaleDownMargin = 0.15

// ceil is ⌈x⌉ as an int, tolerant of rounding just above a whole number.
func ceil(x float64) int {
	if !isFinite(x) || x <= 0 {
		return 0
	}
	return int(math.Ceil(x - 1e-9))
}
