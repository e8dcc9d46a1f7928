package forecasting

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	nan := math.NaN()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pol := ScalePolicy{MinReplicas: 1, MaxReplicas: 10, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute,
		GPUMemoryHigh: 0.8, WaitingPerReplica: 5, P99Near: 0.9, SLOP99: 2, ValidFor: 10 * time.Minute}
	quiet := ScaleInputs{Current: 2, CapacityPerReplica: 10, HasForecast: true, PredictedLoad: 12, PredictedUpper: 15,
		GPUMemory: 0.5, Waiting: 2, P99: 1}
	with := func(f func(*ScaleInputs)) ScaleInputs { in := quiet; f(&in); return in }
	settled := ScaleState{Desired: 2, Changed: now.Add(-time.Hour)}
	cases := []struct {
		name    string
		prev    ScaleState
		in      ScaleInputs
		pol     func(*ScalePolicy)
		desired int
		tier    int
		next    ScaleState
		reason  []string
	}{
		{"tier 3 holds at the forecast's need", settled, quiet, nil, 2, 3, settled,
			[]string{"tier 3: forecast peak 12 req/s (upper 15)", "→ 2"}},
		{"tier 3 scales up at once", settled, with(func(in *ScaleInputs) { in.PredictedUpper = 41 }), nil, 5, 3,
			ScaleState{Desired: 5, Changed: now}, []string{"→ 5", "up from 2"}},
		{"tier 1 on GPU memory", settled, with(func(in *ScaleInputs) { in.GPUMemory = 0.95 }), nil, 3, 1,
			ScaleState{Desired: 3, Changed: now}, []string{"tier 1: GPU memory use 95% above 80%", "up from 2"}},
		{"tier 1 on waiting requests", settled, with(func(in *ScaleInputs) { in.Waiting = 22 }), nil, 5, 1,
			ScaleState{Desired: 5, Changed: now}, []string{"tier 1: 11.0 waiting requests per replica, above 5"}},
		{"tier 2 when P99 nears the SLO", settled, with(func(in *ScaleInputs) { in.P99 = 1.9 }), nil, 3, 2,
			ScaleState{Desired: 3, Changed: now}, []string{"tier 2: P99 1.9s is 95% of the 2s SLO"}},
		{"the highest ask wins", settled, with(func(in *ScaleInputs) { in.P99 = 1.9; in.PredictedUpper = 61 }), nil, 7, 3,
			ScaleState{Desired: 7, Changed: now}, []string{"tier 3"}},
		{"a tie goes to the lower tier", settled, with(func(in *ScaleInputs) { in.P99 = 1.9; in.PredictedUpper = 25 }), nil, 3, 2,
			ScaleState{Desired: 3, Changed: now}, []string{"tier 2"}},
		{"a fall waits for stable intervals", settled, with(func(in *ScaleInputs) { in.PredictedUpper = 5 }), nil, 2, 3,
			ScaleState{Desired: 2, Changed: settled.Changed, Below: 1, BelowMax: 1}, []string{"holding 2: 1 asked for (1 of 3 intervals)"}},
		{"a fall after enough stable intervals", ScaleState{Desired: 4, Changed: now.Add(-time.Hour), Below: 2, BelowMax: 2},
			with(func(in *ScaleInputs) { in.PredictedUpper = 5 }), nil, 2, 3,
			ScaleState{Desired: 2, Changed: now}, []string{"down from 4 after 3 stable intervals"}},
		{"a fall waits for the cooldown", ScaleState{Desired: 4, Changed: now.Add(-2 * time.Minute), Below: 5, BelowMax: 1},
			with(func(in *ScaleInputs) { in.PredictedUpper = 5 }), nil, 4, 3,
			ScaleState{Desired: 4, Changed: now.Add(-2 * time.Minute), Below: 6, BelowMax: 1}, []string{"cooldown until 2026-11-01T12:03:00Z"}},
		{"a steady ask resets the count", ScaleState{Desired: 2, Changed: now.Add(-time.Hour), Below: 2, BelowMax: 1}, quiet, nil, 2, 3,
			settled, nil},
		{"clamped to max", settled, with(func(in *ScaleInputs) { in.PredictedUpper = 500 }), nil, 10, 3,
			ScaleState{Desired: 10, Changed: now}, []string{"capped at max_replicas 10"}},
		{"raised to min", ScaleState{}, with(func(in *ScaleInputs) { in.PredictedUpper = 1; in.PredictedLoad = 1 }),
			func(p *ScalePolicy) { p.MinReplicas = 3 }, 3, 3, ScaleState{Desired: 3, Changed: now}, []string{"raised to min_replicas 3"}},
		{"no forecast: tiers 1 and 2 only", settled, with(func(in *ScaleInputs) { in.HasForecast = false }), nil, 2, 0,
			settled, []string{"nothing to act on", "no forecast yet: tiers 1 and 2 only"}},
		{"no forecast but saturated", settled, with(func(in *ScaleInputs) { in.HasForecast = false; in.Waiting = 30 }), nil, 6, 1,
			ScaleState{Desired: 6, Changed: now}, []string{"tier 1", "no forecast yet"}},
		{"unknown capacity", settled, with(func(in *ScaleInputs) { in.CapacityPerReplica = nan }), nil, 2, 0,
			settled, []string{"capacity per replica unknown"}},
		{"unknown current replicas", ScaleState{Desired: 4, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) {
				in.Current = nan
				in.Waiting = nan
				in.GPUMemory = nan
				in.P99 = nan
				in.PredictedUpper = 45
			}), nil, 5, 3,
			ScaleState{Desired: 5, Changed: now}, []string{"current replicas unknown, taken as 4", "P99 unknown"}},
		{"fallback forecast said so", settled, with(func(in *ScaleInputs) { in.Fallback = "auto needs 1470 points" }), nil, 2, 3,
			settled, []string{"fallback forecast: auto needs 1470 points"}},
		{"no SLO: no tier 2", settled, with(func(in *ScaleInputs) { in.P99 = 100 }), func(p *ScalePolicy) { p.SLOP99 = 0 }, 2, 3, settled, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pol
			if c.pol != nil {
				c.pol(&p)
			}
			sig, next := Decide(c.prev, c.in, p, now)
			if sig.Desired != c.desired || sig.Tier != c.tier || next != c.next {
				t.Errorf("desired %d tier %d next %+v; want %d, %d, %+v\nreason: %s", sig.Desired, sig.Tier, next, c.desired, c.tier, c.next, sig.Reason)
			}
			for _, want := range c.reason {
				if !strings.Contains(sig.Reason, want) {
					t.Errorf("reason %q lacks %q", sig.Reason, want)
				}
			}
			if !sig.ValidUntil.Equal(now.Add(10 * time.Minute)) {
				t.Errorf("valid until %v", sig.ValidUntil)
			}
		})
	}
}

// A load that wobbles around a replica boundary does not make the signal
// flap: it rises at once, and falls only once the lower ask has held.
func TestDecideDoesNotFlap(t *testing.T) {
	pol := ScalePolicy{MinReplicas: 1, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute, ValidFor: time.Minute}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var st ScaleState
	var seq []int
	uppers := []float64{19, 21, 19, 21, 16, 16, 16, 16, 16, 16, 16}
	for i, u := range uppers {
		sig, next := Decide(st, ScaleInputs{Current: float64(max(st.Desired, 2)), CapacityPerReplica: 10, HasForecast: true,
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
	pol := ScalePolicy{MinReplicas: 1, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute, ValidFor: time.Minute}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	st := ScaleState{Desired: 2, Changed: now.Add(-time.Hour)}
	changes := 0
	prev := 2
	for i := range 120 {
		u := 6.6 + 0.6*math.Sin(float64(i)) // 6.0 … 7.2 around a capacity of 7
		sig, next := Decide(st, ScaleInputs{Current: 2, CapacityPerReplica: 7, HasForecast: true,
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
