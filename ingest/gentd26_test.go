package ingest

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// TestParseGenTD26: the containers' values are added at each sample time
// of the file's 57-second grid (0 at a time with no row of the type), held
// until the next, and averaged over each whole minute.
func TestParseGenTD26(t *testing.T) {
	const base = 1_662_858_720 // a whole minute
	row := func(k int, v float64, typ string) string {
		return fmt.Sprintf("%d.0,%g,c%d,%s\n", base+57*k, v, k%3, typ)
	}
	text := "timestamp_anon,value,container_ip,request_type\n" +
		row(0, 1, "Generative Requests") + row(0, 2, "Generative Requests") + // two containers: 3 at 0 s
		row(1, 0.5, "API Requests") + // no generative row at 57 s: 0
		row(2, 6, "Generative Requests") + // 114 s
		row(3, 0.5, "API Requests") // 171 s, the last time: held until 228 s
	s, err := ParseGenTD26(strings.NewReader(text), "qps.csv", "Generative Requests")
	if err != nil {
		t.Fatal(err)
	}
	// Minute 0–60: 3 for 57 s, 0 for 3 s. 60–120: 0 for 54 s, 6 for 6 s.
	// 120–180: 6 until 171, then 0. The last whole minute ends at 180.
	want := []float64{3 * 57.0 / 60, 6 * 6.0 / 60, 6 * 51.0 / 60}
	if s.Start != base*1000 || s.Step != time.Minute || len(s.Values) != len(want) {
		t.Fatalf("series from %d, step %v, %d minutes: %v", s.Start, s.Step, len(s.Values), s.Values)
	}
	for i := range want {
		if math.Abs(s.Values[i]-want[i]) > 1e-12 {
			t.Errorf("minute %d: %g, want %g", i, s.Values[i], want[i])
		}
	}
	if all, err := ParseGenTD26(strings.NewReader(text), "qps.csv", ""); err != nil || math.Abs(all.Values[0]-(3*57.0+0.5*3)/60) > 1e-12 {
		t.Errorf("all types: %v, %v", all, err)
	}
	if _, err := ParseGenTD26(strings.NewReader(text), "qps.csv", "Other"); err == nil ||
		!strings.HasSuffix(err.Error(), `qps.csv: no row of request_type "Other"; the file has "API Requests" (2 rows), "Generative Requests" (3 rows)`) {
		t.Errorf("an unknown type: %v", err)
	}
}

func TestParseGenTD26Gateway(t *testing.T) {
	// queue_size_raw_anon.csv: no request_type, zeros kept, the
	// container empty.
	text := "value,container_ip,timestamp_anon\n0.0,,1662858720.0\n1.0,,1662858777.0\n0.5,,1662858834.0\n0.0,,1662858891.0\n"
	s, err := ParseGenTD26(strings.NewReader(text), "queue_size_raw_anon.csv", "")
	if err != nil {
		t.Fatal(err)
	}
	// 0–60: 0 for 57 s, 1 for 3 s; 60–120: 1 for 54 s, 0.5 for 6 s;
	// 120–180: 0.5 until 171, then 0.
	want := []float64{3.0 / 60, (54 + 3.0) / 60, 0.5 * 51 / 60}
	if len(s.Values) != len(want) {
		t.Fatalf("%d minutes: %v", len(s.Values), s.Values)
	}
	for i := range want {
		if math.Abs(s.Values[i]-want[i]) > 1e-12 {
			t.Errorf("minute %d: %g, want %g", i, s.Values[i], want[i])
		}
	}
	if _, err := ParseGenTD26(strings.NewReader(text), "queue_size_raw_anon.csv", "API Requests"); err == nil || !strings.Contains(err.Error(), "no request_type column") {
		t.Errorf("a request type of a file without one: %v", err)
	}
}

