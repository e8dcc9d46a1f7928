package analysis

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// refSigma is the brute-force Sigma: it keeps every sample added and, for
// each new one, computes the window's mean and standard deviation in two
// passes with 256-bit floats. A judged sample further than clip effective
// standard deviations from the mean enters the history at that distance.
type refSigma struct {
	window    int64
	k         float64
	minPoints int
	clip      float64
	hist      []struct {
		t int64
		v float64
	}
}

const refPrec = 256

// observe returns what Sigma.Observe must return, and the window's σ.
func (r *refSigma) observe(t int64, v float64) (Result, float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || (len(r.hist) > 0 && t <= r.hist[len(r.hist)-1].t) {
		return notReady(), math.NaN()
	}
	defer func() {
		r.hist = append(r.hist, struct {
			t int64
			v float64
		}{t, v})
	}()
	var win []float64
	for _, p := range r.hist {
		if p.t >= t-r.window {
			win = append(win, p.v)
		}
	}
	if len(win) < r.minPoints {
		return notReady(), math.NaN()
	}
	nf := func(x float64) *big.Float { return new(big.Float).SetPrec(refPrec).SetFloat64(x) }
	n := nf(float64(len(win)))
	mean := nf(0)
	for _, x := range win {
		mean.Add(mean, nf(x))
	}
	mean.Quo(mean, n)
	m2 := nf(0)
	for _, x := range win {
		d := nf(x)
		d.Sub(d, mean)
		m2.Add(m2, d.Mul(d, d))
	}
	sigma := m2.Quo(m2, nf(float64(len(win)-1)))
	sigma.Sqrt(sigma)
	mu, _ := mean.Float64()
	sd, _ := sigma.Float64()
	eff := nf(sigmaFloor * max(1, math.Abs(mu)))
	if sigma.Cmp(eff) > 0 {
		eff = sigma
	}
	dev := nf(v)
	dev.Sub(dev, mean).Abs(dev)
	score, _ := dev.Quo(dev, eff.Mul(eff, nf(r.k))).Float64()
	lo, _ := new(big.Float).SetPrec(refPrec).Sub(mean, nf(r.k*sd)).Float64()
	hi, _ := new(big.Float).SetPrec(refPrec).Add(mean, nf(r.k*sd)).Float64()
	if e, _ := eff.Quo(eff, nf(r.k)).Float64(); math.Abs(v-mu) > r.clip*e {
		v = mu + math.Copysign(r.clip*e, v-mu) // what enters the history
	}
	return Result{Score: score, Expected: mu, Lower: lo, Upper: hi, Ready: true}, sd
}

func ulp(x float64) float64 {
	x = math.Abs(x)
	return math.Nextafter(x, math.Inf(1)) - x
}

type sample struct {
	t int64
	v float64
}

