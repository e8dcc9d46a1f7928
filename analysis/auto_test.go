package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/analysis/families"
)

// daySteps is the number of 5-minute samples in a day.
const (
	fiveMin  = 300_000
	daySteps = 288
)

// workday returns a day's shape at sample i of a 5-minute series: 20 at
// night, 80 from 08:00 to 16:00, with noise N(0, 1) from rng.
func workday(i int, rng *rand.Rand) float64 { return workdayShape(i%daySteps) + rng.NormFloat64() }

// workdayShape is workday without its noise, at sample p of a day.
func workdayShape(p int) float64 {
	if p >= 96 && p < 192 {
		return 80
	}
	return 20
}

// TestAutoPhase checks the phase test on a series with a daily shape: a
// change of the day's shape that stays within the values the week holds
// alarms on that day; the usual days, and a day whose step comes half an
// hour late, do not; without the test, neither does the change.
func TestAutoPhase(t *testing.T) {
	const days, odd = 8, 6 // the changed day
	f := func(name string, phase bool, change func(p int, noise float64) float64, wantOdd bool) {
		t.Helper()
		c := AutoConfig{Step: fiveMin}
		if !phase {
			c.PhaseK = -1
		}
		a := NewAuto(c)
		rng := rand.New(rand.NewPCG(1, 2))
		var late, onOdd []int
		for i := range days * daySteps {
			v := workday(i, rng)
			if p := i % daySteps; i/daySteps == odd {
				v = change(p, v-workdayShape(p))
			}
			r := a.Observe(int64(i)*fiveMin, v)
			if !r.Anomalous() || i < 2*daySteps {
				continue
			}
			if i/daySteps == odd {
				// Only the phase test sees a day that stays within the
				// week's values, and the finding says so.
				if r.Test != TestPhase {
					t.Errorf("%s: sample %d alarms by test %q, want phase", name, i, r.Test)
				}
				onOdd = append(onOdd, i)
			} else {
				late = append(late, i)
			}
		}
		if len(late) > 0 {
			t.Errorf("%s: alarms at samples %v, outside the changed day", name, late)
		}
		if got := len(onOdd) > 0; got != wantOdd {
			t.Errorf("%s: alarms on the changed day at %v, want any: %v", name, onOdd, wantOdd)
		}
	}
	same := func(p int, e float64) float64 { return workdayShape(p) + e }
	flat := func(p int, e float64) float64 { return 50 + e }
	noJump := func(p int, e float64) float64 { return 20 + e }
	late := func(p int, e float64) float64 { return workdayShape(max(0, p-6)) + e } // half an hour late
	f("usual days", true, same, false)
	f("a flat day", true, flat, true)
	f("a flat day, no phase test", false, flat, false)
	f("a day without its step", true, noJump, true)
	f("a day without its step, no phase test", false, noJump, false)
	f("a step half an hour late", true, late, false)
}

// TestAutoPhaseAperiodic checks that a series whose past days do not
// predict it is judged exactly as without the phase test.
func TestAutoPhaseAperiodic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := NewAuto(AutoConfig{Step: fiveMin})
	b := NewAuto(AutoConfig{Step: fiveMin, PhaseK: -1})
	walk := 100.0
	for i := range 8 * daySteps {
		walk += rng.NormFloat64()
		v := walk
		if i%500 == 499 {
			v += 40 // a spike
		}
		tm := int64(i) * fiveMin
		if i%97 == 3 {
			tm += fiveMin / 3 // irregular steps
		}
		ra, rb := a.Observe(tm, v), b.Observe(tm, v)
		if !identicalResult(ra, rb) {
			t.Fatalf("sample %d: %+v with the phase test, %+v without", i, ra, rb)
		}
		if a.ph.fits {
			t.Fatalf("sample %d: the phase test judges a random walk", i)
		}
	}
}

