package analysis

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/inferwatch/inferwatch/analysis/nab"
)

// allSpecs are a default and a windowed spec of every detector.
func allSpecs() []Spec {
	var specs []Spec
	for _, n := range Names() {
		specs = append(specs, Spec{Name: n}, Spec{Name: n, Window: 3 * 86_400_000})
	}
	return specs
}

// testStream is a daily shape with noise, spikes, a level shift, gaps,
// NaNs and out-of-order samples, on a 5-minute step.
func testStream(seed uint64, n int) []point {
	rng := rand.New(rand.NewPCG(seed, 7))
	var ps []point
	tm := int64(1_700_000_000_000)
	for i := range n {
		tm += 300_000
		if rng.IntN(200) == 0 {
			tm += rng.Int64N(20) * 300_000
		}
		v := 100 + 30*math.Sin(2*math.Pi*float64(i)/288) + 3*rng.NormFloat64()
		if i > n/2 {
			v -= 40
		}
		switch u := rng.Float64(); {
		case u < 0.01:
			v *= 5
		case u < 0.015:
			v = math.NaN()
		case u < 0.02:
			ps = append(ps, point{tm - 600_000, v})
		}
		ps = append(ps, point{tm, v})
	}
	return ps
}

// TestDetectorsCausal changes the future of a stream and checks that no
// earlier result changes.
func TestDetectorsCausal(t *testing.T) {
	a := testStream(1, 3000)
	for _, spec := range allSpecs() {
		f, err := Build(spec)
		if err != nil {
			t.Fatalf("%+v: %v", spec, err)
		}
		for _, cut := range []int{5, 400, 2000} {
			b := slices.Clone(a)
			rng := rand.New(rand.NewPCG(uint64(cut), 9))
			for i := cut; i < len(b); i++ {
				b[i].v = 1e6 * rng.NormFloat64()
			}
			da, db := f(), f()
			ready := 0
			for i := range a {
				ra, rb := da.Observe(a[i].t, a[i].v), db.Observe(b[i].t, b[i].v)
				if i >= cut {
					break
				}
				if ra.Ready {
					ready++
				}
				if !sameResult(ra, rb) {
					t.Fatalf("%s window=%d: sample %d scored %+v, and %+v once samples from %d on changed", spec.Name, spec.Window, i, ra, rb, cut)
				}
			}
			if cut == 2000 && ready < 1000 {
				t.Errorf("%s window=%d: only %d of %d samples were scored", spec.Name, spec.Window, ready, cut)
			}
		}
	}
}

func sameResult(a, b Result) bool {
	eq := func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
	return a.Ready == b.Ready && eq(a.Score, b.Score) && eq(a.Expected, b.Expected) && eq(a.Lower, b.Lower) && eq(a.Upper, b.Upper)
}

// TestDetectorsContract checks every detector on hard streams: scores are
// finite and ≥ 0, non-finite and out-of-order samples are not Ready and
// score 0, a Ready band holds its expected value, and a constant series
// never alarms.
func TestDetectorsContract(t *testing.T) {
	stale := math.Float64frombits(0x7ff0000000000002)
	streams := map[string][]point{"mixed": testStream(2, 4000)}
	var flat, huge, tiny []point
	for i := range 3000 {
		tm := int64(i) * 60_000
		flat = append(flat, point{tm, 42})
		huge = append(huge, point{tm, []float64{1e308, -1e308, 5, stale, math.Inf(-1), 1.7e308}[i%6]})
		tiny = append(tiny, point{tm, 1 + 1e-12*float64(i%3)})
	}
	streams["huge"], streams["tiny"] = huge, tiny
	for _, spec := range allSpecs() {
		f, _ := Build(spec)
		for name, s := range streams {
			d := f()
			last := int64(math.MinInt64)
			for i, p := range s {
				r := d.Observe(p.t, p.v)
				if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || r.Score < 0 {
					t.Fatalf("%s window=%d %s sample %d (%g): score %g", spec.Name, spec.Window, name, i, p.v, r.Score)
				}
				bad := math.IsNaN(p.v) || math.IsInf(p.v, 0) || p.t <= last
				if bad && (r.Ready || r.Score != 0) {
					t.Fatalf("%s window=%d %s sample %d (%g at %d): %+v, want not ready", spec.Name, spec.Window, name, i, p.v, p.t, r)
				}
				if !bad {
					last = p.t
				}
				if r.Ready && (math.IsNaN(r.Expected) || math.IsInf(r.Expected, 0)) {
					t.Fatalf("%s window=%d %s sample %d: expected %g", spec.Name, spec.Window, name, i, r.Expected)
				}
				if r.Ready && !math.IsNaN(r.Lower) && !(r.Lower <= r.Expected && r.Expected <= r.Upper) {
					t.Fatalf("%s window=%d %s sample %d: band %+v", spec.Name, spec.Window, name, i, r)
				}
			}
		}
		d := f()
		ready := 0
		for i, p := range flat {
			r := d.Observe(p.t, p.v)
			if r.Ready {
				ready++
			}
			if r.Score != 0 {
				t.Fatalf("%s window=%d: constant series scores %g at sample %d", spec.Name, spec.Window, r.Score, i)
			}
		}
		if ready == 0 {
			t.Errorf("%s window=%d: never ready on a constant series", spec.Name, spec.Window)
		}
		// A series that moves in its last digits does not alarm where
		// a floor applies.
		if spec.Name == "robust" || spec.Name == "auto" || spec.Name == "levelshift" || spec.Name == "seasonal" {
			d := f()
			for i, p := range tiny {
				if r := d.Observe(p.t, p.v); r.Anomalous() {
					t.Fatalf("%s window=%d: 1 ± 1e-12 alarms at sample %d: %+v", spec.Name, spec.Window, i, r)
				}
			}
		}
	}
}

