package forecasting

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestObservedPeak checks the highest sample a forecaster and a sum hold
// over a range, and the samples themselves, against a scan of the samples
// fed, with gaps (NaN and
// skipped steps), past the compaction of the history, and with ranges off
// the step grid and beyond what is held.
func TestObservedPeak(t *testing.T) {
	const stepMs = 60_000
	opts := Options{Step: time.Minute, Model: ModelNaive, Horizon: 3, Period: 10, MaxHistory: 40, MaxGap: 5}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 300
	parts := make([][]float64, 3)
	for p := range parts {
		parts[p] = make([]float64, n)
		for i := range parts[p] {
			parts[p][i] = math.Round(100 * rng.Float64())
			if rng.IntN(10) == 0 {
				parts[p][i] = math.NaN()
			}
		}
	}
	// Part 2 starts late: its history starts at its first sample.
	for i := range 5 {
		parts[2][i] = math.NaN()
	}
	const t0 = int64(1_700_000_000_000)
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := NewSum(opts, len(parts))
	if err != nil {
		t.Fatal(err)
	}
	const fit = 20
	if err := f.Fit(t0, parts[0][:fit]); err != nil {
		t.Fatal(err)
	}
	head := make([][]float64, len(parts))
	for p := range parts {
		head[p] = parts[p][:fit]
	}
	if err := sum.Fit(t0, head); err != nil {
		t.Fatal(err)
	}
	ys := make([]float64, len(parts))
	for i := fit; i < n; i++ {
		ti := t0 + int64(i)*stepMs
		if err := f.Update(ti, parts[0][i]); err != nil {
			t.Fatal(err)
		}
		for p := range parts {
			ys[p] = parts[p][i]
		}
		if err := sum.Update(ti, ys); err != nil {
			t.Fatal(err)
		}
		if i%7 != 0 {
			continue
		}
		// The samples still held: the last len(hist) of them.
		held := func(ff *Forecaster) int { return int(ff.last) + 1 - len(ff.hist) + int((ff.t0-t0)/stepMs) }
		for range 5 {
			from := t0 + int64(i-rng.IntN(60))*stepMs - int64(rng.IntN(3))*20_000
			to := from + int64(rng.IntN(50))*stepMs + int64(rng.IntN(3))*20_000
			// A forecaster: the highest of part 0 over the held samples in
			// [from, to], the newest of equals.
			wantV, wantAt, wantOK := 0.0, int64(0), false
			for j := held(f); j <= i; j++ {
				tj := t0 + int64(j)*stepMs
				if y := parts[0][j]; tj >= from && tj <= to && !math.IsNaN(y) && (!wantOK || y >= wantV) {
					wantV, wantAt, wantOK = y, tj, true
				}
			}
			v, at, ok := f.ObservedPeak(from, to)
			if v != wantV || at != wantAt || ok != wantOK {
				t.Fatalf("after sample %d, [%d, %d] min: forecaster %g at %d (%v); want %g at %d (%v)", i, (from-t0)/stepMs, (to-t0)/stepMs, v, at, ok, wantV, wantAt, wantOK)
			}
			// A sum: the highest sum over the times a part holds.
			wantV, wantAt, wantOK = 0, 0, false
			for j := i; j >= 0; j-- {
				tj := t0 + int64(j)*stepMs
				if tj < from || tj > to {
					continue
				}
				s, any := 0.0, false
				for p := range parts {
					if j >= held(sum.parts[p]) && !math.IsNaN(parts[p][j]) {
						s, any = s+parts[p][j], true
					}
				}
				if any && (!wantOK || s > wantV) {
					wantV, wantAt, wantOK = s, tj, true
				}
			}
			v, at, ok = sum.ObservedPeak(from, to)
			if v != wantV || at != wantAt || ok != wantOK {
				t.Fatalf("after sample %d, [%d, %d] min: sum %g at %d (%v); want %g at %d (%v)", i, (from-t0)/stepMs, (to-t0)/stepMs, v, at, ok, wantV, wantAt, wantOK)
			}
			// Observed: every held sample in [from, to], oldest first,
			// NaN for a gap; for a sum, from the oldest a part holds.
			var wantF, wantS []float64
			oldest := i
			for p := range parts {
				oldest = min(oldest, held(sum.parts[p]))
			}
			for j := 0; j <= i; j++ {
				tj := t0 + int64(j)*stepMs
				if tj < from || tj > to {
					continue
				}
				if j >= held(f) {
					wantF = append(wantF, parts[0][j])
				}
				if j < oldest {
					continue
				}
				s, any := 0.0, false
				for p := range parts {
					if j >= held(sum.parts[p]) && !math.IsNaN(parts[p][j]) {
						s, any = s+parts[p][j], true
					}
				}
				if !any {
					s = math.NaN()
				}
				wantS = append(wantS, s)
			}
			same := func(a, b []float64) bool {
				if len(a) != len(b) {
					return false
				}
				for k := range a {
					if a[k] != b[k] && !(math.IsNaN(a[k]) && math.IsNaN(b[k])) {
						return false
					}
				}
				return true
			}
			if got := f.Observed(nil, from, to); !same(got, wantF) {
				t.Fatalf("after sample %d, [%d, %d] min: forecaster observed %v; want %v", i, (from-t0)/stepMs, (to-t0)/stepMs, got, wantF)
			}
			if got := sum.Observed(nil, from, to); !same(got, wantS) {
				t.Fatalf("after sample %d, [%d, %d] min: sum observed %v; want %v", i, (from-t0)/stepMs, (to-t0)/stepMs, got, wantS)
			}
		}
	}
	if len(f.hist) >= n-fit {
		t.Fatalf("the history holds %d samples: it was never compacted", len(f.hist))
	}
}
