package forecasting

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestScaleSignalReason checks the sentences a reason writes, one case
// per shape, from reasons written out as data.
func TestScaleSignalReason(t *testing.T) {
	nan := math.NaN()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	// base: the forecast needs the 2 replicas observed and asked for
	// before.
	base := ScaleReason{At: now, Cause: CauseForecast, Needed: 2, Observed: 2, ObservedKnown: true, Counted: 2, Previous: 2, Change: ScaleHold,
		Saw: ScaleSeen{GPUMemory: 0.5, GPUMemoryHigh: 0.8, WaitingPerReplica: 1, WaitingHigh: 5, P99: 1, SLOP99: 2, P99Near: 0.9,
			CapacityPerReplica: 10, PredictedLoad: 12, PredictedUpper: 15, PeakTime: now.Add(7 * time.Minute), HeldPeak: nan},
		MinReplicas: 1, MaxReplicas: 10, Band: 0.15, HasForecast: true}
	f := func(name string, desired int, change func(*ScaleReason), want string) {
		t.Helper()
		w := base
		change(&w)
		if got := (ScaleSignal{Desired: desired, Why: w}).Reason(); got != want {
			t.Errorf("%s:\n  %s\nwant\n  %s", name, got, want)
		}
	}
	same := func(*ScaleReason) {}
	f("the previous decision kept", 2, same,
		"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: new decision 2, the previous decision kept.")
	f("the first decision", 2, func(w *ScaleReason) { w.Change, w.Previous = ScaleStart, 0 },
		"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: new decision 2, the first.")
	// Observed 2, previous decision 1: the reason names the previous
	// decision as such, never as the replicas running.
	f("up from a previous decision below the observed replicas", 2, func(w *ScaleReason) { w.Change, w.Previous = ScaleUp, 1 },
		"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: new decision 2, up from the previous decision 1.")
	// Observed unknown: the reason says so, and what it counted instead,
	// by its name.
	f("observed replicas unknown", 5, func(w *ScaleReason) {
		w.Observed, w.ObservedKnown, w.Counted, w.Previous, w.Change, w.Needed = 0, false, 4, 4, ScaleUp, 5
		w.Saw.PredictedUpper, w.Saw.P99 = 45, nan
		w.Notes = []string{`gpu_memory unknown: 2 of its series match {model="a"}; aggregate it by the on labels`}
	}, "Forecast peak 12 req/s (upper 45) by 12:07 UTC needs 5 replicas at 10 req/s each: new decision 5, up from the previous decision 4 "+
		`(observed replicas unknown, counted as the previous decision 4; P99 unknown; gpu_memory unknown: 2 of its series match {model="a"}; aggregate it by the on labels).`)
	f("nothing to act on, observed replicas unknown, no previous decision", 1, func(w *ScaleReason) {
		w.Cause, w.Needed, w.Observed, w.ObservedKnown, w.Counted, w.Previous, w.Change, w.HasForecast = CauseNone, 1, 0, false, 1, 0, ScaleStart, false
	}, "With nothing to act on, the 1 replica counted stands: new decision 1, the first (observed replicas unknown, counted as 1; no forecast yet: tiers 1 and 2 only).")
	f("nothing to act on follows the observed replicas", 3, func(w *ScaleReason) {
		w.Cause, w.Needed, w.Observed, w.Counted, w.Previous, w.HasForecast = CauseNone, 1, 1, 1, 3, false
		w.NoForecast = `forecast rule "rate" has no series matching {model="a"}`
		w.Limits, w.StepDownTo, w.InARow, w.Stable = LimitStable, 1, 1, 3
	}, `With nothing to act on, the 1 observed replica stands: new decision 3, the previous decision kept until 3 evaluations in a row ask for fewer (1 so far) `+
		`(forecast rule "rate" has no series matching {model="a"}: tiers 1 and 2 only).`)
	f("unknown capacity", 2, func(w *ScaleReason) { w.Cause, w.Saw.CapacityPerReplica = CauseNone, nan },
		"With nothing to act on, the 2 observed replicas stand: new decision 2, the previous decision kept (capacity per replica unknown: tiers 1 and 2 only).")
	f("GPU memory", 3, func(w *ScaleReason) { w.Cause, w.Needed, w.Change, w.Saw.GPUMemory = CauseGPUMemory, 3, ScaleUp, 0.95 },
		"GPU memory use at 95 % (above 80 %) needs 3 replicas: new decision 3, up from the previous decision 2.")
	f("waiting requests", 6, func(w *ScaleReason) {
		w.Cause, w.Needed, w.Change, w.Saw.WaitingPerReplica, w.HasForecast = CauseWaiting, 6, ScaleUp, 15, false
	}, "15 waiting requests per replica (above 5) need 6 replicas: new decision 6, up from the previous decision 2 (no forecast yet: tiers 1 and 2 only).")
	f("P99", 3, func(w *ScaleReason) { w.Cause, w.Needed, w.Change, w.Saw.P99 = CauseP99, 3, ScaleUp, 1.9 },
		"P99 of 1.9 s at 95 % of the 2 s SLO needs 3 replicas: new decision 3, up from the previous decision 2.")
	f("the band keeps the previous decision", 2, func(w *ScaleReason) {
		w.Needed, w.Saw.PredictedLoad, w.Saw.PredictedUpper, w.Limits, w.StepDownTo = 1, 8.8, 9.2, LimitBand, 2
	}, "Forecast peak 8.8 req/s (upper 9.2) by 12:07 UTC would fit 1 replica at 10 req/s each, but 1 would run above 85 % of its capacity at the forecast peak: "+
		"new decision 2, the previous decision kept.")
	f("the band keeps the previous decision against a saturation ask", 4, func(w *ScaleReason) {
		w.Cause, w.Needed, w.Previous, w.Saw.GPUMemory, w.Limits, w.StepDownTo = CauseGPUMemory, 3, 4, 0.95, LimitBand, 4
	}, "GPU memory use at 95 % (above 80 %) needs 3 replicas, but on the forecast 3 would run above 85 % of their capacity at the forecast peak: "+
		"new decision 4, the previous decision kept.")
	f("the band keeps some replicas", 5, func(w *ScaleReason) {
		w.Previous, w.Saw.PredictedLoad, w.Saw.PredictedUpper = 5, 17.5, 18
		w.Limits, w.StepDownTo, w.InARow, w.Stable = LimitBand|LimitStable, 3, 1, 3
	}, "Forecast peak 17.5 req/s (upper 18) by 12:07 UTC needs 2 replicas at 10 req/s each, 3 to run below 85 % of their capacity at the forecast peak: "+
		"new decision 5, the previous decision kept until 3 evaluations in a row ask for fewer (1 so far).")
	f("the band keeps some replicas against a saturation ask", 6, func(w *ScaleReason) {
		w.Cause, w.Needed, w.Previous, w.Saw.GPUMemory = CauseGPUMemory, 3, 6, 0.95
		w.Limits, w.StepDownTo, w.InARow, w.Stable = LimitBand|LimitStable, 4, 1, 3
	}, "GPU memory use at 95 % (above 80 %) needs 3 replicas, and the forecast peak 4 to run below 85 % of their capacity: "+
		"new decision 6, the previous decision kept until 3 evaluations in a row ask for fewer (1 so far).")
	low := func(w *ScaleReason) {
		w.Needed, w.Previous, w.Saw.PredictedLoad, w.Saw.PredictedUpper, w.StepDownTo = 1, 4, 4, 5, 1
	}
	f("down after the stable intervals", 1, func(w *ScaleReason) { low(w); w.Change, w.InARow, w.Stable = ScaleDown, 3, 3 },
		"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: new decision 1, down from the previous decision 4 after 3 evaluations in a row asked for fewer.")
	f("down to the most the stable intervals asked for", 2, func(w *ScaleReason) { low(w); w.Change, w.InARow, w.Stable = ScaleDown, 3, 3 },
		"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: new decision 2, down from the previous decision 4 to the most the last 3 evaluations asked for.")
	f("down at once", 1, func(w *ScaleReason) { low(w); w.Change, w.InARow, w.Stable = ScaleDown, 1, 1 },
		"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: new decision 1, down from the previous decision 4.")
	f("the cooldown", 4, func(w *ScaleReason) {
		low(w)
		w.Limits, w.InARow, w.Stable, w.CooldownEnds = LimitCooldown, 6, 3, now.Add(3*time.Minute)
	}, "Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: new decision 4, the previous decision kept until the cooldown ends at 12:03 UTC.")
	f("the cooldown and the stable intervals", 4, func(w *ScaleReason) {
		low(w)
		w.Limits, w.InARow, w.Stable, w.CooldownEnds = LimitCooldown|LimitStable, 1, 3, now.Add(3*time.Minute)
	}, "Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: "+
		"new decision 4, the previous decision kept until the cooldown ends at 12:03 UTC and 3 evaluations in a row ask for fewer (1 so far).")
	f("capped at max_replicas", 10, func(w *ScaleReason) {
		w.Needed, w.Change, w.Saw.PredictedUpper, w.Limits = 50, ScaleUp, 500, LimitMaxReplicas
	},
		"Forecast peak 12 req/s (upper 500) by 12:07 UTC needs 50 replicas at 10 req/s each, capped at max_replicas 10: new decision 10, up from the previous decision 2.")
	f("raised to min_replicas", 3, func(w *ScaleReason) {
		w.Needed, w.Change, w.Previous, w.MinReplicas, w.Limits = 1, ScaleStart, 0, 3, LimitMinReplicas
		w.Saw.PredictedLoad, w.Saw.PredictedUpper = 1, 1
	}, "Forecast peak 1 req/s by 12:07 UTC needs 1 replica at 10 req/s each, raised to min_replicas 3: new decision 3, the first.")
	f("a load held", 5, func(w *ScaleReason) {
		w.Cause, w.Needed, w.Change = CauseHeldPeak, 5, ScaleUp
		w.Saw.Hold, w.Saw.HeldPeak, w.Saw.HeldAt = 30*time.Minute, 41, now.Add(-12*time.Minute)
	}, "The highest load of the last 30m, 41 req/s at 11:48 UTC, above the forecast peak 12 req/s (upper 15) by 12:07 UTC, needs 5 replicas at 10 req/s each: "+
		"new decision 5, up from the previous decision 2.")
	f("a forecast without an interval, a peak the next day, a fallback", 2, func(w *ScaleReason) {
		w.Saw.PredictedUpper, w.Saw.PeakTime, w.Fallback = nan, now.Add(13*time.Hour), "auto needs 1470 points"
	}, "Forecast peak 12 req/s by Nov 2 01:00 UTC needs 2 replicas at 10 req/s each: new decision 2, the previous decision kept (fallback forecast: auto needs 1470 points).")
	f("a peak between minutes, large and small figures", 120180, func(w *ScaleReason) {
		w.Needed, w.Change, w.Saw.PeakTime = 120180, ScaleUp, now.Add(7*time.Minute+50*time.Second)
		w.Saw.PredictedLoad, w.Saw.PredictedUpper, w.Saw.CapacityPerReplica = 1234.5, 1502.25, 0.0125
	}, "Forecast peak 1234 req/s (upper 1502) by 12:07:50 UTC needs 120180 replicas at 0.0125 req/s each: new decision 120180, up from the previous decision 2.")
}

