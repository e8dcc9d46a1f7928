package analysis_test

import (
	"fmt"
	"math"

	"github.com/inferwatch/inferwatch/analysis"
)

// show prints one result the way the examples below do.
func show(t int64, x float64, r analysis.Result) {
	fmt.Printf("t=%d x=%g ready=%t score=%.4f expected=%.4f band=[%.4f, %.4f] anomalous=%t\n",
		t, x, r.Ready, r.Score, r.Expected, r.Lower, r.Upper, r.Anomalous())
}

// A sample is scored against the samples of the preceding window.
//
// The window holds 10, 12, 11, 13, 9:
//
//	μ  = 55/5 = 11
//	σ² = ((−1)² + 1² + 0² + 2² + (−2)²) / (5−1) = 10/4 = 2.5
//	σ  = √2.5 = 1.5811
//
// The next sample, 20, scores |20 − 11| / (3·1.5811) = 9/4.7434 = 1.8974,
// and the band is 11 ∓ 4.7434 = [6.2566, 15.7434].
func ExampleSigma() {
	s := analysis.NewSigma(analysis.SigmaConfig{Window: 5000, K: 3, MinPoints: 5})
	for i, x := range []float64{10, 12, 11, 13, 9, 20} {
		t := int64(i+1) * 1000
		show(t, x, s.Observe(t, x))
	}
	// Output:
	// t=1000 x=10 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=2000 x=12 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=3000 x=11 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=4000 x=13 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=5000 x=9 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=6000 x=20 ready=true score=1.8974 expected=11.0000 band=[6.2566, 15.7434] anomalous=true
}

// Samples leave the window by time, not by count. With a 3 s window:
//
//	t=3000: window [0, 3000) holds 10, 12: μ = 11, σ = √2,
//	        score = |14−11|/(3·√2) = 0.7071.
//	t=4000: window [1000, 4000) holds 10, 12, 14 (the start is
//	        inclusive): μ = 12,
//	        σ = √((4+0+4)/2) = 2, score = |30−12|/(3·2) = 3.
//	t=9000: window [6000, 9000) is empty after the gap: not ready.
//	t=10000: the window holds one sample (9): not ready.
//	t=11000: the window holds 9 and 11: μ = 10, σ = √((1+1)/1) = √2,
//	        score = |13−10|/(3·√2) = 0.7071, band 10 ∓ 4.2426.
func ExampleSigma_gap() {
	s := analysis.NewSigma(analysis.SigmaConfig{Window: 3000, MinPoints: 2})
	for _, p := range []struct {
		t int64
		x float64
	}{{1000, 10}, {2000, 12}, {3000, 14}, {4000, 30}, {9000, 9}, {10000, 11}, {11000, 13}} {
		show(p.t, p.x, s.Observe(p.t, p.x))
	}
	// Output:
	// t=1000 x=10 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=2000 x=12 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=3000 x=14 ready=true score=0.7071 expected=11.0000 band=[6.7574, 15.2426] anomalous=false
	// t=4000 x=30 ready=true score=3.0000 expected=12.0000 band=[6.0000, 18.0000] anomalous=true
	// t=9000 x=9 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=10000 x=11 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=11000 x=13 ready=true score=0.7071 expected=10.0000 band=[5.7574, 14.2426] anomalous=false
}

// A flat window has σ = 0. The score then divides by
// σ_eff = 1e-9·max(1, |μ|) = 5e-9, so the mean itself scores 0 and a
// departure of 0.001 scores 0.001/(3·5e-9) ≈ 66666.7. The band stays the
// real one, [5, 5].
func ExampleSigma_constant() {
	s := analysis.NewSigma(analysis.SigmaConfig{Window: 3000, MinPoints: 3})
	for i, x := range []float64{5, 5, 5, 5, 5.001} {
		t := int64(i+1) * 1000
		r := s.Observe(t, x)
		fmt.Printf("x=%g ready=%t score=%.1f band=[%g, %g]\n", x, r.Ready, r.Score, r.Lower, r.Upper)
	}
	// Output:
	// x=5 ready=false score=0.0 band=[NaN, NaN]
	// x=5 ready=false score=0.0 band=[NaN, NaN]
	// x=5 ready=false score=0.0 band=[NaN, NaN]
	// x=5 ready=true score=0.0 band=[5, 5]
	// x=5.001 ready=true score=66666.7 band=[5, 5]
}

