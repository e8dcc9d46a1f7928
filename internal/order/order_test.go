package order

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantile compares selection with the type-7 quantile of a
// sorted copy, on data with many ties.
func TestQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 10, 101, 1000} {
		for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.75, 0.99, 0.999, 1} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64(rng.IntN(n/3 + 1))
			}
			sorted := slices.Clone(xs)
			slices.Sort(sorted)
			h := float64(n-1) * q
			lo := int(math.Floor(h))
			want := sorted[lo]
			if lo+1 < n {
				want += (h - float64(lo)) * (sorted[lo+1] - sorted[lo])
			}
			if got := Quantile(xs, q); math.Abs(got-want) > 1e-12 {
				t.Errorf("n=%d q=%v: Quantile = %v, want %v", n, q, got, want)
			}
		}
	}
}

func TestSelectIn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + rng.IntN(50)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(rng.IntN(5))
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		k := rng.IntN(n)
		if got := SelectIn(xs, 0, len(xs), k); got != sorted[k] {
			t.Fatalf("SelectIn(%v, %d) = %v, want %v", sorted, k, got, sorted[k])
		}
		for i := range k {
			if xs[i] > xs[k] {
				t.Fatalf("xs[%d]=%v > xs[k=%d]=%v after selection", i, xs[i], k, xs[k])
			}
		}
		for i := k + 1; i < n; i++ {
			if xs[i] < xs[k] {
				t.Fatalf("xs[%d]=%v < xs[k=%d]=%v after selection", i, xs[i], k, xs[k])
			}
		}
	}
}

func TestMedian(t *testing.T) {
	f := func(xs []float64, want float64) {
		t.Helper()
		got := Median(slices.Clone(xs))
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("Median(%v) = %v, want %v", xs, got, want)
		}
	}
	f(nil, math.NaN())
	f([]float64{3}, 3)
	f([]float64{3, 1}, 2)
	f([]float64{5, 1, 3}, 3)
	f([]float64{4, 1, 3, 2}, 2.5)
	f([]float64{2, 2, 2, 2, 9, 9}, 2)
	f([]float64{-1, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, -3}, 7)
}
