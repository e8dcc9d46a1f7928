package forecasting

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/internal/dur"
)

// TestDecide checks the policy: the winning ask, what it needs, the new
// decision, the kind of change, what held it back and the state kept.
// TestScaleSignalReason checks the sentences.
func TestDecide(t *testing.T) {
	nan := math.NaN()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pol := ScalePolicy{MinReplicas: 1, MaxReplicas: 10, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute,
		GPUMemoryHigh: 0.8, WaitingPerReplica: 5, P99Near: 0.9, SLOP99: 2, ValidFor: 10 * time.Minute, ScaleDownMargin: DefaultScaleDownMargin}
	quiet := ScaleInputs{Observed: 2, CapacityPerReplica: 10, HasForecast: true, PredictedLoad: 12, PredictedUpper: 15,
		PeakTime: now.Add(7 * time.Minute), GPUMemory: 0.5, Waiting: 2, P99: 1}
	with := func(f func(*ScaleInputs)) ScaleInputs { in := quiet; f(&in); return in }
	low := func(in *ScaleInputs) { in.PredictedLoad, in.PredictedUpper = 4, 5 }
	// decided is the state after a decision of n an hour ago.
	decided := func(n int) ScaleState { return ScaleState{Decided: true, Desired: n, Changed: now.Add(-time.Hour)} }
	settled := decided(2)
	changed := ScaleState{Decided: true, Changed: now}
	to := func(n int) ScaleState { s := changed; s.Desired = n; return s }
	below := func(s ScaleState, n, most int) ScaleState { s.Below, s.BelowMax = n, most; return s }
	const (
		none     = ScaleLimits(0)
		band     = LimitBand
		stable   = LimitStable
		cooldown = LimitCooldown
	)
	cases := []struct {
		name    string
		prev    ScaleState
		in      ScaleInputs
		pol     func(*ScalePolicy)
		desired int
		cause   ScaleCause
		needed  int
		change  ScaleChange
		limits  ScaleLimits
		next    ScaleState
	}{
		{"tier 3 holds at the forecast's need", settled, quiet, nil, 2, CauseForecast, 2, ScaleHold, none, settled},
		{"tier 3 scales up at once", settled, with(func(in *ScaleInputs) { in.PredictedUpper = 41 }), nil, 5, CauseForecast, 5, ScaleUp, none, to(5)},
		{"the first decision starts", ScaleState{}, quiet, nil, 2, CauseForecast, 2, ScaleStart, none, to(2)},
		{"a forecast without an interval", settled, with(func(in *ScaleInputs) { in.PredictedUpper = nan }), nil, 2, CauseForecast, 2, ScaleHold, none, settled},
		{"tier 1 on GPU memory", settled, with(func(in *ScaleInputs) { in.GPUMemory = 0.95 }), nil, 3, CauseGPUMemory, 3, ScaleUp, none, to(3)},
		{"tier 1 on waiting requests", settled, with(func(in *ScaleInputs) { in.Waiting = 22 }), nil, 5, CauseWaiting, 5, ScaleUp, none, to(5)},
		{"tier 2 when P99 nears the SLO", settled, with(func(in *ScaleInputs) { in.P99 = 1.9 }), nil, 3, CauseP99, 3, ScaleUp, none, to(3)},
		{"the highest ask wins", settled, with(func(in *ScaleInputs) { in.P99 = 1.9; in.PredictedUpper = 61 }), nil, 7, CauseForecast, 7, ScaleUp, none, to(7)},
		{"a tie goes to the lower tier", settled, with(func(in *ScaleInputs) { in.P99 = 1.9; in.PredictedUpper = 25 }), nil, 3, CauseP99, 3, ScaleUp, none, to(3)},
		{"saturation counts one more than the observed replicas", settled, with(func(in *ScaleInputs) { in.GPUMemory = 0.81 }), nil, 3, CauseGPUMemory, 3, ScaleUp, none, to(3)},
		{"the hysteresis band holds", settled, with(func(in *ScaleInputs) { in.PredictedLoad, in.PredictedUpper = 8.8, 9.2 }), nil,
			2, CauseForecast, 1, ScaleHold, band, settled},
		{"without a band the same forecast steps down", settled, with(func(in *ScaleInputs) { in.PredictedLoad, in.PredictedUpper = 8.8, 9.2 }),
			func(p *ScalePolicy) { p.ScaleDownMargin, p.ScaleDownStableIntervals = 0, 1 }, 1, CauseForecast, 1, ScaleDown, none, to(1)},
		{"the band holds a saturation ask", decided(4), with(func(in *ScaleInputs) { in.GPUMemory = 0.95; in.PredictedLoad, in.PredictedUpper = 28, 30 }), nil,
			4, CauseGPUMemory, 3, ScaleHold, band, decided(4)},
		{"a fall waits for stable intervals", settled, with(low), nil, 2, CauseForecast, 1, ScaleHold, stable, below(settled, 1, 1)},
		{"a fall keeps the band's headroom", decided(5), with(func(in *ScaleInputs) { in.PredictedLoad, in.PredictedUpper = 17.5, 18 }), nil,
			5, CauseForecast, 2, ScaleHold, band | stable, below(decided(5), 1, 3)},
		{"an interval wider than the band is headroom enough", decided(5), with(func(in *ScaleInputs) { in.PredictedUpper = 18 }), nil,
			5, CauseForecast, 2, ScaleHold, stable, below(decided(5), 1, 2)},
		{"a fall keeps the forecast's headroom under a saturation ask", decided(6),
			with(func(in *ScaleInputs) { in.GPUMemory = 0.95; in.PredictedLoad, in.PredictedUpper = 26, 27 }), nil,
			6, CauseGPUMemory, 3, ScaleHold, band | stable, below(decided(6), 1, 4)},
		{"a fall after enough stable intervals", below(decided(4), 2, 1), with(low), nil, 1, CauseForecast, 1, ScaleDown, none, to(1)},
		{"a fall to the most the stable intervals asked for", below(decided(4), 2, 2), with(low), nil, 2, CauseForecast, 1, ScaleDown, none, to(2)},
		{"a fall with one stable interval", decided(4), with(low), func(p *ScalePolicy) { p.ScaleDownStableIntervals = 1 },
			1, CauseForecast, 1, ScaleDown, none, to(1)},
		{"a fall waits for the cooldown", ScaleState{Decided: true, Desired: 4, Changed: now.Add(-2 * time.Minute), Below: 5, BelowMax: 1}, with(low), nil,
			4, CauseForecast, 1, ScaleHold, cooldown, ScaleState{Decided: true, Desired: 4, Changed: now.Add(-2 * time.Minute), Below: 6, BelowMax: 1}},
		{"a fall waits for both", ScaleState{Decided: true, Desired: 4, Changed: now.Add(-2 * time.Minute)}, with(low), nil,
			4, CauseForecast, 1, ScaleHold, stable | cooldown, ScaleState{Decided: true, Desired: 4, Changed: now.Add(-2 * time.Minute), Below: 1, BelowMax: 1}},
		{"a steady ask resets the count", below(settled, 2, 1), quiet, nil, 2, CauseForecast, 2, ScaleHold, none, settled},
		{"capped at max", settled, with(func(in *ScaleInputs) { in.PredictedUpper = 500 }), nil, 10, CauseForecast, 50, ScaleUp, LimitMaxReplicas, to(10)},
		{"raised to min", ScaleState{}, with(func(in *ScaleInputs) { in.PredictedUpper, in.PredictedLoad = 1, 1 }),
			func(p *ScalePolicy) { p.MinReplicas = 3 }, 3, CauseForecast, 1, ScaleStart, LimitMinReplicas, to(3)},
		{"no forecast: tiers 1 and 2 only", settled, with(func(in *ScaleInputs) { in.HasForecast = false }), nil, 2, CauseNone, 2, ScaleHold, none, settled},
		{"nothing to act on follows the observed replicas down", decided(3), with(func(in *ScaleInputs) { in.HasForecast = false; in.Observed = 1 }), nil,
			3, CauseNone, 1, ScaleHold, stable, below(decided(3), 1, 1)},
		{"no forecast but saturated", settled, with(func(in *ScaleInputs) { in.HasForecast = false; in.Waiting = 30 }), nil, 6, CauseWaiting, 6, ScaleUp, none, to(6)},
		{"unknown capacity", settled, with(func(in *ScaleInputs) { in.CapacityPerReplica = nan }), nil, 2, CauseNone, 2, ScaleHold, none, settled},
		{"unknown observed replicas count the previous decision", decided(4),
			with(func(in *ScaleInputs) { in.Observed, in.HasForecast, in.GPUMemory = nan, false, 0.9 }), nil, 5, CauseGPUMemory, 5, ScaleUp, none, to(5)},
		{"unknown observed replicas and no previous decision count the least", ScaleState{},
			with(func(in *ScaleInputs) { in.Observed, in.HasForecast = nan, false }), func(p *ScalePolicy) { p.MinReplicas = 0 }, 1, CauseNone, 1, ScaleStart, none, to(1)},
		{"a decision of zero is a previous decision", ScaleState{Decided: true, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) { in.Observed, in.HasForecast = 0, false }), func(p *ScalePolicy) { p.MinReplicas = 0 },
			0, CauseNone, 0, ScaleHold, none, ScaleState{Decided: true, Changed: now.Add(-time.Hour)}},
		{"no SLO: no tier 2", settled, with(func(in *ScaleInputs) { in.P99 = 100 }), func(p *ScalePolicy) { p.SLOP99 = 0 }, 2, CauseForecast, 2, ScaleHold, none, settled},
		{"a load seen within the hold asks for more than the forecast", settled,
			with(func(in *ScaleInputs) { in.HeldPeak, in.HeldAt = 41, now.Add(-12*time.Minute) }),
			func(p *ScalePolicy) { p.Hold = 30 * time.Minute }, 5, CauseHeldPeak, 5, ScaleUp, none, to(5)},
		{"a load seen within the hold keeps the replicas after the forecast falls", decided(5),
			with(func(in *ScaleInputs) { low(in); in.HeldPeak, in.HeldAt = 41, now.Add(-90*time.Minute) }),
			func(p *ScalePolicy) { p.Hold = 2 * time.Hour }, 5, CauseHeldPeak, 5, ScaleHold, none, decided(5)},
		{"a load held below the forecast's upper bound leaves the forecast to speak", settled,
			with(func(in *ScaleInputs) { in.HeldPeak, in.HeldAt = 14, now.Add(-time.Minute) }),
			func(p *ScalePolicy) { p.Hold = 30 * time.Minute }, 2, CauseForecast, 2, ScaleHold, none, settled},
		{"without a hold a load held is not asked for", settled,
			with(func(in *ScaleInputs) { in.HeldPeak, in.HeldAt = 41, now.Add(-time.Minute) }), nil, 2, CauseForecast, 2, ScaleHold, none, settled},
		{"an unknown load held is not asked for", settled,
			with(func(in *ScaleInputs) { in.HeldPeak = nan }), func(p *ScalePolicy) { p.Hold = 30 * time.Minute }, 2, CauseForecast, 2, ScaleHold, none, settled},
		{"large and small figures", settled, with(func(in *ScaleInputs) {
			in.PredictedLoad, in.PredictedUpper, in.CapacityPerReplica = 1234.5, 1502.25, 0.0125
		}), func(p *ScalePolicy) { p.MaxReplicas = 0 }, 120180, CauseForecast, 120180, ScaleUp, none, to(120180)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pol
			if c.pol != nil {
				c.pol(&p)
			}
			sig, next := Decide(c.prev, c.in, p, now)
			w := sig.Why
			if sig.Desired != c.desired || w.Cause != c.cause || w.Needed != c.needed || w.Change != c.change || w.Limits != c.limits || next != c.next {
				t.Errorf("desired %d, %s needs %d, %s, held back by %s, next %+v\nwant %d, %s needs %d, %s, held back by %s, next %+v\n(%s)",
					sig.Desired, w.Cause, w.Needed, w.Change, w.Limits, next, c.desired, c.cause, c.needed, c.change, c.limits, c.next, sig.Reason())
			}
			if !sig.ValidUntil.Equal(now.Add(10 * time.Minute)) {
				t.Errorf("valid until %v", sig.ValidUntil)
			}
		})
	}
}

