package ingest

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// exportBenchBody is benchBody's series as /api/v1/export writes them,
// one line each.
func exportBenchBody(b *testing.B, nSeries, nPoints int) []byte {
	ss, err := DecodeQueryResponse(benchBody(nSeries, nPoints))
	if err != nil {
		b.Fatal(err)
	}
	var body []byte
	for _, s := range ss {
		body = AppendImportJSONL(body, s)
	}
	return body
}

// BenchmarkReadExport decodes an export of 1,000 series of 240 points as
// the client reads it: raw samples (raw), mapped onto the step grid
// (grid), and, from an export of one sample per series, the one point of
// a steady cycle (last).
func BenchmarkReadExport(b *testing.B) {
	const nSeries, nPoints = 1000, 240
	body := exportBenchBody(b, nSeries, nPoints)
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			ss, err := ReadExport(bytes.NewReader(body), ResponseLimits{})
			if err != nil || len(ss) != nSeries || len(ss[nSeries-1].Values) != nPoints {
				b.Fatalf("decode: %d series, %v", len(ss), err)
			}
		}
		b.ReportMetric(float64(nSeries*nPoints)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	})
	b.Run("grid", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		const first = 1700000000000
		for b.Loop() {
			g := &gridder{start: first + 15000, end: first + int64(nPoints-1)*15000, step: 15000}
			ss, err := newReadDecoder(bytes.NewReader(body), ResponseLimits{}, 0, readBufSize).exportLines(g.points)
			if err != nil || len(ss) != nSeries || len(ss[nSeries-1].Values) != nPoints-1 {
				b.Fatalf("decode: %d series, %v", len(ss), err)
			}
		}
		b.ReportMetric(float64(nSeries*nPoints)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	})
	one := exportBenchBody(b, nSeries, 1)
	b.Run("last", func(b *testing.B) {
		b.SetBytes(int64(len(one)))
		b.ReportAllocs()
		for b.Loop() {
			ss, err := newReadDecoder(bytes.NewReader(one), ResponseLimits{}, 0, readBufSize).exportLast(1700000015000)
			if err != nil || len(ss) != nSeries {
				b.Fatalf("decode: %d series, %v", len(ss), err)
			}
		}
		b.ReportMetric(float64(nSeries)*float64(b.N)/b.Elapsed().Seconds(), "series/s")
	})
}

// BenchmarkQueryRangeExport is QueryRange against a server that answers
// /api/v1/export with a fixed body, as VictoriaMetrics would: the one point
// of a steady cycle over 100,000 series, and an hour of 15-second points
// over 10,000 series in one time chunk.
func BenchmarkQueryRangeExport(b *testing.B) {
	const step = 15 * time.Second
	first := time.UnixMilli(1700000010000) // a multiple of the step
	for _, tc := range []struct {
		name           string
		series, points int
	}{
		{"point/series=100000", 100000, 1},
		{"hour/series=10000", 10000, 240},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := exportBenchBody(b, tc.series, tc.points)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != pathExport {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/stream+json")
				w.Write(body)
			}))
			defer srv.Close()
			c, err := NewClient(ClientOptions{URL: srv.URL, Store: StoreVictoriaMetrics, MaxPointsPerSeries: 11000})
			if err != nil {
				b.Fatal(err)
			}
			end := first.Add(time.Duration(tc.points-1) * step)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				ss, err := c.QueryRange(context.Background(), "vllm:num_requests_running", first, end, step)
				if err != nil || len(ss) != tc.series {
					b.Fatalf("%d series, %v", len(ss), err)
				}
			}
		})
	}
}