// TestSortedWindow compares the order statistics of a sortedWindow with a
// sorted copy, through growth, eviction by time, ties and clearing.
func TestSortedWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	w := sortedWindow{window: 50_000}
	var ref []point
	tm := int64(0)
	for i := range 20_000 {
		tm += 1 + rng.Int64N(1500)
		if rng.IntN(3000) == 0 {
			w.clear()
			ref = ref[:0]
		}
		w.evictBefore(tm)
		for len(ref) > 0 && tm-ref[0].t > w.window {
			ref = ref[1:]
		}
		v := float64(rng.IntN(20)) // many ties
		if rng.IntN(2) == 0 {
			v = rng.NormFloat64()
		}
		w.push(tm, v)
		ref = append(ref, point{tm, v})
		vals := make([]float64, len(ref))
		for j, p := range ref {
			vals[j] = p.v
		}
		slices.Sort(vals)
		if w.len() != len(vals) {
			t.Fatalf("op %d: holds %d, want %d", i, w.len(), len(vals))
		}
		for j := range vals {
			if w.at(j) != vals[j] {
				t.Fatalf("op %d: order statistic %d is %g, want %g", i, j, w.at(j), vals[j])
			}
		}
		med := sortedMedian(vals)
		dev := make([]float64, len(vals))
		for j, x := range vals {
			dev[j] = math.Abs(x - med)
		}
		slices.Sort(dev)
		if got, want := w.median(), med; got != want {
			t.Fatalf("op %d: median %g, want %g", i, got, want)
		}
		if got, want := w.mad(med), sortedMedian(dev); got != want {
			t.Fatalf("op %d: MAD %g, want %g", i, got, want)
		}
	}
}

// TestAutoNAB scores the default auto detector on the shared NAB subset at
// its own threshold: it must keep at least 70 on the standard profile
// (70.6 when written, 65.2 before the phase test; Numenta HTM scores 75.1
// on this subset).
func TestAutoNAB(t *testing.T) {
	files := loadNAB(t)
	r := runNAB(files, newDefault("auto")).score(t, files, nil, nab.Standard)
	t.Logf("auto: %s", r)
	if got := r.own.Normalized(nab.Standard); got < 70 {
		t.Errorf("auto scores %.1f on NAB's standard profile, want ≥ 70", got)
	}
}

// TestRobustMemory checks the bytes a 1,440-sample window holds.
func TestRobustMemory(t *testing.T) {
	r := NewRobust(RobustConfig{Window: 1440 * 60_000})
	for i := range int64(3 * 1440) {
		r.Observe(i*60_000, float64(i%97))
	}
	bytes := 8*cap(r.vals) + cap(r.ts.buf) + 2*cap(r.fitter.slots)
	if r.Len() != 1441 || bytes > 16*1024-200 {
		t.Errorf("holds %d samples in %d bytes, want 1441 in under 16 KiB", r.Len(), bytes)
	}
}