// TestDecideKeepsTheFigures: what a decision saw and what held it back,
// with the numbers the reason names.
func TestDecideKeepsTheFigures(t *testing.T) {
	nan := math.NaN()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pol := ScalePolicy{MinReplicas: 1, MaxReplicas: 10, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute,
		GPUMemoryHigh: 0.8, WaitingPerReplica: 5, P99Near: 0.9, SLOP99: 2, ScaleDownMargin: 0.2, Hold: 30 * time.Minute}
	in := ScaleInputs{Observed: 2, CapacityPerReplica: 10, HasForecast: true, PredictedLoad: 17.5, PredictedUpper: 18,
		PeakTime: now.Add(7 * time.Minute), GPUMemory: 0.5, Waiting: 3, P99: 1.9, HeldPeak: 12, HeldAt: now.Add(-5 * time.Minute),
		BurstLoad: 16, Fallback: "auto needs 1470 points", Notes: []string{"a note"}}
	changed := now.Add(-2 * time.Minute)
	// Five replicas asked for before; the forecast needs 2, 3 with the
	// band of 20 %; P99 asks for ⌈2 · 1.9 / 1.8⌉ = 3.
	sig, _ := Decide(ScaleState{Decided: true, Desired: 5, Changed: changed}, in, pol, now)
	want := ScaleReason{At: now, Cause: CauseP99, Needed: 3, Observed: 2, ObservedKnown: true, Counted: 2, Previous: 5, Change: ScaleHold,
		Saw: ScaleSeen{GPUMemory: 0.5, GPUMemoryHigh: 0.8, WaitingPerReplica: 1.5, WaitingHigh: 5, P99: 1.9, SLOP99: 2, P99Near: 0.9,
			CapacityPerReplica: 10, PredictedLoad: 17.5, PredictedUpper: 18, PeakTime: now.Add(7 * time.Minute),
			Hold: 30 * time.Minute, HeldPeak: 12, HeldAt: now.Add(-5 * time.Minute), BurstLoad: 16},
		Limits: LimitStable | LimitCooldown, MinReplicas: 1, MaxReplicas: 10, Band: 0.2, StepDownTo: 3, InARow: 1, Stable: 3,
		CooldownEnds: changed.Add(5 * time.Minute), HasForecast: true, Fallback: "auto needs 1470 points", Notes: []string{"a note"}}
	if !reflect.DeepEqual(sig.Why, want) {
		t.Errorf("why\n%+v\nwant\n%+v", sig.Why, want)
	}
	// The caller's notes are copied: it may reuse its slice.
	in.Notes[0] = "reused"
	if sig.Why.Notes[0] != "a note" {
		t.Errorf("notes %q follow the caller's slice", sig.Why.Notes)
	}

	// Unknown replicas count the previous decision; without a forecast
	// nothing of it is kept.
	sig, _ = Decide(ScaleState{Decided: true, Desired: 4, Changed: changed}, ScaleInputs{Observed: nan, CapacityPerReplica: nan,
		GPUMemory: nan, Waiting: 8, P99: nan, HeldPeak: nan, NoForecast: "no outlook"}, pol, now)
	w := sig.Why
	if w.ObservedKnown || w.Observed != 0 || w.Counted != 4 || w.Saw.WaitingPerReplica != 2 || !math.IsNaN(w.Saw.PredictedLoad) ||
		!math.IsNaN(w.Saw.PredictedUpper) || !math.IsNaN(w.Saw.CapacityPerReplica) || w.HasForecast || w.NoForecast != "no outlook" || w.Fallback != "" {
		t.Errorf("without the replicas or a forecast: %+v", w)
	}
}