// TestParseGenTD26Errors: an error names the file, and the line and the
// field at fault.
func TestParseGenTD26Errors(t *testing.T) {
	const header = "timestamp_anon,value,container_ip,request_type\n"
	for _, tc := range []struct{ text, want string }{
		{"", "qps.csv: reading the header: EOF"},
		{"timestamp,value\n1,2\n", `qps.csv: no timestamp_anon column in the header "timestamp,value"`},
		{header, "qps.csv: no rows after the header"},
		{header + "60,1,a,x\n120,1\n", `qps.csv:3: the row has 2 fields; want 4`},
		{header + "60,1,a,x\n\nsoon,1,a,x\n", `qps.csv:4: field "timestamp_anon": "soon" is not a number of seconds`},
		{header + "60,1,a,x\n120,NaN,a,x\n", `qps.csv:3: field "value": "NaN" is not a finite number`},
		{header + "60,1,a,x\n", "qps.csv: one sample time; two are needed to know the sampling step"},
		{header + "0,1,a,x\n57,1,a,x\n114,1,a,x\n130,1,a,y\n", `qps.csv:5: field "timestamp_anon": 130 is off the file's sampling grid of 57s from 0`},
		{header + "0,1,a,x\n57,1,a,x\n", "qps.csv: the samples cover less than two whole minutes"},
		{header + "0,1,a,x\n\"57,1,a,x\n", `qps.csv:3: column 11: extraneous or missing " in quoted-field`},
	} {
		typ := ""
		if strings.Contains(tc.text, ",y\n") {
			typ = "y"
		}
		_, err := ParseGenTD26(strings.NewReader(tc.text), "qps.csv", typ)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v; want %q", tc.text, err, tc.want)
			continue
		}
		var le *LineError
		if isLine := errors.As(err, &le); isLine == strings.HasPrefix(tc.want, "qps.csv: ") {
			t.Errorf("%q: %v is a LineError: %v", tc.text, err, isLine)
		}
	}
}

// TestReadGenTD26SharedTrace reads the shared qps.csv, when present: its
// minutes carry every request of each type the held samples put in them.
// The figures were computed apart from the reader, with Python's csv.
func TestReadGenTD26SharedTrace(t *testing.T) {
	path := "../../shared/data/gentd26/qps.csv"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("../shared/data/gentd26 is absent (%v); it is read from there when present", err)
	}
	for _, tc := range []struct {
		requestType string
		requests    float64 // over the whole minutes
	}{
		{"Generative Requests", 121772.52},
		{"API Requests", 79232.715},
		{"", 201005.235},
	} {
		s, err := ReadGenTD26(filepath.FromSlash(path), tc.requestType)
		if err != nil {
			t.Fatal(err)
		}
		requests := 0.0
		for _, v := range s.Values {
			requests += v * 60
		}
		if s.Start != 1_662_859_200_000 || len(s.Values) != 1339 || math.Abs(requests-tc.requests) > 1e-6*tc.requests {
			t.Errorf("%q: %d minutes from %d carry %g requests; want 1339 from 1662859200000 carrying %g", tc.requestType, len(s.Values), s.Start, requests, tc.requests)
		}
	}
}

// FuzzParseGenTD26: any text is read or refused with an error naming the
// file, never a panic, and what is read is whole minutes of finite rates.
func FuzzParseGenTD26(f *testing.F) {
	f.Add("timestamp_anon,value,container_ip,request_type\n1662858720.0,0.09,a,Generative Requests\n1662858777.0,0.18,b,Generative Requests\n1662858834.0,0.09,,API Requests\n1662858891.0,0.27,a,Generative Requests\n")
	f.Add("timestamp_anon,value,container_ip,request_type\n1,1,a,x\n2,1,a,x\n1e12,1,a,x\n")
	f.Add("value,request_type,timestamp_anon\n0.5,all,60\n0.5,all,120\n0.5,all,180\n")
	f.Fuzz(func(t *testing.T, text string) {
		for _, typ := range []string{"Generative Requests", ""} {
			s, err := ParseGenTD26(strings.NewReader(text), "qps.csv", typ)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "qps.csv") {
					t.Fatalf("%q: error %q does not name the file", text, err)
				}
				continue
			}
			if s.Step != time.Minute || len(s.Values) < 2 || s.Start%60_000 != 0 {
				t.Fatalf("%q: step %v, %d minutes from %d", text, s.Step, len(s.Values), s.Start)
			}
			for _, v := range s.Values {
				if !num.Finite(v) {
					t.Fatalf("%q: rate %v", text, v)
				}
			}
		}
	})
}
