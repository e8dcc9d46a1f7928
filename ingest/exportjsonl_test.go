package ingest

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReadExportJSONL(t *testing.T) {
	stale := math.Float64frombits(StaleNaN)
	nan, inf := math.NaN(), math.Inf(1)
	in := `{"metric":{"__name__":"up","job":"b"},"values":[1,0,null],"timestamps":[3000,4000,5000]}` + "\r\n" +
		"\n" +
		`{"metric":{"job":"a","__name__":"up"},"values":["Infinity","-Infinity","NaN",2.5,-1e3],"timestamps":[1000,2000,3000,4000,5000]}` + "\n" +
		`  {"metric":{"__name__":"up","job":"b"},"values":[7,8,9],"timestamps":[1000,3000,2000]}  ` + "\n" +
		`{"metric":{"__name__":"up","job":"c"},"values":[5,6,7],"timestamps":[2000,1000,1000]}`
	got, err := ReadExportJSONL(strings.NewReader(in), "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Series{
		{ // Merged from lines 1 and 4, sorted; at 3000 the first line's sample wins.
			Labels:     Labels{{"__name__", "up"}, {"job", "b"}},
			Timestamps: []int64{1000, 2000, 3000, 4000, 5000},
			Values:     []float64{7, 9, 1, 0, stale},
		},
		{
			Labels:     Labels{{"__name__", "up"}, {"job", "a"}},
			Timestamps: []int64{1000, 2000, 3000, 4000, 5000},
			Values:     []float64{inf, -inf, nan, 2.5, -1000},
		},
		{ // One line, unsorted with a duplicate.
			Labels:     Labels{{"__name__", "up"}, {"job", "c"}},
			Timestamps: []int64{1000, 2000},
			Values:     []float64{6, 5},
		},
	}
	if msg := diffSeriesList(got, want); msg != "" {
		t.Error(msg)
	}
	if IsStaleNaN(got[1].Values[2]) {
		t.Error(`"NaN" read as a staleness marker, want a plain NaN`)
	}
}

// TestReadExportJSONLLongLine reads a line far beyond bufio's default
// buffer, as VictoriaMetrics writes for long series.
func TestReadExportJSONLLongLine(t *testing.T) {
	const n = 100000
	s := Series{Labels: Labels{{"__name__", "vllm:gpu_cache_usage_perc"}, {"pod", "p0"}}}
	for i := range n {
		s.Timestamps = append(s.Timestamps, 1700000000000+int64(i)*15000)
		s.Values = append(s.Values, float64(i%97)/97)
	}
	var buf bytes.Buffer
	line := AppendImportJSONL(nil, s)
	buf.Write(line)
	buf.Write(line) // the same series twice: merged
	if buf.Len() < 2<<20 {
		t.Fatalf("test line too short: %d bytes", buf.Len())
	}
	got, err := ReadExportJSONL(&buf, "long.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if msg := diffSeriesList(got, []Series{s}); msg != "" {
		t.Error(msg)
	}
}