func fuzzDetector(f *testing.F, name string, params map[string]string) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x24\x40\x01\x00\x00\x00\x00\x00\x00\x00\x24\x40"), int64(5000))
	f.Add([]byte("\xe8\x03\x00\x00\x00\x00\x00\x00\xf0\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\xff"), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, window int64) {
		if window < 0 {
			window = window & math.MaxInt32
		}
		fac, err := Build(Spec{Name: name, Window: window, Params: params})
		if err != nil {
			return // seasonal refuses windows shorter than its periods
		}
		d := fac()
		fuzzSamples(data, func(tm int64, v float64) { checkFuzzResult(t, tm, v, d.Observe(tm, v)) })
	})
}

// fuzzSamples reads data as 10-byte records, each an int16 step from the
// previous timestamp and a float64 value (both little-endian), and passes
// each sample to f.
func fuzzSamples(data []byte, f func(t int64, v float64)) {
	var tm int64
	for ; len(data) >= 10; data = data[10:] {
		tm += int64(int16(binary.LittleEndian.Uint16(data)))
		f(tm, math.Float64frombits(binary.LittleEndian.Uint64(data[2:10])))
	}
}

// checkFuzzResult fails on a score that is not a finite number ≥ 0, or a
// band that does not hold the expected value.
func checkFuzzResult(t *testing.T, tm int64, v float64, r Result) {
	t.Helper()
	if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || r.Score < 0 {
		t.Fatalf("t=%d v=%g: score %g", tm, v, r.Score)
	}
	if r.Ready && (math.IsNaN(r.Expected) || !math.IsNaN(r.Lower) && !(r.Lower <= r.Expected && r.Expected <= r.Upper)) {
		t.Fatalf("t=%d v=%g: bad band %+v", tm, v, r)
	}
}

func FuzzRobust(f *testing.F) { fuzzDetector(f, "robust", map[string]string{"min_points": "2"}) }
func FuzzEWMA(f *testing.F)   { fuzzDetector(f, "ewma", map[string]string{"min_points": "2"}) }
func FuzzLevelShift(f *testing.F) {
	fuzzDetector(f, "levelshift", map[string]string{"min_points": "2"})
}
func FuzzAuto(f *testing.F) { fuzzDetector(f, "auto", map[string]string{"min_points": "2"}) }
func FuzzSeasonal(f *testing.F) {
	fuzzDetector(f, "seasonal", map[string]string{"period": "1s", "min_periods": "1"})
}

// TestRearm checks the debounce: after an alarm, scores are capped until
// quiet scores in a row have been below 1.
func TestRearm(t *testing.T) {
	f := func(quiet int, in, want []float64) {
		t.Helper()
		g := newRearm(quiet)
		for i, s := range in {
			if got := g.pass(s); got != want[i] {
				t.Errorf("quiet=%d score %d (%g): passed %g, want %g", quiet, i, s, got, want[i])
			}
		}
	}
	f(0, []float64{2, 2, 0.5, 3}, []float64{2, 2, 0.5, 3})
	f(2, []float64{2, 2, 0.5, 3, 0.1, 0.2, 4}, []float64{2, 0.99, 0.5, 0.99, 0.1, 0.2, 4})
	f(1, []float64{0.5, 1, 1, 0, 1.5}, []float64{0.5, 1, 0.99, 0, 1.5})
}

// TestResolution checks the smallest non-zero change between neighbours.
func TestResolution(t *testing.T) {
	f := func(in []float64, want float64) {
		t.Helper()
		var r resolution
		for _, v := range in {
			r.add(v)
		}
		if got := r.step(); got != want {
			t.Errorf("%v: resolution %g, want %g", in, got, want)
		}
	}
	f(nil, 0)
	f([]float64{5, 5, 5}, 0)
	f([]float64{60, 62, 62, 61, 65}, 1)
	lo, hi := 0.066, 0.068
	f([]float64{lo, hi, lo}, hi-lo)
	f([]float64{1e308, -1e308, 0}, 1e308)
}

