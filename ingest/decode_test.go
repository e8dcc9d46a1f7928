package ingest

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeQueryResponse(t *testing.T) {
	f := func(name, body string, want []Series) {
		t.Helper()
		got, err := decodeEvery(t, name, []byte(body))
		if err != nil {
			t.Fatalf("%s: unexpected error: %v", name, err)
		}
		if !sameSeries(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
	f("matrix", `{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"pod":"p0","__name__":"vllm:num_requests_running","model":"m1"},
		 "values":[[1700000000,"1"],[1700000000.5,"1.5"],[1700000000.123,"NaN"],[1700000001.001,"+Inf"],[1700000002.01,"-Inf"],[1700000003,"1e-3"]]},
		{"metric":{},"values":[]}]}}`,
		[]Series{
			{
				Labels:     Labels{{"__name__", "vllm:num_requests_running"}, {"model", "m1"}, {"pod", "p0"}},
				Timestamps: []int64{1700000000000, 1700000000500, 1700000000123, 1700000001001, 1700000002010, 1700000003000},
				Values:     []float64{1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1), 0.001},
			},
			{Labels: Labels{}, Timestamps: []int64{}, Values: []float64{}},
		})
	f("vector", `{"status":"success","data":{"resultType":"vector","result":[
		{"metric":{"__name__":"up","job":"a"},"value":[1700000000.25,"0"]},
		{"metric":{"job":"b"},"value":[1700000000.25,"-12.75"]}]}}`,
		[]Series{
			{Labels: Labels{{"__name__", "up"}, {"job", "a"}}, Timestamps: []int64{1700000000250}, Values: []float64{0}},
			{Labels: Labels{{"job", "b"}}, Timestamps: []int64{1700000000250}, Values: []float64{-12.75}},
		})
	f("scalar", `{"status":"success","data":{"resultType":"scalar","result":[1700000000.999,"42"]}}`,
		[]Series{{Labels: Labels{}, Timestamps: []int64{1700000000999}, Values: []float64{42}}})
	f("result before resultType, extra fields, escapes", `{"data":{"result":[
		{"metric":{"a\"b":"x\\y\u00e9\ud83d\ude00","le":"+Inf"},"values":[[1.7e9,"2"]],"histograms":[[1,{"count":"1"}]]}],
		"resultType":"matrix"},"stats":{"seriesFetched":"1"},"isPartial":false,"status":"success","warnings":["w"]}`,
		[]Series{{Labels: Labels{{"a\"b", "x\\yé😀"}, {"le", "+Inf"}}, Timestamps: []int64{1700000000000}, Values: []float64{2}}})
	f("empty matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, nil)
	f("null result", `{"status":"success","data":{"resultType":"vector","result":null}}`, nil)
	f("negative and long-fraction timestamps", `{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"x":"1"},"values":[[-1.5,"1"],[0.0005,"2"],[12.3456,"3"],[1E3,"4"]]}]}}`,
		[]Series{{Labels: Labels{{"x", "1"}}, Timestamps: []int64{-1500, 1, 12346, 1000000}, Values: []float64{1, 2, 3, 4}}})
}

func TestDecodeQueryResponseErrors(t *testing.T) {
	// at is the text the error offset must point at; "" means the end of
	// the body, "-" means no offset is checked.
	f := func(name, body, wantFragment, at string) {
		t.Helper()
		wantOffset := len(body)
		switch at {
		case "-":
			wantOffset = -1
		case "":
		default:
			wantOffset = strings.LastIndex(body, at)
		}
		_, err := decodeEvery(t, name, []byte(body))
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if !strings.Contains(err.Error(), wantFragment) {
			t.Fatalf("%s: error %q does not contain %q", name, err, wantFragment)
		}
		var de *DecodeError
		if wantOffset >= 0 {
			if !errors.As(err, &de) {
				t.Fatalf("%s: %T is not a *DecodeError", name, err)
			}
			if de.Offset != wantOffset {
				t.Fatalf("%s: offset %d, want %d (%v)", name, de.Offset, wantOffset, err)
			}
		}
	}
	f("empty", ``, "expected '{'", "")
	f("html", `<html><body>502 Bad Gateway</body></html>`, `body begins "<html><body>502 Bad Gateway`, "<html>")
	f("truncated", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,`, "near end of input: expected a string", "")
	f("bad value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"abc"]}]}}`, `bad sample value "abc"`, `"abc"`)
	f("value not a string", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`, "expected a string", "2]}")
	f("string result", `{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`, `unsupported resultType "string"`, `[1,"x"]`)
	f("trailing data", `{"status":"success","data":{"resultType":"matrix","result":[]}}x`, "unexpected data after", "x")
	f("no data", `{"status":"success"}`, `no "data" field`, `{"status"`)
	f("bad label", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"1"]}]}}`, "expected a string", "1}")
	f("deep nesting", `{"x":`+strings.Repeat("[", 1000), "nesting too deep", "-")
	f("control char", "{\"status\":\"a\x01\"}", "control character", "\x01")
	f("bad escape", `{"status":"\q"}`, "bad escape", `\q`)
	f("unknown status", `{"status":"weird","data":{}}`, `unknown status "weird"`, `{"status"`)

	_, err := DecodeQueryResponse([]byte(`{"status":"error","errorType":"bad_data","error":"1:3: parse error: unexpected \"}\""}`))
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got %T %v, want *APIError", err, err)
	}
	if ae.ErrorType != "bad_data" || ae.Err != `1:3: parse error: unexpected "}"` || ae.Status != "error" {
		t.Fatalf("APIError fields: %+v", ae)
	}
}

func TestDecodeAppendDoesNotClobber(t *testing.T) {
	got, err := DecodeQueryResponse([]byte(`{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"s":"a"},"values":[[1,"1"],[2,"2"]]},{"metric":{"s":"b"},"values":[[1,"3"],[2,"4"]]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	got[0].Timestamps = append(got[0].Timestamps, 3)
	got[0].Values = append(got[0].Values, 9)
	got[0].Labels = append(got[0].Labels, Label{"t", "x"})
	if got[1].Timestamps[0] != 1000 || got[1].Values[0] != 3 || got[1].Labels[0].Value != "b" {
		t.Fatalf("append to one series changed another: %+v", got[1])
	}
}

// sameSeries compares series exactly, NaN equal to NaN by bit pattern.
func sameSeries(a, b []Series) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].Labels, b[i].Labels) && !(len(a[i].Labels) == 0 && len(b[i].Labels) == 0) {
			return false
		}
		if !reflect.DeepEqual(a[i].Timestamps, b[i].Timestamps) && !(len(a[i].Timestamps) == 0 && len(b[i].Timestamps) == 0) {
			return false
		}
		if len(a[i].Values) != len(b[i].Values) {
			return false
		}
		for j := range a[i].Values {
			if math.Float64bits(a[i].Values[j]) != math.Float64bits(b[i].Values[j]) {
				return false
			}
		}
	}
	return true
}
