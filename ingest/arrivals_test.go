package ingest

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

func TestParseArrivals(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		unit       TimeUnit
		field      string
		step       time.Duration
		start      int64
		want       []float64 // req/s
	}{
		{
			// Azure's traces: a datetime with seven decimals in the first
			// column, under a header. Minutes 18:15 and 18:16 whole; 18:17
			// holds the last request and is left out.
			name: "azure", step: time.Minute, start: 1700158500_000,
			text: "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
				"2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n" +
				"2023-11-16 18:16:00.0000000,1,1\n2023-11-16 18:16:59.9990000,1,1\n2023-11-16 18:16:30.5000000,1,1\n" +
				"2023-11-16 18:17:02.1000000,879,31\n",
			want: []float64{2.0 / 60, 3.0 / 60},
		},
		{
			// The time in a column named time, not the first; relative
			// seconds with fractions (BurstGPT's Timestamp is so).
			name: "named column", unit: UnitSeconds, step: 10 * time.Second, start: 0,
			text: "model,time,tokens\nChatGPT,0.5,10\nGPT-4,3,20\nChatGPT,12.25,5\nChatGPT,35,1\n",
			want: []float64{0.2, 0.1, 0}, // 35 s, the last request's step, is left out
		},
		{
			// No header: unix seconds from the first row; steps with no
			// request count 0.
			name: "no header", step: time.Minute, start: 1_700_000_040_000,
			text: "1700000050\n1700000100\n1700000101\n1700000290\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// The default step is a minute.
			name: "default step", start: 1_700_000_040_000,
			text: "1700000050\n1700000100\n1700000101\n1700000290\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// A byte-order mark before JSON lines.
			name: "json lines after a BOM", unit: UnitMilliseconds, step: 3 * time.Second, start: 0,
			text: "\ufeff" + `{"timestamp": 0}` + "\n" + `{"timestamp": 3500}` + "\n" + `{"timestamp": 7000}` + "\n",
			want: []float64{1.0 / 3, 1.0 / 3},
		},
		{
			// Out of time order, back and forth across steps, one time
			// before 0: each request counts in its own step.
			name: "out of order", unit: UnitSeconds, step: 10 * time.Second, start: -10_000,
			text: "25\n3\n14\n27\n2\n-4\n25.5\n40\n",
			want: []float64{0.1, 0.2, 0.1, 0.3, 0},
		},
		{
			// Mooncake: JSON lines, milliseconds from 0.
			name: "json lines in ms", unit: UnitMilliseconds, step: 3 * time.Second, start: 0,
			text: `{"timestamp": 0, "input_length": 6758}` + "\n" + `{"timestamp": 0, "input_length": 7322}` + "\n\n" +
				`{"timestamp": 3000, "input_length": 1}` + "\n" + `{"timestamp": 9000, "input_length": 1}` + "\n",
			want: []float64{2.0 / 3, 1.0 / 3, 0},
		},
		{
			// An access log of JSON lines: Caddy's ts in fractional unix
			// seconds, one line with an RFC 3339 time in another field
			// the ts is taken over.
			name: "json access log", step: time.Minute, start: 1_700_000_040_000,
			text: `{"level":"info","ts":1700000050.25,"status":200}` + "\n" + `{"ts":1700000100.5,"start_time":"2026-01-01T00:00:00Z"}` + "\n" +
				`{"TS":1700000101}` + "\n" + `{"ts":1700000290}` + "\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// ECS's @timestamp, RFC 3339 with an offset.
			name: "json @timestamp", step: time.Minute, start: 1_700_000_040_000,
			text: `{"@timestamp":"2023-11-15T01:14:10+03:00"}` + "\n" + `{"@timestamp":"2023-11-14T22:15:00.5Z"}` + "\n" +
				`{"@timestamp":"2023-11-14T22:15:01Z"}` + "\n" + `{"@timestamp":"2023-11-14T22:18:10Z"}` + "\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// TimeField names the time's column, over a column named time
			// and the first.
			name: "time field", field: "Received", step: time.Minute, start: 1_700_000_040_000,
			text: "id,time,received\n1,0,1700000050\n2,0,1700000100\n3,0,1700000101\n4,0,1700000290\n",
			want: []float64{1.0 / 60, 2.0 / 60, 0, 0},
		},
		{
			// TimeField takes its field over timestamp in JSON too.
			name: "time field in json", unit: UnitMilliseconds, field: "arrived", step: 3 * time.Second, start: 0,
			text: `{"timestamp": 99999, "arrived": 0}` + "\n" + `{"timestamp": 1, "arrived": 3500}` + "\n" + `{"arrived": 7000}` + "\n",
			want: []float64{1.0 / 3, 1.0 / 3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseArrivals(strings.NewReader(tc.text), "a.csv", ArrivalsOptions{Step: tc.step, Unit: tc.unit, TimeField: tc.field})
			if err != nil {
				t.Fatal(err)
			}
			step := cmp.Or(tc.step, time.Minute)
			if s.Start != tc.start || s.Step != step || !slices.EqualFunc(s.Values, tc.want, func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }) {
				t.Errorf("start %d step %v rates %v; want %d, %v, %v", s.Start, s.Step, s.Values, tc.start, step, tc.want)
			}
		})
	}
}

