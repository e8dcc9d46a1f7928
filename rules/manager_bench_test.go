package rules

import (
	"context"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// genStore answers every query with n series of samples on the asked
// step over the asked range: noise around a level of its own, plus a spike
// now and then. Before sparseUntil it returns one sample in every 15
// minutes only, so that a benchmark can give each detector a week of
// history (one sample in each of auto's bins) without scoring a week of
// every series. It reuses its buffers from one call to the next, as a
// store client decoding into pooled memory would, so the benchmark
// measures the engine.
type genStore struct {
	labels      []ingest.Labels
	out         []ingest.Series
	ts          []int64
	vs          []float64
	sparseUntil time.Time
}

func newGenStore(n int) *genStore {
	g := &genStore{labels: make([]ingest.Labels, n), out: make([]ingest.Series, n)}
	for i := range n {
		g.labels[i] = ingest.Labels{
			{Name: "__name__", Value: "vllm:time_to_first_token_seconds_p99"},
			{Name: "model_name", Value: "model-" + strconv.Itoa(i%7)},
			{Name: "pod", Value: "vllm-" + strconv.Itoa(i)},
		}
	}
	return g
}

func (g *genStore) QueryRange(_ context.Context, _ string, start, end time.Time, step time.Duration) ([]ingest.Series, error) {
	first := start.Truncate(step)
	if first.Before(start) {
		first = first.Add(step)
	}
	var times []int64
	for t := first; !t.After(end); t = t.Add(step) {
		if t.Before(g.sparseUntil) && t.UnixMilli()%(15*60_000) != 0 {
			continue
		}
		times = append(times, t.UnixMilli())
	}
	k := len(times)
	total := k * len(g.labels)
	if cap(g.ts) < total {
		g.ts, g.vs = make([]int64, total), make([]float64, total)
	}
	for i := range g.labels {
		ts, vs := g.ts[i*k:(i+1)*k:(i+1)*k], g.vs[i*k:(i+1)*k:(i+1)*k]
		for j, t := range times {
			// A hash of series and time: the same sample whenever asked,
			// its noise the sum of two uniforms.
			h := mix(uint64(i)<<40 ^ uint64(t))
			u1, u2 := float64(h>>40)/(1<<24), float64(h>>16&(1<<24-1))/(1<<24)
			v := 0.5 + 0.01*float64(i%10) + 0.05*(u1+u2-1)
			if h&1023 == 0 {
				v += 1
			}
			ts[j], vs[j] = t, v
		}
		g.out[i] = ingest.Series{Labels: g.labels[i], Timestamps: ts, Values: vs}
	}
	return g.out, nil
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// BenchmarkEngineCycle measures one evaluation cycle of one anomaly rule
// with the default detector and no lookback (the rule a user writes with
// nothing but expr and step) over many series, each of which has one new
// point since the previous cycle, after a first cycle that warmed every
// detector on the history it asks for: a week, one sample in each of its
// 15-minute bins, and the last hour at every minute. It includes matching
// each returned series to its state and tracking episodes, not the
// store's decoding. ns/op is per cycle; ns/series and B/series are per
// series per cycle; heap-B/series is the heap the engine holds per series.
func BenchmarkEngineCycle(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("series="+strconv.Itoa(n), func(b *testing.B) {
			store := newGenStore(n)
			now := t0
			store.sparseUntil = now.Add(-time.Hour)
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			e, err := newTestManager(testOptions{
				Groups: []rulefmt.Group{{Name: "latency", Interval: time.Minute, Rules: []rulefmt.Rule{{
					Name: "ttft", Expr: "ttft", Step: time.Minute,
					Kind: rulefmt.KindAnomaly, Spec: &rulefmt.Detector{Name: "auto"},
				}}}},
				Querier: store,
				Now:     func() time.Time { return now },
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := e.RunOnce(ctx); err != nil {
				b.Fatal(err)
			}
			store.ts, store.vs = nil, nil // the warm-up's answer
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
			b.ReportAllocs()
			b.ResetTimer()
			cycles := 0
			cpu0 := cpuTime()
			for b.Loop() {
				now = now.Add(time.Minute)
				if err := e.RunOnce(ctx); err != nil {
					b.Fatal(err)
				}
				cycles++
			}
			// The process's CPU time (user and system, the collector's
			// included) per cycle: on a shared machine the wall time of
			// ns/op also counts the time other processes ran.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(cycles), "cpu-ns/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(cycles*n), "ns/series")
			b.ReportMetric(heap, "heap-B/series")
			if got := len(e.groups[0].rules[0].(*anomalyRule).series.series); got != n {
				b.Fatalf("%d series tracked, want %d", got, n)
			}
		})
	}
}

// cpuTime is the CPU time the process has used, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