// TestAutoFlat: a series that never varied has no spread to measure a
// departure by: its band is [m, m] and a departure scores MaxAutoScore,
// not the billions a 10⁻⁹ floor would give; a departure below the
// absolute floor is not one, and a level of 5 ignores a change of a
// millionth (the relative floor).
func TestAutoFlat(t *testing.T) {
	f := func(level, departure float64, wantScore float64, wantBand [2]float64) {
		t.Helper()
		a := NewAuto(AutoConfig{Step: 60_000})
		for i := range 1000 {
			a.Observe(int64(i)*60_000, level)
		}
		r := a.Observe(1000*60_000, departure)
		near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*max(1, math.Abs(y)) }
		if !r.Ready || !near(r.Score, wantScore) || !near(r.Lower, wantBand[0]) || !near(r.Upper, wantBand[1]) {
			t.Errorf("level %v, then %v: score %v band [%v, %v], want %v [%v, %v]", level, departure, r.Score, r.Lower, r.Upper, wantScore, wantBand[0], wantBand[1])
		}
	}
	f(0, 12, MaxAutoScore, [2]float64{0, 0})
	f(0, -0.5, MaxAutoScore, [2]float64{0, 0})
	f(0, 1e-12, 1e-12/3e-9, [2]float64{0, 0})
	f(5, 5.000001, 1e-6/(3*0.005), [2]float64{5 - 3*0.005, 5 + 3*0.005})
	// Once the series has moved, its resolution measures the next move.
	a := NewAuto(AutoConfig{Step: 60_000})
	for i := range 1000 {
		v := 0.0
		if i == 500 {
			v = 12
		}
		a.Observe(int64(i)*60_000, v)
	}
	if r := a.Observe(1000*60_000, 12); r.Score >= 1 || r.Upper != 36 {
		t.Errorf("a second 12 after one: score %v band [%v, %v], want below 1 and up to 36 (3 × the resolution 12)", r.Score, r.Lower, r.Upper)
	}
}

// TestAutoStepInvariance: counted in bins of time, not samples, the tail
// test raises about as many alarms a day on Gaussian noise at a 15-second
// step as at a 5-minute one (20 times as many samples), and few.
func TestAutoStepInvariance(t *testing.T) {
	const days = 12
	alarmsPerDay := func(step int64) float64 {
		a := NewAuto(AutoConfig{Step: step, PhaseK: -1})
		rng := rand.New(rand.NewPCG(5, 6))
		n := 0
		for tm := int64(0); tm < days*86_400_000; tm += step {
			if a.Observe(tm, 100+rng.NormFloat64()).Anomalous() && tm >= 2*86_400_000 {
				n++
			}
		}
		return float64(n) / (days - 2)
	}
	fine, coarse := alarmsPerDay(15_000), alarmsPerDay(fiveMin)
	t.Logf("alarms a day on noise: %.2f at 15 s, %.2f at 5 min", fine, coarse)
	if fine > 1 || coarse > 1 || fine > 3*coarse+0.3 || coarse > 3*fine+0.3 {
		t.Errorf("alarms a day on noise: %.2f at 15 s, %.2f at 5 min; want at most 1 and alike", fine, coarse)
	}
}

// TestAutoRefractory: the refractory period is a span of time, the same
// at any step; the form of earlier releases, a count of samples, holds
// that many. A sample held scores below 1 and has no band.
func TestAutoRefractory(t *testing.T) {
	held := func(c AutoConfig, step int64) int {
		a := NewAuto(c)
		rng := rand.New(rand.NewPCG(7, 8))
		// A day of noise, until a sample is not held by an alarm on it.
		var i int64
		for r := (Result{}); i < 86_400_000/step || !r.Ready || math.IsNaN(r.Lower); i++ {
			r = a.Observe(i*step, 10+rng.NormFloat64())
		}
		if r := a.Observe(i*step, 1000); !r.Anomalous() {
			t.Fatalf("step %d: the spike scored %v", step, r.Score)
		}
		n := 0
		for i++; ; i++ {
			r := a.Observe(i*step, 10+rng.NormFloat64())
			if !math.IsNaN(r.Lower) || r.Score >= 1 {
				return n
			}
			n++
		}
	}
	for _, step := range []int64{15_000, 60_000, fiveMin} {
		c := AutoConfig{Step: step, Period: -1}
		if got, want := held(c, step), int(DefaultAutoRefractory/step); got != want {
			t.Errorf("step %ds: %d samples held after an alarm, want %d (%s)", step/1000, got, want, fmtMs(DefaultAutoRefractory))
		}
		c.RefractoryPoints = 30
		if got := held(c, step); got != 30 {
			t.Errorf("step %ds, refractory 30 points: %d samples held", step/1000, got)
		}
	}
}

// TestAutoMode: a detector says which tests cannot judge yet, with the
// history it has and the history they need, and why it runs the tail test
// alone at a step too coarse for its period or in a window that reaches
// no past period.
func TestAutoMode(t *testing.T) {
	const hour = int64(3_600_000)
	a := NewAuto(AutoConfig{Step: fiveMin})
	for tm := int64(0); tm <= 2*hour; tm += fiveMin {
		a.Observe(tm, 1)
	}
	if got, want := a.Mode(2*hour), "tail only: 2h of the 22h the seen-before test needs and the 3d the phase test needs"; got != want {
		t.Errorf("after 2h: %q, want %q", got, want)
	}
	for tm := 2*hour + fiveMin; tm <= 30*hour; tm += fiveMin {
		a.Observe(tm, 1)
	}
	if got, want := a.Mode(30*hour), "tail and seen-before: 30h of the 3d the phase test needs"; got != want {
		t.Errorf("after 30h: %q, want %q", got, want)
	}
	if got := a.Mode(73 * hour); got != "" {
		t.Errorf("after 73h: %q, want none", got)
	}
	if got, want := NewAuto(AutoConfig{Step: 6 * hour}).Mode(0), "tail only: bins of 6h are too coarse for the period 24h (at most 3h)"; got != want {
		t.Errorf("a 6h step: %q, want %q", got, want)
	}
	if got, want := NewAuto(AutoConfig{Step: fiveMin, Window: hour}).Mode(0), "tail only: the window reaches no past period of 24h"; got != want {
		t.Errorf("a 1h window: %q, want %q", got, want)
	}
	if got := NewAuto(AutoConfig{Step: fiveMin, Period: -1}).Mode(0); got != "" {
		t.Errorf("no period: %q", got)
	}
}