// A load that wobbles around a replica boundary does not make the signal
// flap: it rises at once, and falls only once the lower ask has held.
func TestDecideDoesNotFlap(t *testing.T) {
	pol := ScalePolicy{MinReplicas: 1, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute, ValidFor: time.Minute,
		ScaleDownMargin: DefaultScaleDownMargin}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var st ScaleState
	var seq []int
	uppers := []float64{19, 21, 19, 21, 16, 16, 16, 16, 16, 16, 16}
	for i, u := range uppers {
		sig, next := Decide(st, ScaleInputs{Observed: float64(max(st.Desired, 2)), CapacityPerReplica: 10, HasForecast: true,
			PredictedLoad: u, PredictedUpper: u, GPUMemory: math.NaN(), Waiting: math.NaN(), P99: math.NaN()}, pol, now.Add(time.Duration(i)*time.Minute))
		st = next
		seq = append(seq, sig.Desired)
	}
	// Up at minute 1. At 19 req/s two replicas of 10 would run at 95 %,
	// inside the 15 % hysteresis band: the signal holds 3. At 16 (80 %)
	// the asks for 2 at minutes 4, 5, 6 make three in a row, five minutes
	// after the rise at 1: down at 6.
	want := []int{2, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2}
	for i := range want {
		if seq[i] != want[i] {
			t.Fatalf("desired replicas %v, want %v", seq, want)
		}
	}
}

