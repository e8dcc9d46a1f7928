package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
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
// change of the day's shape that stays within the values the window holds
// alarms on that day; the usual days, and a day whose step comes half an
// hour late, do not; a series without a period is judged as without the
// test.
func TestAutoPhase(t *testing.T) {
	const days, odd = 8, 6 // the changed day
	// change returns the value at sample p of the changed day, given
	// the noise of that sample.
	f := func(name string, phase bool, change func(p int, noise float64) float64, wantOdd bool) {
		t.Helper()
		c := AutoConfig{Window: 2000 * fiveMin}
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
			if !a.Observe(int64(i)*fiveMin, v).Anomalous() || i < 2*daySteps {
				continue
			}
			if i/daySteps == odd {
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
	a := NewAuto(AutoConfig{Window: 2000 * fiveMin})
	b := NewAuto(AutoConfig{Window: 2000 * fiveMin, PhaseK: -1})
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
		if ra != rb && !(math.IsNaN(ra.Lower) && math.IsNaN(rb.Lower)) {
			t.Fatalf("sample %d: %+v with the phase test, %+v without", i, ra, rb)
		}
		if a.ph.fits(a.period) {
			t.Fatalf("sample %d: the phase test judges a random walk", i)
		}
	}
}

// TestAutoPhaseSums checks the running sums of the phase test against
// their recomputation from the history, on a series far from zero (where
// Σx² − (Σx)²/n cancels) with gaps and eviction.
func TestAutoPhaseSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := NewAuto(AutoConfig{Window: 1000 * fiveMin})
	var tm int64
	for i := range 6 * daySteps {
		tm += fiveMin
		if i%400 == 399 {
			tm += 50 * fiveMin // a gap
		}
		a.Observe(tm, 1e9+workday(int(tm/fiveMin), rng))
		if i%37 != 0 || a.ph.n == 0 {
			continue
		}
		got := a.ph
		want := phaseTest{}
		want.recompute(&a.hist, &a.hr)
		if got.n != want.n {
			t.Fatalf("sample %d: %d residuals counted, %d in the history", i, got.n, want.n)
		}
		n := float64(got.n)
		gv := got.sX2/n - (got.sumX/n)*(got.sumX/n)
		wv := want.sX2/n - (want.sumX/n)*(want.sumX/n)
		if math.Abs(gv-wv) > 1e-6*wv || math.Abs(got.sumR2-want.sumR2) > 1e-6*want.sumR2 {
			t.Fatalf("sample %d: variance %g and Σr² %g running, %g and %g recomputed", i, gv, got.sumR2, wv, want.sumR2)
		}
	}
	if !a.ph.fits(a.period) {
		n := float64(a.ph.n)
		t.Errorf("the phase test does not judge a daily shape with unit noise 10⁹ from zero: %d residuals, RMS %g, SD %g", a.ph.n, math.Sqrt(a.ph.sumR2/n), math.Sqrt(a.ph.sX2/n-(a.ph.sumX/n)*(a.ph.sumX/n)))
	}
}

// TestAutoPhaseMemory checks what the phase test adds to a series' state
// for a 1,440-sample window: the residuals beside the history and the
// scratch of one entry per past period.
func TestAutoPhaseMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a := NewAuto(AutoConfig{Window: 1440 * fiveMin})
	for i := range 4 * 1440 {
		a.Observe(int64(i)*fiveMin, workday(i, rng))
	}
	added := 4*cap(a.hr.buf) + 8*(cap(a.ph.es)+cap(a.ph.ys)+cap(a.ph.lo)+cap(a.ph.hi)) + 16*cap(a.ph.hits)
	hr, hist := a.hr.len(), a.hist.len()
	t.Logf("phase test: %d residuals, %d bytes; history %d bytes", hr, added, 8*cap(a.hist.t.buf)+8*cap(a.hist.tail.buf))
	if hr != hist || added > 12*1024 {
		t.Errorf("phase test holds %d bytes for %d residuals (history %d), want under 12 KiB", added, hr, hist)
	}
}

