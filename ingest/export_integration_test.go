package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// startExportVM starts VictoriaMetrics without its rollup result cache
// (see TestExportMatchesQueryRange) for a test bounded by timeout, and
// returns the time its series start at.
func startExportVM(t *testing.T, timeout time.Duration) (*localvm.VM, context.Context, time.Time) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := localvm.Run(t, "-search.disableCache")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return vm, ctx, time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)
}

// TestExportMatchesQueryRange stores series scraped every 5, 15 and 30
// seconds, with jitter, gaps, late starts and early ends, in a real
// VictoriaMetrics, and fetches ranges of one, two, twenty and hundreds of
// points at steps of 10 s, 15 s and 1 m both ways: the points the client
// makes of /api/v1/export's raw samples are exactly query_range's.
//
// The store runs without its rollup result cache: with it, VictoriaMetrics
// computes the newest points of a range apart from the older ones it has
// cached, and a window estimated from fewer samples can drop a point at
// the tail; the export path computes a range as a whole, as
// VictoriaMetrics does without the cache.
func TestExportMatchesQueryRange(t *testing.T) {
	vm, ctx, t0 := startExportVM(t, 3*time.Minute)
	rng := rand.New(rand.NewPCG(7, 11))
	type shape struct {
		name             string
		every, jitter    time.Duration
		phase            time.Duration
		from, to         time.Duration // of the series, after t0
		gapFrom, gapTo   time.Duration // no samples in [gapFrom, gapTo)
		decimals, offset float64
		// from switchAt on, a sample every then instead of every every:
		// the scrape interval VictoriaMetrics estimates changes.
		switchAt, then time.Duration
		// cycle, when set, are the intervals between samples in turn.
		cycle []time.Duration
		// skip drops every skip-th sample.
		skip int
	}
	shapes := []shape{
		{name: "regular", every: 15 * time.Second, phase: 7300 * time.Millisecond, to: 3 * time.Hour, decimals: 3},
		{name: "jittered", every: 15 * time.Second, jitter: 2 * time.Second, to: 3 * time.Hour, decimals: 1},
		{name: "sparse", every: 30 * time.Second, phase: 1 * time.Second, to: 3 * time.Hour, decimals: 0, offset: -5},
		{name: "dense", every: 5 * time.Second, jitter: 500 * time.Millisecond, to: 3 * time.Hour, decimals: 4},
		{name: "gappy", every: 15 * time.Second, phase: 3 * time.Second, to: 3 * time.Hour, gapFrom: 50 * time.Minute, gapTo: 62 * time.Minute, decimals: 2},
		{name: "short gap", every: 15 * time.Second, phase: 14 * time.Second, to: 3 * time.Hour, gapFrom: 70 * time.Minute, gapTo: 70*time.Minute + 40*time.Second, decimals: 2},
		{name: "late", every: 15 * time.Second, from: 95 * time.Minute, to: 3 * time.Hour, decimals: 2, offset: 1e6},
		{name: "early end", every: 15 * time.Second, phase: 5 * time.Second, to: 100 * time.Minute, decimals: 2},
		{name: "faster", every: 40 * time.Second, phase: 2 * time.Second, to: 3 * time.Hour, decimals: 2, switchAt: 69 * time.Minute, then: 11 * time.Second},
		{name: "slower", every: 10 * time.Second, to: 3 * time.Hour, decimals: 2, switchAt: 80 * time.Minute, then: 45 * time.Second},
		{name: "alternating", cycle: []time.Duration{10 * time.Second, 30 * time.Second}, phase: 4 * time.Second, to: 3 * time.Hour, decimals: 2},
		{name: "16s with holes", every: 16 * time.Second, phase: 9 * time.Second, skip: 7, to: 3 * time.Hour, decimals: 2},
		{name: "every 65s", every: 65 * time.Second, phase: 20 * time.Second, to: 3 * time.Hour, decimals: 2},
	}
	var body bytes.Buffer
	for _, sh := range shapes {
		s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "bench_shape"}, {Name: "shape", Value: sh.name}}}
		for k, at := 0, sh.from+sh.phase; at < sh.to; k++ {
			if sh.skip > 0 && k%sh.skip == sh.skip-1 {
				at += sh.every
				continue
			}
			if at >= sh.gapFrom && at < sh.gapTo {
				at += sh.every
				continue
			}
			ts := t0.Add(at)
			if sh.jitter > 0 {
				ts = ts.Add(time.Duration(rng.Int64N(int64(2*sh.jitter))) - sh.jitter)
			}
			p := math.Pow(10, sh.decimals)
			v := math.Round((sh.offset+100*rng.Float64())*p) / p
			s.Timestamps, s.Values = append(s.Timestamps, ts.UnixMilli()), append(s.Values, v)
			switch {
			case len(sh.cycle) > 0:
				at += sh.cycle[k%len(sh.cycle)]
			case sh.then > 0 && at >= sh.switchAt:
				at += sh.then
			default:
				at += sh.every
			}
		}
		if err := ingest.WriteImportJSONL(&body, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := vm.Import(ctx, &body); err != nil {
		t.Fatal(err)
	}

	type rng2 struct {
		from   time.Duration
		points int
		step   time.Duration
	}
	var ranges []rng2
	for _, step := range []time.Duration{10 * time.Second, 15 * time.Second, time.Minute} {
		for _, from := range []time.Duration{0, 49 * time.Minute, 61 * time.Minute, 66 * time.Minute, 70 * time.Minute, 71 * time.Minute, 84 * time.Minute, 99 * time.Minute, 150 * time.Minute} {
			for _, n := range []int{1, 2, 3, 6, 20, 22, 24, 400} {
				ranges = append(ranges, rng2{from: from, points: n, step: step})
			}
		}
	}
	refetched := 0.0
	for _, sel := range []string{`bench_shape`, `{__name__="bench_shape",shape=~"regular|sparse"}`, `{shape="dense" or shape="late"}`} {
		for _, r := range ranges {
			start := t0.Add(r.from)
			end := start.Add(time.Duration(r.points-1) * r.step)
			name := fmt.Sprintf("%s from %v, %d points of %v", sel, r.from, r.points, r.step)
			want := fetch(t, ctx, vm, ingest.StoreOther, sel, start, end, r.step)
			set := metrics.NewSet()
			c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Store: ingest.StoreVictoriaMetrics, Metrics: set})
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.QueryRange(ctx, sel, start, end, r.step)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if n := requests(t, set, "/api/v1/export"); n == 0 {
				t.Fatalf("%s: not fetched from /api/v1/export", name)
			}
			refetched += counter(t, set, "inferwatch_source_export_refetches_total")
			sameSeries(t, name, got, want)
		}
	}
	// The late, gappy and sparse series needed what lies before the short
	// look-behind.
	if refetched == 0 {
		t.Fatal("no range was fetched again from VictoriaMetrics' look-behind")
	}
}

