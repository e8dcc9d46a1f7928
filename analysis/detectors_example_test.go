package analysis_test

import (
	"fmt"

	"github.com/inferwatch/inferwatch/analysis"
)

// The window holds 10, 12, 11, 13, 9:
//
//	median m = 11, |x − m| = 1, 1, 0, 2, 2, MAD = 1, s = 1.4826·1 = 1.4826
//	central 90%: Q(0.05) = 9.2, Q(0.95) = 12.8, s₉₀ = 3.6/3.2897 = 1.0943
//	resolution (smallest change between neighbours): 1
//	s_eff = 1.4826, band 11 ∓ 3·1.4826 = [6.5522, 15.4478]
//
// 20 scores 9/4.4478 = 2.0235. It then enters the window, which becomes
// 9 10 11 12 13 20: m = 11.5, MAD = 1.5, s = 2.2239; Q(0.05) = 9.25,
// Q(0.95) = 18.25, s₉₀ = 9/3.2897 = 2.7358; the band is 11.5 ∓ 8.2074 and
// 11 scores 0.5/8.2074 = 0.0609: the spike did not widen the band as much
// as it would widen σ.
func ExampleRobust() {
	r := analysis.NewRobust(analysis.RobustConfig{Window: 60_000, K: 3, MinPoints: 5})
	for i, x := range []float64{10, 12, 11, 13, 9, 20, 11} {
		t := int64(i+1) * 1000
		show(t, x, r.Observe(t, x))
	}
	// Output:
	// t=1000 x=10 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=2000 x=12 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=3000 x=11 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=4000 x=13 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=5000 x=9 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=6000 x=20 ready=true score=2.0235 expected=11.0000 band=[6.5522, 15.4478] anomalous=true
	// t=7000 x=11 ready=true score=0.0609 expected=11.5000 band=[3.2926, 19.7074] anomalous=false
}

// With alpha = 0.5:
//
//	x=10: μ = 10, σ² = 0
//	x=12: d = 2, μ = 11, σ² = 0.5·(0 + 0.5·4) = 1            (1 sample seen: not ready)
//	x=14: score |14 − 11|/(3·1) = 1, band [8, 14]; d = 3, μ = 12.5, σ² = 0.5·(1 + 0.5·9) = 2.75
//	x=12.5: score 0, band 12.5 ∓ 3·√2.75 = [7.5251, 17.4749]
func ExampleEWMA() {
	e := analysis.NewEWMA(analysis.EWMAConfig{Alpha: 0.5, K: 3, MinPoints: 2})
	for i, x := range []float64{10, 12, 14, 12.5} {
		t := int64(i+1) * 1000
		show(t, x, e.Observe(t, x))
	}
	// Output:
	// t=1000 x=10 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=2000 x=12 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=3000 x=14 ready=true score=1.0000 expected=11.0000 band=[8.0000, 14.0000] anomalous=true
	// t=4000 x=12.5 ready=true score=0.0000 expected=12.5000 band=[7.5251, 17.4749] anomalous=false
}

// With Drift 0.5 and H 4 (so z is clipped at 2), after a baseline of
// 10 12 10 12 11 (median 11, MAD 1, s = 1.4826) the level jumps to 20:
//
//	20: z = 9/1.4826 → 2, up = 0 + 2 − 0.5 = 1.5, score 1.5/4 = 0.375
//	20: baseline + 20: m = 11.5, MAD 1, z → 2, up = 3.0, score 0.75
//	20: baseline + 20 20: m = 12, MAD 2, z = 8/2.9652 = 2.7 → 2,
//	    up = 4.5, score 1.125: a level shift
//
// (the variance sum grows by 3/8·4 − ln 2 = 0.8069 a sample and stays
// below H). The detector then learns the new level from scratch.
func ExampleLevelShift() {
	l := analysis.NewLevelShift(analysis.LevelShiftConfig{Window: 60_000, Drift: 0.5, H: 4, MinPoints: 5})
	for i, x := range []float64{10, 12, 10, 12, 11, 20, 20, 20, 20} {
		r := l.Observe(int64(i+1)*1000, x)
		fmt.Printf("x=%g ready=%t score=%.4f anomalous=%t\n", x, r.Ready, r.Score, r.Anomalous())
	}
	// Output:
	// x=10 ready=false score=0.0000 anomalous=false
	// x=12 ready=false score=0.0000 anomalous=false
	// x=10 ready=false score=0.0000 anomalous=false
	// x=12 ready=false score=0.0000 anomalous=false
	// x=11 ready=false score=0.0000 anomalous=false
	// x=20 ready=true score=0.3750 anomalous=false
	// x=20 ready=true score=0.7500 anomalous=false
	// x=20 ready=true score=1.1250 anomalous=true
	// x=20 ready=false score=0.0000 anomalous=false
}

