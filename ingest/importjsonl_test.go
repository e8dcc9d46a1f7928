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
