package analysis

import (
	"math"
	"slices"
	"testing"
)

func TestAlign(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	f := func(name string, xt []int64, xv []float64, yt []int64, yv []float64, step int64, wantT []int64, wantX, wantY []float64) {
		t.Helper()
		gotT, gotX, gotY := Align(xt, xv, yt, yv, step)
		if !slices.Equal(gotT, wantT) || !slices.Equal(gotX, wantX) || !slices.Equal(gotY, wantY) {
			t.Errorf("%s: Align = %v %v %v, want %v %v %v", name, gotT, gotX, gotY, wantT, wantX, wantY)
		}
	}
	f("same grid",
		[]int64{0, 10, 20}, []float64{1, 2, 3},
		[]int64{0, 10, 20}, []float64{4, 5, 6}, 10,
		[]int64{0, 10, 20}, []float64{1, 2, 3}, []float64{4, 5, 6})
	f("finer series averaged into buckets",
		[]int64{0, 5, 10, 15}, []float64{1, 3, 5, 9},
		[]int64{2, 12}, []float64{7, 8}, 10,
		[]int64{0, 10}, []float64{2, 7}, []float64{7, 8})
	f("inner join drops one-sided buckets",
		[]int64{0, 10, 30}, []float64{1, 2, 3},
		[]int64{10, 20, 30}, []float64{4, 5, 6}, 10,
		[]int64{10, 30}, []float64{2, 3}, []float64{4, 6})
	f("non-finite values dropped, empty bucket gone",
		[]int64{0, 1, 10, 20}, []float64{nan, 4, inf, 6},
		[]int64{0, 10, 20}, []float64{1, 2, math.Float64frombits(0x7ff0000000000002)}, 10,
		[]int64{0}, []float64{4}, []float64{1})
	f("unsorted input",
		[]int64{20, 0, 10, 5}, []float64{3, 1, 2, 5},
		[]int64{10, 0}, []float64{9, 8}, 10,
		[]int64{0, 10}, []float64{3, 2}, []float64{8, 9})
	f("negative timestamps floor to the bucket start",
		[]int64{-15, -5, 5}, []float64{1, 2, 3},
		[]int64{-11, -1, 9}, []float64{4, 5, 6}, 10,
		[]int64{-20, -10, 0}, []float64{1, 2, 3}, []float64{4, 5, 6})
	f("empty", nil, nil, []int64{1}, []float64{1}, 10, []int64{}, []float64{}, []float64{})
}

func TestAlignPanics(t *testing.T) {
	f := func(name string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		fn()
	}
	f("step 0", func() { Align(nil, nil, nil, nil, 0) })
	f("length mismatch", func() { Align([]int64{1}, nil, nil, nil, 10) })
}