// TestSigmaMatchesBruteForce compares every result of the streaming
// detector with a two-pass computation in 256-bit floats: the score to
// 1e-9 relative (plus 1e-12 absolute, for scores near 0), the mean and the
// band to 1e-9·σ plus the rounding of their own magnitude.
func TestSigmaMatchesBruteForce(t *testing.T) {
	f := func(name string, c SigmaConfig, stream []sample) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			s := NewSigma(c)
			ref := &refSigma{window: c.Window, k: s.k, minPoints: s.minPoints, clip: math.Sqrt(s.clip2)}
			ready := 0
			for i, p := range stream {
				got := s.Observe(p.t, p.v)
				want, sd := ref.observe(p.t, p.v)
				if s.n > 0 && s.evict >= max(s.exactN, 1) {
					t.Fatalf("sample %d: %d evictions since the sums were recomputed from %d samples", i, s.evict, s.exactN)
				}
				if got.Ready != want.Ready {
					t.Fatalf("sample %d (t=%d v=%g): Ready %t, want %t", i, p.t, p.v, got.Ready, want.Ready)
				}
				if !want.Ready {
					if got.Score != 0 || !math.IsNaN(got.Expected) || !math.IsNaN(got.Lower) || !math.IsNaN(got.Upper) {
						t.Fatalf("sample %d: not ready but got %+v", i, got)
					}
					continue
				}
				ready++
				if d := math.Abs(got.Score - want.Score); d > 1e-9*want.Score+1e-12 {
					t.Fatalf("sample %d (t=%d v=%g): score %.17g, want %.17g (rel err %.3g)", i, p.t, p.v, got.Score, want.Score, d/want.Score)
				}
				check := func(what string, got, want float64) {
					t.Helper()
					if d := math.Abs(got - want); d > 1e-9*s.k*sd+2*ulp(want)+ulp(got) {
						t.Fatalf("sample %d (t=%d v=%g): %s %.17g, want %.17g (σ=%g)", i, p.t, p.v, what, got, want, sd)
					}
				}
				check("expected", got.Expected, want.Expected)
				check("lower", got.Lower, want.Lower)
				check("upper", got.Upper, want.Upper)
			}
			if ready < len(stream)/2 {
				t.Fatalf("only %d of %d samples were scored: the case does not test much", ready, len(stream))
			}
		})
	}

	rng := rand.New(rand.NewPCG(1, 2))

	// A large offset: 1e9 + N(0, 10²), fixed 1 s step, 240-sample window.
	var offset []sample
	for i := range 3000 {
		offset = append(offset, sample{int64(i) * 1000, 1e9 + 10*rng.NormFloat64()})
	}
	f("offset", SigmaConfig{Window: 240_000}, offset)

	// Irregular steps and gaps: most steps 0.5–1.5 s, one in 100 a gap of
	// up to 5 minutes (which empties the window), plus NaNs, staleness
	// markers, duplicates and samples out of order.
	var gaps []sample
	tm := int64(1_700_000_000_000)
	for range 4000 {
		switch u := rng.Float64(); {
		case u < 0.01:
			tm += rng.Int64N(300_000)
		case u < 0.02:
			tm -= rng.Int64N(5000) // out of order or duplicate
		default:
			tm += 500 + rng.Int64N(1000)
		}
		v := 1e9 + 5*rng.NormFloat64()
		switch u := rng.Float64(); {
		case u < 0.01:
			v = math.NaN()
		case u < 0.02:
			v = math.Float64frombits(0x7ff0000000000002)
		}
		gaps = append(gaps, sample{tm, v})
	}
	f("gaps", SigmaConfig{Window: 120_000, MinPoints: 5}, gaps)

	// Spikes a million times the noise enter and leave the window.
	var spikes []sample
	for i := range 3000 {
		v := 100 + rng.NormFloat64()
		if rng.IntN(200) == 0 {
			v = 1e8
		}
		spikes = append(spikes, sample{int64(i) * 15_000, v})
	}
	f("spikes", SigmaConfig{Window: 100 * 15_000}, spikes)

	// Level shifts far larger than the noise.
	var levels []sample
	for i := range 3000 {
		level := []float64{0, 1e6, -5e5, 3e7, 3e7 + 1}[i/600]
		levels = append(levels, sample{int64(i) * 1000, level + 0.1*rng.NormFloat64()})
	}
	f("levels", SigmaConfig{Window: 200_000, K: 2.5}, levels)

	// A counter: a steady ramp with a little jitter in time and value.
	var ramp []sample
	for i := range 3000 {
		ramp = append(ramp, sample{int64(i)*10_000 + rng.Int64N(50), 1e7 + 1000*float64(i) + rng.Float64()})
	}
	f("ramp", SigmaConfig{Window: 600_000, MinPoints: 20}, ramp)
}

// TestSigmaSizedToNeed checks that the ring settles at Window/step + 1
// slots for a fixed step (8 at least), and that timestamps cost about a
// byte each.
func TestSigmaSizedToNeed(t *testing.T) {
	f := func(window, step int64, wantHeld int) {
		t.Helper()
		s := NewSigma(SigmaConfig{Window: window})
		for i := range int64(3 * wantHeld) {
			s.Observe(1_700_000_000_000+i*step, float64(i%7))
		}
		wantSlots := max(wantHeld, 8)
		if s.Len() != wantHeld || len(s.vals) != wantSlots {
			t.Errorf("window %d step %d: holds %d samples in %d slots, want %d in %d", window, step, s.Len(), len(s.vals), wantHeld, wantSlots)
		}
		if len(s.ts.buf) > max(2*wantHeld, 16) || s.ts.size > wantHeld+8 {
			t.Errorf("window %d step %d: timestamps take %d bytes of a %d-byte ring for %d samples", window, step, s.ts.size, len(s.ts.buf), wantHeld)
		}
	}
	f(1440*60_000, 60_000, 1441)
	f(240*15_000, 15_000, 241)
	f(1000, 300, 4) // [t−1000, t) holds t−300, t−600, t−900
	f(5*3_600_000, 300_000, 61)
}

// TestSigmaNotFinite covers samples whose running sums overflow a float64.
func TestSigmaNotFinite(t *testing.T) {
	s := NewSigma(SigmaConfig{Window: 10_000, MinPoints: 2, Clip: -1})
	stream := []float64{1e308, -1e308, 1e308, 0, -1.7e308, 1.7e308, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6}
	var last Result
	for i, v := range stream {
		r := s.Observe(int64(i)*1000, v)
		if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || r.Score < 0 {
			t.Fatalf("sample %d (%g): score %g", i, v, r.Score)
		}
		if r.Ready && (math.IsNaN(r.Expected) || math.IsInf(r.Expected, 0)) {
			t.Fatalf("sample %d (%g): expected %g", i, v, r.Expected)
		}
		if i == 2 && !(r.Ready && r.Expected == 0 && r.Score > 0) {
			t.Fatalf("sample 2: got %+v, want mean 0 of ±1e308", r)
		}
		last = r
	}
	// Once the huge values have left the window, the fast sums are exact
	// again: the window is ten 5s, σ = 0, σ_eff = 5e-9.
	if want := 1 / (3 * 5e-9); !last.Ready || math.Abs(last.Score-want) > 1e-6*want || last.Lower != 5 || last.Upper != 5 {
		t.Fatalf("after the overflow: got %+v, want score %g and band [5, 5]", last, want)
	}
	// A departure from a flat line too large for a float64 saturates.
	s = NewSigma(SigmaConfig{Window: 10_000, MinPoints: 2})
	s.Observe(1, 0)
	s.Observe(2, 0)
	if r := s.Observe(3, math.MaxFloat64); r.Score != math.MaxFloat64 {
		t.Fatalf("score of MaxFloat64 after zeros: %g, want MaxFloat64", r.Score)
	}
}