// TestParseArrivalsErrors: an error names the file, the line and the
// field, and wraps what a caller tells apart: a value that is not a time,
// a line without the time's field.
func TestParseArrivalsErrors(t *testing.T) {
	const formats = "want unix seconds, integer unix milliseconds (from 1e11) or YYYY-MM-DD[T ]hh:mm:ss[.fff][Z|±hh:mm]"
	notATime := func(err error) bool { var te *TimeError; return errors.As(err, &te) }
	noField := func(err error) bool { return errors.Is(err, ErrNoTimeField) }
	for _, tc := range []struct {
		text  string
		unit  TimeUnit
		field string
		want  string
		kind  func(error) bool // nil: not a LineError
	}{
		{"TIMESTAMP,x\n2023-11-16 18:15:46,1\nsoon,2\n", UnitAuto, "",
			`a.csv:3: field "TIMESTAMP": "soon" is not a time: ` + formats, notATime},
		{"TIMESTAMP,x\n2023-11-16 18:15:46,1\n\n\n2023-13-01 00:00:00,2\n", UnitAuto, "",
			`a.csv:5: field "TIMESTAMP": "2023-13-01 00:00:00" is not a time`, notATime},
		{"1700000050\n1700000100\nsoon\n", UnitAuto, "", `a.csv:3: column 1: "soon" is not a time`, notATime},
		{"time\n1\n1.5e3\nx\n", UnitSeconds, "", `a.csv:4: field "time": "x" is not a time: want a number of seconds`, notATime},
		{"model,time\nChatGPT\n", UnitSeconds, "", `a.csv:2: field "time": the row has 1 field; the time is field 2`, nil},
		{"id,time\n1,1700000000\n", UnitAuto, "when", `a.csv:1: no time field "when" in the header "id,time"`, noField},
		{`{"ts": 1, "x": 2}` + "\n" + `{"path": "/v1", "status": 200}` + "\n", UnitMilliseconds, "",
			`a.csv:2: no time field (timestamp, time, ts, @timestamp, arrival_time, start_time, any case); the object has path, status`, noField},
		{`{"ts": 1}` + "\n", UnitMilliseconds, "when", `a.csv:1: no time field "when"; the object has ts`, noField},
		{`{"timestamp": "x"}` + "\n", UnitMilliseconds, "", `a.csv:1: field "timestamp": "x" is not a time: want a number of milliseconds`, notATime},
		{`{"ts": "2026-13-01"}` + "\n", UnitAuto, "", `a.csv:1: field "ts": "2026-13-01" is not a time: ` + formats, notATime},
		{`{"timestamp": 1,` + "\n", UnitMilliseconds, "", `a.csv:1: unexpected end of JSON input; want one JSON object per request`, nil},
		{`{"timestamp": 1}` + "\n\n" + `[1]` + "\n", UnitMilliseconds, "", `a.csv:3: json: cannot unmarshal array`, nil},
		{"TIMESTAMP,x\n", UnitAuto, "", `a.csv: no request in the file`, nil},
		{"time\n0\n1e12\n", UnitSeconds, "", `a.csv: the requests span`, nil},
		{"time,x\n\"1,2\n", UnitSeconds, "", `a.csv:2: column 6: extraneous or missing " in quoted-field`, nil},
	} {
		_, err := ParseArrivals(strings.NewReader(tc.text), "a.csv", ArrivalsOptions{Step: time.Minute, Unit: tc.unit, TimeField: tc.field})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v; want %q", tc.text, err, tc.want)
			continue
		}
		var le *LineError
		if isLine := errors.As(err, &le); isLine == strings.HasPrefix(tc.want, "a.csv: ") {
			t.Errorf("%q: %v is a LineError: %v", tc.text, err, isLine)
		}
		if tc.kind != nil && !tc.kind(err) {
			t.Errorf("%q: %v does not wrap the kind of error it is", tc.text, err)
		}
	}
	if _, err := ParseArrivals(strings.NewReader("1\n"), "a.csv", ArrivalsOptions{Step: 1500 * time.Microsecond}); err == nil ||
		!strings.Contains(err.Error(), "a step is a whole number of milliseconds") {
		t.Errorf("a step of 1.5ms: %v", err)
	}
	if _, err := ReadArrivals(filepath.Join(t.TempDir(), "nosuch.csv"), ArrivalsOptions{}); err == nil ||
		!strings.HasSuffix(err.Error(), "nosuch.csv: no such file or directory") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no file: %v", err)
	}
}