// counter reads one counter of set.
func counter(t *testing.T, set *metrics.Set, name string) float64 {
	t.Helper()
	var b bytes.Buffer
	set.WritePrometheus(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

func fetch(t *testing.T, ctx context.Context, vm *localvm.VM, store ingest.StoreKind, sel string, start, end time.Time, step time.Duration) []ingest.Series {
	t.Helper()
	c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.QueryRange(ctx, sel, start, end, step)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// sameSeries fails unless got and want hold the same series (in any order)
// with the same points.
func sameSeries(t *testing.T, what string, got, want []ingest.Series) {
	t.Helper()
	if err := diffSeries(got, want); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// diffSeries says how got differs from want, which hold series in any
// order, or returns nil when they hold the same series with the same points.
func diffSeries(got, want []ingest.Series) error {
	byKey := map[string]ingest.Series{}
	for _, s := range want {
		byKey[s.Labels.String()] = s
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d series, want %d (%s)", len(got), len(want), keys(want))
	}
	for _, g := range got {
		w, ok := byKey[g.Labels.String()]
		if !ok {
			return fmt.Errorf("unexpected series %s; want %s", g.Labels, keys(want))
		}
		if len(g.Timestamps) != len(w.Timestamps) {
			return fmt.Errorf("%s has %d points, want %d:\n got %v\nwant %v", g.Labels, len(g.Timestamps), len(w.Timestamps), g.Timestamps, w.Timestamps)
		}
		for j := range w.Timestamps {
			if g.Timestamps[j] != w.Timestamps[j] || g.Values[j] != w.Values[j] {
				return fmt.Errorf("%s point %d = (%d, %v), want (%d, %v)", g.Labels, j, g.Timestamps[j], g.Values[j], w.Timestamps[j], w.Values[j])
			}
		}
	}
	return nil
}

func keys(ss []ingest.Series) string {
	var b strings.Builder
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.Labels.String())
	}
	return b.String()
}

// TestSeriesShards: a query_range too large for one request is split by
// the values of the label with the most of them (here instance; some
// series have none) and into time chunks; together the shards hold every
// series once, with the points query_range returns.
func TestSeriesShards(t *testing.T) {
	vm, ctx, t0 := startExportVM(t, 2*time.Minute)
	const step = 15 * time.Second
	var body bytes.Buffer
	for i := range 620 {
		ls := ingest.Labels{{Name: "__name__", Value: "vllm:num_requests_running"}, {Name: "job", Value: "vllm"},
			{Name: "pod", Value: fmt.Sprintf("p%d", i%100)}}
		if i < 600 {
			ls = append(ls, ingest.Label{Name: "instance", Value: fmt.Sprintf("10.0.%d.%d:8000", i/10, i%10)})
		}
		ls.Sort()
		s := ingest.Series{Labels: ls}
		for k := range 240 {
			s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(k)*step+3*time.Second).UnixMilli())
			s.Values = append(s.Values, float64(i*1000+k))
		}
		if err := ingest.WriteImportJSONL(&body, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := vm.Import(ctx, &body); err != nil {
		t.Fatal(err)
	}
	const sel = `vllm:num_requests_running{job="vllm"}`
	start, end := t0.Add(20*step), t0.Add(219*step)
	want := fetch(t, ctx, vm, ingest.StoreOther, sel, start, end, step)
	if len(want) != 620 {
		t.Fatalf("query_range: %d series, want 620", len(want))
	}
	set := metrics.NewSet()
	// 620 series × 200 points in requests of 20,000 points: chunks of 50
	// points, each in shards of about 400 series.
	c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Metrics: set, RequestPoints: 20_000, ChunkPoints: 50,
		DisableExport: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.QueryRange(ctx, sel, start, end, step)
	if err != nil {
		t.Fatal(err)
	}
	sameSeries(t, "query_range in shards", got, want)
	// 4 chunks of 50 points; 620 × 50 / 20,000 = 2 shards by instance,
	// and one for the series without it.
	if n := requests(t, set, "/api/v1/query_range"); n != 12 {
		t.Fatalf("%v requests to /api/v1/query_range, want 4 chunks × 3 shards", n)
	}
	if n := requests(t, set, "/api/v1/status/tsdb"); n != 1 {
		t.Fatalf("%v requests for the series count, want 1", n)
	}
	// In parts: each series once per chunk, chunk after chunk.
	seen := map[string]int{}
	chunks := 0
	for p, err := range c.QueryRangeParts(ctx, sel, start, end, step) {
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Series {
			seen[s.Labels.String()]++
			if len(s.Timestamps) != 50 || s.Timestamps[0] != start.Add(time.Duration(chunks*50)*step).UnixMilli() {
				t.Fatalf("chunk %d: %s has %d points from %d", chunks, s.Labels, len(s.Timestamps), s.Timestamps[0])
			}
		}
		if !p.Done.IsZero() {
			chunks++
		}
	}
	if chunks != 4 || len(seen) != 620 {
		t.Fatalf("%d chunks, %d series", chunks, len(seen))
	}
	for k, n := range seen {
		if n != 4 {
			t.Fatalf("%s in %d parts, want one per chunk", k, n)
		}
	}
}

// TestExportOrQueryRange: a short range, whose look-behind holds more
// samples than its points, leaves a query on /api/v1/export; a series with
// several samples a step moves it to query_range, which returns fewer.
func TestExportOrQueryRange(t *testing.T) {
	vm, ctx, t0 := startExportVM(t, time.Minute)
	var body bytes.Buffer
	for _, every := range []time.Duration{15 * time.Second, 3 * time.Second} {
		s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "up"}, {Name: "every", Value: every.String()}}}
		for at := time.Second; at < time.Hour; at += every {
			s.Timestamps, s.Values = append(s.Timestamps, t0.Add(at).UnixMilli()), append(s.Values, 1)
		}
		if err := ingest.WriteImportJSONL(&body, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := vm.Import(ctx, &body); err != nil {
		t.Fatal(err)
	}
	const step = 15 * time.Second
	f := func(sel string, wantExport, wantQueryRange float64) {
		t.Helper()
		set := metrics.NewSet()
		c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Store: ingest.StoreVictoriaMetrics, Metrics: set})
		if err != nil {
			t.Fatal(err)
		}
		// A range as a first evaluation's last part, then one point.
		for _, r := range [][2]time.Duration{{30 * time.Minute, 30*time.Minute + step}, {31 * time.Minute, 31 * time.Minute}} {
			if _, err := c.QueryRange(ctx, sel, t0.Add(r[0]), t0.Add(r[1]), step); err != nil {
				t.Fatal(err)
			}
		}
		if e, q := requests(t, set, "/api/v1/export"), requests(t, set, "/api/v1/query_range"); e != wantExport || q != wantQueryRange {
			t.Fatalf("%s: %v requests to /api/v1/export and %v to /api/v1/query_range, want %v and %v", sel, e, q, wantExport, wantQueryRange)
		}
	}
	f(`up{every="15s"}`, 2, 0)
	f(`up{every="3s"}`, 1, 1)
}

