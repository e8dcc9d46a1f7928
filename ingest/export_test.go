package ingest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// exportBody is lines as VictoriaMetrics' /api/v1/export writes them, and
// some it does not but may: members in another order, unsorted and
// repeated timestamps, escapes, every special value.
const exportBody = `{"metric":{"__name__":"vllm:num_requests_running","pod":"p0","model":"llama"},"values":[1,2.5,-3e-2,null,"Infinity","-Infinity","NaN",1e300],"timestamps":[1700000000000,1700000015000,1700000030000,1700000045000,1700000060000,1700000075000,1700000090000,1700000105000]}
{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","modelName":"NVIDIA \"H100\"\n\\ \u00e9 😀"},"values":[97],"timestamps":[1700000000123]}

{"timestamps":[3000,1000,2000,1000],"values":[3,1,2,9],"metric":{"b":"2","a":"1"},"extra":{"x":[1,{"y":null}]}}
{"metric":{"__name__":"empty"},"values":[],"timestamps":[]}
{"metric":{"__name__":"neg"},"values":[0.001,-0],"timestamps":[-5000,0]}
`

func TestReadExportAsTheFileReader(t *testing.T) {
	want, err := ReadExportJSONL(strings.NewReader(exportBody), "body")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 5 || len(want[2].Timestamps) != 3 || want[2].Values[0] != 1 {
		t.Fatalf("the file reader read %+v", want)
	}
	body := []byte(exportBody)
	for how, r := range readers(body) {
		got, err := ReadExport(r, ResponseLimits{})
		if err != nil {
			t.Fatalf("read %s: %v", how, err)
		}
		if !sameSeries(got, want) {
			t.Fatalf("read %s:\n got %+v\nwant %+v", how, got, want)
		}
	}
	for _, size := range []int{1, 5, 64} {
		got, err := newReadDecoder(&chunkReader{b: body, sizes: []int{2, 0, 9}}, ResponseLimits{}, 0, size).exportLines(nil)
		if err != nil || !sameSeries(got, want) {
			t.Fatalf("window of %d bytes: %v\n got %+v\nwant %+v", size, err, got, want)
		}
	}
	if !IsStaleNaN(want[0].Values[3]) || !math.IsInf(want[0].Values[4], 1) || !math.IsNaN(want[0].Values[6]) {
		t.Fatalf("special values: %v", want[0].Values)
	}
}

func TestReadExportErrors(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		for how, r := range readers([]byte(body)) {
			ss, err := ReadExport(r, ResponseLimits{})
			var de *DecodeError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), want) || ss != nil {
				t.Fatalf("%q, read %s: got %d series, %v; want a DecodeError %q", body, how, len(ss), err, want)
			}
			if de.Offset < 0 || de.Offset > len(body) {
				t.Fatalf("%q: offset %d outside the body", body, de.Offset)
			}
		}
	}
	f(`{"metric":{"a":"b"},"values":[1,2],"timestamps":[1]}`, `at offset 52 near end of input: "values" has 2 elements but "timestamps" has 1`)
	f(`{"metric":{"a":"b"},"values":[1],"timestamps":[1,2]}`, `at offset 49 near "2]}": "timestamps" has more elements than "values"`)
	f(`{"metric":{"a":"b"},"timestamps":[1],"values":[1,2]}`, `at offset 49 near "2]}": "values" has more elements than "timestamps"`)
	f(`{"metric":{"a":"b"},"values":[1]}`, `line without "values" and "timestamps"`)
	f(`{"values":[1],"timestamps":[1]}`, `line without "metric"`)
	f(`{"metric":{"a":"b"},"values":["x"],"timestamps":[1]}`, `at offset 30 near "\"x\"],\"timestamps\":[1]}": bad sample value "x"`)
	f(`{"metric":{"a":"b"},"values":[1],"timestamps":[1.5]}`, `timestamp is not integer milliseconds: 1.5`)
	f(`{"metric":{"a":"b"},"values":[1],"timestamps":[12345678901234567890]}`, `timestamp is not integer milliseconds`)
	f(`{"metric":{"a":1},"values":[1],"timestamps":[1]}`, `expected a string`)
	f(`{"metric":{"a":"b"},"values":[1],"values":[2],"timestamps":[1]}`, `"values" twice`)
	f(`{"metric":{"a":"b"},"values":[1],"timestamps":[1]} x`, `expected '{'`)
	f(`{"metric":{"a":"b"},"values":[1],"timestamps":[1]`, `unexpected end of input in object`)
	f(`<html>bad gateway</html>`, `at offset 0 near "<html>bad gateway</html>": expected '{'`)
}

func TestReadExportLimits(t *testing.T) {
	body := []byte(`{"metric":{"s":"a"},"values":[1,2,3],"timestamps":[1,2,3]}` + "\n" +
		`{"metric":{"s":"b"},"values":[1,2],"timestamps":[1,2]}` + "\n")
	f := func(lim ResponseLimits, want string) {
		t.Helper()
		for how, r := range readers(body) {
			ss, err := ReadExport(r, lim)
			if want == "" {
				if err != nil || len(ss) != 2 {
					t.Fatalf("%+v, read %s: %d series, %v", lim, how, len(ss), err)
				}
				continue
			}
			var le *LimitError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), want) || ss != nil {
				t.Fatalf("%+v, read %s: got %d series, %v; want a LimitError %q", lim, how, len(ss), err, want)
			}
		}
	}
	n := int64(len(body))
	f(ResponseLimits{Bytes: n, Series: 2, Points: 5}, "")
	f(ResponseLimits{Bytes: n - 1}, fmt.Sprintf("past the bytes limit of %d; stopped reading after %d bytes", n-1, n))
	f(ResponseLimits{Series: 1}, "past the series limit of 1")
	f(ResponseLimits{Points: 4}, "past the points limit of 4")
}

