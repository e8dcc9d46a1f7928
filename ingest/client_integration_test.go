package ingest_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// TestClientAgainstVictoriaMetrics imports series into a real
// VictoriaMetrics and reads them back through the client.
func TestClientAgainstVictoriaMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := localvm.Run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Historic, step-aligned timestamps: VictoriaMetrics hides the last 30s
	// and aligns query_range start and end to the step.
	const step = 15 * time.Second
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	grid := func(n int, f func(i int) float64) ([]int64, []float64) {
		ts, vs := make([]int64, n), make([]float64, n)
		for i := range n {
			ts[i] = t0.Add(time.Duration(i) * step).UnixMilli()
			vs[i] = f(i)
		}
		return ts, vs
	}
	long := ingest.Series{Labels: ingest.Labels{
		{Name: "__name__", Value: "vllm:num_requests_running"}, {Name: "model_name", Value: "llama-8b"}, {Name: "pod", Value: "p0"},
	}}
	long.Timestamps, long.Values = grid(30000, func(i int) float64 { return float64(i%97) + 0.25 })
	short := ingest.Series{Labels: ingest.Labels{
		{Name: "__name__", Value: "vllm:num_requests_running"}, {Name: "model_name", Value: "llama-8b"}, {Name: "pod", Value: "p1"},
	}}
	short.Timestamps, short.Values = grid(100, func(i int) float64 { return -float64(i) / 8 })
	short.Values[10] = math.NaN() // written as null: not stored
	weird := ingest.Series{Labels: ingest.Labels{
		{Name: "__name__", Value: "DCGM_FI_DEV_GPU_UTIL"}, {Name: "modelName", Value: "NVIDIA H100 \"80GB\"\n\\ é 😀 \x01"},
	}}
	weird.Timestamps, weird.Values = grid(3, func(i int) float64 { return 1e-3 * float64(i+1) })
	var body bytes.Buffer
	if err := ingest.WriteImportJSONL(&body, long, short, weird); err != nil {
		t.Fatal(err)
	}
	if err := vm.Import(ctx, &body); err != nil {
		t.Fatal(err)
	}

	// Through query_range, and through /api/v1/export once the client has
	// found VictoriaMetrics: the same series and points.
	for _, store := range []ingest.StoreKind{ingest.StoreOther, ingest.StoreAuto} {
		t.Run(cmp.Or(string(store), "auto"), func(t *testing.T) { checkClientAgainstVM(t, ctx, vm, store, t0, step, long, short, weird) })
	}
}

