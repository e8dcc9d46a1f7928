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

// TestAccuracyKeepsTheLastWindow: up to AccuracyWindow scored forecasts
// are all kept; after that the oldest block of 50 goes as a new one
// starts, so the summary covers the last 951 to 1,000.
func TestAccuracyKeepsTheLastWindow(t *testing.T) {
	var a Accuracy
	score := func(from, to int, e float64) {
		for i := from; i < to; i++ {
			a.Forecast(int64(i), 0, -1, 1, 0)
			a.Observe(int64(i), e)
		}
	}
	score(0, 10, 0) // the first ten forecasts exact, the rest off by 2 (outside)
	score(10, AccuracyWindow, 2)
	if s := a.Summary(); s.N != AccuracyWindow || s.MAE != 2*990.0/1000 || s.NaiveMAE != s.MAE || s.Coverage != 10.0/1000 {
		t.Fatalf("summary %+v, want all %d forecasts: MAE 1.98, coverage 0.01", s, AccuracyWindow)
	}
	score(AccuracyWindow, AccuracyWindow+1, 2) // the first block goes with the ten exact ones
	if s := a.Summary(); s.N != AccuracyWindow-49 || s.MAE != 2 || s.Coverage != 0 {
		t.Fatalf("summary %+v, want the last %d forecasts, all off by 2", s, AccuracyWindow-49)
	}
	score(AccuracyWindow+1, AccuracyWindow+50, 2)
	if s := a.Summary(); s.N != AccuracyWindow {
		t.Fatalf("summary %+v, want %d forecasts once the new block is full", s, AccuracyWindow)
	}
	score(AccuracyWindow+50, 5*AccuracyWindow+7, 1)
	if s := a.Summary(); s.N != AccuracyWindow-50+7 || s.MAE != 1 || s.Coverage != 1 {
		t.Fatalf("summary %+v, want the last %d forecasts, all off by 1 (inside)", s, AccuracyWindow-43)
	}
}

// TestAccuracyForecastReplacesItsTarget: a second forecast of a target
// replaces the first, and forecasts remembered out of order are scored
// by their targets.
func TestAccuracyForecastReplacesItsTarget(t *testing.T) {
	var a Accuracy
	a.Forecast(300, 5, 4, 6, 5)
	a.Forecast(100, 1, 0, 2, 1)
	a.Forecast(300, 3, 2, 4, 3) // replaces the first
	a.Forecast(200, 2, 1, 3, 2)
	a.Observe(100, 1.5) // |e| 0.5, inside
	a.Observe(300, 3)   // 200 forgotten; |e| 0, inside
	if s := a.Summary(); s.N != 2 || s.MAE != 0.25 || s.NaiveMAE != 0.25 || s.Coverage != 1 {
		t.Fatalf("summary %+v, want N 2, MAE 0.25, naive MAE 0.25, coverage 1", s)
	}
}
