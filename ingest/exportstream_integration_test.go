package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// fleetOf620 is 620 series of one metric, 600 with an instance of their
// own and 20 without, spread over 100 pods, each with points samples 15 s
// apart from t0 on, as an import body.
func fleetOf620(t *testing.T, t0 time.Time, points int) *bytes.Buffer {
	t.Helper()
	var body bytes.Buffer
	for i := range 620 {
		ls := ingest.Labels{{Name: "__name__", Value: "vllm:num_requests_running"}, {Name: "job", Value: "vllm"},
			{Name: "pod", Value: fmt.Sprintf("p%d", i%100)}}
		if i < 600 {
			ls = append(ls, ingest.Label{Name: "instance", Value: fmt.Sprintf("10.0.%d.%d:8000", i/10, i%10)})
		}
		ls.Sort()
		s := ingest.Series{Labels: ls}
		for k := range points {
			s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(k)*15*time.Second+3*time.Second).UnixMilli())
			s.Values = append(s.Values, float64(i*1000+k))
		}
		if err := ingest.WriteImportJSONL(&body, s); err != nil {
			t.Fatal(err)
		}
	}
	return &body
}

// collectParts fetches the range in parts and returns the series, failing
// unless each comes in one time chunk once, and how many parts held
// series.
func collectParts(t *testing.T, ctx context.Context, c *ingest.Client, sel string, start, end time.Time, step time.Duration) ([]ingest.Series, int) {
	t.Helper()
	var out []ingest.Series
	seen := map[string]bool{}
	parts, chunks := 0, 0
	for p, err := range c.QueryRangeParts(ctx, sel, start, end, step) {
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Series) > 0 {
			parts++
		}
		for _, s := range p.Series {
			k := s.Labels.String()
			if seen[k] {
				t.Fatalf("%s handed over twice", k)
			}
			seen[k] = true
			out = append(out, s)
		}
		if !p.Done.IsZero() {
			chunks++
		}
	}
	if chunks != 1 {
		t.Fatalf("%d time chunks, want 1", chunks)
	}
	return out, parts
}

// TestExportIsOneStreamedRequest: a range of 620 series is one export,
// whatever RequestPoints says, whose series come in parts as they are
// decoded; the store is not asked how to shard it.
func TestExportIsOneStreamedRequest(t *testing.T) {
	vm, ctx, t0 := startExportVM(t, 2*time.Minute)
	if err := vm.Import(ctx, fleetOf620(t, t0, 700)); err != nil {
		t.Fatal(err)
	}
	const sel, step = `vllm:num_requests_running{job="vllm"}`, 15 * time.Second
	start, end := t0.Add(20*step), t0.Add(659*step)
	want := fetch(t, ctx, vm, ingest.StoreOther, sel, start, end, step)
	set := metrics.NewSet()
	c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Metrics: set, Store: ingest.StoreVictoriaMetrics, RequestPoints: 20_000, ChunkPoints: 50})
	if err != nil {
		t.Fatal(err)
	}
	got, parts := collectParts(t, ctx, c, sel, start, end, step)
	sameSeries(t, "parts", got, want)
	// 620 × 640 points are 396,800, parts of 262,144 points: two.
	if parts != 2 {
		t.Errorf("%d parts, want 2", parts)
	}
	if n := requests(t, set, "/api/v1/export"); n != 1 {
		t.Errorf("%v exports, want 1", n)
	}
	if n := requests(t, set, "/api/v1/status/tsdb"); n != 0 {
		t.Errorf("%v requests to /api/v1/status/tsdb, want none", n)
	}
}

// TestExportSplitsWhatTheStoreRefuses: a store whose limits refuse the
// export whole gets it split, by series where it limits series (by pod,
// the label with the fewest values that gives the shards it needs, not
// instance, which has the most), by time where it limits samples; the
// series and points are those of a store without limits.
func TestExportSplitsWhatTheStoreRefuses(t *testing.T) {
	free, ctx, t0 := startExportVM(t, 2*time.Minute)
	body := fleetOf620(t, t0, 240)
	const sel, step = `vllm:num_requests_running{job="vllm"}`, 15 * time.Second
	start, end := t0.Add(20*step), t0.Add(219*step)
	if err := free.Import(ctx, bytes.NewReader(body.Bytes())); err != nil {
		t.Fatal(err)
	}
	want := fetch(t, ctx, free, ingest.StoreOther, sel, start, end, step)
	for _, tc := range []struct {
		name, flag, by, log string
		exports             float64
	}{
		// 620 series, at most 300 an export: ceil(1.25 × 620 / 300) = 3
		// shards of pod's 100 values (instance has 600).
		{"series", "-search.maxExportSeries=300", "series", "label=pod shards=3", 3},
		// 620 × 240 samples in one block a series, at most 100,000 a
		// query: the halves are refused again (the store counts whole
		// blocks), and each is fetched in two shards by pod.
		{"samples", "-search.maxSamplesPerQuery=100000", "time", "limit=100000", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := localvm.Run(t, "-search.disableCache", tc.flag)
			if err := vm.Import(ctx, bytes.NewReader(body.Bytes())); err != nil {
				t.Fatal(err)
			}
			set := metrics.NewSet()
			var logs bytes.Buffer
			c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Metrics: set, Store: ingest.StoreVictoriaMetrics,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			var got []ingest.Series
			for p, err := range c.QueryRangeParts(ctx, sel, start, end, step) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Series...)
			}
			if tc.by == "series" {
				sameSeries(t, "parts", got, want)
			}
			// Split by time, a series comes in its two halves, which
			// QueryRange joins.
			joined, err := c.QueryRange(ctx, sel, start, end, step)
			if err != nil {
				t.Fatal(err)
			}
			sameSeries(t, "joined", joined, want)
			var page bytes.Buffer
			set.WritePrometheus(&page)
			if !strings.Contains(page.String(), `inferwatch_source_request_splits_total{by="`+tc.by+`"} `) ||
				strings.Contains(page.String(), `inferwatch_source_request_splits_total{by="`+tc.by+`"} 0`) {
				t.Errorf("no split by %s counted:\n%s", tc.by, page.String())
			}
			if n := requests(t, set, "/api/v1/export"); n != 2*tc.exports {
				t.Errorf("%v exports answered, want %v (twice: parts, then joined)", n, 2*tc.exports)
			}
			if !strings.Contains(logs.String(), "the store refused an export") || !strings.Contains(logs.String(), tc.log) {
				t.Errorf("the log does not say how the export was split (%q):\n%s", tc.log, logs.String())
			}
		})
	}
}
