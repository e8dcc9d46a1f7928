package writeback

import (
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
)

// benchBatch is one evaluation of a fleet: 200 series scored over 4 new
// points each, and 20 forecasts of 60 leads.
func benchBatch() alerting.Batch {
	var b alerting.Batch
	for i := range 200 {
		sc := alerting.Scores{Group: "latency", Rule: "ttft",
			Labels: map[string]string{"__name__": "vllm:time_to_first_token_seconds", "model": "m", "pod": string(rune('a' + i%26)), "i": string(rune('A' + i/26))}}
		for j := range 4 {
			sc.T = append(sc.T, int64(i*1000+j))
			v := float64(j)
			sc.Value, sc.Score, sc.Expected, sc.Lower, sc.Upper = append(sc.Value, v), append(sc.Score, v/4), append(sc.Expected, v), append(sc.Lower, v-1), append(sc.Upper, v+1)
		}
		b.Scores = append(b.Scores, sc)
	}
	origin := time.Unix(1_700_000_000, 0)
	for i := range 20 {
		fd := alerting.ForecastData{Group: "capacity", Rule: "rps", Labels: map[string]string{"model": string(rune('a' + i))}, Origin: origin}
		for l := 1; l <= 60; l++ {
			fd.Points = append(fd.Points, alerting.ForecastPoint{Time: origin.Add(time.Duration(l) * time.Minute), Mean: 1, Lower: 0, Upper: 2})
		}
		b.Forecasts = append(b.Forecasts, fd)
	}
	return b
}

// BenchmarkConvert measures Send's share of an evaluation: the batch
// turned into series.
func BenchmarkConvert(b *testing.B) {
	batch := benchBatch()
	c := converter{scores: true, forecasts: true, forecastAt: AtTarget}
	b.ReportAllocs()
	for b.Loop() {
		c.convert(batch)
	}
}

// BenchmarkEncode measures the bodies of requests of 2000 samples.
func BenchmarkEncode(b *testing.B) {
	c := converter{scores: true, forecasts: true, forecastAt: AtTarget}
	ss, _ := c.convert(benchBatch())
	ss = merge(ss)
	var req []*series
	for n := 0; n < 2000 && len(ss) > 0; ss = ss[1:] {
		req = append(req, ss[0])
		n += len(ss[0].t)
	}
	b.Run("remote_write", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodeRemoteWrite(req)
		}
	})
	b.Run("vm_import", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendImport(buf[:0], req)
		}
	})
}