func TestNewSigmaDefaults(t *testing.T) {
	s := NewSigma(SigmaConfig{Window: 1})
	if s.k != DefaultSigmaK || s.minPoints != DefaultSigmaMinPoints {
		t.Fatalf("defaults: k=%g min_points=%d", s.k, s.minPoints)
	}
	for _, c := range []SigmaConfig{{}, {Window: -1}, {Window: 1, K: -1}, {Window: 1, K: math.NaN()}, {Window: 1, K: math.Inf(1)}, {Window: 1, MinPoints: 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewSigma(%+v) did not panic", c)
				}
			}()
			NewSigma(c)
		}()
	}
}

// TestTSQueue pushes and pops random strictly increasing timestamps,
// including the extremes of int64, and compares with a slice.
func TestTSQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	steps := []func() uint64{
		func() uint64 { return 15_000 },
		func() uint64 { return 1 + rng.Uint64N(3) },
		func() uint64 { return 1 + rng.Uint64N(1<<40) },
		func() uint64 { return 1 + rng.Uint64N(1<<62) },
	}
	for si, step := range steps {
		var q tsQueue
		var want []int64
		tm := int64(math.MinInt64)
		for i := range 20_000 {
			if len(want) > 0 && (rng.IntN(2) == 0 || tm == math.MaxInt64) {
				q.pop()
				want = want[1:]
			} else {
				d := step()
				if uint64(math.MaxInt64)-uint64(tm) < d {
					d = uint64(math.MaxInt64) - uint64(tm)
				}
				if d == 0 {
					continue
				}
				tm = int64(uint64(tm) + d)
				q.push(tm)
				want = append(want, tm)
			}
			if q.len() != len(want) {
				t.Fatalf("step kind %d, op %d: len %d, want %d", si, i, q.len(), len(want))
			}
			if len(want) > 0 && (q.oldest() != want[0] || q.last != want[len(want)-1]) {
				t.Fatalf("step kind %d, op %d: oldest %d newest %d, want %d %d", si, i, q.oldest(), q.last, want[0], want[len(want)-1])
			}
		}
	}
}

// FuzzSigma feeds arbitrary samples and configurations: Observe never
// panics, scores are finite and ≥ 0, and results keep their contract.
func FuzzSigma(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x24\x40"), int64(5000), 3.0, uint8(2))
	f.Add([]byte("\xe8\x03\x00\x00\x00\x00\x00\x00\xf0\x7f\xe8\x03\x02\x00\x00\x00\x00\x00\xf0\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\x7f\xe8\x03\xff\xff\xff\xff\xff\xff\xef\xff"), int64(1), 0.5, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, window int64, k float64, minPoints uint8) {
		if window <= 0 {
			window = 1 + window&math.MaxInt32
		}
		if !(k > 0) || math.IsInf(k, 0) {
			k = 3
		}
		s := NewSigma(SigmaConfig{Window: window, K: k, MinPoints: 2 + int(minPoints%32)})
		var tm int64
		for len(data) >= 10 {
			// Two bytes of time step (negative steps test out-of-order
			// samples), eight of value.
			tm += int64(int16(uint16(data[0]) | uint16(data[1])<<8))
			var bits uint64
			for i := range 8 {
				bits |= uint64(data[2+i]) << (8 * i)
			}
			data = data[10:]
			v := math.Float64frombits(bits)
			r := s.Observe(tm, v)
			if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || r.Score < 0 {
				t.Fatalf("t=%d v=%g: score %g", tm, v, r.Score)
			}
			if !r.Ready {
				if r.Score != 0 || !math.IsNaN(r.Expected) || !math.IsNaN(r.Lower) || !math.IsNaN(r.Upper) {
					t.Fatalf("t=%d v=%g: not ready but %+v", tm, v, r)
				}
				continue
			}
			if math.IsNaN(r.Expected) || math.IsInf(r.Expected, 0) || !(r.Lower <= r.Expected && r.Expected <= r.Upper) {
				t.Fatalf("t=%d v=%g: bad band %+v", tm, v, r)
			}
			if s.Len() > len(s.vals) {
				t.Fatalf("window holds %d samples in %d slots", s.Len(), len(s.vals))
			}
		}
	})
}