// A period of four samples, 0 10 20 10, repeated six times. At the next
// phase-1 sample the same phase of the three previous periods held 10,
// 10, 10: the expected value is their median, 10, their MAD and the
// residuals are 0, but the series moves in steps of 10 (its resolution),
// so the spread is 10 and the band 10 ∓ 30: 50 scores 40/30 = 1.3333.
func ExampleSeasonal() {
	s := analysis.NewSeasonal(analysis.SeasonalConfig{Period: 4000, Window: 12_000, K: 3, MinPeriods: 2})
	shape := []float64{0, 10, 20, 10}
	for i := range 24 {
		s.Observe(int64(i+1)*1000, shape[i%4])
	}
	show(25_000, 0, s.Observe(25_000, 0))
	show(26_000, 50, s.Observe(26_000, 50))
	// Output:
	// t=25000 x=0 ready=true score=0.0000 expected=0.0000 band=[-30.0000, 30.0000] anomalous=false
	// t=26000 x=50 ready=true score=1.3333 expected=10.0000 band=[-20.0000, 40.0000] anomalous=true
}

// Each sample is its own bin here (Bin 1 s, and no period whose reach would
// widen the bins), and all of them are in the thinned window. After 1 … 9:
// m = 5, MAD = 2, s_eff = 1.4826·2 = 2.9652; with P = 0.25 the bins' maxima
// have Q(0.75) = 7.5 (read at rank 0.75·(9+1)) and their minima Q(0.25) =
// 2.5, and Φ⁻¹(1 − P/3) = 1.3830, so each side's spread is max(2.9652,
// 2.5/1.3830) = 2.9652. Nine samples say little: the spreads are widened
// by youngWidth(9), with ν = max(2, 0.3675·8) = 2.94 degrees of freedom,
// t_2.94(1 − P/3)/1.3830·√(1 + π/18) = 1.8293/1.3830·1.0838 = 1.4338. The
// band is 5 ∓ 3·2.9652·1.4338 = [−7.7548, 17.7548] and 20 scores
// 15/12.7548 = 1.1760. The next 20, against a median of 5.5 and a wider
// MAD, scores below 1: the alarm ends, and for the rest of the refractory
// period (4 s from the alarm) scores are capped at 0.99 and the band is
// not given, so the 20 at 13 s does not alarm again. At 15 s the 20s seen
// since widen the upper side only: the band is [−10.0892, 42.9076].
func ExampleAuto() {
	a := analysis.NewAuto(analysis.AutoConfig{K: 3, P: 0.25, Refractory: 4000, MinPoints: 9, Bin: 1000, Period: -1})
	for i, x := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 20, 20, 5, 20, 20, 20} {
		r := a.Observe(int64(i+1)*1000, x)
		if i >= 9 {
			show(int64(i+1)*1000, x, r)
		}
	}
	// Output:
	// t=10000 x=20 ready=true score=1.1760 expected=5.0000 band=[-7.7548, 17.7548] anomalous=true
	// t=11000 x=20 ready=true score=0.9483 expected=5.5000 band=[NaN, NaN] anomalous=false
	// t=12000 x=5 ready=true score=0.0563 expected=6.0000 band=[NaN, NaN] anomalous=false
	// t=13000 x=20 ready=true score=0.9900 expected=5.5000 band=[NaN, NaN] anomalous=false
	// t=14000 x=20 ready=true score=0.5994 expected=6.0000 band=[NaN, NaN] anomalous=false
	// t=15000 x=20 ready=true score=0.3708 expected=6.5000 band=[-10.0892, 42.9076] anomalous=false
}
