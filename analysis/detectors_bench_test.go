package analysis

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// Shape of the detector benchmarks: 10,000 series on a 15 s step.
const (
	benchSeries = 10_000
	benchStep   = 15_000
	benchT0     = 1_700_000_000_000
)

// benchNoise returns 4096 values of N(100, 10²), followed by a copy of
// its first 256 so that any batch of up to 256 may start anywhere below
// 4096.
func benchNoise() []float64 {
	rng := rand.New(rand.NewPCG(5, 6))
	noise := make([]float64, 4096+256)
	for i := range 4096 {
		noise[i] = 100 + 10*rng.NormFloat64()
	}
	copy(noise[4096:], noise)
	return noise
}

// observeAll scores a run of samples of one series, through ObserveBatch
// when d implements it, as the engine does.
func observeAll(d Detector, t []int64, v []float64, out []Result) {
	if bd, ok := d.(BatchDetector); ok {
		bd.ObserveBatch(t, v, out)
		return
	}
	for i := range t {
		out[i] = d.Observe(t[i], v[i])
	}
}

// warmDetectors makes benchSeries detectors with f, each fed a full window
// of points+1 samples, and returns them with the timestamp of each one's
// next sample.
func warmDetectors(f func() Detector, points int, noise []float64) (ds []Detector, next []int64) {
	ds = make([]Detector, benchSeries)
	tbuf := make([]int64, points+1)
	out := make([]Result, points+1)
	for i := range ds {
		ds[i] = f()
		for j := range tbuf {
			tbuf[j] = benchT0 + int64(j)*benchStep
		}
		o := i & 4095
		for len(noise)-o < len(tbuf) {
			o -= 256
		}
		observeAll(ds[i], tbuf, noise[o:o+len(tbuf)], out)
	}
	next = make([]int64, benchSeries)
	for i := range next {
		next[i] = benchT0 + int64(points+1)*benchStep
	}
	return ds, next
}

// heapSeries is how many detectors steadyHeap measures.
const heapSeries = 200