// A scale decision from a forecast, then the next one: the reason as data
// and as a sentence.
func ExampleScaleSignal_Reason() {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	policy := ScalePolicy{MinReplicas: 1, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute, ScaleDownMargin: DefaultScaleDownMargin}
	in := ScaleInputs{Observed: 1, CapacityPerReplica: 7, HasForecast: true, PredictedLoad: 6.6, PredictedUpper: 7.4,
		PeakTime: now.Add(10 * time.Minute), GPUMemory: math.NaN(), Waiting: math.NaN(), P99: math.NaN(), HeldPeak: math.NaN()}
	sig, state := Decide(ScaleState{Decided: true, Desired: 1}, in, policy, now)
	fmt.Println(sig.Desired, sig.Why.Cause, sig.Why.Needed, sig.Why.Change, sig.Why.Limits)
	fmt.Println(sig.Reason())

	// A minute later the forecast falls to what one replica carries, but
	// not within the band.
	in.Observed, in.PredictedLoad, in.PredictedUpper = 2, 6.1, 6.5
	sig, _ = Decide(state, in, policy, now.Add(time.Minute))
	fmt.Println(sig.Desired, sig.Why.Cause, sig.Why.Needed, sig.Why.Change, sig.Why.Limits)
	fmt.Println(sig.Reason())
	// Output:
	// 2 forecast 2 up none
	// Forecast peak 6.6 req/s (upper 7.4) by 12:10 UTC needs 2 replicas at 7 req/s each: new decision 2, up from the previous decision 1.
	// 2 forecast 1 hold band
	// Forecast peak 6.1 req/s (upper 6.5) by 12:10 UTC would fit 1 replica at 7 req/s each, but 1 would run above 85 % of its capacity at the forecast peak: new decision 2, the previous decision kept.
}