// TestReadArrivalsGzip: a gzipped log reads as the log itself, whatever
// its name; a cut-off one is refused with its name as a *DecompressError.
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
	o := ArrivalsOptions{Step: 10 * time.Second}
	want, err := ReadArrivals(plain, o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadArrivals(gz, o)
	if err != nil {
		t.Fatal(err)
	}
	if got.Start != want.Start || !slices.Equal(got.Values, want.Values) || len(got.Values) != 42 {
		t.Errorf("gzipped: start %d, %d steps; plain: start %d, %d steps (want 42, equal)", got.Start, len(got.Values), want.Start, len(want.Values))
	}
	cutOff := func(err error) bool {
		var de *DecompressError
		return errors.As(err, &de) && errors.Is(err, io.ErrUnexpectedEOF)
	}
	if _, err := ReadArrivals(cut, o); err == nil || !strings.Contains(err.Error(), cut+": decompressing: unexpected EOF") || !cutOff(err) {
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
	_, err = ReadArrivals(cut, o)
	var le *LineError
	if err == nil || !strings.Contains(err.Error(), ": decompressing: unexpected EOF") || !cutOff(err) || !errors.As(err, &le) || le.Line < 1000 {
		t.Errorf("cut-off gzipped JSON lines: error %v; want the decompression's, at the line cut", err)
	}
}

// TestParseArrivalsCountsAsItReads: reading a log holds a count per step,
// not the requests: the live heap stays flat while a million requests in
// 1440 steps are read, as CSV and as JSON lines. Keeping each request's
// time would grow it by 8 MB.
func TestParseArrivalsCountsAsItReads(t *testing.T) {
	const n, every = 1 << 20, 1 << 17
	for _, format := range []string{"csv", "json"} {
		t.Run(format, func(t *testing.T) {
			var heap []uint64
			log := &generatedLog{n: n, line: func(buf []byte, i int) []byte {
				if i%every == 0 {
					var ms runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&ms)
					heap = append(heap, ms.HeapAlloc)
				}
				ts := 1_700_000_000_000 + int64(i)*86_400_000/n // a day
				if format == "json" {
					buf = append(buf, `{"level":"info","ts":`...)
					buf = strconv.AppendFloat(buf, float64(ts)/1000, 'f', 3, 64)
					return append(buf, `,"status":200}`+"\n"...)
				}
				if i == 0 {
					buf = append(buf, "timestamp,status\n"...)
				}
				buf = strconv.AppendInt(buf, ts, 10)
				return append(buf, ",200\n"...)
			}}
			s, err := ParseArrivals(log, "log", ArrivalsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Values) != 1440 {
				t.Fatalf("%d steps, want 1440", len(s.Values))
			}
			growth := int64(slices.Max(heap)) - int64(heap[1])
			t.Logf("live heap at every %d lines: %v; grew by %d bytes", every, heap, growth)
			if growth > 1<<20 {
				t.Errorf("the live heap grew by %d bytes over %d requests; want a count per step, not the requests", growth, n)
			}
		})
	}
}

// generatedLog is a log of n lines written as they are read.
type generatedLog struct {
	n, i int
	line func(buf []byte, i int) []byte
	buf  []byte
}

func (g *generatedLog) Read(p []byte) (int, error) {
	for len(g.buf) < len(p) && g.i < g.n {
		g.buf = g.line(g.buf, g.i)
		g.i++
	}
	if len(g.buf) == 0 {
		return 0, io.EOF
	}
	k := copy(p, g.buf)
	g.buf = g.buf[:copy(g.buf, g.buf[k:])]
	return k, nil
}

