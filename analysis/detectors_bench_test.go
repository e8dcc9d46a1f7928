package analysis

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// benchDetectors is BenchmarkSigmaObserve for any detector: 10,000 series
// warmed with a full window on a 15 s step, then one new point per series
// per iteration, round-robin. ns/op is ns per point; B/series is the heap
// the warmed detectors hold.
func benchDetectors(b *testing.B, name string) {
	for _, points := range []int{240, 1440} {
		b.Run("window="+strconv.Itoa(points), func(b *testing.B) {
			const (
				series = 10_000
				step   = 15_000
				t0     = 1_700_000_000_000
			)
			rng := rand.New(rand.NewPCG(5, 6))
			noise := make([]float64, 4096)
			for i := range noise {
				noise[i] = 100 + 10*rng.NormFloat64()
			}
			f, err := Build(Spec{Name: name, Window: int64(points) * step})
			if err != nil {
				b.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			ds := make([]Detector, series)
			for i := range ds {
				ds[i] = f()
				for j := range points + 1 {
					ds[i].Observe(t0+int64(j)*step, noise[(i+j)&4095])
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perSeries := float64(after.HeapAlloc-before.HeapAlloc) / series
			next := make([]int64, series)
			for i := range next {
				next[i] = t0 + int64(points+1)*step
			}
			var anomalies, i int
			b.ResetTimer()
			for b.Loop() {
				s := i % series
				if ds[s].Observe(next[s], noise[i&4095]).Anomalous() {
					anomalies++
				}
				next[s] += step
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "points/s")
			b.ReportMetric(perSeries, "B/series")
			runtime.KeepAlive(ds)
			if i > 0 && anomalies == i {
				b.Fatalf("every point was anomalous")
			}
		})
	}
}

func BenchmarkRobustObserve(b *testing.B)     { benchDetectors(b, "robust") }
func BenchmarkAutoObserve(b *testing.B)       { benchDetectors(b, "auto") }
func BenchmarkEWMAObserve(b *testing.B)       { benchDetectors(b, "ewma") }
func BenchmarkLevelShiftObserve(b *testing.B) { benchDetectors(b, "levelshift") }
