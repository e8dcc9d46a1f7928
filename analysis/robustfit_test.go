package analysis

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortedFit is the fit of vals computed the plain way: a sorted copy, the
// median and type-7 quantiles read from it, and the MAD from the sorted
// distances.
func sortedFit(vals []float64) windowFit {
	v := slices.Clone(vals)
	slices.Sort(v)
	n := len(v)
	m := sortedMedian(v)
	q := func(p float64) float64 {
		h := p * float64(n-1)
		i := int(h)
		if i >= n-1 {
			return v[n-1]
		}
		return v[i] + (h-float64(i))*(v[i+1]-v[i])
	}
	d := make([]float64, n)
	for i, x := range v {
		d[i] = math.Abs(x - m)
	}
	slices.Sort(d)
	s := madScale * sortedMedian(d)
	if n >= 2 {
		s = max(s, (q(1-tailP)-q(tailP))/tailSigmas)
	}
	if math.IsInf(s, 0) || math.IsNaN(s) {
		s = math.MaxFloat64
	}
	return windowFit{median: m, spread: s}
}

// TestFitterExact slides windows of many shapes through a ring, the way
// Robust does, and compares every fit with sortedFit: values with ties,
// drifts, level shifts, heavy tails and opposite extremes; windows that
// shrink to nothing and grow back; rings that grow (renumbering slots).
// Each of the fitter's three ways — from its zones, from zones collected
// anew, from the whole window — must be taken.
func TestFitterExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	values := map[string]func() float64{
		"normal": rng.NormFloat64,
		"ties":   func() float64 { return float64(rng.IntN(5)) },
		"quantised": func() float64 {
			return math.Round(100+3*rng.NormFloat64()) / 2
		},
		"heavy": func() float64 { return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(6))) },
		"extremes": func() float64 {
			if rng.IntN(20) == 0 {
				return math.Copysign(1.7e308, rng.NormFloat64())
			}
			return rng.NormFloat64()
		},
	}
	var total fitter
	for name, value := range values {
		for trial := range 12 {
			level, drift := 0.0, 0.0
			if trial%3 == 1 {
				drift = 0.02
			}
			next := func() float64 {
				level += drift
				if trial%3 == 2 && rng.IntN(400) == 0 {
					level += 20 * rng.NormFloat64() // a level shift
				}
				return level + value()
			}
			var f fitter
			vals := make([]float64, 4+rng.IntN(700))
			head, n := 0, 0
			for step := range 4000 {
				// Evict 0, 1 or 2 samples; now and then all of them.
				ev := 0
				if n == len(vals) || rng.IntN(3) == 0 {
					ev = 1 + rng.IntN(2)
				}
				if rng.IntN(1000) == 0 {
					ev = n
				}
				for range min(ev, n) {
					f.evict(vals[head])
					head = (head + 1) % len(vals)
					n--
				}
				if n == 0 {
					head = 0
				}
				if n > 0 && rng.IntN(1+n/6) == 0 {
					window := make([]float64, n)
					for j := range window {
						window[j] = vals[(head+j)%len(vals)]
					}
					got, want := f.fit(vals, head, n), sortedFit(window)
					if got != want {
						t.Fatalf("%s, trial %d, step %d, %d values: fit %+v, sorted %+v", name, trial, step, n, got, want)
					}
				}
				if n == len(vals) && rng.IntN(50) == 0 { // the ring grows
					nv := make([]float64, len(vals)+1+rng.IntN(50))
					for j := range n {
						nv[j] = vals[(head+j)%len(vals)]
					}
					vals, head = nv, 0
					f.moved()
				}
				if n < len(vals) {
					vals[(head+n)%len(vals)] = next()
					n++
				}
			}
			total.fits += f.fits
			total.collects += f.collects
			total.wholes += f.wholes
		}
	}
	zoned := total.fits - total.collects - total.wholes
	t.Logf("%d fits: %d from kept zones, %d collected anew, %d from the whole window", total.fits, zoned, total.collects, total.wholes)
	if zoned <= 0 || total.collects == 0 || total.wholes == 0 {
		t.Errorf("every way of fitting must be taken: %d fits, %d collects, %d wholes", total.fits, total.collects, total.wholes)
	}
}

// robustRef is Robust as its documentation states it, computed the plain
// way: the samples of the window in a slice, fitted by sortedFit when the
// fit is due.
type robustRef struct {
	c              RobustConfig
	win            []sample
	fit            windowFit
	fitted         bool
	added, evicted int
	serves         int
	res            resolution
	gate           rearm
	last           int64
	hasLast        bool
}

