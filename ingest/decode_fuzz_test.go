package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func FuzzDecodeQueryResponse(f *testing.F) {
	for _, seed := range []string{
		okVector,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"a","b":"c\u00e9"},"values":[[1700000000.123,"1.5"],[1700000001,"NaN"],[1.7e9,"-Inf"]]}]}}`,
		`{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1e-3"]}}`,
		`{"data":{"result":[{"metric":{},"value":[1,"2"]}],"resultType":"vector"},"status":"success"}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`,
		`<html>502</html>`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"1"],[2,`,
		string(benchBody(3, 4)),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in := append([]byte(nil), body...)
		ss, err := DecodeQueryResponse(body)
		if string(in) != string(body) {
			t.Fatal("decoder modified its input")
		}
		if err != nil {
			var de *DecodeError
			var ae *APIError
			if !errors.As(err, &de) && !errors.As(err, &ae) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if de != nil && (de.Offset < 0 || de.Offset > len(body)) {
				t.Fatalf("offset %d outside body of %d bytes", de.Offset, len(body))
			}
			return
		}
		// Whatever decodes must be valid JSON.
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		for _, s := range ss {
			if len(s.Timestamps) != len(s.Values) {
				t.Fatalf("%d timestamps, %d values", len(s.Timestamps), len(s.Values))
			}
			for i := 1; i < len(s.Labels); i++ {
				if s.Labels[i-1].Name > s.Labels[i].Name {
					t.Fatalf("labels not sorted: %v", s.Labels)
				}
			}
		}
	})
}

// FuzzReadQueryResponse checks the decoder against the decoder it
// replaced, on any body: DecodeQueryResponse and ReadQueryResponse, the
// body read in chunks of the fuzzed sizes through a window of the fuzzed
// size, give the reference's series and error, to the byte. Under fuzzed
// limits, a response is refused only past a limit, and otherwise decoded
// as without limits.
func FuzzReadQueryResponse(f *testing.F) {
	for i, seed := range []string{
		okVector,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"a","b":"c\u00e9"},"values":[[1700000000.123,"1.5"],[1700000001,"NaN"],[1.7e9,"-Inf"]]}]}}`,
		`{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1e-3"]}}`,
		`{"data":{"result":[{"metric":{},"value":[1,"2"]}],"resultType":"vector"},"status":"success"}`,
		`{"data":{"result":[{"metric":{"a\"b":"x\\y\u00e9\ud83d\ude00"},"values":[[1,"1"],[2,"x"]]}],"resultType":"matrix"},"status":"success"}`,
		`{"data":{"result":[1,"2",3],"resultType":"scalar"}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`,
		`<html>502</html>`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"1"],[2,`,
		`{"status":"success","warnings":["` + strings.Repeat("w", 600) + `"],"data":{"resultType":"vector","result":[{"metric":{},"value":[1e-3,"0x"]}]}}`,
		string(benchBody(3, 4)),
	} {
		f.Add([]byte(seed), []byte{byte(i), 0, 7, 1}, uint8(i*13), uint64(i)*0x0102_0304_0506)
	}
	f.Fuzz(func(t *testing.T, body, chunks []byte, window uint8, limits uint64) {
		sizes := make([]int, len(chunks))
		for i, c := range chunks {
			sizes[i] = int(c % 80)
		}
		read := func(lim ResponseLimits) ([]Series, error) {
			return newReadDecoder(&chunkReader{b: body, sizes: sizes}, lim, 0, int(window)+1).response()
		}
		want, wantErr := refDecodeQueryResponse(body)
		for how, decode := range map[string]func() ([]Series, error){
			"DecodeQueryResponse": func() ([]Series, error) { return DecodeQueryResponse(body) },
			"ReadQueryResponse":   func() ([]Series, error) { return read(ResponseLimits{}) },
		} {
			got, err := decode()
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("%s: error\n%v\nwant\n%v", how, err, wantErr)
			}
			if !sameSeries(got, want) {
				t.Fatalf("%s:\n got %+v\nwant %+v", how, got, want)
			}
		}
		// Through a label cache, twice: the same series, the same errors
		// but for the bytes quoted after a "metric" object.
		lc := newLabelCache(64)
		for range 2 {
			d := newReadDecoder(&chunkReader{b: body, sizes: sizes}, ResponseLimits{}, 0, int(window)+1)
			d.lc = lc
			got, err := d.response()
			if !sameError(err, wantErr) || !sameSeries(got, want) {
				t.Fatalf("with a label cache: %v %+v\nwant %v %+v", err, got, wantErr, want)
			}
		}

		lim := ResponseLimits{
			Bytes:  int64(limits & 0xffff),
			Series: int(limits >> 16 & 0xff),
			Points: int(limits >> 24 & 0xfff),
		}
		got, err := read(lim)
		points := 0
		for _, s := range want {
			points += len(s.Timestamps)
		}
		past := map[string]bool{
			"bytes":  lim.Bytes > 0 && int64(len(body)) > lim.Bytes,
			"series": wantErr == nil && lim.Series > 0 && len(want) > lim.Series,
			"points": wantErr == nil && lim.Points > 0 && points > lim.Points,
		}
		var le *LimitError
		if errors.As(err, &le) {
			if wantErr == nil && !past[le.Limit] {
				t.Fatalf("limits %+v: refused by %v, not past it (%d bytes, %d series, %d points)", lim, err, len(body), len(want), points)
			}
			if lim.Bytes > 0 && le.Read > lim.Bytes+1 {
				t.Fatalf("limits %+v: read %d bytes", lim, le.Read)
			}
			if got != nil {
				t.Fatalf("limits %+v: refused with %d series", lim, len(got))
			}
			return
		}
		if wantErr == nil && (past["bytes"] || past["series"] || past["points"]) {
			t.Fatalf("limits %+v: not refused (%v): %d bytes, %d series, %d points", lim, err, len(body), len(want), points)
		}
		// Within the limits, or failing first: as without limits, but for
		// the bytes a DecodeError quotes, which may lie past the limit.
		var de, wantDE *DecodeError
		if errors.As(err, &de) && errors.As(wantErr, &wantDE) {
			if de.Offset != wantDE.Offset || de.Reason != wantDE.Reason {
				t.Fatalf("limits %+v: error\n%v\nwant\n%v", lim, err, wantErr)
			}
		} else if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("limits %+v: error\n%v\nwant\n%v", lim, err, wantErr)
		}
		if !sameSeries(got, want) {
			t.Fatalf("limits %+v:\n got %+v\nwant %+v", lim, got, want)
		}
	})
}