// TestNeedsOf: the history a rule's first evaluation fetches, and what the
// detector cannot do at a step, for a person.
func TestNeedsOf(t *testing.T) {
	f := func(spec Spec, step int64, history int64, limit string) {
		t.Helper()
		n, err := NeedsOf(spec, step)
		if err != nil {
			t.Fatal(err)
		}
		if n.History != history {
			t.Errorf("%+v at %dms: history %s, want %s", spec, step, fmtMs(n.History), fmtMs(history))
		}
		if got := strings.Join(n.Limits, "; "); limit == "" && got != "" || !strings.Contains(got, limit) {
			t.Errorf("%+v at %dms: limits %q, want %q", spec, step, got, limit)
		}
	}
	const minute, hour, day = 60_000, 3_600_000, 86_400_000
	// The bins reach the history's span and one bin more.
	week := int64(7*day + 2*hour + 15*minute)
	f(Spec{Name: "auto"}, 15_000, week, "")
	f(Spec{Name: "auto"}, minute, week, "")
	f(Spec{Name: "auto"}, 5*minute, week, "")
	f(Spec{Name: "auto"}, hour, 673*hour, "") // 672 bins of an hour, the tail test's horizon
	f(Spec{Name: "auto"}, 6*hour, 673*6*hour, "its bins of 6h (the step or 15m, whichever is coarser) are too coarse for the period 24h")
	f(Spec{Name: "auto", Window: hour}, minute, 3*hour+15*minute, "the window 1h reaches no past period of 24h")
	f(Spec{Name: "auto", Window: 36 * hour}, minute, 38*hour+15*minute, "the window 36h reaches fewer than two past periods of 24h: the phase test is off")
	f(Spec{Name: "auto", Params: map[string]string{"refractory": "30"}}, minute, week, "refractory 30 is a count of samples, the form of earlier releases: 30m at this step, and another span at another; write a duration such as refractory: 30m")
	f(Spec{Name: "sigma"}, minute, 240*minute, "")
	f(Spec{Name: "sigma", Window: hour}, minute, hour, "")
	f(Spec{Name: "seasonal"}, minute, 7*day, "")
	if _, err := NeedsOf(Spec{Name: "auto", Params: map[string]string{"k": "x"}}, minute); err == nil {
		t.Error("NeedsOf accepts a bad parameter")
	}
}

