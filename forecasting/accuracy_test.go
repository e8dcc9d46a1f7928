package forecasting

import (
	"math"
	"testing"
)

// TestAccuracyByHand: three forecasts whose targets arrive, worked out by
// hand, one whose target never comes, and a replayed target counted once.
func TestAccuracyByHand(t *testing.T) {
	var a Accuracy
	if s := a.Summary(); s.N != 0 || !math.IsNaN(s.MAE) || !math.IsNaN(s.Coverage) || !math.IsNaN(s.NaiveMAE) {
		t.Fatalf("empty summary %+v", s)
	}
	a.Forecast(100, 10, 8, 12, 9)  // actual 11: |e| 1, naive |11−9| 2, inside
	a.Forecast(200, 10, 9, 11, 10) // actual 14: |e| 4, naive 4, outside
	a.Forecast(250, 10, 9, 11, 10) // no sample at 250: forgotten when 300 comes
	a.Forecast(300, 5, 4, 6, 7)    // actual 4: |e| 1, naive 3, inside (bounds included)
	a.Observe(100, 11)
	a.Observe(200, 14)
	a.Observe(300, 4)
	a.Observe(200, 14) // a replay: scored already
	a.Forecast(200, 0, 0, 0, 0)
	a.Observe(200, 14) // older than the newest scored target: not scored again
	s := a.Summary()
	if s.N != 3 || s.MAE != 2 || s.NaiveMAE != 3 || math.Abs(s.Coverage-2.0/3) > 1e-15 {
		t.Fatalf("summary %+v, want N 3, MAE 2, naive MAE 3, coverage 2/3", s)
	}
	a.Forecast(400, 1, 0, 2, 1)
	a.Observe(400, math.NaN()) // a missing actual scores nothing
	if a.Summary().N != 3 {
		t.Fatalf("a NaN actual was scored: %+v", a.Summary())
	}
}

func TestAccuracyKeepsTheLastWindow(t *testing.T) {
	var a Accuracy
	for i := range AccuracyWindow + 10 {
		e := 0.0
		if i >= 10 {
			e = 1 // the first ten forecasts were exact, the rest off by one
		}
		a.Forecast(int64(i), 0, -1, 1, 0)
		a.Observe(int64(i), e)
	}
	if s := a.Summary(); s.N != AccuracyWindow || s.MAE != 1 {
		t.Fatalf("summary %+v, want the last %d forecasts, all off by one", s, AccuracyWindow)
	}
}