// TestQuantisedSeriesQuiet checks the floors on series that move by one
// step of their resolution, or mostly sit on one level: robust, seasonal,
// ewma and auto must not alarm on them beyond a stray alarm while the
// window fills. (LevelShift is left out: a fair coin between two levels
// one step apart is, to a CUSUM, a series of small shifts.)
func TestQuantisedSeriesQuiet(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	series := map[string]func(i int) float64{
		"one step":   func(i int) float64 { return 0.066 + 0.002*float64(rng.IntN(2)) },
		"idle level": func(i int) float64 { return []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 7}[rng.IntN(10)] },
	}
	for _, name := range []string{"robust", "seasonal", "ewma", "auto"} {
		f, err := Build(Spec{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		for sn, gen := range series {
			d := f()
			alarms := 0
			for i := range 5000 {
				if d.Observe(int64(i)*300_000, gen(i)).Anomalous() {
					alarms++
				}
			}
			if alarms > 2 {
				t.Errorf("%s on %s: %d alarms in 5000 samples, want at most 2", name, sn, alarms)
			}
		}
	}
}

// TestAutoSeenBefore checks that a spike repeated at the same time of day
// alarms on its first two days only (from the third it has recurred at
// that time on each of the last two days: the series' season), and a spike
// at a new time still alarms.
func TestAutoSeenBefore(t *testing.T) {
	const step = 300_000 // 5 minutes: 288 samples a day
	a := NewAuto(AutoConfig{Step: step})
	var alarms []int
	for i := range 6 * 288 {
		v := 10 + float64(i%7)
		if i%288 == 100 && i >= 288 { // a daily job from the second day on
			v = 60 - float64(i/288)
		}
		if i == 5*288+200 { // something new on the sixth day
			v = 80
		}
		if a.Observe(int64(i)*step, v).Anomalous() && i > 50 {
			alarms = append(alarms, i)
		}
	}
	if want := []int{288 + 100, 2*288 + 100, 5*288 + 200}; !slices.Equal(alarms, want) {
		t.Errorf("alarms at samples %v, want %v (the daily job's first two runs and the new spike)", alarms, want)
	}
}

// TestSteadyStateAllocs requires that a detector whose window has filled
// allocates nothing per sample: a history that slides must reuse its
// arrays, or 100,000 series make garbage at the rate they are scored.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled scratch at random")
	}
	noise := benchNoise()
	for _, spec := range []Spec{
		{Name: "sigma"}, {Name: "ewma"}, {Name: "robust"}, {Name: "levelshift"}, {Name: "auto"},
		// A period within the window's reach: auto keeps its past-period
		// history and, two periods fitting, the phase test's residuals.
		{Name: "auto", Params: map[string]string{"period": "20m"}},
	} {
		spec.Window = 240 * benchStep
		name := spec.Name
		if spec.Params != nil {
			name += fmt.Sprint(spec.Params)
		}
		f, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		d := f()
		// Samples one at a time, then, as the engine gives them, in
		// batches of 16 through ObserveBatch where there is one (asked
		// once: the runtime may grow a type assertion's cache at any call).
		bd, isBatch := d.(BatchDetector)
		tm, i := int64(benchT0), 0
		ts, out := make([]int64, 16), make([]Result, 16)
		next := func(batch int) {
			o := i & 4095
			if batch == 1 || !isBatch {
				for j := range batch {
					out[j] = d.Observe(tm, noise[o+j])
					tm += benchStep
				}
			} else {
				for j := range ts[:batch] {
					ts[j] = tm
					tm += benchStep
				}
				bd.ObserveBatch(ts[:batch], noise[o:o+batch], out[:batch])
			}
			i += batch
		}
		for _, batch := range []int{1, 16} {
			// Auto's history holds its window plus the tolerance
			// of its past-period test: a few thousand samples fill
			// both.
			for range 5000 / batch {
				next(batch)
			}
			// The counts are the process's: a goroutine of the runtime
			// or of the test binary may allocate meanwhile. A detector
			// that allocates does so in every try; a stray allocation
			// seldom falls in three.
			var n, bytes uint64
			for range 3 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range 20_000 / batch {
					next(batch)
				}
				runtime.ReadMemStats(&after)
				if n, bytes = after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc; n == 0 {
					break
				}
			}
			if n != 0 {
				t.Errorf("%s, batches of %d: %d allocations (%d bytes) over 20,000 samples once its window is full, in each of 3 tries; want none", name, batch, n, bytes)
			}
		}
	}
}