func checkClientAgainstVM(t *testing.T, ctx context.Context, vm *localvm.VM, store ingest.StoreKind, t0 time.Time, step time.Duration, long, short, weird ingest.Series) {
	op, path, probes := "query_range", "/api/v1/query_range", 0.0
	if store == ingest.StoreAuto {
		// One export request asks whether the store is VictoriaMetrics.
		op, path, probes = "export", "/api/v1/export", 1
	}
	set := metrics.NewSet()
	get, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Metrics: set, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	post, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL() + "/", UsePOST: true, MaxPointsPerSeries: 7000, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, got []ingest.Series, want ...ingest.Series) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d series, want %d: %v", what, len(got), len(want), got)
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Labels.String() != w.Labels.String() {
				t.Fatalf("%s: series %d is %s, want %s", what, i, g.Labels, w.Labels)
			}
			if len(g.Timestamps) != len(w.Timestamps) || len(g.Values) != len(w.Values) {
				t.Fatalf("%s: %s has %d points, want %d", what, w.Labels, len(g.Timestamps), len(w.Timestamps))
			}
			for j := range w.Timestamps {
				if g.Timestamps[j] != w.Timestamps[j] || g.Values[j] != w.Values[j] {
					t.Fatalf("%s: %s point %d = (%d, %v), want (%d, %v)", what, w.Labels, j,
						g.Timestamps[j], g.Values[j], w.Timestamps[j], w.Values[j])
				}
			}
		}
	}
	end := t0.Add(29999 * step)

	got, err := get.QueryRange(ctx, `vllm:num_requests_running{pod="p0"}`, t0, end, step)
	if err != nil {
		t.Fatal(err)
	}
	same("30000 points by GET", got, long)
	if n := requests(t, set, path) - probes; n != 3 {
		t.Fatalf("30000 points took %v requests to %s, want 3", n, path)
	}
	got, err = post.QueryRange(ctx, `vllm:num_requests_running{pod="p0"}`, t0, end, step)
	if err != nil {
		t.Fatal(err)
	}
	same("30000 points by POST in 5 requests", got, long)

	// The short series without its null sample.
	shortStored := ingest.Series{Labels: short.Labels}
	for i := range short.Values {
		if i != 10 {
			shortStored.Timestamps = append(shortStored.Timestamps, short.Timestamps[i])
			shortStored.Values = append(shortStored.Values, short.Values[i])
		}
	}
	// A range selector in an instant query answers a matrix of the raw
	// samples in (t-25m, t]: all of them but the null one.
	got, err = get.Query(ctx, `vllm:num_requests_running{pod="p1"}[25m]`, t0.Add(99*step))
	if err != nil {
		t.Fatal(err)
	}
	same("raw samples", got, shortStored)

	got, err = get.Query(ctx, `vllm:num_requests_running{pod="p1"}`, t0.Add(50*step))
	if err != nil {
		t.Fatal(err)
	}
	same("instant vector", got, ingest.Series{Labels: short.Labels,
		Timestamps: []int64{t0.Add(50 * step).UnixMilli()}, Values: []float64{short.Values[50]}})

	got, err = get.Query(ctx, `count(vllm:num_requests_running) by (model_name)`, t0.Add(50*step))
	if err != nil {
		t.Fatal(err)
	}
	same("aggregation", got, ingest.Series{Labels: ingest.Labels{{Name: "model_name", Value: "llama-8b"}},
		Timestamps: []int64{t0.Add(50 * step).UnixMilli()}, Values: []float64{2}})

	got, err = get.Query(ctx, `2.5 * 4`, t0.Add(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	same("scalar", got, ingest.Series{Labels: ingest.Labels{}, Timestamps: []int64{t0.Add(1500 * time.Millisecond).UnixMilli()}, Values: []float64{10}})

	got, err = get.QueryRange(ctx, `{__name__="DCGM_FI_DEV_GPU_UTIL"}`, t0, t0.Add(2*step), step)
	if err != nil {
		t.Fatal(err)
	}
	same("escaped labels", got, weird)

	_, err = get.Query(ctx, `sum(`, t0)
	var ae *ingest.APIError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), vm.URL()+"/api/v1/query (query \"sum(\"): HTTP 4") {
		t.Fatalf("bad query: want an APIError naming the URL, got %v", err)
	}

	// Limits: the 30,000 points come in three requests, the third of which
	// passes a limit of 29,999 as it is read when the requests are sent one
	// after another, and once joined when they are in flight together; the
	// two series of the next query come in the first answer. An export is
	// streamed: its parts are within the points limit, their union is not,
	// and the size of its body is no limit (export "": not refused).
	const joined = "joining the answers from 2024-03-01T00:00:00Z to 2024-03-06T04:59:45Z: response refused: past the points limit of 29999"
	for _, tc := range []struct {
		o            ingest.ClientOptions
		want, export string
	}{
		{ingest.ClientOptions{MaxResponsePoints: 29999, MaxConcurrentRequests: 1}, "HTTP 200 OK: response refused: past the points limit of 29999; stopped reading after", joined},
		{ingest.ClientOptions{MaxResponsePoints: 29999}, joined, joined},
		{ingest.ClientOptions{MaxResponsePoints: 30000, MaxResponseBytes: 100_000, MaxConcurrentRequests: 1}, "HTTP 200 OK: response refused: past the bytes limit of 100000; stopped reading after 100001 bytes", ""},
		{ingest.ClientOptions{MaxResponseSeries: 1}, "HTTP 200 OK: response refused: past the series limit of 1; stopped reading after", "HTTP 200 OK: response refused: past the series limit of 1; stopped reading after"},
	} {
		if op == "export" {
			tc.want = tc.export
		}
		tc.o.URL, tc.o.Store = vm.URL(), store
		set := metrics.NewSet()
		tc.o.Metrics = set
		c, err := ingest.NewClient(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		query := `vllm:num_requests_running{pod="p0"}`
		if tc.o.MaxResponseSeries == 1 {
			query = `vllm:num_requests_running`
		}
		_, err = c.QueryRange(ctx, query, t0, end, step)
		if tc.want == "" {
			if err != nil {
				t.Fatalf("limits %+v: %v", tc.o, err)
			}
			continue
		}
		var le *ingest.LimitError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), op+" "+vm.URL()+path+" (query "+strconv.Quote(query)+"): "+tc.want) {
			t.Fatalf("limits %+v: got %v, want %q", tc.o, err, tc.want)
		}
		var b bytes.Buffer
		set.WritePrometheus(&b)
		if !strings.Contains(b.String(), `inferwatch_source_responses_refused_total{limit="`+le.Limit+`"} 1`) {
			t.Fatalf("refusal not counted:\n%s", b.String())
		}
	}
}

// requests reads how many requests to path answered 200.
func requests(t *testing.T, set *metrics.Set, path string) float64 {
	t.Helper()
	var b bytes.Buffer
	set.WritePrometheus(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, `inferwatch_source_requests_total{path="`+path+`",code="200"} `); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}