// TestAutoRefractoryParam: refractory is a duration, or the count of
// samples earlier releases took; 0 is none.
func TestAutoRefractoryParam(t *testing.T) {
	f := func(raw string, ms int64, points int, wantErr string) {
		t.Helper()
		fac, err := Build(Spec{Name: "auto", Step: fiveMin, Params: map[string]string{"refractory": raw}})
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("refractory %q: error %v, want %q", raw, err, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		a := fac().(*Auto)
		if a.refractory != ms || a.refPoints != points {
			t.Errorf("refractory %q: %d ms, %d points; want %d, %d", raw, a.refractory, a.refPoints, ms, points)
		}
	}
	f("2h30m", 9_000_000, 0, "")
	f("45m", 2_700_000, 0, "")
	f("30", DefaultAutoRefractory, 30, "")
	f("0", -1, 0, "")
	f("0s", -1, 0, "")
	f("-3", 0, 0, `"-3" must be a duration ≥ 0 such as 2h30m`)
	f("soon", 0, 0, `"soon" must be a duration such as 30m or 2h30m (or, as before, a count of samples such as 30)`)
}

// TestExtremes checks the tail quantiles of the bins' extremes, as the
// bins close and leave the horizon over gaps of every length, against the
// quantiles of every bin held.
func TestExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		p     float64
		width int64
		gaps  bool
	}{{0.009, 1000, false}, {0.25, 1000, true}, {0.009, 1000, true}, {0.4, 7, true}} {
		a := NewAuto(AutoConfig{P: c.p, Bin: c.width, Period: -1, MinPoints: 2, Window: 100 * c.width})
		tm := int64(0)
		for i := range 20_000 {
			switch u := rng.Float64(); {
			case c.gaps && u < 0.001:
				tm += 150 * c.width // beyond the horizon
			case c.gaps && u < 0.01:
				tm += rng.Int64N(40 * c.width)
			default:
				tm += 1 + rng.Int64N(c.width)
			}
			v := rng.NormFloat64()
			if rng.Float64() < 0.01 {
				v *= 50
			}
			a.Observe(tm, v)
			if i%37 != 0 {
				continue
			}
			// Every bin of the horizon, the open one included.
			r := &a.bins
			var his, los []float64
			for k := r.newest - int64(a.ext.span) + 1; k <= r.newest; k++ {
				if lo, hi, ok := r.normal(k); ok {
					his, los = append(his, hi), append(los, lo)
				}
			}
			if len(his) != a.ext.n+1 && len(his) != a.ext.n {
				t.Fatalf("%+v, sample %d: %d bins in the horizon, %d counted closed", c, i, len(his), a.ext.n)
			}
			hi, lo := math.NaN(), math.NaN()
			if r.n > 0 && !r.openInc {
				lo, hi, _ = r.at(r.newest)
			}
			slices.Sort(his)
			slices.Sort(los)
			got1, got2 := a.ext.quantile(c.p, true, hi), a.ext.quantile(c.p, false, lo)
			if p1, p2 := a.hi.at(hi), a.lo.at(lo); p1 != got1 || p2 != got2 {
				t.Fatalf("%+v, sample %d: prepared quantiles %v %v, read %v %v", c, i, p1, p2, got1, got2)
			}
			want1, want2 := weibullQuantile(his, 1-c.p), weibullQuantile(los, c.p)
			if got1 != want1 || got2 != want2 {
				t.Fatalf("%+v, sample %d: quantiles %v %v of %d bins, want %v %v", c, i, got1, got2, len(his), want1, want2)
			}
		}
	}
}

// TestTailPositionCoverage: the k-th smallest of n uniform values is k/(n+1)
// on average, so the expected coverage of the tail quantile read at
// tailPosition's place is (i+1+f)/(n+1): q itself, over few bins as over
// many, where it lies between two of them; the extreme beyond them.
func TestTailPositionCoverage(t *testing.T) {
	for _, n := range []int{2, 20, 150, 672, 1024} {
		for _, q := range []float64{0.009, 0.25, 0.5, 0.991} {
			i, f := tailPosition(q, n)
			cover := (float64(i) + 1 + f) / float64(n+1)
			switch h := q*float64(n+1) - 1; {
			case h <= 0:
				if i != 0 || f != 0 {
					t.Errorf("n %d, q %g: position %d+%g, want the smallest", n, q, i, f)
				}
			case h >= float64(n-1):
				if i != n-1 || f != 0 {
					t.Errorf("n %d, q %g: position %d+%g, want the largest", n, q, i, f)
				}
			default:
				if math.Abs(cover-q) > 1e-12 {
					t.Errorf("n %d, q %g: position %d+%g covers %g on average, want %g", n, q, i, f, cover, q)
				}
			}
		}
	}
	// By hand: of 150 bins the 0.991-quantile lies 0.641 of the way from
	// the 149th smallest to the largest.
	if i, f := tailPosition(0.991, 150); i != 148 || math.Abs(f-0.641) > 1e-9 {
		t.Errorf("tailPosition(0.991, 150) = %d, %g; want 148, 0.641", i, f)
	}
}

// TestAutoTailZ: while the bins are fewer than the P tail needs, their
// extreme is read as the n/(n+1) quantile it is; from 1/P − 1 bins (110
// at the default P 0.009) as the 1 − P one. Values by hand (Φ⁻¹ from an
// independent implementation).
func TestAutoTailZ(t *testing.T) {
	a := NewAuto(AutoConfig{Step: fiveMin})
	for _, tc := range []struct {
		closed int
		open   bool
		want   float64
	}{
		{1, false, 0.96742157},   // n 1: Φ⁻¹(1 − 1/6)
		{9, true, 1.87635856},    // n 10: Φ⁻¹(1 − 1/33)
		{110, false, 2.74745331}, // n 110: Φ⁻¹(1 − 1/333)
		{110, true, 2.74778139},  // n 111: Φ⁻¹(1 − 0.009/3)
		{672, true, 2.74778139},
	} {
		if got := a.tailZ(tc.closed, tc.open); math.Abs(got-tc.want) > 1e-7 {
			t.Errorf("tailZ(%d, %v) = %.8f, want %.8f", tc.closed, tc.open, got, tc.want)
		}
	}
}