// TestImportJSONLRoundTrip writes series with WriteImportJSONL and reads
// them back.
func TestImportJSONLRoundTrip(t *testing.T) {
	in := []Series{
		{
			Labels:     Labels{{"__name__", "vllm:e2e_request_latency_seconds_bucket"}, {"le", "+Inf"}, {"model_name", `m "1" \ ü`}, {"pod", "p0\nx"}, {"zone", "a\x01\x7fb"}},
			Timestamps: []int64{1700000000000, 1700000015000, 1700000030000, 1700000045000, 1700000060000},
			Values:     []float64{0, 1.5, math.NaN(), math.Inf(1), 1e-300},
		},
		{
			Labels:     Labels{{"__name__", "DCGM_FI_DEV_GPU_UTIL"}, {"gpu", "0"}},
			Timestamps: []int64{-5000, 0, 1},
			Values:     []float64{math.MaxFloat64, -0.1, math.Float64frombits(StaleNaN)},
		},
	}
	var buf bytes.Buffer
	if err := WriteImportJSONL(&buf, in...); err != nil {
		t.Fatal(err)
	}
	got, err := ReadExportJSONL(&buf, "rt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// The writer turns every non-finite value into null, which reads back
	// as a staleness marker.
	stale := math.Float64frombits(StaleNaN)
	want := []Series{in[0], in[1]}
	want[0].Values = []float64{0, 1.5, stale, stale, 1e-300}
	want[1].Values = []float64{math.MaxFloat64, -0.1, stale}
	if msg := diffSeriesList(got, want); msg != "" {
		t.Error(msg)
	}
}

func TestReadExportJSONLErrors(t *testing.T) {
	ok := `{"metric":{"__name__":"up"},"values":[1],"timestamps":[1]}` + "\n"
	f := func(line string, want string) {
		t.Helper()
		_, err := ReadExportJSONL(strings.NewReader(ok+"\n"+line+"\n"+ok), "x.jsonl")
		if err == nil {
			t.Fatalf("%s: no error", line)
		}
		if !strings.HasPrefix(err.Error(), "x.jsonl:3: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want x.jsonl:3: ...%s", line, err, want)
		}
	}
	f(`{"metric":{"__name__":"up"},"values":[1],`, "not a JSON object")
	f(`up 1 1700000000`, "not a JSON object")
	f(`[1,2]`, "got a JSON array, expected an object")
	f(`{"values":[1],"timestamps":[1]}`, `missing "metric" object`)
	f(`{"metric":"up","values":[1],"timestamps":[1]}`, `missing "metric" object`)
	f(`{"metric":{},"values":[1],"timestamps":[1]}`, `"metric" object has no labels`)
	f(`{"metric":{"__name__":"up","job":3},"values":[1],"timestamps":[1]}`, `label "job" has a number value, expected a string`)
	f(`{"metric":{"__name__":"up","job":"a","job":"b"},"values":[1],"timestamps":[1]}`, `label "job" appears twice`)
	f(`{"metric":{"__name__":"up"},"timestamps":[1]}`, `missing "values" array`)
	f(`{"metric":{"__name__":"up"},"values":[1]}`, `missing "timestamps" array`)
	f(`{"metric":{"__name__":"up"},"values":1,"timestamps":[1]}`, `"values" is a number, expected an array`)
	f(`{"metric":{"__name__":"up"},"values":[1,2],"timestamps":[1]}`, `"values" has 2 elements but "timestamps" has 1`)
	f(`{"metric":{"__name__":"up"},"values":[1],"timestamps":[1.5]}`, `timestamps[0] = 1.5 is not an integer (expected unix milliseconds)`)
	f(`{"metric":{"__name__":"up"},"values":[1,2],"timestamps":[1,"2"]}`, `timestamps[1] = "2" is not an integer`)
	f(`{"metric":{"__name__":"up"},"values":[1,"abc"],"timestamps":[1,2]}`, `values[1] = "abc" is not a number`)
	f(`{"metric":{"__name__":"up"},"values":[true],"timestamps":[1]}`, `values[0] = true is not a number`)
}

func TestReadExportJSONLEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "  \r\n"} {
		got, err := ReadExportJSONL(strings.NewReader(in), "e.jsonl")
		if err != nil || len(got) != 0 {
			t.Errorf("%q: got %v, %v; want no series and no error", in, got, err)
		}
	}
}

type errReader struct{ after string }

func (r *errReader) Read(p []byte) (int, error) {
	if r.after == "" {
		return 0, fmt.Errorf("disk on fire")
	}
	n := copy(p, r.after)
	r.after = r.after[n:]
	return n, nil
}

func TestReadExportJSONLReadError(t *testing.T) {
	_, err := ReadExportJSONL(&errReader{after: `{"metric":{"__name__":"up"},"values":[1],"timestamps":[1]}` + "\n{"}, "r.jsonl")
	if err == nil || !strings.Contains(err.Error(), "r.jsonl:2: reading: disk on fire") {
		t.Errorf("got %v, want r.jsonl:2: reading: disk on fire", err)
	}
}

