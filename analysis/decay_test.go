package analysis_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/analysis"
)

// Five points, the last an outlier. The 10 pairwise slopes sorted are
// 1, 1, 1, 1, 1, 1, 2.25, 2.667, 3.5, 6: the median (rank 5.5) is 1 and
// the intercept is the median of y − x = 0, 0, 0, 0, 5, which is 0.
// For the 90 % interval: Var(S) = 5·4·15/18 = 16.667, C = 1.6449·4.0825 =
// 6.7151, so the bounds are the slopes of ranks (10 − C)/2 = 1.64 → 1 and
// (10 + C)/2 + 1 = 9.358 → 3.5 + 0.358·(6 − 3.5) = 4.3939.
func ExampleTheilSen() {
	x := []float64{1, 2, 3, 4, 5}
	y := []float64{1, 2, 3, 4, 10}
	fit, err := analysis.TheilSen(x, y, 0.90)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("slope=%.4f intercept=%.4f ci=[%.4f, %.4f] pairs=%d\n", fit.Slope, fit.Intercept, fit.Lower, fit.Upper, fit.Pairs)
	// Output:
	// slope=1.0000 intercept=0.0000 ci=[1.0000, 4.3939] pairs=10
}

// Throughput falls by 2 % of a 100 tok/s peak per day over two weeks of
// hourly samples: η grows by 0.02 per day, the day-over-day change of its
// mean is 0.02 and the week-over-week change 7·0.02 = 0.14.
func ExampleThroughputDecay() {
	var t []int64
	var tput []float64
	for h := range 14 * 24 {
		t = append(t, int64(h)*3_600_000)
		tput = append(tput, 100*(1-0.02*float64(h)/24))
	}
	d, err := analysis.ThroughputDecay(t, tput, analysis.DecayConfig{Peak: 100})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("slope=%.4f/day ci=[%.4f, %.4f] significant=%t\n", d.Trend.Slope, d.Trend.Lower, d.Trend.Upper, d.Significant)
	fmt.Printf("dod=%.4f wow=%.4f last η=%.4f\n", d.DayOverDay, d.WeekOverWeek, d.Eta[len(d.Eta)-1])
	// Output:
	// slope=0.0200/day ci=[0.0200, 0.0200] significant=true
	// dod=0.0200 wow=0.1400 last η=0.2792
}

func TestThroughputDecay(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	series := func(days int, perDay, noise float64) ([]int64, []float64) {
		var ts []int64
		var v []float64
		for m := 0; m < days*24*4; m++ { // every 15 minutes
			ts = append(ts, int64(m)*900_000)
			x := 100*(1-perDay*float64(m)/(24*4)) + noise*rng.NormFloat64()
			if m%97 == 0 {
				x = math.NaN() // a missed scrape
			}
			v = append(v, x)
		}
		return ts, v
	}
	f := func(name string, days int, perDay, noise float64, c analysis.DecayConfig, wantSig bool, slopeLo, slopeHi float64) {
		t.Helper()
		ts, v := series(days, perDay, noise)
		d, err := analysis.ThroughputDecay(ts, v, c)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if d.Significant != wantSig || !(d.Trend.Slope >= slopeLo && d.Trend.Slope <= slopeHi) {
			t.Errorf("%s: slope %.5f ci [%.5f, %.5f] significant %t; want slope in [%v, %v], significant %t",
				name, d.Trend.Slope, d.Trend.Lower, d.Trend.Upper, d.Significant, slopeLo, slopeHi, wantSig)
		}
		if !(d.Trend.Lower <= d.Trend.Slope && d.Trend.Slope <= d.Trend.Upper) {
			t.Errorf("%s: slope %v outside its interval [%v, %v]", name, d.Trend.Slope, d.Trend.Lower, d.Trend.Upper)
		}
	}
	f("decaying, configured peak", 10, 0.02, 3, analysis.DecayConfig{Peak: 100}, true, 0.018, 0.022)
	// The estimated peak is the q99 of the last week, about 86+7 =
	// 93, so η grows by about 2/93 per day.
	f("decaying, estimated peak", 10, 0.02, 3, analysis.DecayConfig{}, true, 0.019, 0.024)
	f("flat with noise", 10, 0, 3, analysis.DecayConfig{Peak: 100}, false, -0.003, 0.003)
	f("slow decay below MinSlope", 10, 0.004, 1, analysis.DecayConfig{Peak: 100}, false, 0.003, 0.005)
	f("recovering", 10, -0.02, 3, analysis.DecayConfig{Peak: 100}, false, -0.022, -0.018)
}

func TestThroughputDecayPeak(t *testing.T) {
	// 1,000 samples of 50 with ten of 500: the q99 (type 7) is 50 +
	// 0.01·(500−50) = 54.5 since rank 989.01 sits between the last 50
	// and the first 500.
	var ts []int64
	var v []float64
	for i := range 1000 {
		ts = append(ts, int64(i)*60_000)
		x := 50.0
		if i%100 == 0 {
			x = 500
		}
		v = append(v, x)
	}
	d, err := analysis.ThroughputDecay(ts, v, analysis.DecayConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d.Peak-54.5) > 1e-9 {
		t.Errorf("estimated peak %v, want 54.5", d.Peak)
	}
	// 1,000 minutes is less than a day: there is no previous day nor week
	// to compare with.
	if !math.IsNaN(d.DayOverDay) || !math.IsNaN(d.WeekOverWeek) {
		t.Errorf("under a day of data: dod %v wow %v, want NaN for both", d.DayOverDay, d.WeekOverWeek)
	}
}

