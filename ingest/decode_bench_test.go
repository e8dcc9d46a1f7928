package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/prometheus/common/model"
)

// benchBody builds a query_range response of nSeries × nPoints shaped like
// what a fleet of vLLM replicas and their GPUs return: a few metric names,
// pod/model/namespace labels, 15s steps, values with decimals.
func benchBody(nSeries, nPoints int) []byte {
	names := []string{
		"vllm:num_requests_running", "vllm:num_requests_waiting",
		"vllm:gpu_cache_usage_perc", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
	}
	b := []byte(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for s := 0; s < nSeries; s++ {
		if s > 0 {
			b = append(b, ',')
		}
		name := names[s%len(names)]
		b = fmt.Appendf(b, `{"metric":{"__name__":%q,"container":"vllm","instance":"10.4.%d.%d:8000",`+
			`"job":"vllm","model_name":"meta-llama/Llama-3.1-8B-Instruct","namespace":"inference",`+
			`"pod":"vllm-llama-8b-%d-7f9c6d5b8-x%dz"`, name, s/250, s%250, s/8, s)
		if name[0] == 'D' {
			b = fmt.Appendf(b, `,"gpu":"%d","UUID":"GPU-%08x-1c2d-4e5f-8a9b-0c1d2e3f4a5b","modelName":"NVIDIA H100 80GB HBM3"`, s%8, s)
		}
		b = append(b, `},"values":[`...)
		for p := 0; p < nPoints; p++ {
			if p > 0 {
				b = append(b, ',')
			}
			ms := int64(1700000000000) + int64(p)*15000 + int64(s%4)*250
			v := float64((s*7919+p*104729)%100000) / 1000
			b = append(b, '[')
			b = strconv.AppendFloat(b, float64(ms)/1000, 'f', -1, 64)
			b = append(b, `,"`...)
			b = strconv.AppendFloat(b, v, 'f', -1, 64)
			b = append(b, `"]`...)
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}}"...)
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