// BenchmarkReadExportJSONL reads 100 series of 1,000 samples, each split
// over two blocks as VictoriaMetrics exports them.
func BenchmarkReadExportJSONL(b *testing.B) {
	var buf bytes.Buffer
	for half := range 2 {
		for i := range 100 {
			s := Series{Labels: Labels{{"__name__", "vllm:num_requests_running"}, {"pod", "p" + strconv.Itoa(i)}}}
			for j := range 500 {
				k := half*500 + j
				s.Timestamps = append(s.Timestamps, 1700000000000+int64(k)*15000)
				s.Values = append(s.Values, float64((k*7+i)%50))
			}
			if err := WriteImportJSONL(&buf, s); err != nil {
				b.Fatal(err)
			}
		}
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ss, err := ReadExportJSONL(bytes.NewReader(data), "bench.jsonl")
		if err != nil || len(ss) != 100 || len(ss[0].Values) != 1000 {
			b.Fatalf("%d series, %v", len(ss), err)
		}
	}
}

func FuzzReadExportJSONL(f *testing.F) {
	f.Add([]byte(`{"metric":{"__name__":"up","job":"a"},"values":[1,null,"Infinity"],"timestamps":[3,1,2]}` + "\n" +
		`{"metric":{"job":"a","__name__":"up"},"values":[4],"timestamps":[3]}`))
	f.Add([]byte(`{"metric":{"a":"\u00fc\n"},"values":[1e308,-0],"timestamps":[-1,9223372036854775807]}` + "\r\n\r\n"))
	f.Add([]byte(`{"metric":{"a":"b"},"values":[],"timestamps":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadExportJSONL(bytes.NewReader(data), "f.jsonl")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.jsonl:") {
				t.Fatalf("error does not name the file and line: %v", err)
			}
			return
		}
		for _, s := range got {
			if len(s.Timestamps) != len(s.Values) {
				t.Fatalf("%s: %d timestamps, %d values", s.Labels, len(s.Timestamps), len(s.Values))
			}
			if !strictlyAscending(s.Timestamps) {
				t.Fatalf("%s: timestamps not strictly ascending: %v", s.Labels, s.Timestamps)
			}
			for i := 1; i < len(s.Labels); i++ {
				if s.Labels[i].Name <= s.Labels[i-1].Name {
					t.Fatalf("labels not sorted and unique: %v", s.Labels)
				}
			}
		}
		// What was read writes back and reads back the same, except that
		// every non-finite value becomes a staleness marker. The writer
		// turns invalid UTF-8 into U+FFFD, so labels holding it are left
		// out of this check.
		for _, s := range got {
			for _, l := range s.Labels {
				if !utf8.ValidString(l.Name) || !utf8.ValidString(l.Value) {
					return
				}
			}
		}
		var buf bytes.Buffer
		if err := WriteImportJSONL(&buf, got...); err != nil {
			t.Fatal(err)
		}
		again, err := ReadExportJSONL(&buf, "again.jsonl")
		if err != nil {
			t.Fatalf("reading back what was written: %v", err)
		}
		want := make([]Series, len(got))
		for i, s := range got {
			want[i] = Series{Labels: s.Labels, Timestamps: s.Timestamps, Values: make([]float64, len(s.Values))}
			for j, v := range s.Values {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					v = math.Float64frombits(StaleNaN)
				}
				want[i].Values[j] = v
			}
		}
		if msg := diffSeriesList(again, want); msg != "" {
			t.Fatal(msg)
		}
	})
}

// diffSeriesList describes how got differs from want, or returns "".
func diffSeriesList(got, want []Series) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d series, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Labels.String() != w.Labels.String() || len(g.Labels) != len(w.Labels) {
			return fmt.Sprintf("series %d: labels %s, want %s", i, g.Labels, w.Labels)
		}
		if !equalInts(g.Timestamps, w.Timestamps) {
			return fmt.Sprintf("series %d %s: timestamps %v, want %v", i, g.Labels, clip(g.Timestamps), clip(w.Timestamps))
		}
		if !equalFloatBits(g.Values, w.Values) {
			return fmt.Sprintf("series %d %s: values %v, want %v", i, g.Labels, clip(g.Values), clip(w.Values))
		}
	}
	return ""
}

func clip[T any](s []T) []T {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}