// TestAutoYoungAsStrictAsOld: on noise, a detector with less than a day of
// bins alarms no more often than one with a week's. 200 series of
// N(100, 5²) at a minute's step: scores ≥ 1 from the first hour to the
// end of the first day, against the third day. Reading a young series'
// largest bin as its 1 − P quantile, the first day alarmed 2.3 times as
// often as the third (241 in 276,000 samples against 110 in 288,000);
// now 0.88 times.
func TestAutoYoungAsStrictAsOld(t *testing.T) {
	var young, old, youngN, oldN int
	for seed := range 200 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		a := NewAuto(AutoConfig{Step: 60_000})
		for i := range 3 * 1440 {
			alarm := a.Observe(int64(i)*60_000, 100+5*rng.NormFloat64()).Score >= 1
			switch {
			case i >= 60 && i < 1440:
				youngN++
				if alarm {
					young++
				}
			case i >= 2*1440:
				oldN++
				if alarm {
					old++
				}
			}
		}
	}
	ry, ro := float64(young)/float64(youngN), float64(old)/float64(oldN)
	t.Logf("first day %d alarms in %d samples (%.2e), third day %d in %d (%.2e)", young, youngN, ry, old, oldN, ro)
	if old == 0 || ry > 1.5*ro {
		t.Errorf("the first day alarms %.2e of its samples, the third %.2e: want at most 1.5 times", ry, ro)
	}
}

// weibullQuantile is the q-quantile of the sorted values xs read with the
// k-th smallest of n at k/(n+1) (Hyndman and Fan's type 6), the extremes
// beyond them.
func weibullQuantile(xs []float64, q float64) float64 {
	n := len(xs)
	k := q * float64(n+1) // 1-based rank
	switch {
	case k <= 1:
		return xs[0]
	case k >= float64(n):
		return xs[n-1]
	}
	j := int(k)
	return xs[j-1] + (k-float64(j))*(xs[j]-xs[j-1])
}

// TestThinWindow: the thinned window holds at most its maximum, the
// samples it holds are within its span, one per slot of its stride, and it
// covers the span: its oldest sample is no more than two strides after
// the span's start once the series is older than the span.
func TestThinWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, step := range []int64{15_000, 60_000, fiveMin} {
		const span = 7 * 86_400_000
		w := newThinWindow(span, DefaultAutoSample)
		var tm int64
		for tm = 0; tm < 9*86_400_000; tm += step {
			// Rounded values tie often: ties keep their age order.
			v := math.Round(rng.NormFloat64() * 4)
			w.evict(tm, v)
			w.add(tm, v)
			n := w.w.len()
			for i := 1; i < n; i++ {
				if w.w.at(i-1) > w.w.at(i) {
					t.Fatalf("step %d at %d: value order broken at %d: %v > %v", step, tm, i, w.w.at(i-1), w.w.at(i))
				}
			}
			if n > DefaultAutoSample {
				t.Fatalf("step %d: %d samples held", step, n)
			}
			// Its room follows what it holds: a short history is cheap.
			if room := len(w.w.vals); room > max(thinStart, 2*n) || room > DefaultAutoSample {
				t.Fatalf("step %d: room for %d samples with %d held, want at most max(%d, %d) and %d",
					step, room, n, thinStart, 2*n, DefaultAutoSample)
			}
		}
		var ts []int64
		q := w.w.ts
		for range w.w.n {
			ts = append(ts, q.oldest())
			q.pop()
		}
		for i := 1; i < len(ts); i++ {
			if floorDiv(ts[i], w.stride) == floorDiv(ts[i-1], w.stride) {
				t.Fatalf("step %d: two samples in one slot of %d ms: %d, %d", step, w.stride, ts[i-1], ts[i])
			}
		}
		last := tm - step
		if oldest := ts[0]; last-oldest > span || oldest-(last-span) > 2*w.stride {
			t.Errorf("step %d: holds %d samples from %d to %d, stride %d: the span %d is not covered", step, len(ts), oldest, last, w.stride, span)
		}
		if len(ts) < DefaultAutoSample/2 {
			t.Errorf("step %d: %d samples held, want at least half of %d", step, len(ts), DefaultAutoSample)
		}
	}
}

// TestAutoMemory: a week of history takes the same room, under 16 KiB a
// series, at a 15-second, a 1-minute and a 5-minute step.
func TestAutoMemory(t *testing.T) {
	for _, step := range []int64{15_000, 60_000, fiveMin, 3_600_000} {
		b := autoBytes(step, 50)
		t.Logf("step %ds: %d bytes a series", step/1000, b)
		if b > 16<<10 {
			t.Errorf("step %ds: %d bytes a series, want at most 16 KiB", step/1000, b)
		}
	}
}

