package ingest

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

func TestAppendImportJSONLIsJSON(t *testing.T) {
	for _, v := range []string{
		"plain", `quote " and \ backslash`, "new\nline\ttab\rcr", "nul\x00bell\x07del\x7f",
		"é ü 日本 😀", "\u2028\u2029", "bad utf8 \xff\xfe end", "",
	} {
		s := Series{
			Labels:     Labels{{"__name__", "m"}, {"v", v}},
			Timestamps: []int64{1, 2, 3},
			Values:     []float64{1.5, math.NaN(), math.Inf(-1)},
		}
		line := AppendImportJSONL(nil, s)
		var got struct {
			Metric     map[string]string
			Values     []*float64
			Timestamps []int64
		}
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("label %q: line %s is not JSON: %v", v, line, err)
		}
		want := v
		if v == "bad utf8 \xff\xfe end" {
			want = "bad utf8 \ufffd\ufffd end"
		}
		if got.Metric["v"] != want || got.Metric["__name__"] != "m" {
			t.Fatalf("label %q came back as %q", v, got.Metric["v"])
		}
		if *got.Values[0] != 1.5 || got.Values[1] != nil || got.Values[2] != nil || !reflect.DeepEqual(got.Timestamps, s.Timestamps) {
			t.Fatalf("samples came back as %v %v", got.Values, got.Timestamps)
		}
		if !bytes.HasSuffix(line, []byte("]}\n")) {
			t.Fatalf("line does not end in a newline: %q", line)
		}
	}
}

// TestWriteImportJSONLSplitsLongSeries: a long series is written as lines of
// at most ImportLinePoints samples, each far below VictoriaMetrics' 64 KiB
// read block, and reads back whole; an empty series is still one line.
func TestWriteImportJSONLSplitsLongSeries(t *testing.T) {
	long := Series{Labels: Labels{{"__name__", "vllm:time_to_first_token_seconds"}, {"pod", "p0"}}}
	for i := range 2*ImportLinePoints + 1 {
		long.Timestamps = append(long.Timestamps, 1700000000000+int64(i)*15000)
		long.Values = append(long.Values, -float64(i)/1024-1e-300)
	}
	empty := Series{Labels: Labels{{"__name__", "up"}}}
	var buf bytes.Buffer
	if err := WriteImportJSONL(&buf, long, empty); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	lines = lines[:len(lines)-1] // after the last newline
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 3 for %d samples and 1 for the empty series", len(lines), len(long.Values))
	}
	for i, l := range lines {
		if len(l) >= 64<<10 {
			t.Errorf("line %d has %d bytes, want under 64 KiB", i+1, len(l))
		}
	}
	got, err := ReadExportJSONL(&buf, "split.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if msg := diffSeriesList(got, []Series{long, empty}); msg != "" {
		t.Error(msg)
	}
}
