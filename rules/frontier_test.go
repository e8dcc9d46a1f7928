package rules

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/forecasting/capacity"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// TestStudyFrontier replays three days of a daily load at minute steps and
// checks each HPA point against the controller replayed alone, each signal
// point against the scale rule replayed alone, and each ratio against the
// frontier drawn from those points.
func TestStudyFrontier(t *testing.T) {
	const steps = 3 * 1440
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	load := make([]float64, steps)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range load {
		load[i] = max(0, 50+40*math.Sin(2*math.Pi*float64(i)/1440)+12*rng.NormFloat64())
	}
	fc := rulefmt.DefaultForecast(time.Minute)
	fc.Model = "naive"
	b := ScaleBacktest{T0: t0.UnixMilli(), Step: time.Minute, Load: load, Capacity: 10, Warmup: 1440,
		Forecast: fc, Scale: rulefmt.DefaultScale(), Levels: []float64{0.9}}
	o := FrontierOptions{Startups: []time.Duration{time.Minute, 5 * time.Minute}, Targets: []float64{0.5, 0.75, 1},
		Margins: []float64{0.15}, Models: []string{"naive"}, Bootstrap: 50, Level: 0.9, Seed: 1}
	rep, err := StudyFrontier(context.Background(), b, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Days != 2 || rep.Decisions != 2880 || len(rep.Startups) != 2 || len(rep.Crossovers) != 1 {
		t.Fatalf("%d days, %d decisions, %d start-ups, %d crossovers", rep.Days, rep.Decisions, len(rep.Startups), len(rep.Crossovers))
	}
	l := capacity.Load{Start: t0, Step: time.Minute, Values: load}
	n0 := capacity.Needed(load[1439], 10, 1, 0)
	for si, st := range rep.Startups {
		startup := o.Startups[si]
		var hpa []capacity.Point
		for ti, target := range o.Targets {
			p := capacity.ServeAsks(l, 1440, capacity.HPA{Target: target, MinReplicas: 1}.Run(l, 1440, n0, 10), n0, 10, startup)
			got := st.HPA[ti]
			if got.ReplicaMinutes != p.ReplicaMinutes || got.UnderMinutes != p.UnderMinutes || got.Changes != p.Changes {
				t.Errorf("start-up %v, target %g: %+v, the controller alone %+v", startup, target, got, p)
			}
			hpa = append(hpa, capacity.Point{ReplicaMinutes: p.ReplicaMinutes, UnderMinutes: p.UnderMinutes})
		}
		sc := b.Scale
		sc.CapacityPerReplica, sc.Startup, sc.Horizon, sc.ScaleDownMargin = 10, startup, min(time.Minute+startup, fc.Horizon), 0.15
		lanes, err := ReplayScale(context.Background(), ScaleReplayOptions{Load: l, Warmup: 1440, Forecast: fc, Scale: sc, Levels: b.Levels, Replicas: n0})
		if err != nil {
			t.Fatal(err)
		}
		p := capacity.Serve(l, 1440, lanes[0].Asks(), n0, 10, startup)
		got := st.Signal[0]
		if got.ReplicaMinutes != p.ReplicaMinutes || got.UnderMinutes != p.UnderMinutes || got.Changes != p.Changes {
			t.Errorf("start-up %v: signal %+v, the scale rule alone %+v", startup, got, p)
		}
		want := capacity.RatioAtCost(capacity.Point{ReplicaMinutes: p.ReplicaMinutes, UnderMinutes: p.UnderMinutes}, hpa)
		if r := float64(got.Ratio); !(r == want || math.IsNaN(r) && math.IsNaN(want)) {
			t.Errorf("start-up %v: ratio %v, want %v", startup, r, want)
		}
		if !math.IsNaN(want) && !(float64(got.Lo) <= want && want <= float64(got.Hi)) {
			t.Errorf("start-up %v: interval [%v, %v] misses the ratio %v", startup, got.Lo, got.Hi, want)
		}
		t.Logf("start-up %v: HPA %v; signal %.0f / %.0f, ratio %.3f [%.3f, %.3f]", startup, hpa, p.ReplicaMinutes, p.UnderMinutes, want, got.Lo, got.Hi)
	}
	for _, bad := range []struct {
		name string
		o    FrontierOptions
		step time.Duration
	}{
		{"start-ups not ascending", FrontierOptions{Startups: []time.Duration{5 * time.Minute, time.Minute}, Targets: o.Targets, Margins: o.Margins, Models: o.Models}, time.Minute},
		{"ten-minute steps", o, 10 * time.Minute},
	} {
		bb := b
		bb.Step = bad.step
		if _, err := StudyFrontier(context.Background(), bb, bad.o); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}