// autoBytes returns the heap n default Auto detectors hold, per detector,
// after autoMemoryDays of a noisy daily series at the step.
func autoBytes(step int64, n int) int {
	f, err := Build(Spec{Name: "auto", Step: step})
	if err != nil {
		panic(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ds := make([]Detector, n)
	for i := range ds {
		ds[i] = f()
	}
	rng := rand.New(rand.NewPCG(uint64(step), 13))
	for tm := int64(0); tm < autoMemoryDays(step)*86_400_000; tm += step {
		day := math.Sin(float64(tm%86_400_000) / 86_400_000 * 2 * math.Pi)
		for _, d := range ds {
			d.Observe(tm, 50+20*day+rng.NormFloat64())
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ds)
	return int(after.HeapAlloc-before.HeapAlloc) / n
}

// autoMemoryDays is how many days autoBytes feeds a detector at step:
// eight, or at an hourly step five weeks, which its ring of 28 days of
// bins and the past weeks need to fill.
func autoMemoryDays(step int64) int64 {
	if step >= 3_600_000 {
		return 35
	}
	return 8
}

// BenchmarkAutoMemory reports the bytes a default Auto holds per series
// after autoMemoryDays at each step (B/series), and the time a sample
// takes.
func BenchmarkAutoMemory(b *testing.B) {
	for _, step := range []int64{15_000, 60_000, fiveMin, 3_600_000} {
		b.Run(fmt.Sprintf("step=%ds", step/1000), func(b *testing.B) {
			var bytes int
			for b.Loop() {
				bytes = autoBytes(step, 20)
			}
			b.ReportMetric(float64(bytes), "B/series")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*20*int(autoMemoryDays(step)*86_400_000/step)), "ns/sample")
		})
	}
}

// FuzzAutoPhase runs Auto with a one-second period and 50 ms bins, so
// that the fuzzer's steps of up to 32 s reach the past-period tests and
// the bins' turnover, and checks its results as fuzzDetector does.
func FuzzAutoPhase(f *testing.F) {
	f.Add([]byte("\x64\x00\x00\x00\x00\x00\x00\x00\x24\x40\x64\x00\x00\x00\x00\x00\x00\x00\x34\x40"), int64(5000), int64(100))
	f.Add([]byte("\xe8\x03\x00\x00\x00\x00\x00\x00\xf0\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\xff"), int64(1), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, window, tol int64) {
		window = window & math.MaxInt32 // ≥ 0
		tol &= math.MaxInt32            // ≥ 0
		a := NewAuto(AutoConfig{Window: window, Period: 1000, Tolerance: tol, Bin: 50, MinPoints: 2})
		fuzzSamples(data, func(tm int64, v float64) {
			r := a.Observe(tm, v)
			checkFuzzResult(t, tm, v, r)
			if r.Score > MaxAutoScore {
				t.Fatalf("t=%d: score %v above %v", tm, r.Score, MaxAutoScore)
			}
			if a.ext.n < 0 || a.ext.n > a.ext.span || len(a.ext.top) > a.ext.keep {
				t.Fatalf("t=%d: %d closed bins counted of %d, %d kept of %d", tm, a.ext.n, a.ext.span, len(a.ext.top), a.ext.keep)
			}
		})
	})
}

// TestAutoRejectsNegativeTolerance: NewAuto refuses a negative tolerance
// as it refuses other bad settings.
func TestAutoRejectsNegativeTolerance(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Tolerance must be ≥ 0 ms, got -1") {
			t.Errorf("NewAuto with Tolerance -1: panic %v", r)
		}
	}()
	NewAuto(AutoConfig{Window: 3_600_000, Tolerance: -1})
}

// TestAutoBatchRoom: a batch on an empty window takes at once the room its
// samples would have grown the window to one at a time, so a cold
// evaluation allocates once and keeps no more than a warm one; a batch on
// a window that holds samples grows it as they come.
func TestAutoBatchRoom(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{1, 15, 16, 17, 100, 242, 300, 385, 1000, 5762} {
		one, batch := NewAuto(AutoConfig{}), NewAuto(AutoConfig{})
		ts, vs := make([]int64, n), make([]float64, n)
		for i := range n {
			ts[i], vs[i] = 1_700_000_000_000+int64(i)*15_000, 100+rng.NormFloat64()
		}
		for i := range n {
			one.Observe(ts[i], vs[i])
		}
		out := make([]Result, n)
		batch.ObserveBatch(ts, vs, out)
		if a, b := len(one.thin.w.vals), len(batch.thin.w.vals); a != b {
			t.Errorf("%d samples: room %d one at a time, %d in a batch", n, a, b)
		}
		// A second batch grows as one sample at a time does.
		more := 30
		ts2, vs2 := make([]int64, more), make([]float64, more)
		for i := range more {
			ts2[i], vs2[i] = ts[n-1]+int64(i+1)*15_000, 100+rng.NormFloat64()
			one.Observe(ts2[i], vs2[i])
		}
		batch.ObserveBatch(ts2, vs2, make([]Result, more))
		if a, b := len(one.thin.w.vals), len(batch.thin.w.vals); a != b {
			t.Errorf("%d + %d samples: room %d one at a time, %d in batches", n, more, a, b)
		}
	}
	// Samples older than the window's span of the batch's last take no room.
	a := NewAuto(AutoConfig{})
	span := a.thin.w.window
	ts := []int64{0, 1000, span + 5000, span + 20_000}
	a.ObserveBatch(ts, []float64{1, 2, 3, 4}, make([]Result, len(ts)))
	if room := len(a.thin.w.vals); room != thinStart {
		t.Errorf("two samples in the span of four: room %d, want %d", room, thinStart)
	}
}