// A load hovering at a replica's capacity holds the higher count instead of
// going up and down with every wobble.
func TestDecideHoldsInsideTheHysteresisBand(t *testing.T) {
	pol := ScalePolicy{MinReplicas: 1, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute, ValidFor: time.Minute,
		ScaleDownMargin: DefaultScaleDownMargin}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	st := ScaleState{Decided: true, Desired: 2, Changed: now.Add(-time.Hour)}
	changes := 0
	prev := 2
	for i := range 120 {
		u := 6.6 + 0.6*math.Sin(float64(i)) // 6.0 … 7.2 around a capacity of 7
		sig, next := Decide(st, ScaleInputs{Observed: 2, CapacityPerReplica: 7, HasForecast: true,
			PredictedLoad: u, PredictedUpper: u, GPUMemory: math.NaN(), Waiting: math.NaN(), P99: math.NaN()}, pol, now.Add(time.Duration(i)*time.Minute))
		st = next
		if sig.Desired != prev {
			changes++
		}
		prev = sig.Desired
	}
	if changes != 0 || prev != 2 {
		t.Fatalf("%d changes over two hours, ending at %d; want 2 held throughout", changes, prev)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "30m", time.Hour: "1h", 90 * time.Minute: "1h30m", 48 * time.Hour: "2d", 36 * time.Hour: "36h", 45 * time.Second: "45s",
	} {
		if got := dur.Format(d); got != want {
			t.Errorf("dur.Format(%v) = %q, want %q", d, got, want)
		}
	}
}

