package rules

import (
	"context"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/forecasting/capacity"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// A perfect what-if forecast scales up before a rise from 9 to 25 req/s; the forecast lane only once it has seen it.
func TestReplayScaleForeseesWithAPerfectForecast(t *testing.T) {
	values := make([]float64, 240)
	for k := range values {
		values[k] = 9
		if k >= 200 {
			values[k] = 25
		}
	}
	start := t0.Add(7 * time.Second)
	sc := rulefmt.DefaultScale()
	sc.CapacityPerReplica, sc.Horizon = 10, 4*time.Minute
	fc := rulefmt.DefaultForecast(time.Minute)
	fc.Period = time.Hour
	lanes, err := ReplayScale(context.Background(), ScaleReplayOptions{Load: capacity.Load{Start: start, Step: time.Minute, Values: values},
		Warmup: 180, Forecast: fc, Scale: sc, Levels: []float64{0.9}, ErrorScales: []float64{0}, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 2 || lanes[0].WhatIf || !lanes[1].WhatIf || lanes[1].ErrorScale != 0 || lanes[0].Level != 0.9 {
		t.Fatalf("lanes %+v", lanes)
	}
	forecast, perfect := lanes[0].Asks(), lanes[1].Asks()
	if len(forecast) != 60 || len(perfect) != 60 {
		t.Fatalf("%d and %d decisions; want 60 each", len(forecast), len(perfect))
	}
	at := func(minute int) int { return minute - 180 }
	if perfect[at(196)] != 1 || perfect[at(197)] != 3 {
		t.Errorf("the perfect forecast asks for %d at minute 196 and %d at 197; want 1 and 3 (%s)", perfect[at(196)], perfect[at(197)], lanes[1].Signals[at(197)].Reason)
	}
	if forecast[at(200)] != 1 || forecast[at(201)] != 3 {
		t.Errorf("the forecast asks for %d at minute 200 and %d at 201; want 1 and 3 (%s)", forecast[at(200)], forecast[at(201)], lanes[0].Signals[at(201)].Reason)
	}
	if got, want := lanes[0].Signals[0].Time, start.Add(180*time.Minute); !got.Equal(want) {
		t.Errorf("the first decision at %v; want %v", got, want)
	}
}

// Requests waiting past scale.waiting_per_replica raise the signal the
// decision after the step they were counted in: 12 waiting on one replica
// asks for ⌈12/5⌉ = 3; without them the flat load keeps one.
func TestReplayScaleReadsTheWaitingRequests(t *testing.T) {
	values, waiting := make([]float64, 240), make([]float64, 240)
	for k := range values {
		values[k] = 9
	}
	waiting[220] = 12
	sc := rulefmt.DefaultScale()
	sc.CapacityPerReplica, sc.Horizon = 10, 4*time.Minute
	fc := rulefmt.DefaultForecast(time.Minute)
	fc.Period = time.Hour
	o := ScaleReplayOptions{Load: capacity.Load{Start: t0, Step: time.Minute, Values: values},
		Warmup: 180, Forecast: fc, Scale: sc, Levels: []float64{0.9}, Replicas: 1}
	plain, err := ReplayScale(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Waiting = waiting
	queued, err := ReplayScale(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	at := func(minute int) int { return minute - 180 }
	p, q := plain[0].Asks(), queued[0].Asks()
	if p[at(221)] != 1 || q[at(220)] != 1 || q[at(221)] != 3 {
		t.Errorf("at minutes 220 and 221: %d and %d with the queue (%s), %d without; want 1 and 3, and 1",
			q[at(220)], q[at(221)], queued[0].Signals[at(221)].Reason, p[at(221)])
	}
	o.Waiting = waiting[:10]
	if _, err := ReplayScale(context.Background(), o); err == nil {
		t.Error("waiting requests for fewer steps than the load: no error")
	}
}