// TestThinWindowReserve: after reserve, a cold batch's samples go into
// the room taken, without a reallocation, whatever the batch's length.
func TestThinWindowReserve(t *testing.T) {
	for _, n := range []int{1, 16, 17, 242, 384, 5762} {
		w := newThinWindow(7*86_400_000, DefaultAutoSample)
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = int64(i) * 15_000
		}
		w.reserve(ts)
		room := len(w.w.vals)
		if room == 0 {
			t.Fatalf("%d samples: no room reserved", n)
		}
		first := &w.w.vals[0]
		for i, tm := range ts {
			w.evict(tm, float64(i))
			w.add(tm, float64(i))
			if len(w.w.vals) != room || &w.w.vals[0] != first {
				t.Fatalf("%d samples: the room of %d was reallocated at sample %d (now %d)", n, room, i, len(w.w.vals))
			}
		}
	}
}

// weekday returns, at an hourly sample i, a request rate with a daily
// cycle (1,000 ± 500) that is 30% lower on two days of every seven, with
// 5% noise from rng.
func weekday(i int, rng *rand.Rand) float64 { return weekdayShape(i) * (1 + 0.05*rng.NormFloat64()) }

func weekdayShape(i int) float64 {
	v := 1000 * (1 + 0.5*math.Sin(2*math.Pi*float64(i%24)/24))
	if (i/24)%7 >= 5 {
		v *= 0.7
	}
	return v
}

// TestAutoWeeklyPhase checks the phase test against past weeks on an
// hourly series with quiet weekends, which the days before do not
// predict: a drop to 30% for three hours, within the values the window
// holds, alarms by the weekly test on a weekday and on a weekend; the
// usual weeks raise nothing; without the weekly test the drops go
// unreported. At a 5-minute step the bins hold one week, and there is no
// weekly test.
func TestAutoWeeklyPhase(t *testing.T) {
	const hour = 3_600_000
	const weeks = 8
	drops := []int{(5*7+2)*24 + 12, (6*7+5)*24 + 10} // a Wednesday noon, a Saturday morning
	f := func(name string, weekly, drop bool) {
		t.Helper()
		a := NewAuto(AutoConfig{Step: hour})
		if a.wk == nil {
			t.Fatalf("%s: no weekly test at an hourly step", name)
		}
		if !weekly {
			a.wk = nil
		}
		rng := rand.New(rand.NewPCG(5, 6))
		var outside []int
		found := make([]bool, len(drops))
		for i := range weeks * 7 * 24 {
			v := weekday(i, rng)
			in := -1
			for k, d := range drops {
				if drop && i >= d && i < d+3 {
					in = k
					v *= 0.3
				}
			}
			r := a.Observe(int64(i)*hour, v)
			if !r.Anomalous() || i < 3*7*24 {
				continue
			}
			if in < 0 {
				outside = append(outside, i)
				continue
			}
			if r.Test != TestWeek {
				t.Errorf("%s: sample %d of a drop alarms by test %q, want week", name, i, r.Test)
			}
			found[in] = true
		}
		if len(outside) > 0 {
			t.Errorf("%s: alarms at samples %v, outside the drops", name, outside)
		}
		for k, d := range drops {
			if want := weekly && drop; found[k] != want {
				t.Errorf("%s: the drop at sample %d reported: %v, want %v", name, d, found[k], want)
			}
		}
	}
	f("usual weeks", true, false)
	f("drops", true, true)
	f("drops, no weekly test", false, true)

	if a := NewAuto(AutoConfig{Step: fiveMin}); a.wk != nil {
		t.Errorf("a weekly test at a 5-minute step, whose bins hold one week")
	}
	if a := NewAuto(AutoConfig{Step: 30 * 60_000}); a.wk == nil || len(a.wk.blocks) != 2 {
		t.Errorf("at a 30-minute step the bins hold two weeks, want a weekly test reading them")
	}
}