// A burst load above the forecast's upper bound and the held peak asks
// for its replicas, and the reason says so; below them it asks nothing.
func TestDecideAsksForTheBurstLoad(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pol := ScalePolicy{MinReplicas: 1, ScaleDownStableIntervals: 1, Hold: 30 * time.Minute}
	in := ScaleInputs{Observed: 2, CapacityPerReplica: 10, HasForecast: true, PredictedLoad: 15, PredictedUpper: 18,
		HeldPeak: 25, HeldAt: now.Add(-5 * time.Minute), BurstLoad: 31, GPUMemory: math.NaN(), Waiting: math.NaN(), P99: math.NaN()}
	// ⌈31 / 10⌉ = 4 against ⌈25 / 10⌉ = 3 for the held peak.
	sig, _ := Decide(ScaleState{}, in, pol, now)
	if sig.Desired != 4 || sig.Why.Cause != CauseBurst || sig.Why.Cause.Tier() != 3 {
		t.Errorf("desired %d by %s; want 4 by burst", sig.Desired, sig.Why.Cause)
	}
	if r := sig.Reason(); !strings.Contains(r, "The load past bursts call for, 31 req/s") {
		t.Errorf("reason %q does not name the burst load", r)
	}
	in.BurstLoad = 22
	if sig, _ = Decide(ScaleState{}, in, pol, now); sig.Desired != 3 || sig.Why.Cause != CauseHeldPeak {
		t.Errorf("a burst load of 22: desired %d by %s; want 3 by held_peak", sig.Desired, sig.Why.Cause)
	}
}
