package rules

import (
	"testing"

	"github.com/inferwatch/inferwatch/forecasting"
)

// TestRefitsAreSpreadOverSteps: of n series due together, at most
// max(16, n/spread) refit at one step; the rest at the following steps,
// so all have refitted within the spread. Up to 16 series refit at once.
func TestRefitsAreSpreadOverSteps(t *testing.T) {
	for _, c := range []struct {
		n, horizon, most int
	}{
		{1, 10, 1}, {16, 10, 16}, {17, 10, 16}, {10000, 40, 250}, {10000, 4, 1000},
	} {
		r := &forecastRule{opts: forecasting.Options{Horizon: c.horizon}}
		may := r.refitBudget(c.n)
		due := c.n
		steps, most := 0, 0
		for t := int64(0); due > 0 && steps < 1000; t++ {
			now := 0
			for range due {
				if may(t) {
					now++
				}
			}
			due -= now
			most = max(most, now)
			steps++
		}
		spread := max(c.horizon, 10)
		if most != c.most || due != 0 || steps > spread {
			t.Errorf("%d series due, horizon %d: at most %d refits a step (want %d), all done in %d steps (want ≤ %d), %d left",
				c.n, c.horizon, most, c.most, steps, spread, due)
		}
	}
}
