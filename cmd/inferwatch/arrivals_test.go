package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseArrivals(t *testing.T) {
	for _, tc := range []struct {
		name, text, unit string
		field            string // --time-field
		step             time.Duration
		t0               int64
		want             []float64 // req/s
	}{
		{
			// Azure's traces: a datetime with seven decimals in the first
			// column, under a header. Minutes 18:15 and 18:16 whole; 18:17
			// holds the last request and is left out.
			name: "azure", unit: "auto", step: time.Minute, t0: 1700158500_000,
			text: "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
				"2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n" +
				"2023-11-16 18:16:00.0000000,1,1\n2023-11-16 18:16:59.9990000,1,1\n2023-11-16 18:16:30.5000000,1,1\n" +
				"2023-11-16 18:17:02.1000000,879,31\n",
			want: []float64{2.0 / 60, 3.0 / 60},
		},
		{
			// The time in a column named time, not the first; relative
			// seconds with fractions (BurstGPT's Timestamp is so).
			name: "named column", unit: "s", step: 10 * time.Second, t0: 0,
			text: "model,time,tokens\nChatGPT,0.5,10\nGPT-4,3,20\nChatGPT,12.25,5\nChatGPT,35,1\n",
			want: []float64{0.2, 0.1, 0}, // 35 s, the last request's step, is left out
		},
		{
			// No header: unix seconds from the first row; steps with no
			// request count 0.
			name: "no header", unit: "auto", step: time.Minute, t0: 1_700_000_040_000,
			text: "1700000050\n1700000100\n1700000101\n1700000290\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// A byte-order mark before JSON lines.
			name: "json lines after a BOM", unit: "ms", step: 3 * time.Second, t0: 0,
			text: "\ufeff" + `{"timestamp": 0}` + "\n" + `{"timestamp": 3500}` + "\n" + `{"timestamp": 7000}` + "\n",
			want: []float64{1.0 / 3, 1.0 / 3},
		},
		{
			// Out of time order, back and forth across steps, one time
			// before 0: each request counts in its own step.
			name: "out of order", unit: "s", step: 10 * time.Second, t0: -10_000,
			text: "25\n3\n14\n27\n2\n-4\n25.5\n40\n",
			want: []float64{0.1, 0.2, 0.1, 0.3, 0},
		},
		{
			// Mooncake: JSON lines, milliseconds from 0.
			name: "json lines in ms", unit: "ms", step: 3 * time.Second, t0: 0,
			text: `{"timestamp": 0, "input_length": 6758}` + "\n" + `{"timestamp": 0, "input_length": 7322}` + "\n\n" +
				`{"timestamp": 3000, "input_length": 1}` + "\n" + `{"timestamp": 9000, "input_length": 1}` + "\n",
			want: []float64{2.0 / 3, 1.0 / 3, 0},
		},
		{
			// An access log of JSON lines: Caddy's ts in fractional unix
			// seconds, one line with an RFC 3339 time in another field
			// the ts is taken over.
			name: "json access log", unit: "auto", step: time.Minute, t0: 1_700_000_040_000,
			text: `{"level":"info","ts":1700000050.25,"status":200}` + "\n" + `{"ts":1700000100.5,"start_time":"2026-01-01T00:00:00Z"}` + "\n" +
				`{"TS":1700000101}` + "\n" + `{"ts":1700000290}` + "\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// ECS's @timestamp, RFC 3339 with an offset.
			name: "json @timestamp", unit: "auto", step: time.Minute, t0: 1_700_000_040_000,
			text: `{"@timestamp":"2023-11-15T01:14:10+03:00"}` + "\n" + `{"@timestamp":"2023-11-14T22:15:00.5Z"}` + "\n" +
				`{"@timestamp":"2023-11-14T22:15:01Z"}` + "\n" + `{"@timestamp":"2023-11-14T22:18:10Z"}` + "\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// --time-field names the time's column, over a column named
			// time and the first.
			name: "time field", unit: "auto", field: "Received", step: time.Minute, t0: 1_700_000_040_000,
			text: "id,time,received\n1,0,1700000050\n2,0,1700000100\n3,0,1700000101\n4,0,1700000290\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// --time-field takes its field over timestamp in JSON too.
			name: "time field in json", unit: "ms", field: "arrived", step: 3 * time.Second, t0: 0,
			text: `{"timestamp": 99999, "arrived": 0}` + "\n" + `{"timestamp": 1, "arrived": 3500}` + "\n" + `{"arrived": 7000}` + "\n",
			want: []float64{1.0 / 3, 1.0 / 3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseArrivals(strings.NewReader(tc.text), "a.csv", tc.step, tc.unit, tc.field)
			if err != nil {
				t.Fatal(err)
			}
			if s.t0 != tc.t0 || s.step != tc.step || !slices.EqualFunc(s.y, tc.want, func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }) {
				t.Errorf("t0 %d step %v rates %v; want %d, %v, %v", s.t0, s.step, s.y, tc.t0, tc.step, tc.want)
			}
		})
	}
}

