package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"testing"

	"github.com/prometheus/common/model"
)

// benchBody builds a query_range response of nSeries × nPoints shaped like
// what a fleet of vLLM replicas and their GPUs return: a few metric names,
// pod/model/namespace labels, 15s steps, values with decimals.
func benchBody(nSeries, nPoints int) []byte {
	b, _ := io.ReadAll(benchStream(nSeries, nPoints))
	return b
}

// benchStream is benchBody written as it is read, one series at a time, so
// that a test can serve or decode a body far larger than it holds.
func benchStream(nSeries, nPoints int) io.Reader {
	return &benchReader{nSeries: nSeries, nPoints: nPoints,
		buf: []byte(`{"status":"success","data":{"resultType":"matrix","result":[`)}
}

type benchReader struct {
	nSeries, nPoints, s int
	buf, store          []byte
	hex                 [16]byte
	done                bool
}

var benchNames = []string{
	"vllm:num_requests_running", "vllm:num_requests_waiting",
	"vllm:gpu_cache_usage_perc", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
}

func (r *benchReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.done {
			return 0, io.EOF
		}
		r.next()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// next writes the next series, or the end of the body, into buf.
func (r *benchReader) next() {
	b, s := r.store[:0], r.s
	if s == r.nSeries {
		r.store = append(b, "]}}"...)
		r.buf, r.done = r.store, true
		return
	}
	r.s++
	if s > 0 {
		b = append(b, ',')
	}
	name := benchNames[s%len(benchNames)]
	// As fmt would write it, without allocating.
	b = append(b, `{"metric":{"__name__":"`...)
	b = append(b, name...)
	b = append(b, `","container":"vllm","instance":"10.4.`...)
	b = strconv.AppendInt(b, int64(s/250), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(s%250), 10)
	b = append(b, `:8000","job":"vllm","model_name":"meta-llama/Llama-3.1-8B-Instruct","namespace":"inference","pod":"vllm-llama-8b-`...)
	b = strconv.AppendInt(b, int64(s/8), 10)
	b = append(b, "-7f9c6d5b8-x"...)
	b = strconv.AppendInt(b, int64(s), 10)
	b = append(b, `z"`...)
	if name[0] == 'D' {
		b = append(b, `,"gpu":"`...)
		b = strconv.AppendInt(b, int64(s%8), 10)
		b = append(b, `","UUID":"GPU-`...)
		h := strconv.AppendUint(r.hex[:0], uint64(s), 16)
		for range 8 - len(h) {
			b = append(b, '0')
		}
		b = append(b, h...)
		b = append(b, `-1c2d-4e5f-8a9b-0c1d2e3f4a5b","modelName":"NVIDIA H100 80GB HBM3"`...)
	}
	b = append(b, `},"values":[`...)
	for p := 0; p < r.nPoints; p++ {
		if p > 0 {
			b = append(b, ',')
		}
		ms := int64(1700000000000) + int64(p)*15000 + int64(s%4)*250
		b = append(b, '[')
		b = appendMilli(b, ms)
		b = append(b, `,"`...)
		b = appendMilli(b, int64((s*7919+p*104729)%100000))
		b = append(b, `"]`...)
	}
	r.store = append(b, "]}"...)
	r.buf = r.store
}

// appendMilli writes n/1000 as strconv.FormatFloat(float64(n)/1000, 'f',
// -1, 64) does for n ≥ 0 below 2^53/1000, without allocating.
func appendMilli(b []byte, n int64) []byte {
	b = strconv.AppendInt(b, n/1000, 10)
	if f := n % 1000; f != 0 {
		b = append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
		for b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
	}
	return b
}

func BenchmarkDecodeQueryRange(b *testing.B) {
	const nSeries, nPoints = 1000, 240
	body := benchBody(nSeries, nPoints)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ss, err := DecodeQueryResponse(body)
		if err != nil || len(ss) != nSeries || len(ss[nSeries-1].Values) != nPoints {
			b.Fatalf("decode: %d series, %v", len(ss), err)
		}
	}
	b.ReportMetric(float64(nSeries*nPoints)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkDecodeModelMatrix(b *testing.B) {
	const nSeries, nPoints = 1000, 240
	body := benchBody(nSeries, nPoints)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var resp struct {
			Status string `json:"status"`
			Data   struct {
				ResultType string       `json:"resultType"`
				Result     model.Matrix `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &resp); err != nil || len(resp.Data.Result) != nSeries {
			b.Fatalf("decode: %v", err)
		}
	}
	b.ReportMetric(float64(nSeries*nPoints)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// TestBenchStream checks the benchmark body against the same body written
// with strconv.FormatFloat, as it was first written.
func TestBenchStream(t *testing.T) {
	const nSeries, nPoints = 40, 30
	want := []byte(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for s := 0; s < nSeries; s++ {
		if s > 0 {
			want = append(want, ',')
		}
		name := benchNames[s%len(benchNames)]
		want = fmt.Appendf(want, `{"metric":{"__name__":%q,"container":"vllm","instance":"10.4.%d.%d:8000",`+
			`"job":"vllm","model_name":"meta-llama/Llama-3.1-8B-Instruct","namespace":"inference",`+
			`"pod":"vllm-llama-8b-%d-7f9c6d5b8-x%dz"`, name, s/250, s%250, s/8, s)
		if name[0] == 'D' {
			want = fmt.Appendf(want, `,"gpu":"%d","UUID":"GPU-%08x-1c2d-4e5f-8a9b-0c1d2e3f4a5b","modelName":"NVIDIA H100 80GB HBM3"`, s%8, s)
		}
		want = append(want, `},"values":[`...)
		for p := 0; p < nPoints; p++ {
			if p > 0 {
				want = append(want, ',')
			}
			ms := int64(1700000000000) + int64(p)*15000 + int64(s%4)*250
			v := float64((s*7919+p*104729)%100000) / 1000
			want = append(want, '[')
			want = strconv.AppendFloat(want, float64(ms)/1000, 'f', -1, 64)
			want = append(want, `,"`...)
			want = strconv.AppendFloat(want, v, 'f', -1, 64)
			want = append(want, `"]`...)
		}
		want = append(want, "]}"...)
	}
	want = append(want, "]}}"...)
	if got := benchBody(nSeries, nPoints); !bytes.Equal(got, want) {
		t.Fatalf("benchBody differs from its first form:\n%.300s\n%.300s", got, want)
	}
	for _, n := range []int64{0, 1, 10, 100, 999, 1000, 1001, 1010, 1100, 99999, 1700000000250, 1700003585750} {
		if got, want := string(appendMilli(nil, n)), strconv.FormatFloat(float64(n)/1000, 'f', -1, 64); got != want {
			t.Errorf("appendMilli(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestDecodeMatchesModelMatrix checks the fast decoder against
// encoding/json into model.Matrix on the benchmark body.
func TestDecodeMatchesModelMatrix(t *testing.T) {
	body := benchBody(50, 40)
	got, err := DecodeQueryResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Data struct {
			Result model.Matrix `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(resp.Data.Result) {
		t.Fatalf("%d series, want %d", len(got), len(resp.Data.Result))
	}
	for i, ss := range resp.Data.Result {
		m := map[string]string{}
		for k, v := range ss.Metric {
			m[string(k)] = string(v)
		}
		if want := LabelsFromMap(m); got[i].Labels.String() != want.String() {
			t.Fatalf("series %d labels %s, want %s", i, got[i].Labels, want)
		}
		for j, p := range ss.Values {
			if got[i].Timestamps[j] != int64(p.Timestamp) || got[i].Values[j] != float64(p.Value) {
				t.Fatalf("series %d point %d: (%d, %v), want (%d, %v)", i, j,
					got[i].Timestamps[j], got[i].Values[j], int64(p.Timestamp), float64(p.Value))
			}
		}
	}
}

// BenchmarkReadQueryRange decodes the same body as BenchmarkDecodeQueryRange
// as it is read from a reader.
func BenchmarkReadQueryRange(b *testing.B) {
	const nSeries, nPoints = 1000, 240
	body := benchBody(nSeries, nPoints)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ss, err := ReadQueryResponse(bytes.NewReader(body), ResponseLimits{})
		if err != nil || len(ss) != nSeries || len(ss[nSeries-1].Values) != nPoints {
			b.Fatalf("decode: %d series, %v", len(ss), err)
		}
	}
	b.ReportMetric(float64(nSeries*nPoints)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkDecodeLarge decodes the daemon's design load, 100,000 series of
// 240 points (a body of about 600 MB), from a reader that writes it as it is
// read: as the client does, decoding as it reads, and as it did before,
// reading the whole body and then decoding it. It reports what each way
// allocated (alloc-MB, which bounds its peak) against the body (body-MB)
// and the 16 bytes of each point (points-MB). Run it with -benchtime 1x:
// one decode takes seconds.
func BenchmarkDecodeLarge(b *testing.B) {
	const nSeries, nPoints = 100_000, 240
	f := func(b *testing.B, decode func(r io.Reader) ([]Series, error)) {
		var body int64
		var before, after runtime.MemStats
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			r := &countingReader{r: benchStream(nSeries, nPoints)}
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.StartTimer()
			ss, err := decode(r)
			b.StopTimer()
			runtime.ReadMemStats(&after)
			if err != nil || len(ss) != nSeries || len(ss[nSeries-1].Values) != nPoints {
				b.Fatalf("decode: %d series, %v", len(ss), err)
			}
			body = r.n
			runtime.KeepAlive(ss)
			b.StartTimer()
		}
		b.SetBytes(body)
		const mb = 1 << 20
		b.ReportMetric(float64(body)/mb, "body-MB")
		b.ReportMetric(float64(nSeries*nPoints*16)/mb, "points-MB")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/mb, "alloc-MB")
	}
	b.Run("stream", func(b *testing.B) {
		f(b, func(r io.Reader) ([]Series, error) { return ReadQueryResponse(r, ResponseLimits{}) })
	})
	b.Run("read-all", func(b *testing.B) {
		f(b, func(r io.Reader) ([]Series, error) {
			var buf bytes.Buffer
			if _, err := buf.ReadFrom(r); err != nil {
				return nil, err
			}
			return DecodeQueryResponse(buf.Bytes())
		})
	})
}