// TestExportLast: the blocks of a series come on lines of their own, in
// any order; each series becomes one point at t, its newest sample's
// value, or none when that is a staleness marker.
func TestExportLast(t *testing.T) {
	body := `{"metric":{"__name__":"a","pod":"p1"},"values":[5,6],"timestamps":[991000,995000]}
{"metric":{"pod":"p0","__name__":"a"},"values":[2],"timestamps":[999000]}
{"metric":{"__name__":"a","pod":"p0"},"values":[1],"timestamps":[992000]}
{"metric":{"__name__":"a","pod":"p1"},"values":[7],"timestamps":[993000]}
{"metric":{"__name__":"a","pod":"p2"},"values":[1,null],"timestamps":[990000,996000]}
{"metric":{"__name__":"a","pod":"p2"},"values":[3],"timestamps":[994000]}
{"metric":{"__name__":"a","pod":"p3"},"values":[],"timestamps":[]}
{"metric":{"__name__":"a","pod":"p4"},"values":[4],"timestamps":[986000]}
`
	for how, r := range readers([]byte(body)) {
		got, err := newReadDecoder(r, ResponseLimits{}, 0, readBufSize).exportLast(1_000_000)
		if err != nil {
			t.Fatalf("read %s: %v", how, err)
		}
		var b strings.Builder
		for _, s := range got {
			fmt.Fprintf(&b, "%s %v %v;", s.Labels, s.Timestamps, s.Values)
		}
		// p1's newest is 6 at 995 s; p0's 2 at 999 s; p2's newest is a
		// staleness marker; p3 has no sample.
		const want = `a{pod="p1"} [1000000] [6];a{pod="p0"} [1000000] [2];a{pod="p4"} [1000000] [4];`
		if b.String() != want {
			t.Fatalf("read %s:\n got %s\nwant %s", how, b.String(), want)
		}
	}
}

func TestGridderPoints(t *testing.T) {
	g := &gridder{start: 60_000, end: 120_000, step: 15_000}
	// Every 15 s at 7 s past: each point takes the sample before it.
	ts := []int64{37_000, 52_000, 67_000, 82_000, 97_000, 112_000}
	vs := []float64{1, 2, 3, 4, 5, 6}
	gt, gv := g.points(ts, vs)
	if fmt.Sprint(gt, gv) != "[60000 75000 90000 105000 120000] [2 3 4 5 6]" {
		t.Fatalf("got %v %v", gt, gv)
	}
	// The window of a 15 s scrape interval is 22.5 s (15 s + 7.5 s): the
	// sample at 97.5 s is 7.5 s before 105 s and just out of 120 s's; a
	// staleness marker drops 90 s's point.
	ts = []int64{37_000, 52_000, 67_000, 82_000, 97_500}
	vs = []float64{1, 2, 3, math.Float64frombits(StaleNaN), 5}
	gt, gv = g.points(ts, vs)
	if fmt.Sprint(gt, gv) != "[60000 75000 105000] [2 3 5]" {
		t.Fatalf("got %v %v", gt, gv)
	}
	// One point: a window of one step.
	g1 := &gridder{start: 120_000, end: 120_000, step: 15_000}
	if gt, _ := g1.points([]int64{104_000}, []float64{1}); len(gt) != 0 {
		t.Fatalf("a sample 16 s before a one-point range's point: %v", gt)
	}
	if gt, gv := g1.points([]int64{105_001, 110_000}, []float64{1, 2}); fmt.Sprint(gt, gv) != "[120000] [2]" {
		t.Fatalf("got %v %v", gt, gv)
	}
	for _, short := range []bool{false, true} {
		if from := exportFrom(1_200_000, 1_200_000, 15_000, short); from != 1_185_001 {
			t.Fatalf("one point: export from %d", from)
		}
		// Five points: VictoriaMetrics' look-behind either way.
		if from := exportFrom(1_200_000, 1_260_000, 15_000, short); from != 1_200_000-15_000-300_000 {
			t.Fatalf("five points: export from %d", from)
		}
	}
	if from := exportFrom(1_200_000, 1_200_000+20*15_000, 15_000, true); from != 1_200_000-60_000 {
		t.Fatalf("21 points, short: export from %d", from)
	}
	// A series whose window reaches before a short look-behind, and one
	// with too few samples, are noted.
	g2 := &gridder{start: 1_200_000, end: 1_200_000 + 29*15_000, step: 15_000, from: 1_140_000}
	ts, vs = nil, nil
	for k := range 40 {
		ts, vs = append(ts, 1_140_000+int64(k)*15_000), append(vs, 1)
	}
	if g2.points(ts, vs); g2.unsure {
		t.Fatal("a regular series noted")
	}
	if g2.points(ts[:19], vs[:19]); !g2.unsure {
		t.Fatal("19 samples not noted")
	}
	g2.unsure = false
	var sparse []int64
	for k := range 30 {
		sparse = append(sparse, 1_150_000+int64(k)*60_000)
	}
	if g2.points(sparse, vs[:30]); !g2.unsure {
		t.Fatal("a series scraped every minute not noted (its window is 67.5 s)")
	}
}
