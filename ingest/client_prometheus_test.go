package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localprom"
)

// TestClientAgainstPrometheus backfills series into a real Prometheus (the
// second store, beside VictoriaMetrics) and reads them back through the
// client: ranges split at 11,000 points, instant queries, errors.
func TestClientAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	const step = 15 * time.Second
	// Historic, step-aligned samples from a month ago.
	t0 := time.Now().Add(-30 * 24 * time.Hour).Truncate(24 * time.Hour)
	mk := func(pod string, n int, f func(i int) float64) ingest.Series {
		s := ingest.Series{Labels: ingest.Labels{
			{Name: "__name__", Value: "vllm:num_requests_running"}, {Name: "model_name", Value: "llama-8b"}, {Name: "pod", Value: pod},
		}}
		for i := range n {
			s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(i)*step).UnixMilli())
			s.Values = append(s.Values, f(i))
		}
		return s
	}
	long := mk("p0", 25000, func(i int) float64 { return float64(i%97) + 0.25 })
	short := mk("p1", 100, func(i int) float64 { return -float64(i) / 8 })
	prom := localprom.Run(t, []ingest.Series{long, short})

	c, err := ingest.NewClient(ingest.ClientOptions{URL: prom.URL, MaxPointsPerSeries: 11000})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	end := t0.Add(24999 * step)
	got, err := c.QueryRange(ctx, `vllm:num_requests_running{model_name="llama-8b"}`, t0, end, step)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d series, want 2", len(got))
	}
	byPod := map[string]ingest.Series{}
	for _, s := range got {
		byPod[s.Labels.Get("pod")] = s
	}
	for _, want := range []ingest.Series{long, short} {
		g := byPod[want.Labels.Get("pod")]
		// Prometheus looks back 5 minutes for the last sample, so the short
		// series goes on for 5 minutes past its end with its last value.
		n := len(want.Timestamps)
		if len(g.Timestamps) < n {
			t.Fatalf("pod %s: %d points, want at least %d", want.Labels.Get("pod"), len(g.Timestamps), n)
		}
		for i := range n {
			if g.Timestamps[i] != want.Timestamps[i] || g.Values[i] != want.Values[i] {
				t.Fatalf("pod %s point %d: got (%d, %g), want (%d, %g)", want.Labels.Get("pod"), i,
					g.Timestamps[i], g.Values[i], want.Timestamps[i], want.Values[i])
			}
		}
		if g.Labels.String() != want.Labels.String() {
			t.Fatalf("labels %s, want %s", g.Labels, want.Labels)
		}
	}

	inst, err := c.Query(ctx, `sum(vllm:num_requests_running)`, t0.Add(10*step))
	if err != nil {
		t.Fatal(err)
	}
	if len(inst) != 1 || len(inst[0].Values) != 1 || inst[0].Values[0] != (10.25+(-10.0/8)) {
		t.Fatalf("instant sum = %+v, want 9", inst)
	}

	_, err = c.QueryRange(ctx, `rate(vllm:num_requests_running[5m]`, t0, end, step)
	var apiErr *ingest.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorType != "bad_data" || !strings.Contains(err.Error(), prom.URL) {
		t.Fatalf("bad query: want an APIError of type bad_data naming %s, got %v", prom.URL, err)
	}
}
