package forecasting

import (
	"math"
	"slices"
	"testing"
	"time"
)

// A combination's tracker assembled from its members' records equals one that replays the combination itself.
func TestCombineTrackersMatchesReplay(t *testing.T) {
	y := seasonalSeries(3, 5)
	f := func(h, stride int) {
		t.Helper()
		const calib = 60
		n := len(y)
		// The replay's first origin, n−v−1, is a multiple of the stride,
		// as the combination's origins (indices into y) are counted.
		v := 99 + (n-1)%stride
		names := []string{ModelNaive, ModelSES, ModelMean}
		var vals []*validation
		var models []model
		for _, name := range names {
			m, _ := newModel(name, 144, h)
			if err := m.fit(y[:n-v]); err != nil {
				t.Fatal(err)
			}
			tr := newTracker(m, h, calibration{size: calib, stride: stride, minute: stride, dense: 40, keep: 10}, true)
			tr.record = true
			tr.rows = [][]float64{append([]float64(nil), tr.current()...)}
			for _, x := range y[n-v:] {
				tr.observe(x)
			}
			vals = append(vals, &validation{tr: tr, start: n - v - 1, rows: tr.rows})
			m2, _ := newModel(name, 144, h)
			models = append(models, m2)
		}
		got := combineTrackers(vals, y, n-v-1, h, calibration{size: calib, stride: stride, minute: stride, dense: 40, keep: 10}, true)

		c := &combo{members: models, clip: true}
		if err := c.fit(y[:n-v]); err != nil {
			t.Fatal(err)
		}
		want := newTracker(c, h, calibration{size: calib, stride: stride, minute: stride, dense: 40, keep: 10}, true)
		for _, x := range y[n-v:] {
			want.observe(x)
		}
		if g, w := got.m.name(), "combo(naive+ses+mean)"; g != w {
			t.Fatalf("name %q, want %q", g, w)
		}
		if !slices.Equal(got.knots, want.knots) {
			t.Fatalf("knots %v, want %v", got.knots, want.knots)
		}
		sameErrors := func(when string) {
			t.Helper()
			for k, l := range got.knots {
				a, b := got.win[k], want.win[k]
				if a.len() != b.len() {
					t.Fatalf("stride %d, %s: lead %d: %d errors, want %d", stride, when, l, a.len(), b.len())
				}
				for i := range a.len() {
					if math.Abs(a.at(i)-b.at(i)) > 1e-9 {
						t.Fatalf("stride %d, %s: lead %d: error %d is %g, want %g", stride, when, l, i, a.at(i), b.at(i))
					}
				}
			}
		}
		sameErrors("after the replay")
		for _, x := range []float64{210, 190, math.NaN(), 205, 199, 201, 230, 180} {
			got.observe(x)
			want.observe(x)
			for i, v := range got.current() {
				if math.Abs(v-want.current()[i]) > 1e-9 {
					t.Fatalf("stride %d, after %g: forecasts %v, want %v", stride, x, got.current(), want.current())
				}
			}
		}
		sameErrors("after eight more samples")
	}
	f(4, 1)
	f(7, 3)
}

// A zero far below the interval is an outage: the forecast from it is
// zero, with the interval reaching back to the usual level. A zero among
// low counts is ordinary and changes nothing.
func TestOutage(t *testing.T) {
	f := func(name string, y []float64, wantOutage bool) {
		t.Helper()
		fc, err := New(Options{Step: 10 * time.Minute, Horizon: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := fc.Fit(0, y); err != nil {
			t.Fatal(err)
		}
		var outs []Forecast
		for i, v := range []float64{0, 0} {
			if err := fc.Update(int64(len(y)+i)*600_000, v); err != nil {
				t.Fatal(err)
			}
			outs = append(outs, fc.Forecast())
		}
		for i, o := range outs {
			zero := slices.Max(o.Mean) == 0
			if zero != wantOutage || o.Upper[0] <= 0 {
				t.Fatalf("%s: after %d zeros mean %v upper %v; want an outage: %v", name, i+1, o.Mean, o.Upper, wantOutage)
			}
		}
	}
	f("rate", seasonalSeries(3, 11), true)
	counts := syntheticDaily(make144(3), 3, 3, 4) // about 3 per step
	f("low counts", counts[:3*144], false)
}

func make144(v float64) []float64 {
	s := make([]float64, 144)
	for i := range s {
		s[i] = v
	}
	return s
}

func TestClearlyBetterByHand(t *testing.T) {
	// Targets y[1..4] = 10 at lead 1 from origins 0..3, and y[5] a gap.
	y := []float64{0, 10, 10, 10, 10, math.NaN()}
	at := func(errs ...float64) func(o int) float64 { return func(o int) float64 { return 10 + errs[o] } }
	guard := at(3, -1, 3, 1, 0)
	for _, c := range []struct {
		name string
		win  func(o int) float64
		thin int
		want bool
	}{
		// Differences 3, 1, 3, 1: mean 2, standard error √(4/3)/2 ≈ 0.58.
		{"a steady gain", at(0, 0, 0, 0, 0), 100, true},
		// Differences 3, −1, 3, −1: mean 1, standard error √(16/3)/2 ≈ 1.15.
		{"a gain within its error", at(0, 2, 0, -2, 0), 100, false},
		{"the same, judged on enough origins", at(0, 2, 0, -2, 0), 4, true},
		// Differences 0: no gain.
		{"no gain", guard, 100, false},
	} {
		if got := clearlyBetter(y, 1, 0, c.thin, c.win, guard); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if clearlyBetter(y, 1, 3, 100, at(0, 0, 0, 0, 0), guard) {
		t.Error("one origin: clearly better, want not")
	}
}