func TestThroughputDecayErrors(t *testing.T) {
	f := func(name string, ts []int64, v []float64, c analysis.DecayConfig, want string) {
		t.Helper()
		_, err := analysis.ThroughputDecay(ts, v, c)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, want)
		}
	}
	ts := []int64{0, 1000, 2000}
	f("lengths", ts, []float64{1}, analysis.DecayConfig{}, "3 timestamps but 1 values")
	f("descending", []int64{0, 2, 1}, []float64{1, 2, 3}, analysis.DecayConfig{}, "ascending")
	f("negative peak", ts, []float64{1, 2, 3}, analysis.DecayConfig{Peak: -1}, "peak must be")
	f("quantile", ts, []float64{1, 2, 3}, analysis.DecayConfig{PeakQuantile: 2}, "peak quantile")
	f("empty", nil, nil, analysis.DecayConfig{}, "no samples")
	f("all NaN", ts, []float64{math.NaN(), math.NaN(), math.NaN()}, analysis.DecayConfig{}, "no finite throughput")
	f("zero peak", ts, []float64{0, 0, 0}, analysis.DecayConfig{}, "set Peak")
	f("too few", ts[:2], []float64{1, 2}, analysis.DecayConfig{Peak: 5}, "at least 3")
}

func TestTheilSen(t *testing.T) {
	// An exact line: every slope is 3, so is the interval.
	x := []float64{0, 1, 2, 3, 4, 5, 6, 7}
	y := make([]float64, len(x))
	for i := range x {
		y[i] = 3*x[i] - 1
	}
	fit, err := analysis.TheilSen(x, y, 0)
	if err != nil || fit.Slope != 3 || fit.Intercept != -1 || fit.Lower != 3 || fit.Upper != 3 {
		t.Errorf("exact line: %+v, %v", fit, err)
	}
	// Ties in x drop the pair: x = 1, 1, 2 gives the slopes of (1,2) twice.
	fit, err = analysis.TheilSen([]float64{1, 1, 2}, []float64{0, 2, 4}, 0)
	if err != nil || fit.Pairs != 2 || fit.Slope != 3 {
		t.Errorf("tied x: %+v, %v; want 2 pairs, slope median(4, 2) = 3", fit, err)
	}
	if _, err := analysis.TheilSen([]float64{1, 1, 1}, []float64{1, 2, 3}, 0); err == nil {
		t.Error("all x equal: no error")
	}
	if _, err := analysis.TheilSen(x, y, 1.5); err == nil {
		t.Error("confidence 1.5: no error")
	}
}

// TestTheilSenSampled takes the sampled path (more than TheilSenMaxPairs
// pairs): the result must be the same on every run, and close to the exact
// median of all 2.2 million slopes computed here by sorting — well within
// the interval, which must contain it.
func TestTheilSenSampled(t *testing.T) {
	if testing.Short() {
		t.Skip("sorts 2.2M slopes")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	n := 2100
	x := make([]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = float64(i) / 100
		y[i] = 2*x[i] + 5 + rng.NormFloat64()
	}
	a, err := analysis.TheilSen(x, y, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := analysis.TheilSen(x, y, 0)
	if a != b {
		t.Errorf("two runs differ: %+v vs %+v", a, b)
	}
	if a.Pairs != analysis.TheilSenMaxPairs {
		t.Errorf("%d pairs, want the sample of %d", a.Pairs, analysis.TheilSenMaxPairs)
	}
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range n {
		for j := i + 1; j < n; j++ {
			slopes = append(slopes, (y[j]-y[i])/(x[j]-x[i]))
		}
	}
	slices.Sort(slopes)
	m := len(slopes)
	exact := (slopes[(m-1)/2] + slopes[m/2]) / 2
	width := a.Upper - a.Lower
	if math.Abs(a.Slope-exact) > width/20 || !(a.Lower < exact && exact < a.Upper) {
		t.Errorf("sampled slope %v in [%v, %v], exact median %v: want within 1/20 of the interval's width", a.Slope, a.Lower, a.Upper, exact)
	}
	if math.Abs(a.Slope-2) > 0.02 {
		t.Errorf("slope %v, want ≈ 2", a.Slope)
	}
}

func BenchmarkTheilSen1000(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	x := make([]float64, 1000)
	y := make([]float64, 1000)
	for i := range x {
		x[i] = float64(i)
		y[i] = 0.01*x[i] + rng.NormFloat64()
	}
	for b.Loop() {
		if _, err := analysis.TheilSen(x, y, 0); err != nil {
			b.Fatal(err)
		}
	}
}
