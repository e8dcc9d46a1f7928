package ingest

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtures = "../testdata/files/"

func TestReadFileByExtension(t *testing.T) {
	stale := math.Float64frombits(StaleNaN)

	nab, err := ReadFile(fixtures + "nab_speed_7578.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(nab) != 1 || nab[0].Labels.String() != "nab_speed_7578{}" || len(nab[0].Values) != 30 {
		t.Fatalf("CSV: got %d series %v", len(nab), nab)
	}
	// 2015-09-08 11:39:00,73 is the first row.
	if nab[0].Timestamps[0] != 1441712340000 || nab[0].Values[0] != 73 {
		t.Errorf("CSV: first sample %d %v, want 1441712340000 73", nab[0].Timestamps[0], nab[0].Values[0])
	}

	jl, err := ReadFile(fixtures + "vllm_export.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	base := Labels{{"__name__", "vllm:num_requests_running"}, {"job", "vllm"}, {"model_name", "m1"}}
	withPod := func(pod string) Labels { return append(append(Labels{}, base...), Label{"pod", pod}) }
	if msg := diffSeriesList(jl, []Series{
		{Labels: withPod("p0"), Timestamps: []int64{1700000000000, 1700000015000, 1700000030000, 1700000045000, 1700000060000, 1700000075000}, Values: []float64{3, 4, 5, stale, 6, 7}},
		{Labels: withPod("p1"), Timestamps: []int64{1700000000000, 1700000015000, 1700000030000}, Values: []float64{1, 1.5, math.Inf(1)}},
	}); msg != "" {
		t.Errorf("JSON lines: %s", msg)
	}

	qr, err := ReadFile(fixtures + "vllm_query_range.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := DecodeQueryResponse(mustRead(t, fixtures+"vllm_query_range.json"))
	if err != nil {
		t.Fatal(err)
	}
	if msg := diffSeriesList(qr, want); msg != "" || len(qr) != 2 || qr[0].Labels.Get("pod") != "p0" || len(qr[0].Values) != 3 {
		t.Errorf("query response: %s; got %v", msg, qr)
	}
}

// TestReadFileSniff copies each fixture under names that do not tell the
// format and expects the same series as by extension.
func TestReadFileSniff(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"nab_speed_7578.csv", "vllm_export.jsonl", "vllm_query_range.json"} {
		want, err := ReadFile(fixtures + name)
		if err != nil {
			t.Fatal(err)
		}
		data := mustRead(t, fixtures+name)
		for _, variant := range []struct {
			suffix string
			data   []byte
		}{
			{".txt", data},
			{"", data},
			{".dat", append([]byte("\uFEFF \n\t"), data...)},
		} {
			stem := strings.TrimSuffix(name, filepath.Ext(name))
			path := filepath.Join(dir, stem+variant.suffix)
			if err := os.WriteFile(path, variant.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(path)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if msg := diffSeriesList(got, want); msg != "" {
				t.Errorf("%s: %s", path, msg)
			}
		}
	}
}

func TestSniffFormat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want FileFormat
	}{
		{"", FormatCSV},
		{"timestamp,value\n1,2\n", FormatCSV},
		{"2014-04-01 00:00:00,1\n", FormatCSV},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[]}]}}`, FormatQueryResponse},
		{`{"data":{"resultType":"vector","result":[]},"status":"success"}`, FormatQueryResponse},
		{"{\n  \"status\": \"error\",\n  \"errorType\": \"bad_data\"\n}\n", FormatQueryResponse},
		{`{"status":"success","data":{"resultType":"matrix","result":[`, FormatQueryResponse}, // truncated: the decoder says where
		{`{"metric":{"__name__":"up"},"values":[1],"timestamps":[1]}`, FormatExportJSONL},
		{"\uFEFF  {\"metric\":{\"a\":\"b\"},\"values\":[1],\"timestamps\":[1]}\n{\"metric\":{\"a\":\"b\"},\"values\":[2],\"timestamps\":[2]}\n", FormatExportJSONL},
		{`{"metric":{"__name__":"up"},"values":[1],"timest`, FormatExportJSONL}, // broken: the reader says which line
		{`{"a":1}`, FormatCSV},
		{`[1,2]`, FormatCSV},
	} {
		if got := SniffFormat([]byte(c.in)); got != c.want {
			t.Errorf("%q: %v, want %v", c.in, got, c.want)
		}
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f := func(path string, want ...string) {
		t.Helper()
		_, err := ReadFile(path)
		if err == nil {
			t.Fatalf("%s: no error", path)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", path, err, w)
			}
		}
	}
	f(filepath.Join(dir, "absent.csv"), "reading series", "absent.csv", "no such file")
	p := write("bad.csv", "timestamp,value\n1,1\n2,x\n")
	f(p, p+`:3: value "x" is not a number`)
	p = write("empty.CSV", "")
	f(p, p+": no rows")
	p = write("bad.ndjson", `{"metric":{"__name__":"up"},"values":[1],"timestamps":[1]}`+"\n"+`{"metric":{}`)
	f(p, p+":2: not a JSON object")
	p = write("bad.json", `{"status":"success","data":{"resultType":"matrix","result":[`)
	f(p, p+": decoding a query response: ")
	p = write("sniffed", "\n\nwhen,what\nyesterday,1\n")
	f(p, p+`:4: timestamp "yesterday" is not in an accepted format`)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