// BenchmarkAutoPhase measures Auto on 5-minute series with a daily shape,
// whose windows of 1,440 and 2,000 points hold five and seven days: the
// phase test reads each past day. Points go round-robin over 1,000 warmed
// series, as in BenchmarkAutoObserve; "off" is Auto without the phase
// test.
func BenchmarkAutoPhase(b *testing.B) {
	const series = 1000
	for _, points := range []int{1440, 2000} {
		for _, phase := range []bool{true, false} {
			name := "window=" + strconv.Itoa(points)
			if !phase {
				name += "/off"
			}
			b.Run(name, func(b *testing.B) {
				rng := rand.New(rand.NewPCG(9, 10))
				vals := make([]float64, 8*daySteps)
				for i := range vals {
					vals[i] = workday(i, rng)
				}
				c := AutoConfig{Window: int64(points) * fiveMin}
				if !phase {
					c.PhaseK = -1
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				ds := make([]*Auto, series)
				for s := range ds {
					ds[s] = NewAuto(c)
					for i := range points + 1 {
						ds[s].Observe(int64(i)*fiveMin, vals[(i+s)%len(vals)])
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				next := int64(points + 1)
				var i, anomalies int
				for b.Loop() {
					s := i % series
					k := int(next) + i/series
					if ds[s].Observe(int64(k)*fiveMin, vals[(k+s)%len(vals)]).Anomalous() {
						anomalies++
					}
					i++
				}
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/series, "B/series")
				runtime.KeepAlive(ds)
				if i > 0 && anomalies == i {
					b.Fatal("every point was anomalous")
				}
			})
		}
	}
}

// TestAutoPhaseRange checks the band of a phase alarm: a value above every
// past day's range scores its distance from the median of their highs.
func TestAutoPhaseRange(t *testing.T) {
	a := NewAuto(AutoConfig{Window: 2000 * fiveMin, Refractory: -1})
	rng := rand.New(rand.NewPCG(11, 12))
	n := 5 * daySteps
	for i := range n {
		a.Observe(int64(i)*fiveMin, workday(i, rng))
	}
	// At 02:00, within the night's values of the tail test's window but
	// far above the nights of the past days' ranges.
	tm := int64(n+24) * fiveMin
	for i := n; i < n+24; i++ {
		a.Observe(int64(i)*fiveMin, workday(i, rng))
	}
	if !a.ph.fits(a.period) {
		t.Fatal("the phase test does not judge a daily shape")
	}
	// The highs of the past days within two hours of 02:00.
	var his []float64
	hist := a.hist.items()
	for j := int64(1); tm-j*a.period >= hist[0].t; j++ {
		hi := math.Inf(-1)
		for _, q := range hist {
			if d := q.t - (tm - j*a.period); d >= -a.tol && d <= a.tol {
				hi = max(hi, q.v)
			}
		}
		his = append(his, hi)
	}
	slices.Sort(his)
	s := math.Sqrt(a.ph.sumR2 / float64(a.ph.n))
	r := a.Observe(tm, 60)
	if !r.Anomalous() || math.Abs(r.Upper-(sortedMedian(his)+DefaultAutoPhaseK*s)) > 0.5*s {
		t.Errorf("60 at night: %+v, want an alarm with upper edge near %g", r, sortedMedian(his)+DefaultAutoPhaseK*s)
	}
	if want := (60 - sortedMedian(his)) / (DefaultAutoPhaseK * s); math.Abs(r.Score-want) > 0.05*want {
		t.Errorf("60 at night scores %g, want about %g", r.Score, want)
	}
}

// FuzzAutoPhase runs Auto with a one-second period, so that the fuzzer's
// steps of up to 32 s reach the phase test, and checks its results as
// fuzzDetector does.
func FuzzAutoPhase(f *testing.F) {
	f.Add([]byte("\x64\x00\x00\x00\x00\x00\x00\x00\x24\x40\x64\x00\x00\x00\x00\x00\x00\x00\x34\x40"), int64(5000), int64(100))
	f.Add([]byte("\xe8\x03\x00\x00\x00\x00\x00\x00\xf0\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\xff"), int64(1), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, window, tol int64) {
		window = max(1, window&math.MaxInt32)
		tol &= math.MaxInt32 // ≥ 0
		a := NewAuto(AutoConfig{Window: window, Period: 1000, Tolerance: tol, MinPoints: 2})
		fuzzSamples(data, func(tm int64, v float64) {
			checkFuzzResult(t, tm, v, a.Observe(tm, v))
			hr, hist := a.hr.len(), a.hist.len()
			if a.ph.on() && hr != hist || !a.ph.on() && hr > 0 || a.ph.n < 0 {
				t.Fatalf("t=%d: %d residuals for %d samples, %d counted", tm, hr, hist, a.ph.n)
			}
		})
	})
}

// TestAutoRejectsNegativeTolerance: a negative tolerance would wrap the
// history's reach; NewAuto refuses it as it refuses other bad settings.
func TestAutoRejectsNegativeTolerance(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Tolerance must be ≥ 0 ms, got -1") {
			t.Errorf("NewAuto with Tolerance -1: panic %v", r)
		}
	}()
	NewAuto(AutoConfig{Window: 3_600_000, Tolerance: -1})
}

// items returns a copy of the samples held, oldest first.
func (h *pastHist) items() []point {
	out := make([]point, h.len())
	for i := range out {
		out[i] = point{h.time(i), h.value(i)}
	}
	return out
}

// items returns a copy of the items held, oldest first.
func (q *ring[T]) items() []T {
	out := make([]T, q.len())
	for i := range out {
		out[i] = q.at(i)
	}
	return out
}

// TestRing checks the ring against a slice doing the same pushes, drops
// and growths, through wraps of every offset.
func TestRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var q ring[int]
	var want []int
	next := 0
	for step := range 20000 {
		switch k := rng.IntN(10); {
		case k < 6:
			if q.full() {
				q.grow(q.len() + 1 + rng.IntN(q.len()/4+2))
			}
			q.push(next)
			want = append(want, next)
			next++
		default:
			d := rng.IntN(min(q.len(), 3) + 1)
			q.drop(d)
			want = want[d:]
		}
		if q.len() != len(want) || len(q.buf) < q.len() {
			t.Fatalf("step %d: %d items in %d slots, want %d", step, q.len(), len(q.buf), len(want))
		}
		if step%97 == 0 {
			if got := q.items(); !slices.Equal(got, want) {
				t.Fatalf("step %d: %v, want %v", step, got, want)
			}
		}
	}
}
