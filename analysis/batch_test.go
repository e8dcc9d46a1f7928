package analysis

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// identicalResult reports whether two results are identical bit for bit
// (any NaN equal to any NaN).
func identicalResult(a, b Result) bool {
	eq := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y)
	}
	return a.Ready == b.Ready && eq(a.Score, b.Score) && eq(a.Expected, b.Expected) && eq(a.Lower, b.Lower) && eq(a.Upper, b.Upper)
}

// batchStreams are the streams ObserveBatch is checked on: regular and
// irregular steps, gaps that empty the window, non-finite values,
// duplicates and samples out of order, spikes, values that overflow the
// running sums and values around the bounds of Sigma's batch loop.
func batchStreams() map[string][]sample {
	rng := rand.New(rand.NewPCG(21, 22))
	streams := map[string][]sample{}
	var regular, jitter, messy, huge []sample
	for i := range 5000 {
		v := 100 + rng.NormFloat64()
		if rng.IntN(300) == 0 {
			v = 1e8
		}
		regular = append(regular, sample{1_700_000_000_000 + int64(i)*15_000, v})
		jitter = append(jitter, sample{int64(i)*10_000 + rng.Int64N(50), 1e7 + 1000*float64(i) + rng.Float64()})
	}
	tm := int64(0)
	for range 5000 {
		switch u := rng.Float64(); {
		case u < 0.01:
			tm += rng.Int64N(300_000)
		case u < 0.02:
			tm -= rng.Int64N(5000)
		case u < 0.5:
			tm += 1000
		default:
			tm += 500 + rng.Int64N(1000)
		}
		v := 1e9 + 5*rng.NormFloat64()
		switch u := rng.Float64(); {
		case u < 0.01:
			v = math.NaN()
		case u < 0.02:
			v = math.Inf(-1)
		}
		messy = append(messy, sample{tm, v})
	}
	for i := range 3000 {
		v := rng.NormFloat64()
		if rng.IntN(100) == 0 {
			v = math.Copysign(1.7e308, v)
		}
		huge = append(huge, sample{int64(i) * 1000, v})
	}
	// Around the bounds of Sigma's batch loop (runMaxDev, runMaxSum): a
	// regular stream of values near 1e100 with excursions to 1e150.
	var large []sample
	for i := range 3000 {
		v := 1e100 * (1 + 0.01*rng.NormFloat64())
		if rng.IntN(200) == 0 {
			v = 1e150
		}
		large = append(large, sample{int64(i) * 1000, v})
	}
	streams["regular"], streams["jitter"], streams["messy"], streams["huge"] = regular, jitter, messy, huge
	streams["large"] = large
	return streams
}

// checkBatch feeds every stream to two detectors made by f, one sample at
// a time through Observe and in random batches through ObserveBatch, and
// requires identical results.
func checkBatch(t *testing.T, name string, f func() Detector) {
	t.Helper()
	rng := rand.New(rand.NewPCG(23, 24))
	for sname, stream := range batchStreams() {
		one, many := f(), f().(BatchDetector)
		var ts []int64
		var vs []float64
		var out []Result
		for i := 0; i < len(stream); {
			m := min(len(stream)-i, 1+rng.IntN(300))
			ts, vs = ts[:0], vs[:0]
			for _, p := range stream[i : i+m] {
				ts = append(ts, p.t)
				vs = append(vs, p.v)
			}
			out = append(out[:0], make([]Result, m)...)
			many.ObserveBatch(ts, vs, out)
			for j, p := range stream[i : i+m] {
				want := one.Observe(p.t, p.v)
				if !identicalResult(out[j], want) {
					t.Fatalf("%s, stream %s, sample %d (t=%d v=%g): batch gives %+v, Observe %+v", name, sname, i+j, p.t, p.v, out[j], want)
				}
			}
			i += m
		}
	}
}

func TestSigmaObserveBatch(t *testing.T) {
	for _, c := range []SigmaConfig{
		{Window: 240 * 15_000},
		{Window: 120_000, MinPoints: 5},
		{Window: 600_000, MinPoints: 20, K: 2.5},
		{Window: 10_000, MinPoints: 2},
	} {
		checkBatch(t, "sigma", func() Detector { return NewSigma(c) })
	}
}