func (r *robustRef) Observe(t int64, v float64) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (r.hasLast && t <= r.last) {
		return notReady()
	}
	for len(r.win) > 0 && uint64(t)-uint64(r.win[0].t) > uint64(r.c.Window) {
		r.win = r.win[1:]
		r.evicted++
	}
	res := notReady()
	if len(r.win) >= r.c.MinPoints {
		if !r.fitted || r.added >= r.serves || r.evicted >= r.serves {
			vals := make([]float64, len(r.win))
			for i, p := range r.win {
				vals[i] = p.v
			}
			r.fit, r.fitted, r.added, r.evicted = sortedFit(vals), true, 0, 0
			r.serves = r.c.Refit
			if r.serves == 0 {
				r.serves = max(1, len(r.win)/3)
			}
		}
		m := r.fit.median
		res = bandScore(v, m, r.c.K, robustSpread(max(r.fit.spread, r.res.step()), m, r.c.Floor))
		res.Score = r.gate.pass(res.Score)
	} else {
		r.fitted = false
	}
	r.res.add(v)
	r.win = append(r.win, sample{t, v})
	r.added++
	r.last, r.hasLast = t, true
	return res
}

// TestRobustMatchesReference scores the batch tests' streams (regular,
// jittered, gappy with NaN and out-of-order samples, extremes) with Robust,
// one sample at a time and in batches, and with robustRef: all three must
// agree exactly, at the default refit and at others.
func TestRobustMatchesReference(t *testing.T) {
	for _, c := range []RobustConfig{
		{Window: 240 * 15_000},
		{Window: 60_000, MinPoints: 5},
		{Window: 600_000, Refit: 1},
		{Window: 1_440_000, Refit: 7, K: 2.5, Floor: 0.01},
	} {
		c.K = cmp.Or(c.K, DefaultRobustK)
		c.MinPoints = cmp.Or(c.MinPoints, DefaultRobustMinPoints)
		c.Floor = cmp.Or(c.Floor, DefaultRobustFloor)
		for name, stream := range batchStreams() {
			d, b := NewRobust(c), NewRobust(c)
			ref := &robustRef{c: c, gate: newRearm(DefaultQuiet)}
			ts, vs := make([]int64, 0, 100), make([]float64, 0, 100)
			out := make([]Result, 100)
			for i := 0; i < len(stream); i += 100 {
				chunk := stream[i:min(i+100, len(stream))]
				ts, vs = ts[:0], vs[:0]
				for _, p := range chunk {
					ts, vs = append(ts, p.t), append(vs, p.v)
				}
				b.ObserveBatch(ts, vs, out)
				for j, p := range chunk {
					want := ref.Observe(p.t, p.v)
					if got := d.Observe(p.t, p.v); !identicalResult(got, want) {
						t.Fatalf("%+v, stream %s, sample %d (%g at %d): Observe %+v, reference %+v", c, name, i+j, p.v, p.t, got, want)
					}
					if !identicalResult(out[j], want) {
						t.Fatalf("%+v, stream %s, sample %d (%g at %d): ObserveBatch %+v, reference %+v", c, name, i+j, p.v, p.t, out[j], want)
					}
				}
			}
		}
	}
}

// FuzzRobustReference compares Robust with robustRef on any stream of
// samples, windows and refit intervals.
func FuzzRobustReference(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x24\x40\x01\x00\x00\x00\x00\x00\x00\x00\x24\x40"), int64(5000), uint8(0))
	f.Add([]byte("\xe8\x03\x00\x00\x00\x00\x00\x00\xf0\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\xff"), int64(0), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, window int64, refit uint8) {
		c := RobustConfig{Window: 1 + window&math.MaxInt32, MinPoints: 2, Refit: int(refit % 8)}
		d := NewRobust(c)
		c.K, c.Floor = DefaultRobustK, DefaultRobustFloor
		ref := &robustRef{c: c, gate: newRearm(DefaultQuiet)}
		i := 0
		fuzzSamples(data, func(tm int64, v float64) {
			if got, want := d.Observe(tm, v), ref.Observe(tm, v); !identicalResult(got, want) {
				t.Fatalf("sample %d (%g at %d): %+v, reference %+v", i, v, tm, got, want)
			}
			i++
		})
	})
}
