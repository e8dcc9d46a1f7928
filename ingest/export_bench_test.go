package ingest

import (
	"bytes"
	"testing"
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