// TestAutoWeeklyExpected checks the weekly test's verdict against
// values worked by hand. An hourly series is 200 on five days of seven and
// 100 on the other two, 100 more from 08:00 to 18:00 on the five, plus
// half the hour (so that consecutive hours differ by 0.5, its
// resolution), plus an offset o of each week: 0, 6, 2, 4, 0. Its days do
// not predict it; its weeks do, up to the offsets. The fifth week's first
// day at 12:00 is 50.
//
// The weekly test expects there the median of the four past weeks' values
// at 12:00 of that day, 306 + median(0, 6, 2, 4) = 309. The residuals it
// counted are −1 in the third week (its expectation the median of two
// past weeks, 306 + 3), +2 in the fourth (306 + median(0, 6, 2)) and −3 in
// the twelve hours of the fifth before 12:00 (incidents are learned,
// Incidents −1, so that the first weekend, which alarms since the days
// before it predicted none, leaves no bin out): RMS √((168 + 4·168 +
// 9·12)/348) = 1.6505. The range of each past week within an hour of
// 12:00 is [305.5 + o, 306.5 + o], so the distances below it are −255.5
// − o and their median −258.5: the score is 258.5/(3·1.6505) = 52.21, the
// band [305.5 + 3 − 3·1.6505, 306.5 + 3 + 3·1.6505].
func TestAutoWeeklyExpected(t *testing.T) {
	const hour = 3_600_000
	a := NewAuto(AutoConfig{Step: hour, Incidents: -1})
	offset := []float64{0, 6, 2, 4, 0}
	at := 4*7*24 + 12
	var r Result
	for i := range at + 1 {
		h, d := i%24, i/24
		v := 200.0
		if d%7 >= 5 {
			v = 100
		} else if h >= 8 && h < 18 {
			v = 300
		}
		v += 0.5*float64(h) + offset[d/7]
		if i == at {
			v = 50
		}
		r = a.Observe(int64(i)*hour, v)
	}
	rms := math.Sqrt((168 + 4*168 + 9*12) / 348.0)
	half := 3 * rms
	want := Result{Score: 258.5 / half, Expected: 309, Lower: 308.5 - half, Upper: 309.5 + half, Ready: true, Test: TestWeek}
	if r.Test != want.Test || r.Ready != want.Ready ||
		math.Abs(r.Score-want.Score) > 1e-9 || math.Abs(r.Expected-want.Expected) > 1e-9 ||
		math.Abs(r.Lower-want.Lower) > 1e-9 || math.Abs(r.Upper-want.Upper) > 1e-9 {
		t.Errorf("got %+v, want %+v", r, want)
	}
}

// TestAutoWeeklyShape checks, at a 5-minute step (whose bins hold one
// week, too few for the test against past weeks), the weekly family's
// request rate with 2% noise, whose weekdays the past days predict and
// whose weekends, 40% lower, they do not. Its first weekends alarm, as
// anything the detector has not seen does; once weekends recur a week
// apart they stop (they alarmed every week before), while its drops to a
// third still alarm. A dip on a series without weekends that comes again
// a week later at the same time alarms both times: one repeat is not a
// weekly shape.
func TestAutoWeeklyShape(t *testing.T) {
	for _, s := range families.WeeklyShape(families.DefaultSeed + 6) {
		if s.Name != "weekly/drop/5m/noise2" {
			continue
		}
		fr := runFamily(t, "auto", "", s)
		for k, r := range fr.reported {
			if !r {
				t.Errorf("%s: drop %d unreported (score %.2f)", s.Name, k+1, fr.scores[k])
			}
		}
		a := NewAuto(AutoConfig{Step: s.Step})
		late := map[int]int{} // alarms starting on weekends from the third week on, by week
		prev := false
		for i := range s.T {
			alarm := a.Observe(s.T[i], s.V[i]).Anomalous()
			day := int((s.T[i] - s.T[0]) / 86_400_000)
			inside := slices.ContainsFunc(s.Incidents, func(c families.Incident) bool { return i >= c.From && i <= c.To+12 })
			if alarm && !prev && !inside && day%7 >= 5 && day >= 14 {
				late[day/7]++
			}
			prev = alarm
		}
		if len(late) > 0 {
			t.Errorf("%s: weekends from the third week on alarm, by week: %v", s.Name, late)
		}
	}

	// A dip at 14:00 on a day of the second week, and again a week later.
	b := NewAuto(AutoConfig{Step: fiveMin})
	rng := rand.New(rand.NewPCG(9, 10))
	dips := []int{9*daySteps + 168, 16*daySteps + 168}
	found := make([]bool, len(dips))
	for i := range 18 * daySteps {
		v, in := workday(i, rng), -1
		for k, d := range dips {
			if i >= d && i < d+12 {
				v, in = 40+rng.NormFloat64(), k
			}
		}
		if alarm := b.Observe(int64(i)*fiveMin, v).Anomalous(); in >= 0 && alarm {
			found[in] = true
		}
	}
	for k, f := range found {
		if !f {
			t.Errorf("dip %d (at sample %d) unreported", k+1, dips[k])
		}
	}
}
