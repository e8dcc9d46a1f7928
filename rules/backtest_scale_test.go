package rules

import (
	"slices"
	"testing"
)

// TestWhatIfAtCost checks the what-if row picked for each scale of the
// errors: short least within the reactive row's replica-minutes, the
// cheaper of equals, else the cheapest.
func TestWhatIfAtCost(t *testing.T) {
	w := func(scale, level, rm, under float64) PolicyFigures {
		return PolicyFigures{Policy: "what-if", ErrorScale: scale, Level: level, ReplicaMinutes: rm, UnderMinutes: under}
	}
	r := PolicyFigures{Policy: "reactive", HPATarget: 1, ReplicaMinutes: 100, UnderMinutes: 50}
	rows := []PolicyFigures{
		{Policy: "forecast", Level: 0.9, ReplicaMinutes: 90, UnderMinutes: 1},
		r,
		// ×1: none within 100; the cheapest is level 0.5.
		w(1, 0.9, 130, 5), w(1, 0.5, 110, 30),
		// ×0.5: levels 0.5 and 0.2 within, short alike; 0.2 is cheaper.
		w(0.5, 0.9, 120, 4), w(0.5, 0.5, 100, 20), w(0.5, 0.2, 95, 20),
		// ×0: within beats a row short less that is not.
		w(0, 0.9, 101, 0), w(0, 0.5, 99, 10),
		{Policy: "foresight", ReplicaMinutes: 90},
	}
	got := WhatIfAtCost(rows, &r)
	want := []PolicyFigures{w(1, 0.5, 110, 30), w(0.5, 0.2, 95, 20), w(0, 0.5, 99, 10)}
	if !slices.Equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if got := WhatIfAtCost(rows[:2], &r); got != nil {
		t.Errorf("no what-if rows: %+v", got)
	}
}

// TestScaleFrontier checks the rows the frontier picks.
func TestScaleFrontier(t *testing.T) {
	f := func(level, rm, under float64) PolicyFigures {
		return PolicyFigures{Policy: "forecast", Level: level, ReplicaMinutes: rm, UnderMinutes: under}
	}
	r := func(target, rm, under float64) PolicyFigures {
		return PolicyFigures{Policy: "reactive", HPATarget: target, ReplicaMinutes: rm, UnderMinutes: under}
	}
	fo := PolicyFigures{Policy: "foresight", ReplicaMinutes: 90}
	for _, tc := range []struct {
		name                 string
		rows                 []PolicyFigures
		within, cheapest     *PolicyFigures
		rWithin, rLeastShort *PolicyFigures
		rAtCost              *PolicyFigures
	}{
		{name: "one of each", rows: []PolicyFigures{f(0.9, 120, 5), r(1, 100, 50), fo}},
		{
			// Within 100 replica-minutes: levels 0.5 (short 30) and 0.2
			// (short 40); 0.5 is short least. Short at most level 0.9's 5
			// minutes: targets 0.7 and 0.6 (both 5): 0.7 is cheaper.
			name:    "both within",
			rows:    []PolicyFigures{f(0.9, 120, 5), f(0.5, 100, 30), f(0.2, 95, 40), r(1, 100, 50), r(0.8, 115, 20), r(0.7, 130, 5), r(0.6, 140, 5), fo},
			within:  &PolicyFigures{Policy: "forecast", Level: 0.5, ReplicaMinutes: 100, UnderMinutes: 30},
			rWithin: &PolicyFigures{Policy: "reactive", HPATarget: 0.7, ReplicaMinutes: 130, UnderMinutes: 5},
			// Within level 0.9's 120 replica-minutes: targets 1 and 0.8;
			// 0.8 is short least.
			rAtCost: &PolicyFigures{Policy: "reactive", HPATarget: 0.8, ReplicaMinutes: 115, UnderMinutes: 20},
		},
		{
			// Equal under-provisioned minutes within: the cheaper wins.
			// Short at most 30 minutes: targets 0.9 and 0.8; 0.9 is cheaper.
			name:    "tie on minutes short",
			rows:    []PolicyFigures{f(0.9, 99, 30), f(0.5, 97, 30), r(1, 100, 50), r(0.9, 105, 30), r(0.8, 115, 20), fo},
			within:  &PolicyFigures{Policy: "forecast", Level: 0.5, ReplicaMinutes: 97, UnderMinutes: 30},
			rWithin: &PolicyFigures{Policy: "reactive", HPATarget: 0.9, ReplicaMinutes: 105, UnderMinutes: 30},
		},
		{
			name:        "none within",
			rows:        []PolicyFigures{f(0.9, 120, 5), f(0.5, 110, 30), r(1, 100, 50), r(0.8, 115, 20), fo},
			cheapest:    &PolicyFigures{Policy: "forecast", Level: 0.5, ReplicaMinutes: 110, UnderMinutes: 30},
			rLeastShort: &PolicyFigures{Policy: "reactive", HPATarget: 0.8, ReplicaMinutes: 115, UnderMinutes: 20},
			rAtCost:     &PolicyFigures{Policy: "reactive", HPATarget: 0.8, ReplicaMinutes: 115, UnderMinutes: 20},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := frontier(tc.rows)
			if tc.within == nil && tc.cheapest == nil && tc.rWithin == nil && tc.rLeastShort == nil && tc.rAtCost == nil {
				if fr != nil {
					t.Errorf("frontier %+v; want none", fr)
				}
				return
			}
			if fr == nil {
				t.Fatal("no frontier")
			}
			same := func(what string, got, want *PolicyFigures) {
				if (got == nil) != (want == nil) || (got != nil && *got != *want) {
					t.Errorf("%s: %+v; want %+v", what, got, want)
				}
			}
			same("forecast within", fr.ForecastWithin, tc.within)
			same("cheapest forecast", fr.CheapestForecast, tc.cheapest)
			same("reactive within", fr.ReactiveWithin, tc.rWithin)
			same("least short reactive", fr.LeastShortReactive, tc.rLeastShort)
			same("reactive at the forecast's cost", fr.ReactiveAtCost, tc.rAtCost)
		})
	}
}