// TestReadArrivalsSharedTraces reads the shared request logs, when
// present: each request is counted in its 10-second step, but for those
// of the last step, which is left out. The figures were counted apart
// from the reader, with Python's csv, json and datetime.
func TestReadArrivalsSharedTraces(t *testing.T) {
	for _, tc := range []struct {
		file             string
		unit             TimeUnit
		steps            int
		start            int64
		counted, inTrace int
	}{
		{"AzureLLMInferenceTrace_code.csv", UnitAuto, 343, 1_700_158_620_000, 8704, 8819},
		{"AzureLLMInferenceTrace_conv.csv", UnitAuto, 350, 1_700_158_540_000, 19359, 19366},
		{"mooncake/conversation_trace.jsonl", UnitMilliseconds, 353, 0, 11993, 12031},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("../../shared/data/llm-traces", tc.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("../shared/data/llm-traces is absent (%v); the logs are read from there when present", err)
			}
			s, err := ReadArrivals(path, ArrivalsOptions{Step: 10 * time.Second, Unit: tc.unit})
			if err != nil {
				t.Fatal(err)
			}
			counted := 0.0
			for _, v := range s.Values {
				counted += v * 10
			}
			if len(s.Values) != tc.steps || s.Start != tc.start || math.Abs(counted-float64(tc.counted)) > 1e-6 {
				t.Errorf("%d steps from %d, %g requests counted; want %d steps from %d and %d of the trace's %d requests",
					len(s.Values), s.Start, counted, tc.steps, tc.start, tc.counted, tc.inTrace)
			}
		})
	}
}

// BenchmarkParseArrivals reads a day of a million requests, as an Azure
// trace's CSV and as an access log's JSON lines, gzipped or not.
func BenchmarkParseArrivals(b *testing.B) {
	const n = 1 << 20
	var csvLog, jsonLog bytes.Buffer
	csvLog.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	for i := range n {
		t := time.UnixMilli(1_700_000_000_000 + int64(i)*86_400_000/n).UTC()
		fmt.Fprintf(&csvLog, "%s,%d,%d\n", t.Format("2006-01-02 15:04:05.0000000"), i%8000, i%500)
		fmt.Fprintf(&jsonLog, `{"level":"info","ts":%.6f,"logger":"http.log.access","msg":"handled request","request":{"method":"POST","uri":"/v1/chat/completions"},"status":200}`+"\n",
			float64(t.UnixMicro())/1e6)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(jsonLog.Bytes())
	zw.Close()
	for _, bc := range []struct {
		name string
		data []byte
	}{{"csv", csvLog.Bytes()}, {"jsonl", jsonLog.Bytes()}, {"jsonl.gz", zipped.Bytes()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				if _, err := ParseArrivals(bytes.NewReader(bc.data), bc.name, ArrivalsOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
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

// FuzzParseArrivals: any text is read or refused with an error naming the
// file, never a panic; what is read is finite, non-negative rates.
func FuzzParseArrivals(f *testing.F) {
	for _, s := range []string{
		"TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.6805900,374\n2023-11-16 18:17:02.1,879\n",
		"25\n3\n14\n27\n2\n-4\n25.5\n40\n",
		`{"ts":1700000050.25,"status":200}` + "\n" + `{"TS":1700000101}` + "\n",
		"\ufeff" + `{"timestamp": 0}` + "\n" + `{"timestamp": 3500}` + "\n",
		"time,x\n\"1,2\n",
		"\x1f\x8b\x08",
	} {
		f.Add(s, uint8(0), "")
		f.Add(s, uint8(2), "ts")
	}
	f.Fuzz(func(t *testing.T, text string, unit uint8, field string) {
		o := ArrivalsOptions{Step: 10 * time.Second, Unit: TimeUnit(unit % 3), TimeField: field}
		s, err := ParseArrivals(strings.NewReader(text), "log", o)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "log") {
				t.Fatalf("%q: error %q does not name the file", text, err)
			}
			return
		}
		if s.Step != o.Step || len(s.Values) == 0 || s.Start%10_000 != 0 {
			t.Fatalf("%q: start %d step %v, %d steps", text, s.Start, s.Step, len(s.Values))
		}
		for _, v := range s.Values {
			if !num.Finite(v) || v < 0 {
				t.Fatalf("%q: rate %v", text, v)
			}
		}
	})
}