func TestParseArrivalsErrors(t *testing.T) {
	for _, tc := range []struct{ text, unit, field, want string }{
		{"TIMESTAMP,x\n2023-11-16 18:15:46,1\nsoon,2\n", "auto", "", `a.csv:3: time "soon" (field 1, "TIMESTAMP") is not a time`},
		{"model,time\nChatGPT\n", "s", "", `a.csv:2: 1 fields; the time is field 2 ("time")`},
		{"id,time\n1,1700000000\n", "auto", "when", `a.csv:1: no column "when" (--time-field) in the header "id,time"`},
		{`{"ts": 1, "x": 2}` + "\n" + `{"path": "/v1", "status": 200}` + "\n", "ms", "",
			`a.csv:2: no time field (timestamp, time, ts, @timestamp, arrival_time, start_time, any case); the object has path, status: name the time's field with --time-field`},
		{`{"ts": 1}` + "\n", "ms", "when", `a.csv:1: no field "when" (--time-field); the object has ts`},
		{`{"timestamp": "x"}` + "\n", "ms", "", `a.csv:1: timestamp "x" is not a time`},
		{`{"timestamp": 1,` + "\n", "ms", "", `a.csv:1: unexpected end of JSON input; want one JSON object a request`},
		{`{"timestamp": 1}` + "\n" + `[1]` + "\n", "ms", "", `a.csv:2: json: cannot unmarshal array`},
		{"TIMESTAMP,x\n", "auto", "", `a.csv: no request in the file`},
		{"time\n0\n1e12\n", "s", "", `a.csv: the requests span`},
	} {
		_, err := parseArrivals(strings.NewReader(tc.text), "a.csv", time.Minute, tc.unit, tc.field)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v; want %q", tc.text, err, tc.want)
		}
	}
}

