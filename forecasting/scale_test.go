package forecasting

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	nan := math.NaN()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pol := ScalePolicy{MinReplicas: 1, MaxReplicas: 10, ScaleDownStableIntervals: 3, Cooldown: 5 * time.Minute,
		GPUMemoryHigh: 0.8, WaitingPerReplica: 5, P99Near: 0.9, SLOP99: 2, ValidFor: 10 * time.Minute}
	quiet := ScaleInputs{Current: 2, CapacityPerReplica: 10, HasForecast: true, PredictedLoad: 12, PredictedUpper: 15,
		PeakTime: now.Add(7 * time.Minute), GPUMemory: 0.5, Waiting: 2, P99: 1}
	with := func(f func(*ScaleInputs)) ScaleInputs { in := quiet; f(&in); return in }
	low := func(in *ScaleInputs) { in.PredictedLoad, in.PredictedUpper = 4, 5 }
	settled := ScaleState{Desired: 2, Changed: now.Add(-time.Hour)}
	cases := []struct {
		name    string
		prev    ScaleState
		in      ScaleInputs
		pol     func(*ScalePolicy)
		desired int
		tier    int
		next    ScaleState
		reason  string
	}{
		{"tier 3 holds at the forecast's need", settled, quiet, nil, 2, 3, settled,
			"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: holding 2."},
		{"tier 3 scales up at once", settled, with(func(in *ScaleInputs) { in.PredictedUpper = 41 }), nil, 5, 3,
			ScaleState{Desired: 5, Changed: now},
			"Forecast peak 12 req/s (upper 41) by 12:07 UTC needs 5 replicas at 10 req/s each: scaling up from 2."},
		{"the first decision starts", ScaleState{}, quiet, nil, 2, 3, ScaleState{Desired: 2, Changed: now},
			"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: starting at 2."},
		{"a forecast without an interval", settled, with(func(in *ScaleInputs) { in.PredictedUpper = nan; in.PeakTime = time.Time{} }), nil, 2, 3, settled,
			"Forecast peak 12 req/s needs 2 replicas at 10 req/s each: holding 2."},
		{"a peak on the next day", settled, with(func(in *ScaleInputs) { in.PeakTime = now.Add(13 * time.Hour) }), nil, 2, 3, settled,
			"Forecast peak 12 req/s (upper 15) by Nov 2 01:00 UTC needs 2 replicas at 10 req/s each: holding 2."},
		{"a peak between minutes, at ten-second steps", settled, with(func(in *ScaleInputs) { in.PeakTime = now.Add(7*time.Minute + 50*time.Second) }), nil, 2, 3, settled,
			"Forecast peak 12 req/s (upper 15) by 12:07:50 UTC needs 2 replicas at 10 req/s each: holding 2."},
		{"tier 1 on GPU memory", settled, with(func(in *ScaleInputs) { in.GPUMemory = 0.95 }), nil, 3, 1,
			ScaleState{Desired: 3, Changed: now},
			"GPU memory use at 95 % (above 80 %) needs 3 replicas: scaling up from 2."},
		{"tier 1 on waiting requests", settled, with(func(in *ScaleInputs) { in.Waiting = 22 }), nil, 5, 1,
			ScaleState{Desired: 5, Changed: now},
			"11 waiting requests per replica (above 5) need 5 replicas: scaling up from 2."},
		{"tier 2 when P99 nears the SLO", settled, with(func(in *ScaleInputs) { in.P99 = 1.9 }), nil, 3, 2,
			ScaleState{Desired: 3, Changed: now},
			"P99 of 1.9 s at 95 % of the 2 s SLO needs 3 replicas: scaling up from 2."},
		{"the highest ask wins", settled, with(func(in *ScaleInputs) { in.P99 = 1.9; in.PredictedUpper = 61 }), nil, 7, 3,
			ScaleState{Desired: 7, Changed: now},
			"Forecast peak 12 req/s (upper 61) by 12:07 UTC needs 7 replicas at 10 req/s each: scaling up from 2."},
		{"a tie goes to the lower tier", settled, with(func(in *ScaleInputs) { in.P99 = 1.9; in.PredictedUpper = 25 }), nil, 3, 2,
			ScaleState{Desired: 3, Changed: now},
			"P99 of 1.9 s at 95 % of the 2 s SLO needs 3 replicas: scaling up from 2."},
		{"the hysteresis band holds", settled, with(func(in *ScaleInputs) { in.PredictedLoad, in.PredictedUpper = 8.8, 9.2 }), nil, 2, 3, settled,
			"Forecast peak 8.8 req/s (upper 9.2) by 12:07 UTC would fit 1 replica at 10 req/s each, but 1 would run above 85 % of its capacity at the forecast peak: holding 2."},
		{"the band holds a saturation ask", ScaleState{Desired: 4, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) { in.GPUMemory = 0.95; in.PredictedLoad, in.PredictedUpper = 28, 30 }), nil, 4, 1, ScaleState{Desired: 4, Changed: now.Add(-time.Hour)},
			"GPU memory use at 95 % (above 80 %) needs 3 replicas, but on the forecast 3 would run above 85 % of their capacity at the forecast peak: holding 4."},
		{"a fall waits for stable intervals", settled, with(low), nil, 2, 3,
			ScaleState{Desired: 2, Changed: settled.Changed, Below: 1, BelowMax: 1},
			"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: holding 2 until 3 evaluations in a row ask for fewer (1 so far)."},
		{"a fall keeps the band's headroom", ScaleState{Desired: 5, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) { in.PredictedLoad, in.PredictedUpper = 17.5, 18 }), nil, 5, 3,
			ScaleState{Desired: 5, Changed: now.Add(-time.Hour), Below: 1, BelowMax: 3},
			"Forecast peak 17.5 req/s (upper 18) by 12:07 UTC needs 2 replicas at 10 req/s each, 3 to run below 85 % of their capacity at the forecast peak: holding 5 until 3 evaluations in a row ask for fewer (1 so far)."},
		{"an interval wider than the band is headroom enough", ScaleState{Desired: 5, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) { in.PredictedUpper = 18 }), nil, 5, 3,
			ScaleState{Desired: 5, Changed: now.Add(-time.Hour), Below: 1, BelowMax: 2},
			"Forecast peak 12 req/s (upper 18) by 12:07 UTC needs 2 replicas at 10 req/s each: holding 5 until 3 evaluations in a row ask for fewer (1 so far)."},
		{"a fall keeps the forecast's headroom under a saturation ask", ScaleState{Desired: 6, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) { in.GPUMemory = 0.95; in.PredictedLoad, in.PredictedUpper = 26, 27 }), nil, 6, 1,
			ScaleState{Desired: 6, Changed: now.Add(-time.Hour), Below: 1, BelowMax: 4},
			"GPU memory use at 95 % (above 80 %) needs 3 replicas, and the forecast peak 4 to run below 85 % of their capacity: holding 6 until 3 evaluations in a row ask for fewer (1 so far)."},
		{"a fall after enough stable intervals", ScaleState{Desired: 4, Changed: now.Add(-time.Hour), Below: 2, BelowMax: 1},
			with(low), nil, 1, 3, ScaleState{Desired: 1, Changed: now},
			"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: scaling down from 4 after 3 evaluations in a row asked for fewer."},
		{"a fall to the most the stable intervals asked for", ScaleState{Desired: 4, Changed: now.Add(-time.Hour), Below: 2, BelowMax: 2},
			with(low), nil, 2, 3, ScaleState{Desired: 2, Changed: now},
			"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: scaling down from 4 to 2, the most the last 3 evaluations asked for."},
		{"a fall with one stable interval", ScaleState{Desired: 4, Changed: now.Add(-time.Hour)},
			with(low), func(p *ScalePolicy) { p.ScaleDownStableIntervals = 1 }, 1, 3, ScaleState{Desired: 1, Changed: now},
			"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: scaling down from 4."},
		{"a fall waits for the cooldown", ScaleState{Desired: 4, Changed: now.Add(-2 * time.Minute), Below: 5, BelowMax: 1},
			with(low), nil, 4, 3, ScaleState{Desired: 4, Changed: now.Add(-2 * time.Minute), Below: 6, BelowMax: 1},
			"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: holding 4 until the cooldown ends at 12:03 UTC."},
		{"a fall waits for both", ScaleState{Desired: 4, Changed: now.Add(-2 * time.Minute)},
			with(low), nil, 4, 3, ScaleState{Desired: 4, Changed: now.Add(-2 * time.Minute), Below: 1, BelowMax: 1},
			"Forecast peak 4 req/s (upper 5) by 12:07 UTC needs 1 replica at 10 req/s each: holding 4 until the cooldown ends at 12:03 UTC and 3 evaluations in a row ask for fewer (1 so far)."},
		{"a steady ask resets the count", ScaleState{Desired: 2, Changed: now.Add(-time.Hour), Below: 2, BelowMax: 1}, quiet, nil, 2, 3,
			settled, "Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: holding 2."},
		{"capped at max", settled, with(func(in *ScaleInputs) { in.PredictedUpper = 500 }), nil, 10, 3,
			ScaleState{Desired: 10, Changed: now},
			"Forecast peak 12 req/s (upper 500) by 12:07 UTC needs 50 replicas at 10 req/s each, capped at max_replicas 10: scaling up from 2 to 10."},
		{"raised to min", ScaleState{}, with(func(in *ScaleInputs) { in.PredictedUpper = 1; in.PredictedLoad = 1 }),
			func(p *ScalePolicy) { p.MinReplicas = 3 }, 3, 3, ScaleState{Desired: 3, Changed: now},
			"Forecast peak 1 req/s by 12:07 UTC needs 1 replica at 10 req/s each, raised to min_replicas 3: starting at 3."},
		{"no forecast: tiers 1 and 2 only", settled, with(func(in *ScaleInputs) { in.HasForecast = false }), nil, 2, 0,
			settled, "With nothing to act on, the current 2 replicas stand: holding 2 (no forecast yet: tiers 1 and 2 only)."},
		{"nothing to act on follows the current replicas down", ScaleState{Desired: 3, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) {
				in.HasForecast = false
				in.Current = 1
				in.NoForecast = "forecast rule \"rate\" has no series matching {model=\"a\"}"
			}), nil, 3, 0,
			ScaleState{Desired: 3, Changed: now.Add(-time.Hour), Below: 1, BelowMax: 1},
			"With nothing to act on, the current 1 replica stands: holding 3 until 3 evaluations in a row ask for fewer (1 so far) (forecast rule \"rate\" has no series matching {model=\"a\"}: tiers 1 and 2 only)."},
		{"no forecast but saturated", settled, with(func(in *ScaleInputs) { in.HasForecast = false; in.Waiting = 30 }), nil, 6, 1,
			ScaleState{Desired: 6, Changed: now},
			"15 waiting requests per replica (above 5) need 6 replicas: scaling up from 2 (no forecast yet: tiers 1 and 2 only)."},
		{"unknown capacity", settled, with(func(in *ScaleInputs) { in.CapacityPerReplica = nan }), nil, 2, 0,
			settled, "With nothing to act on, the current 2 replicas stand: holding 2 (capacity per replica unknown: tiers 1 and 2 only)."},
		{"unknown current replicas", ScaleState{Desired: 4, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) {
				in.Current = nan
				in.Waiting = nan
				in.GPUMemory = nan
				in.P99 = nan
				in.PredictedUpper = 45
				in.Notes = []string{"gpu_memory unknown: 2 of its series match {model=\"a\"}; aggregate it by the on labels"}
			}), nil, 5, 3,
			ScaleState{Desired: 5, Changed: now},
			"Forecast peak 12 req/s (upper 45) by 12:07 UTC needs 5 replicas at 10 req/s each: scaling up from 4 (current replicas unknown, taken as 4; P99 unknown; gpu_memory unknown: 2 of its series match {model=\"a\"}; aggregate it by the on labels)."},
		{"fallback forecast said so", settled, with(func(in *ScaleInputs) { in.Fallback = "auto needs 1470 points" }), nil, 2, 3,
			settled, "Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: holding 2 (fallback forecast: auto needs 1470 points)."},
		{"no SLO: no tier 2", settled, with(func(in *ScaleInputs) { in.P99 = 100 }), func(p *ScalePolicy) { p.SLOP99 = 0 }, 2, 3, settled,
			"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: holding 2."},
		{"a load seen within the hold asks for more than the forecast", settled,
			with(func(in *ScaleInputs) { in.HeldPeak, in.HeldAt = 41, now.Add(-12*time.Minute) }),
			func(p *ScalePolicy) { p.Hold = 30 * time.Minute }, 5, 3, ScaleState{Desired: 5, Changed: now},
			"The highest load of the last 30m, 41 req/s at 11:48 UTC, above the forecast peak 12 req/s (upper 15) by 12:07 UTC, needs 5 replicas at 10 req/s each: scaling up from 2."},
		{"a load seen within the hold keeps the replicas after the forecast falls", ScaleState{Desired: 5, Changed: now.Add(-time.Hour)},
			with(func(in *ScaleInputs) { low(in); in.HeldPeak, in.HeldAt = 41, now.Add(-90*time.Minute) }),
			func(p *ScalePolicy) { p.Hold = 2 * time.Hour }, 5, 3, ScaleState{Desired: 5, Changed: now.Add(-time.Hour)},
			"The highest load of the last 2h, 41 req/s at 10:30 UTC, above the forecast peak 4 req/s (upper 5) by 12:07 UTC, needs 5 replicas at 10 req/s each: holding 5."},
		{"a load held below the forecast's upper bound leaves the forecast to speak", settled,
			with(func(in *ScaleInputs) { in.HeldPeak, in.HeldAt = 14, now.Add(-time.Minute) }),
			func(p *ScalePolicy) { p.Hold = 30 * time.Minute }, 2, 3, settled,
			"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: holding 2."},
		{"without a hold a load held is not asked for", settled,
			with(func(in *ScaleInputs) { in.HeldPeak, in.HeldAt = 41, now.Add(-time.Minute) }), nil, 2, 3, settled,
			"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: holding 2."},
		{"an unknown load held is not asked for", settled,
			with(func(in *ScaleInputs) { in.HeldPeak = nan }), func(p *ScalePolicy) { p.Hold = 30 * time.Minute }, 2, 3, settled,
			"Forecast peak 12 req/s (upper 15) by 12:07 UTC needs 2 replicas at 10 req/s each: holding 2."},
		{"large and small figures", settled, with(func(in *ScaleInputs) {
			in.PredictedLoad, in.PredictedUpper, in.CapacityPerReplica = 1234.5, 1502.25, 0.0125
		}), func(p *ScalePolicy) { p.MaxReplicas = 0 }, 120180, 3, ScaleState{Desired: 120180, Changed: now},
			"Forecast peak 1234 req/s (upper 1502) by 12:07 UTC needs 120180 replicas at 0.0125 req/s each: scaling up from 2."},
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
			if sig.Reason != c.reason {
				t.Errorf("reason\n  %s\nwant\n  %s", sig.Reason, c.reason)
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

func TestDecideReactive(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pol := ReactivePolicy{MinReplicas: 1, MaxReplicas: 6, ScaleDownWindow: 5 * time.Minute}
	// One decision a minute; the load each saw over the last minute.
	f := func(name string, p ReactivePolicy, loads []float64, want []int) {
		t.Helper()
		var st ReactiveState
		got := make([]int, len(loads))
		for i, l := range loads {
			st = DecideReactive(st, l, 10, p, now.Add(time.Duration(i)*time.Minute))
			got[i] = st.Desired
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: desired %v, want %v", name, got, want)
		}
	}
	// ⌈load / capacity⌉ at once on a rise; on a fall the highest
	// recommendation of the last five minutes (the one five minutes old
	// is out of the window).
	f("rise at once, fall after the window", pol, []float64{12, 35, 35, 8, 8, 8, 8, 8, 8}, []int{2, 4, 4, 4, 4, 4, 4, 1, 1})
	f("a fall to the highest in the window", pol, []float64{45, 25, 15, 15, 15, 15, 15, 15}, []int{5, 5, 5, 5, 5, 3, 2, 2})
	f("clamped", pol, []float64{0, 100, math.NaN(), 0}, []int{1, 6, 6, 6})
	f("no window: down at once", ReactivePolicy{MinReplicas: 1}, []float64{35, 8, 20}, []int{4, 1, 2})
	f("a target below the capacity", ReactivePolicy{MinReplicas: 1, Target: 0.8}, []float64{8, 8.1, 16}, []int{1, 2, 2})
}

func TestFleet(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	m := func(n int) time.Time { return at.Add(time.Duration(n) * time.Minute) }
	f := &Fleet{Startup: 3 * time.Minute}
	f.Start(2, m(0))
	var p Provisioning
	// 0–10: 25 req/s on 2 ready replicas of 10: 10 minutes short by 5.
	f.Serve(25, 10, m(0), m(10), &p)
	// Ask for 4 at 10: two start, ready at 13. 10–20 at 35 req/s: short
	// until 13 by 15.
	f.Set(4, m(10))
	if f.Allocated() != 4 || f.Ready(m(12)) != 2 || f.Ready(m(13)) != 4 {
		t.Fatalf("allocated %d, ready %d at 12 and %d at 13", f.Allocated(), f.Ready(m(12)), f.Ready(m(13)))
	}
	f.Serve(35, 10, m(10), m(20), &p)
	// Up to 5 at 20, then down to 3 at 21: the starting one goes first,
	// then the youngest ready one.
	f.Set(5, m(20))
	f.Set(3, m(21))
	if f.Allocated() != 3 || f.Ready(m(21)) != 3 {
		t.Fatalf("after a rise and a fall: allocated %d, ready %d", f.Allocated(), f.Ready(m(21)))
	}
	f.Serve(math.NaN(), 10, m(21), m(25), &p) // an unknown load is paid for, not judged
	want := Provisioning{ReplicaMinutes: 2*10 + 4*10 + 3*4, Minutes: 24, UnknownMinutes: 4, UnderMinutes: 10 + 3, WorstShortfall: 15}
	if p != want {
		t.Errorf("tally %+v, want %+v", p, want)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "30m", time.Hour: "1h", 90 * time.Minute: "1h30m", 48 * time.Hour: "2d", 36 * time.Hour: "36h", 45 * time.Second: "45s",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
}
