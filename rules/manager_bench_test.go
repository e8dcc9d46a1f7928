package rules

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// genStore answers every query with n series of one-minute samples over
// the asked range: noise around a level of its own, plus a spike now and
// then. It reuses its buffers from one call to the next, as a store client
// decoding into pooled memory would, so the benchmark measures the engine.
type genStore struct {
	labels []ingest.Labels
	out    []ingest.Series
	ts     []int64
	vs     []float64
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
	k := int(end.Sub(first)/step) + 1
	total := k * len(g.labels)
	if cap(g.ts) < total {
		g.ts, g.vs = make([]int64, total), make([]float64, total)
	}
	for i := range g.labels {
		ts, vs := g.ts[i*k:(i+1)*k:(i+1)*k], g.vs[i*k:(i+1)*k:(i+1)*k]
		for j := range k {
			t := first.Add(time.Duration(j) * step).UnixMilli()
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
// with the default detector over many series, each of which has one new
// point since the previous cycle (after a first cycle that warmed every
// detector on its 4-hour lookback). It includes matching each returned
// series to its state and tracking episodes, not the store's decoding.
// ns/op is per cycle; ns/series and B/series are per series per cycle.
func BenchmarkEngineCycle(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("series="+strconv.Itoa(n), func(b *testing.B) {
			store := newGenStore(n)
			now := t0
			e, err := newTestManager(testOptions{
				Groups: []rulefmt.Group{{Name: "latency", Interval: time.Minute, Rules: []rulefmt.Rule{{
					Name: "ttft", Expr: "ttft", Lookback: 4 * time.Hour, Step: time.Minute,
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
			b.ReportAllocs()
			b.ResetTimer()
			cycles := 0
			for b.Loop() {
				now = now.Add(time.Minute)
				if err := e.RunOnce(ctx); err != nil {
					b.Fatal(err)
				}
				cycles++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(cycles*n), "ns/series")
			if got := len(e.groups[0].rules[0].(*anomalyRule).series.series); got != n {
				b.Fatalf("%d series tracked, want %d", got, n)
			}
		})
	}
}