// TestWindowDetectorsObserveBatch covers robust (over its ring and fitter)
// and the detectors over a sorted window: auto (with and without a period)
// and levelshift.
func TestWindowDetectorsObserveBatch(t *testing.T) {
	for _, c := range []RobustConfig{
		{Window: 240 * 15_000},
		{Window: 120_000, MinPoints: 5, Quiet: -1},
		{Window: 10_000, MinPoints: 2, Floor: 1e-6},
	} {
		checkBatch(t, "robust", func() Detector { return NewRobust(c) })
		// Auto and LevelShift keep a sorted window.
		a := AutoConfig{Window: c.Window, MinPoints: c.MinPoints, Floor: c.Floor}
		checkBatch(t, "auto", func() Detector { return NewAuto(a) })
		l := LevelShiftConfig{Window: c.Window, MinPoints: c.MinPoints, Floor: c.Floor, Quiet: c.Quiet}
		checkBatch(t, "levelshift", func() Detector { return NewLevelShift(l) })
	}
	a := AutoConfig{Window: 40_000, Period: 20_000, Tolerance: 2_000}
	checkBatch(t, "auto", func() Detector { return NewAuto(a) })
}

// TestStepWindowObserveBatch covers detectors whose window is given in
// samples: the batch goes through the held samples, then to the
// detector's own ObserveBatch.
func TestStepWindowObserveBatch(t *testing.T) {
	for _, name := range []string{"sigma", "robust"} {
		f, err := Build(Spec{Name: name, Params: map[string]string{"min_points": "5"}})
		if err != nil {
			t.Fatal(err)
		}
		checkBatch(t, name, func() Detector { return f() })
	}
}

// FuzzSigmaBatch feeds arbitrary samples to two Sigmas, one through
// Observe and one through ObserveBatch in batches of arbitrary sizes: the
// results must be identical.
func FuzzSigmaBatch(f *testing.F) {
	f.Add([]byte("\xe8\x03\x00\x00\x00\x00\x00\x00\xf0\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\xff"), int64(1), uint8(0), uint8(1))
	fuzzBatch(f, func(window int64, minPoints int) (Detector, BatchDetector) {
		c := SigmaConfig{Window: window, MinPoints: minPoints}
		return NewSigma(c), NewSigma(c)
	})
}

// FuzzRobustBatch is FuzzSigmaBatch for Robust.
func FuzzRobustBatch(f *testing.F) {
	fuzzBatch(f, func(window int64, minPoints int) (Detector, BatchDetector) {
		c := RobustConfig{Window: window, MinPoints: minPoints}
		return NewRobust(c), NewRobust(c)
	})
}

// FuzzAutoBatch is FuzzSigmaBatch for Auto, with a period of a fifth of
// the window (the phase test on when the window reaches two periods back).
func FuzzAutoBatch(f *testing.F) {
	fuzzBatch(f, func(window int64, minPoints int) (Detector, BatchDetector) {
		c := AutoConfig{Window: window, MinPoints: minPoints, Period: window / 5}
		return NewAuto(c), NewAuto(c)
	})
}

// FuzzLevelShiftBatch is FuzzSigmaBatch for LevelShift.
func FuzzLevelShiftBatch(f *testing.F) {
	fuzzBatch(f, func(window int64, minPoints int) (Detector, BatchDetector) {
		c := LevelShiftConfig{Window: window, MinPoints: minPoints}
		return NewLevelShift(c), NewLevelShift(c)
	})
}

// fuzzBatch runs checkBatchFuzz on pairs of detectors made by newPair for
// a window (ms, > 0) and a MinPoints (2–33) read from the fuzzer's input.
func fuzzBatch(f *testing.F, newPair func(window int64, minPoints int) (Detector, BatchDetector)) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x24\x40\x01\x00\x00\x00\x00\x00\x00\x00\x24\x40"), int64(5000), uint8(2), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, window int64, minPoints, batch uint8) {
		if window <= 0 {
			window = 1 + window&math.MaxInt32
		}
		one, many := newPair(window, 2+int(minPoints%32))
		checkBatchFuzz(t, data, batch, one, many)
	})
}