// steadyHeap returns the heap (runtime.MemStats) that a detector made by f
// holds per series once nothing it keeps grows any more: measured over
// heapSeries detectors fed four windows of points samples each. One
// window is not enough: where auto keeps a past-period history, it
// reaches further back than its window, and its arrays settle only after
// they first slide.
func steadyHeap(f func() Detector, points int, noise []float64) float64 {
	n := 4*points + 1
	tbuf := make([]int64, n)
	vbuf := make([]float64, n)
	out := make([]Result, n)
	for j := range tbuf {
		tbuf[j] = benchT0 + int64(j)*benchStep
		vbuf[j] = noise[j&4095]
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ds := make([]Detector, heapSeries)
	for i := range ds {
		ds[i] = f()
		observeAll(ds[i], tbuf, vbuf, out)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The buffers were live when before was read: keep them so that
	// their release does not count against the detectors.
	runtime.KeepAlive(ds)
	runtime.KeepAlive(tbuf)
	runtime.KeepAlive(vbuf)
	runtime.KeepAlive(out)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / heapSeries
}

// benchRoundRobin adds one new point per series per iteration,
// round-robin over 10,000 warmed series: every point finds its series'
// state cold in cache. ns/op is ns per point; B/series is the heap a
// detector holds once it stops growing (see steadyHeap).
func benchRoundRobin(b *testing.B, f func() Detector, points int) {
	noise := benchNoise()
	perSeries := steadyHeap(f, points, noise)
	ds, next := warmDetectors(f, points, noise)
	var anomalies, i int
	b.ResetTimer()
	for b.Loop() {
		s := i % benchSeries
		if ds[s].Observe(next[s], noise[i&4095]).Anomalous() {
			anomalies++
		}
		next[s] += benchStep
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "points/s")
	b.ReportMetric(perSeries, "B/series")
	runtime.KeepAlive(ds)
	if i > 0 && anomalies == i {
		b.Fatalf("every point was anomalous")
	}
}

// benchBatch gives, per iteration, one series a batch of new points, the
// series taken round-robin over 10,000 warmed ones: what the engine does
// with the new points one query_range returns per series per cycle. The
// series' state is cold when its batch starts and hot while the batch is
// scored. ns/op is ns per batch; ns/point and points/s are per point.
func benchBatch(b *testing.B, f func() Detector, points, batch int) {
	noise := benchNoise()
	perSeries := steadyHeap(f, points, noise)
	ds, next := warmDetectors(f, points, noise)
	tbuf := make([]int64, batch)
	out := make([]Result, batch)
	var anomalies, i, n int
	b.ResetTimer()
	for b.Loop() {
		s := i % benchSeries
		t := next[s]
		for j := range tbuf {
			tbuf[j] = t
			t += benchStep
		}
		next[s] = t
		o := (i * batch) & 4095
		observeAll(ds[s], tbuf, noise[o:o+batch], out)
		// By index: ranging over copies of the results would copy each
		// one through the stack in overlapping moves, whose store
		// forwarding stalls cost more than many detectors' own scoring.
		for j := range out {
			if out[j].Anomalous() {
				anomalies++
			}
		}
		n += batch
		i++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "points/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(n, 1)), "ns/point")
	b.ReportMetric(perSeries, "B/series")
	runtime.KeepAlive(ds)
	if n > 0 && anomalies == n {
		b.Fatalf("every point was anomalous")
	}
}

// benchDetectors runs benchRoundRobin for the named detector, for windows
// of 240 and 1,440 points.
func benchDetectors(b *testing.B, name string) {
	for _, points := range []int{240, 1440} {
		b.Run("window="+strconv.Itoa(points), func(b *testing.B) {
			f, err := Build(Spec{Name: name, Window: int64(points) * benchStep})
			if err != nil {
				b.Fatal(err)
			}
			benchRoundRobin(b, f, points)
		})
	}
}

// benchDetectorsBatch runs benchBatch for the named detector, for windows
// of 240 and 1,440 points and batches of 16 and 240.
func benchDetectorsBatch(b *testing.B, name string) {
	for _, points := range []int{240, 1440} {
		for _, batch := range []int{16, 240} {
			b.Run("window="+strconv.Itoa(points)+"/batch="+strconv.Itoa(batch), func(b *testing.B) {
				f, err := Build(Spec{Name: name, Window: int64(points) * benchStep})
				if err != nil {
					b.Fatal(err)
				}
				benchBatch(b, f, points, batch)
			})
		}
	}
}

func BenchmarkRobustObserve(b *testing.B)     { benchDetectors(b, "robust") }
func BenchmarkAutoObserve(b *testing.B)       { benchDetectors(b, "auto") }
func BenchmarkEWMAObserve(b *testing.B)       { benchDetectors(b, "ewma") }
func BenchmarkLevelShiftObserve(b *testing.B) { benchDetectors(b, "levelshift") }

func BenchmarkRobustBatch(b *testing.B)     { benchDetectorsBatch(b, "robust") }
func BenchmarkAutoBatch(b *testing.B)       { benchDetectorsBatch(b, "auto") }
func BenchmarkLevelShiftBatch(b *testing.B) { benchDetectorsBatch(b, "levelshift") }

// BenchmarkSortedWindow measures the sorted window behind auto, levelshift
// and seasonal on its own, hot in cache: per point one
// eviction, the median and MAD, and one addition. ns/op is ns per point.
func BenchmarkSortedWindow(b *testing.B) {
	for _, points := range []int{240, 1440} {
		b.Run("window="+strconv.Itoa(points), func(b *testing.B) {
			noise := benchNoise()
			w := sortedWindow{window: int64(points) * benchStep}
			tm := int64(benchT0)
			for i := range points + 1 {
				w.push(tm, noise[i&4095])
				tm += benchStep
			}
			var sum float64
			i := 0
			for b.Loop() {
				w.evictBefore(tm)
				m := w.median()
				sum += w.mad(m)
				w.push(tm, noise[i&4095])
				tm += benchStep
				i++
			}
			if !(sum > 0) {
				b.Fatalf("MAD sums to %g", sum)
			}
		})
	}
}

// BenchmarkRobustShapes scores one series whose values are normal noise,
// quantised (integers around 100), or mostly one value (90% zeros), in
// batches of 240: ties, which leave the MAD at 0 and the fitter without
// zones, must not make a fit cost more than O(n).
func BenchmarkRobustShapes(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := map[string]func() float64{
		"normal":     func() float64 { return 100 + 10*rng.NormFloat64() },
		"quantised":  func() float64 { return math.Round(100 + 3*rng.NormFloat64()) },
		"mostlyzero": func() float64 { return float64(rng.IntN(50) / 45 * rng.IntN(5)) },
	}
	for _, shape := range []string{"normal", "quantised", "mostlyzero"} {
		for _, points := range []int{240, 1440} {
			b.Run(shape+"/window="+strconv.Itoa(points), func(b *testing.B) {
				vals := make([]float64, 8192)
				for i := range vals {
					vals[i] = shapes[shape]()
				}
				r := NewRobust(RobustConfig{Window: int64(points) * benchStep})
				ts, out := make([]int64, 240), make([]Result, 240)
				tm, i := int64(benchT0), 0
				for b.Loop() {
					for j := range ts {
						ts[j] = tm
						tm += benchStep
					}
					o := (i * 240) % (len(vals) - 240)
					r.ObserveBatch(ts, vals[o:o+240], out)
					i++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(b.N, 1)*240), "ns/point")
			})
		}
	}
}