// TestExportOnePointUnderLoad fetches one-point ranges from the export
// path while plain exports of longer ranges run beside them, as a daemon's
// rules do, and wants query_range's value for every series each time.
// VictoriaMetrics' export with reduce_mem_usage, which one-point ranges
// once asked for, can hand a series another's value under that load: with
// it, this test found such values in most runs.
func TestExportOnePointUnderLoad(t *testing.T) {
	vm, ctx, t0 := startExportVM(t, 3*time.Minute)
	const (
		series  = 300
		step    = 15 * time.Second
		samples = 240 // an hour
	)
	rng := rand.New(rand.NewPCG(3, 5))
	var body bytes.Buffer
	for i := range series {
		s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "load"}, {Name: "pod", Value: fmt.Sprintf("p%03d", i)}}}
		for k := range samples {
			s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(k)*step+time.Duration(i%15)*time.Second).UnixMilli())
			s.Values = append(s.Values, math.Round(1e4*rng.Float64())/100)
		}
		if err := ingest.WriteImportJSONL(&body, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := vm.Import(ctx, &body); err != nil {
		t.Fatal(err)
	}

	const workers, rounds = 4, 60
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				q, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Store: ingest.StoreOther})
				if err != nil {
					return err
				}
				for r := range rounds {
					at := t0.Add(time.Duration(30+(w*rounds+r)%(samples-40)) * step)
					c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL(), Store: ingest.StoreVictoriaMetrics})
					if err != nil {
						return err
					}
					// A plain export of 21 points, then one point.
					if _, err := c.QueryRange(ctx, "load", at.Add(-20*step), at, step); err != nil {
						return err
					}
					want, err := q.QueryRange(ctx, "load", at, at, step)
					if err != nil {
						return err
					}
					got, err := c.QueryRange(ctx, "load", at, at, step)
					if err != nil {
						return err
					}
					if len(want) != series {
						return fmt.Errorf("at %v: %d series from query_range, want %d", at, len(want), series)
					}
					if err := diffSeries(got, want); err != nil {
						return fmt.Errorf("worker %d, round %d, at %v, the export path against query_range: %v", w, r, at, err)
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