// Non-finite samples — NaN, ±Inf and Prometheus staleness markers — are
// neither scored nor added. Here the window holds 10 and 12 when 14 comes:
// μ = 11, σ = √2, score = 3/(3·√2) = 0.7071.
func ExampleSigma_nonFinite() {
	stale := math.Float64frombits(0x7ff0000000000002)
	s := analysis.NewSigma(analysis.SigmaConfig{Window: 60000, MinPoints: 2})
	for i, x := range []float64{10, math.NaN(), 12, stale, math.Inf(1), 14} {
		t := int64(i+1) * 1000
		show(t, x, s.Observe(t, x))
	}
	fmt.Println("window holds", s.Len(), "samples")
	// Output:
	// t=1000 x=10 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=2000 x=NaN ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=3000 x=12 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=4000 x=NaN ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=5000 x=+Inf ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=6000 x=14 ready=true score=0.7071 expected=11.0000 band=[6.7574, 15.2426] anomalous=false
	// window holds 3 samples
}

// Until the window holds MinPoints samples the detector does not judge,
// however strange the sample: with MinPoints 4, three samples are not
// enough, and 1000 passes unscored. It then enters the window, which makes
// four: μ = (1+2+3+1000)/4 = 251.5,
// σ² = (250.5² + 249.5² + 248.5² + 748.5²)/3 = 747005/3, σ = 499.0007,
// and 4 scores |4 − 251.5|/(3·499.0007) = 247.5/1497.002 = 0.1653.
func ExampleSigma_minPoints() {
	s := analysis.NewSigma(analysis.SigmaConfig{Window: 60000, MinPoints: 4})
	for i, x := range []float64{1, 2, 3, 1000, 4} {
		t := int64(i+1) * 1000
		r := s.Observe(t, x)
		fmt.Printf("x=%g ready=%t score=%.4f expected=%.4f\n", x, r.Ready, r.Score, r.Expected)
	}
	// Output:
	// x=1 ready=false score=0.0000 expected=NaN
	// x=2 ready=false score=0.0000 expected=NaN
	// x=3 ready=false score=0.0000 expected=NaN
	// x=1000 ready=false score=0.0000 expected=NaN
	// x=4 ready=true score=0.1653 expected=251.5000
}

// A sample whose timestamp is not after the last sample added — a
// duplicate or one that arrives out of order — is ignored: it is not
// scored and does not enter the window. The window stays 10, 12
// (μ = 11, σ = √2) and 13 scores 2/(3·√2) = 0.4714.
func ExampleSigma_outOfOrder() {
	s := analysis.NewSigma(analysis.SigmaConfig{Window: 60000, MinPoints: 2})
	for _, p := range []struct {
		t int64
		x float64
	}{{1000, 10}, {2000, 12}, {2000, 99}, {1500, 99}, {3000, 13}} {
		show(p.t, p.x, s.Observe(p.t, p.x))
	}
	// Output:
	// t=1000 x=10 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=2000 x=12 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=2000 x=99 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=1500 x=99 ready=false score=0.0000 expected=NaN band=[NaN, NaN] anomalous=false
	// t=3000 x=13 ready=true score=0.4714 expected=11.0000 band=[6.7574, 15.2426] anomalous=false
}

// Build turns a rule's detector, as written, into a factory of per-series
// state.
func ExampleBuild() {
	f, err := analysis.Build(analysis.Spec{Name: "sigma", Window: 3000, Params: map[string]string{"k": "2", "min_points": "3"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := f()
	var r analysis.Result
	for i, x := range []float64{10, 12, 14, 18} {
		r = d.Observe(int64(i+1)*1000, x)
	}
	// μ = 12, σ = 2, score = |18−12|/(2·2) = 1.5
	fmt.Printf("score=%.2f anomalous=%t\n", r.Score, r.Anomalous())

	_, err = analysis.Build(analysis.Spec{Name: "sigma", Window: 3000, Params: map[string]string{"k": "abc"}})
	fmt.Println(err)
	// Output:
	// score=1.50 anomalous=true
	// parameter k of detector sigma: "abc" is not a number
}
