package analysis

import (
	"strconv"
	"testing"
)

// BenchmarkSigmaObserve keeps 10,000 series, each warmed with a full
// window of points on a 15 s step, then adds one new point per series per
// iteration, round-robin (see benchRoundRobin): every point finds its
// series' state cold in cache. ns/op is ns per point. The B/series metric
// is the heap a detector holds once it stops growing (see steadyHeap).
func BenchmarkSigmaObserve(b *testing.B) {
	for _, points := range []int{240, 1440} {
		b.Run("window="+strconv.Itoa(points), func(b *testing.B) {
			w := int64(points) * benchStep
			benchRoundRobin(b, func() Detector { return NewSigma(SigmaConfig{Window: w}) }, points)
		})
	}
}

// BenchmarkSigmaBatch is BenchmarkSigmaObserve with, per iteration, a
// batch of new points for one series, as the engine scores the points
// one query_range returns (see benchBatch). ns/point is the figure to
// compare.
func BenchmarkSigmaBatch(b *testing.B) {
	for _, points := range []int{240, 1440} {
		for _, batch := range []int{16, 240} {
			b.Run("window="+strconv.Itoa(points)+"/batch="+strconv.Itoa(batch), func(b *testing.B) {
				w := int64(points) * benchStep
				benchBatch(b, func() Detector { return NewSigma(SigmaConfig{Window: w}) }, points, batch)
			})
		}
	}
}