// TestBacktestScaleInputPointsToArrivals: a log of requests given as
// --input is refused with the flag that reads it.
func TestBacktestScaleInputPointsToArrivals(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log.csv")
	if err := os.WriteFile(file, []byte("TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.6,1\n2023-11-16 18:15:46.6,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, context.Background(), "backtest", "scale", "--input", file, "--capacity", "1")
	if want := "log.csv:3: timestamp 2023-11-16 18:15:46.6 repeats line 2's 2023-11-16 18:15:46.6; rows must not repeat a timestamp; a log of requests, one a row, is read with --arrivals"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
}

// TestBacktestScaleRelativeTimesNoted: times counted from a log's start
// carry no unit, so the report says how it read them and how to read them
// otherwise; unix times and an explicit unit need no note.
func TestBacktestScaleRelativeTimesNoted(t *testing.T) {
	dir := t.TempDir()
	var rel, abs strings.Builder
	rel.WriteString("timestamp,input_length\n")
	abs.WriteString("timestamp,input_length\n")
	for i := range 7200 { // a request every 5 s for 10 h, or 36 s read as ms
		fmt.Fprintf(&rel, "%d,100\n", i*5)
		fmt.Fprintf(&abs, "%d,100\n", 1700000000+i*5)
	}
	relFile, absFile := filepath.Join(dir, "rel.csv"), filepath.Join(dir, "abs.csv")
	if err := os.WriteFile(relFile, []byte(rel.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(absFile, []byte(abs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const note = "note: "
	code, _, errOut := runCmd(t, context.Background(), "backtest", "scale", "--arrivals", relFile, "--capacity", "1")
	want := relFile + ": the times count from 1970-01-01T00:00:00Z, read as seconds: the log spans 9h59m; if they are milliseconds, give --time-unit ms"
	if code != 0 || !strings.Contains(errOut, note+want) {
		t.Errorf("relative seconds: exit %d, stderr %q; want 0 and %q", code, errOut, want)
	}
	for _, args := range [][]string{{"--arrivals", relFile, "--time-unit", "s"}, {"--arrivals", relFile, "--time-unit", "ms", "--step", "1s"}, {"--arrivals", absFile}} {
		code, _, errOut := runCmd(t, context.Background(), append([]string{"backtest", "scale", "--capacity", "1"}, args...)...)
		if code != 0 || strings.Contains(errOut, note) {
			t.Errorf("%v: exit %d, stderr %q; want 0 and no note", args, code, errOut)
		}
	}
}

// TestReadArrivalsGzip: a gzipped log reads as the log itself, whatever
// its name; a cut-off one is refused with its name.
func TestReadArrivalsGzip(t *testing.T) {
	dir := t.TempDir()
	var log strings.Builder
	log.WriteString("TIMESTAMP,ContextTokens\n")
	for i := range 3000 {
		fmt.Fprintf(&log, "%d.%03d,%d\n", 1700000000+i/7, i%1000, i)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write([]byte(log.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	plain, gz, cut := filepath.Join(dir, "log.csv"), filepath.Join(dir, "log.csv.gz"), filepath.Join(dir, "cut.csv")
	for file, b := range map[string][]byte{plain: []byte(log.String()), gz: zipped.Bytes(), cut: zipped.Bytes()[:zipped.Len()/2]} {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := readArrivals(plain, 10*time.Second, "auto", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readArrivals(gz, 10*time.Second, "auto", "")
	if err != nil {
		t.Fatal(err)
	}
	if got.t0 != want.t0 || !slices.Equal(got.y, want.y) || len(got.y) != 42 {
		t.Errorf("gzipped: t0 %d, %d steps; plain: t0 %d, %d steps (want 42, equal)", got.t0, len(got.y), want.t0, len(want.y))
	}
	if _, err := readArrivals(cut, 10*time.Second, "auto", ""); err == nil || !strings.Contains(err.Error(), cut+": decompressing: unexpected EOF") {
		t.Errorf("cut-off gzip: error %v; want one naming %s and the end of the data", err, cut)
	}
	// JSON lines cut off mid-line: the line's fault is the cut, not JSON.
	var jl strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&jl, `{"ts": %d.%03d, "path": "/v1/chat/completions"}`+"\n", 1700000000+i/7, i%1000)
	}
	zipped.Reset()
	zw.Reset(&zipped)
	if _, err := zw.Write([]byte(jl.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, zipped.Bytes()[:zipped.Len()*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readArrivals(cut, 10*time.Second, "auto", ""); err == nil || !strings.Contains(err.Error(), ": decompressing: unexpected EOF") {
		t.Errorf("cut-off gzipped JSON lines: error %v; want the decompression's", err)
	}
}

// FuzzObjectTime: scanning a line for its time field finds what decoding
// it finds, wherever the scan answers, and answers wherever a valid line
// is plain ASCII without escapes.
func FuzzObjectTime(f *testing.F) {
	for _, s := range []string{
		`{"ts": 1700000050.25, "status": 200}`,
		`{"timestamp": 0, "input_length": 6758, "hash_ids": [0, 1, 2]}`,
		`{"path": "/v1 \"ts\": 3", "meta": {"ts": 9, "a": [{"time": 1}]}, "time": "2023-11-14T22:15:00Z"}`,
		`{"TS": 1, "ts": 2, "Ts": 3}`,
		`{"ts": 1, "ts": 2}`,
		`{"start_time": "2026-01-01T00:00:00Z", "@timestamp": "2023-11-14T22:15:01Z"}`,
		`{"arrived": 7000, "timestamp": 3}`,
		`{ " ts " : 5 }`,
		`{"\u0074s": 4}`,
		`{"tś": 4, "ts": 1}`,
		`{"ts": true, "time": null}`,
		`{}`,
		`[1]`,
		`{"ts": 1,`,
		`{"ts": 1} trailing`,
		`{"ts":"a\\"}`,
	} {
		f.Add(s, "")
		f.Add(s, "arrived")
	}
	f.Fuzz(func(t *testing.T, line, field string) {
		b := []byte(line)
		valid := json.Valid(b)
		k, v, ok := objectTime(b, field)
		if !valid || json.Unmarshal(b, new(map[string]json.RawMessage)) != nil {
			return // decodedTime reads the line, or refuses it
		}
		name, raw, _, err := decodedTime(b, field)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if ok && (string(k) != name || string(v) != string(raw)) {
			t.Fatalf("%q field %q: scanned %s = %s, decoded %s = %s", line, field, k, v, name, raw)
		}
		plain := !strings.ContainsRune(line, '\\') && !slices.ContainsFunc(b, func(c byte) bool { return c >= 0x80 })
		if !ok && plain && name != "" {
			t.Fatalf("%q field %q: the scan found nothing, decoding %s = %s", line, field, name, raw)
		}
	})
}
