package ingest

import (
	"encoding/json"
	"errors"
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