// checkReplace feeds samples to two sorted windows, one evicting and
// adding as evictBefore and push do, the other as evictFor and pushAt do
// (the two searches side by side), and requires the same value order
// after every sample.
func checkReplace(t *testing.T, window int64, ts []int64, vs []float64) {
	t.Helper()
	one, two := sortedWindow{window: window}, sortedWindow{window: window}
	for i := range ts {
		if two.n > 0 {
			lo, up := two.bounds2(vs[i], -vs[i])
			if lo != two.lowerBound(vs[i]) || up != two.upperBound(-vs[i]) {
				t.Fatalf("sample %d: bounds2(%g, %g) = %d, %d; want %d, %d", i, vs[i], -vs[i], lo, up, two.lowerBound(vs[i]), two.upperBound(-vs[i]))
			}
		}
		one.evictBefore(ts[i])
		one.push(ts[i], vs[i])
		two.pushAt(ts[i], vs[i], two.evictFor(ts[i], vs[i], i&1 == 1))
		if one.n != two.n {
			t.Fatalf("sample %d: %d samples held, want %d", i, two.n, one.n)
		}
		for k := range one.n {
			if a, b := one.at(k), two.at(k); math.Float64bits(a) != math.Float64bits(b) || one.idx[k] != two.idx[k] {
				t.Fatalf("sample %d: position %d holds slot %d (%g), want slot %d (%g)", i, k, two.idx[k], b, one.idx[k], a)
			}
		}
	}
}

func TestSortedWindowReplace(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	var ts []int64
	var vs []float64
	tm := int64(0)
	for range 3000 {
		tm += 1 + rng.Int64N(3)*rng.Int64N(3)
		v := float64(rng.IntN(7) - 3) // ties, and signed zeros below
		switch rng.IntN(10) {
		case 0:
			v = math.Copysign(0, -1)
		case 1:
			v = math.Copysign(1.7e308, v)
		case 2:
			v = 5e-324
		}
		ts = append(ts, tm)
		vs = append(vs, v)
	}
	for _, w := range []int64{1, 3, 40, 400} {
		checkReplace(t, w, ts, vs)
	}
}

// TestBounds2 checks the four-way search against the binary ones on
// windows of every length class the search steps through (1 to 5,000
// values), with ties, values held and values beyond either end.
func TestBounds2(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 33, 239, 240, 255, 256, 257, 1000, 1439, 1440, 5000} {
		w := sortedWindow{window: int64(n)}
		for i := range n {
			v := 100 + 10*rng.NormFloat64()
			if i%3 == 0 {
				v = math.Round(v) // ties
			}
			w.push(int64(i), v)
		}
		for i := range 2000 {
			a, b := 100+10*rng.NormFloat64(), 100+10*rng.NormFloat64()
			switch i % 5 {
			case 0:
				a, b = math.Round(a), math.Round(b)
			case 1:
				a, b = w.at(rng.IntN(n)), w.at(rng.IntN(n))
			case 2:
				a, b = 1e9, -1e9
			case 3:
				a, b = -1e9, 1e9
			}
			lo, up := w.bounds2(a, b)
			if lo != w.lowerBound(a) || up != w.upperBound(b) {
				t.Fatalf("%d values: bounds2(%g, %g) = %d, %d, want %d, %d", n, a, b, lo, up, w.lowerBound(a), w.upperBound(b))
			}
		}
	}
}

// FuzzSortedWindowReplace is TestSortedWindowReplace on arbitrary
// timestamps and values (the finite ones: the detectors add no others).
func FuzzSortedWindowReplace(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"), int64(3))
	f.Fuzz(func(t *testing.T, data []byte, window int64) {
		if window <= 0 {
			window = 1 + window&math.MaxInt32
		}
		var ts []int64
		var vs []float64
		var tm int64
		for len(data) >= 10 {
			tm += 1 + int64(data[0]) + int64(data[1])<<8
			v := math.Float64frombits(binary.LittleEndian.Uint64(data[2:10]))
			data = data[10:]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			ts = append(ts, tm)
			vs = append(vs, v)
		}
		checkReplace(t, window, ts, vs)
	})
}

// checkBatchFuzz feeds the samples of data (see fuzzSamples) to one
// through Observe and to many through ObserveBatch in batches of
// 1 + batch%64, and requires identical results.
func checkBatchFuzz(t *testing.T, data []byte, batch uint8, one Detector, many BatchDetector) {
	t.Helper()
	var ts []int64
	var vs []float64
	fuzzSamples(data, func(tm int64, v float64) {
		ts = append(ts, tm)
		vs = append(vs, v)
	})
	size := 1 + int(batch)%64
	out := make([]Result, size)
	for i := 0; i < len(ts); i += size {
		m := min(size, len(ts)-i)
		many.ObserveBatch(ts[i:i+m], vs[i:i+m], out)
		for j := range m {
			if want := one.Observe(ts[i+j], vs[i+j]); !identicalResult(out[j], want) {
				t.Fatalf("sample %d (t=%d v=%g): batch gives %+v, Observe %+v", i+j, ts[i+j], vs[i+j], out[j], want)
			}
		}
	}
}
