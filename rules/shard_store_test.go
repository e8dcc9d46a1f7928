package rules

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localprom"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// TestShardsOnStores reads the series of a selector and of a query over
// it shard by shard from a real VictoriaMetrics and a real Prometheus:
// the stores list the label's values, take the shards' matchers (values
// with regular-expression metacharacters among them) and return each
// series to exactly one shard, the series without the label included.
func TestShardsOnStores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and Prometheus")
	}
	const step = 15 * time.Second
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	var series []ingest.Series
	mk := func(ls ingest.Labels) {
		s := ingest.Series{Labels: ls}
		for i := range 40 {
			s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(i)*step).UnixMilli())
			s.Values = append(s.Values, float64(i))
		}
		series = append(series, s)
	}
	for i := range 30 {
		mk(ingest.Labels{{Name: "__name__", Value: "load"}, {Name: "job", Value: "vllm"}, {Name: "pod", Value: fmt.Sprintf("vllm-%d.ns+1", i)}})
	}
	mk(ingest.Labels{{Name: "__name__", Value: "load"}, {Name: "job", Value: "vllm"}})

	vm := localvm.Run(t, "-search.latencyOffset=0s", "-search.disableCache")
	var body bytes.Buffer
	for _, s := range series {
		if err := ingest.WriteImportJSONL(&body, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := vm.Import(context.Background(), &body); err != nil {
		t.Fatal(err)
	}
	prom := localprom.Run(t, series)

	start, end := t0.Add(5*step), t0.Add(30*step)
	for name, url := range map[string]string{"VictoriaMetrics": vm.URL(), "Prometheus": prom.URL} {
		for _, post := range []bool{false, true} {
			store := fmt.Sprintf("%s (use_post %v)", name, post)
			c, err := ingest.NewClient(ingest.ClientOptions{URL: url, UsePOST: post})
			if err != nil {
				t.Fatal(err)
			}
			shardsOf(t, store, c, series, start, end, step)
		}
	}
}

// shardsOf reads a selector and a query over it in three shards through
// c and checks that each series of series came to exactly one shard, its
// own.
func shardsOf(t *testing.T, store string, c *ingest.Client, series []ingest.Series, start, end time.Time, step time.Duration) {
	t.Helper()
	{
		for _, query := range []string{`load{job="vllm"}`, `load{job="vllm"} * 2`} {
			seen := map[string]int{}
			for i := range 3 {
				q, err := newShardQuerier(c, &shardSpec{group: "g", label: "pod", index: i, count: 3})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				got, err := q.QueryRange(ctx, query, start, end, step)
				cancel()
				if err != nil {
					t.Fatalf("%s: %s, shard %d: %v", store, query, i, err)
				}
				for _, s := range got {
					if pod := s.Labels.Get("pod"); ShardOf(pod, 3) != i {
						t.Errorf("%s: %s: shard %d got the series of pod %q, whose shard is %d", store, query, i, pod, ShardOf(pod, 3))
					}
					seen[s.Labels.Get("pod")]++
				}
			}
			for _, s := range series {
				if pod := s.Labels.Get("pod"); seen[pod] != 1 {
					t.Errorf("%s: %s: pod %q in %d shards, want 1", store, query, pod, seen[pod])
				}
			}
		}
	}
}
