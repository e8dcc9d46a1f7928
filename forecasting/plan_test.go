package forecasting

import (
	"math"
	"testing"
	"time"
)

// The upper end at a plan level comes from the same errors as the
// interval at Level: the (1+level)/2 bound of each lead's window, the
// interpolation of two knots' between them, and the σ√h band at that
// level's normal quantile where a lead has too few errors.
func TestPlanUpperByHand(t *testing.T) {
	o := Options{Horizon: 5, Level: 0.9, PlanLevels: []float64{0.8, 0.5}, MinCalibration: 10}
	k := newTrackerState(&fixed{}, 5, calibration{size: 100, stride: 1, minute: 2, dense: 100, keep: 10}, false) // knots 1, 2, 4, 5
	for i := -9; i <= 9; i++ {
		k.win[0].push(float64(i))     // lead 1: −9..9, median 0, RMS √30
		k.win[1].push(float64(2 * i)) // lead 2: twice those
		k.win[2].push(float64(4 * i)) // lead 4: four times
	}
	for i := -2; i <= 2; i++ {
		k.win[3].push(float64(i)) // lead 5: 5 errors, below MinCalibration
	}
	for i := range k.cur {
		k.cur[i] = 100
	}
	var fc Forecast
	fc.setLen(5)
	fillForecast(&fc, k, &o, normalQuantile(0.9), 0, false)
	// With 19 errors the upper bound at level L is the ⌈20(1+L)/2⌉-th
	// smallest: the 19th (9) at 0.9, the 18th (8) at 0.8 and the 15th (5)
	// at 0.5. Lead 3 is halfway between leads 2 and 4. Lead 5 has a band
	// of z·√30·√5 = z·√150, z = 1.6448536, 1.2815516 and 0.6744898.
	band := func(z float64) float64 { return 100 + z*math.Sqrt(150) }
	want := map[float64][]float64{
		0.9: {109, 118, 127, 136, band(1.6448536)},
		0.8: {108, 116, 124, 132, band(1.2815516)},
		0.5: {105, 110, 115, 120, band(0.6744898)},
	}
	check := func(level float64, got []float64) {
		t.Helper()
		for i, w := range want[level] {
			if math.Abs(got[i]-w) > 1e-3 { // the bounds keep 100·2⁻²² of room
				t.Errorf("level %g lead %d: upper %g, want %g", level, i+1, got[i], w)
			}
		}
	}
	check(0.9, fc.Upper)
	if len(fc.Plans) != 2 || fc.Plans[0].Level != 0.8 || fc.Plans[1].Level != 0.5 {
		t.Fatalf("plans %+v, want levels 0.8 and 0.5", fc.Plans)
	}
	check(0.8, fc.Plans[0].Upper)
	check(0.5, fc.Plans[1].Upper)
	// The lower end at 0.5 (its upper) is above the interval's lower end
	// everywhere; a plan's upper is never below it.
	for i := range fc.Lower {
		if fc.Plans[1].Upper[i] < fc.Lower[i] {
			t.Errorf("lead %d: plan upper %g below the lower end %g", i+1, fc.Plans[1].Upper[i], fc.Lower[i])
		}
	}

	// UpperWithin takes the peak over the first leads at a level: Upper's
	// at the forecast's own, a plan's at its, none at another.
	fc.Level = 0.9
	for _, c := range []struct {
		level float64
		leads int
		want  float64
	}{{0.9, 2, 118}, {0.8, 3, 124}, {0.5, 4, 120}, {0.8, 99, 132}} {
		got, ok := fc.UpperWithin(c.level, c.leads)
		if !ok || math.Abs(got-c.want) > 1e-3 {
			t.Errorf("UpperWithin(%g, %d) = %g, %v; want %g", c.level, c.leads, got, ok, c.want)
		}
	}
	if _, ok := fc.UpperWithin(0.95, 5); ok {
		t.Error("UpperWithin(0.95) is ok on a forecast that carries no upper end at 0.95")
	}
}

// A plan at the forecast's own level is its Upper, lead by lead, and a
// plan level outside (0, 1) is refused.
func TestPlanAtOwnLevel(t *testing.T) {
	y := perStep(time.Minute, 3)
	f, err := New(Options{Step: time.Minute, Level: 0.9, PlanLevels: []float64{0.9, 0.95}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fit(0, y[:2*1440]); err != nil {
		t.Fatal(err)
	}
	for i := 2 * 1440; i < 2*1440+600; i++ {
		if err := f.Update(int64(i)*60_000, y[i]); err != nil {
			t.Fatal(err)
		}
		fc := f.Forecast()
		for l := range fc.Upper {
			if fc.Plans[0].Upper[l] != fc.Upper[l] {
				t.Fatalf("sample %d lead %d: plan at 0.9 %g, upper %g", i, l+1, fc.Plans[0].Upper[l], fc.Upper[l])
			}
			if fc.Plans[1].Upper[l] < fc.Upper[l] {
				t.Fatalf("sample %d lead %d: plan at 0.95 %g below the upper at 0.9 %g", i, l+1, fc.Plans[1].Upper[l], fc.Upper[l])
			}
		}
	}
	for _, l := range []float64{0, 1, -0.5, math.NaN()} {
		if _, err := New(Options{Step: time.Minute, PlanLevels: []float64{l}}); err == nil {
			t.Errorf("plan level %g: no error", l)
		}
	}
}
