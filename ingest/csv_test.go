package ingest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReadCSVTimestampFormats(t *testing.T) {
	utc := func(s string) int64 {
		t.Helper()
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
			if tm, err := time.Parse(layout, s); err == nil {
				return tm.UnixMilli()
			}
		}
		t.Fatalf("oracle cannot parse %q", s)
		return 0
	}
	f := func(ts string, want int64) {
		t.Helper()
		c, err := ReadCSV(strings.NewReader(ts+",1\n"), "x.csv", CSVOptions{})
		if err != nil {
			t.Fatalf("%q: %v", ts, err)
		}
		if got := c.Series.Timestamps[0]; got != want {
			t.Errorf("%q: got %d ms, want %d (%s)", ts, got, want, time.UnixMilli(want).UTC())
		}
		if c.RawTimestamps[0] != ts {
			t.Errorf("%q: raw timestamp %q", ts, c.RawTimestamps[0])
		}
	}
	// Unix seconds, integer and fractional (fractions truncated to ms).
	f("0", 0)
	f("600", 600_000)
	f("1700000000", 1700000000_000)
	f("1700000000.25", 1700000000_250)
	f("1700000000.5", 1700000000_500)
	f("1700000000.1239", 1700000000_123)
	f("99999999999", 99999999999_000) // just below 1e11: still seconds
	f("99999999999.5", 99999999999_500)
	// Unix milliseconds: integers of at least 1e11.
	f("100000000000", 100000000000)
	f("1700000000000", 1700000000000)
	// RFC 3339 with and without fractions and zones.
	for _, s := range []string{
		"2023-11-14T22:13:20Z",
		"2023-11-14T22:13:20z",
		"2023-11-14t22:13:20Z",
		"2023-11-14T22:13:20.5Z",
		"2023-11-14T22:13:20.123456789Z",
		"2023-11-14T22:13:20+01:00",
		"2023-11-14T22:13:20.25-05:30",
		"2023-11-14T22:13:20",
		"2023-11-14T22:13:20.999",
		"2024-02-29T23:59:59Z",
		"2000-02-29T00:00:00Z",
		"1969-12-31T23:59:59Z",
		"1900-03-01T00:00:00Z",
		"9999-12-31T23:59:59Z",
	} {
		f(s, utc(strings.ToUpper(s)))
	}
	// NAB's YYYY-MM-DD hh:mm:ss, UTC.
	for _, s := range []string{
		"2014-04-01 00:00:00",
		"2015-09-08 11:39:00",
		"2016-12-31 23:59:59",
		"2014-04-01 00:00:00.75",
		"2014-04-01 00:00:00+02:00",
	} {
		f(s, utc(strings.Replace(s, " ", "T", 1)))
	}
}

func TestReadCSVBadTimestamps(t *testing.T) {
	for _, ts := range []string{
		"2023-02-29 00:00:00", // not a leap year
		"1900-02-29T00:00:00Z",
		"2023-13-01T00:00:00Z",
		"2023-00-10T00:00:00Z",
		"2023-04-31T00:00:00Z",
		"2023-11-14 24:00:00",
		"2023-11-14 23:60:00",
		"2023-11-14 23:59:60",
		"2023-11-14",
		"2023/11/14 22:13:20",
		"2023-11-14_22:13:20",
		"2023-11-14T22:13:20+0100",
		"2023-11-14T22:13:20+24:00",
		"2023-11-14T22:13:20.Z",
		"2023-11-14T22:13:20 UTC",
		"1.7e9",
		"-5",
		"+5",
		"1700000000.",
		".5",
		"0x10",
		"1_000",
		"1234567890123456", // 16 digits: beyond any plausible millisecond
		"NaN",
		"abc",
		"",
	} {
		in := "timestamp,value\n1,1\n" + ts + ",2\n"
		_, err := ReadCSV(strings.NewReader(in), "x.csv", CSVOptions{})
		if err == nil {
			t.Errorf("%q: no error", ts)
			continue
		}
		want := fmt.Sprintf("x.csv:3: timestamp %q is not in an accepted format: unix seconds", ts)
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "RFC 3339") ||
			!strings.Contains(err.Error(), "unix milliseconds (an integer >= 1e11") {
			t.Errorf("%q: error %q does not contain %q and the list of formats", ts, err, want)
		}
	}
}

func TestReadCSV(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	type want struct {
		name   string
		ts     []int64
		vs     []float64
		raw    []string
		lines  []int
		labels Labels
	}
	f := func(desc, in, file string, o CSVOptions, w want) {
		t.Helper()
		c, err := ReadCSV(strings.NewReader(in), file, o)
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		if !equalFloatBits(c.Series.Values, w.vs) || !equalInts(c.Series.Timestamps, w.ts) {
			t.Errorf("%s: got %v %v, want %v %v", desc, c.Series.Timestamps, c.Series.Values, w.ts, w.vs)
		}
		if w.raw != nil && strings.Join(c.RawTimestamps, "|") != strings.Join(w.raw, "|") {
			t.Errorf("%s: raw timestamps %q, want %q", desc, c.RawTimestamps, w.raw)
		}
		if fmt.Sprint(c.Lines) != fmt.Sprint(w.lines) {
			t.Errorf("%s: lines %v, want %v", desc, c.Lines, w.lines)
		}
		if c.Series.Labels.String() != w.labels.String() || len(c.Series.Labels) != len(w.labels) {
			t.Errorf("%s: labels %s, want %s", desc, c.Series.Labels, w.labels)
		}
	}
	name := func(n string) Labels { return Labels{{Name: "__name__", Value: n}} }

	f("header", "timestamp,value\n1,10\n2,20\n", "data/a.csv", CSVOptions{},
		want{ts: []int64{1000, 2000}, vs: []float64{10, 20}, raw: []string{"1", "2"}, lines: []int{2, 3}, labels: name("a")})
	f("no header", "1,10\n2,20", "b.tsv.csv", CSVOptions{},
		want{ts: []int64{1000, 2000}, vs: []float64{10, 20}, lines: []int{1, 2}, labels: name("b.tsv")})
	f("name option", "1,10\n", "a.csv", CSVOptions{Name: "vllm:num_requests_running"},
		want{ts: []int64{1000}, vs: []float64{10}, lines: []int{1}, labels: name("vllm:num_requests_running")})
	f("no file, no name", "1,10\n", "", CSVOptions{},
		want{ts: []int64{1000}, vs: []float64{10}, lines: []int{1}})
	f("CRLF, BOM, blank lines", "\uFEFFtimestamp,value\r\n\r\n2014-04-01 00:00:00,1.5\r\n  \r\n2014-04-01 00:05:00,2\r\n\r\n", "x.csv", CSVOptions{},
		want{ts: []int64{1396310400000, 1396310700000}, vs: []float64{1.5, 2}, raw: []string{"2014-04-01 00:00:00", "2014-04-01 00:05:00"}, lines: []int{3, 5}, labels: name("x")})
	f("BOM without header", "\uFEFF1,1\n", "x.csv", CSVOptions{},
		want{ts: []int64{1000}, vs: []float64{1}, lines: []int{1}, labels: name("x")})
	f("special values", "t,v\n1,NaN\n2,nan\n3,\n4,+Inf\n5,-Inf\n6,1e3\n7,-0.5\n8, 4 \n9,1e400\n", "x.csv", CSVOptions{},
		want{ts: []int64{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000}, vs: []float64{nan, nan, nan, inf, -inf, 1000, -0.5, 4, inf}, lines: []int{2, 3, 4, 5, 6, 7, 8, 9, 10}, labels: name("x")})
	f("extra columns, ServeGen layout", "t_seconds,rate_req_per_s,cv,pattern,p1,p2\n0,1.33,8.5,Weibull,0.37,0.39\n600,0,0,,0,0\n", "chunk-0-trace.csv", CSVOptions{},
		want{ts: []int64{0, 600_000}, vs: []float64{1.33, 0}, lines: []int{2, 3}, labels: name("chunk-0-trace")})
	f("value column by name", "t_seconds,rate_req_per_s,cv,pattern,p1,p2\n0,1.33,8.5,Weibull,0.37,0.39\n600,0,0,,0,0\n", "c.csv", CSVOptions{ValueColumn: "cv"},
		want{ts: []int64{0, 600_000}, vs: []float64{8.5, 0}, lines: []int{2, 3}, labels: name("c")})
	f("value column is the last one", "t,a,b\n1,2,3\n", "c.csv", CSVOptions{ValueColumn: "b"},
		want{ts: []int64{1000}, vs: []float64{3}, lines: []int{2}, labels: name("c")})
	f("quoted fields", "\"timestamp\",\"value\"\n\"2014-04-01 00:00:00\",\"7\"\n\"2014-04-01 00:05:00\" , \"8\" \n", "q.csv", CSVOptions{},
		want{ts: []int64{1396310400000, 1396310700000}, vs: []float64{7, 8}, raw: []string{"2014-04-01 00:00:00", "2014-04-01 00:05:00"}, lines: []int{2, 3}, labels: name("q")})
	f("quoted header with a comma and an escaped quote", "time,\"req, \"\"per s\"\"\",x\n1,5,9\n", "q.csv", CSVOptions{ValueColumn: `req, "per s"`},
		want{ts: []int64{1000}, vs: []float64{5}, lines: []int{2}, labels: name("q")})
	f("spaces around fields", " 1 , 10 \n2,20", "s.csv", CSVOptions{},
		want{ts: []int64{1000, 2000}, vs: []float64{10, 20}, raw: []string{"1", "2"}, lines: []int{1, 2}, labels: name("s")})
}

func TestReadCSVErrors(t *testing.T) {
	f := func(in string, o CSVOptions, want ...string) {
		t.Helper()
		c, err := ReadCSV(strings.NewReader(in), "x.csv", o)
		if err == nil {
			t.Fatalf("%q: no error, got %+v", in, c)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not contain %q", in, err, w)
			}
		}
	}
	none := CSVOptions{}
	f("", none, "x.csv: no rows")
	f("\n \r\n\n", none, "x.csv: no rows")
	f("\uFEFF", none, "x.csv: no rows")
	f("timestamp,value\n", none, "x.csv: no parsable rows", "header on line 1")
	f("\n\ntimestamp,value\n\n", none, "x.csv: no parsable rows", "header on line 3")
	f("timestamp,value\n1,1\n2,abc\n", none, `x.csv:3: value "abc" is not a number`, `column 2 "value"`)
	f("1,1\n2,1,2\n3,0x\n", none, `x.csv:3: value "0x" is not a number`)
	f("t,v\n1,1\n2014/04/01,3\n", none, `x.csv:3: timestamp "2014/04/01" is not in an accepted format`)
	f("timestamp,value\n2014-04-01 00:00:00,1\n2014-04-01 00:05:00,2\n2014-04-01 00:05:00,3\n", none,
		"x.csv:4: timestamp 2014-04-01 00:05:00 is not after line 3's 2014-04-01 00:05:00 (rows must be sorted by time, without duplicates)")
	f("1700000000,1\n\n1699999999,2\n", none, "x.csv:3: timestamp 1699999999 is not after line 1's 1700000000")
	// Equal instants in different spellings are duplicates too.
	f("1700000000,1\n1700000000000,2\n", none, "x.csv:2: timestamp 1700000000000 is not after line 1's 1700000000")
	f("t,v\n1,1\n2\n", none, "x.csv:3: row has 1 column, need at least 2")
	f("t,a,b\n1,1,1\n2,2\n", CSVOptions{ValueColumn: "b"}, "x.csv:3: row has 2 columns, need at least 3", `column 3 "b"`)
	f("timestamp\n1\n", none, "x.csv:1: header row has 1 column, need at least 2")
	f("t,v,w\n1,1,1\n", CSVOptions{ValueColumn: "p9"}, `x.csv:1: header row has no column "p9" (it has "t", "v", "w")`)
	f("t,v\n1,1\n", CSVOptions{ValueColumn: "t"}, `x.csv:1: value column "t" is the first column`)
	f("\n1,1\n", CSVOptions{ValueColumn: "v"}, `x.csv:2: value column "v" was asked for, but the file has no header row`)
	f("t,v\n1,\"2\n", none, `x.csv:2: column 2: quoted field has no closing '"'`)
	f("t,v\n1,\"2\"x\n", none, `x.csv:2: column 2: unexpected 'x' after a quoted field`)
	f("t,v\r\n\r\n1,1\r\n2,zz\r\n", none, `x.csv:4: value "zz" is not a number`)
}

// TestReadCSVNAB reads the NAB traffic files. Four files of the corpus hold
// duplicate timestamps; ReadCSV must reject those at the first duplicate.
func TestReadCSVNAB(t *testing.T) {
	files, _ := filepath.Glob("../../shared/data/nab/data/realTraffic/*.csv")
	if len(files) == 0 {
		t.Skip("../shared/data/nab is absent; the NAB corpus is read from there when present")
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// wc -l counts newlines; the last row may lack one.
		wantRows := bytes.Count(data, []byte("\n")) - 1
		if len(data) > 0 && data[len(data)-1] != '\n' {
			wantRows++
		}
		// The first row whose timestamp does not sort after the previous
		// one (NAB's format sorts as text).
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		dupLine := 0
		for i := 2; i < len(lines); i++ {
			if strings.Split(lines[i], ",")[0] <= strings.Split(lines[i-1], ",")[0] {
				dupLine = i + 1
				break
			}
		}

		c, err := ReadCSV(bytes.NewReader(data), path, CSVOptions{})
		if dupLine > 0 {
			want := fmt.Sprintf("%s:%d: timestamp", path, dupLine)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "not after line") {
				t.Errorf("%s: got error %v, want one containing %q", path, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(c.Series.Values) != wantRows || len(c.Lines) != wantRows || c.Lines[wantRows-1] != wantRows+1 {
			t.Errorf("%s: %d rows ending on line %d, want %d rows (wc -l minus the header)", path, len(c.Series.Values), c.Lines[len(c.Lines)-1], wantRows)
		}
		last := strings.Split(lines[len(lines)-1], ",")
		tm, _ := time.Parse("2006-01-02 15:04:05", last[0])
		v, _ := strconv.ParseFloat(last[1], 64)
		if n := len(c.Series.Values) - 1; c.Series.Timestamps[n] != tm.UnixMilli() || c.Series.Values[n] != v || c.RawTimestamps[n] != last[0] {
			t.Errorf("%s: last row %s %d %v, want %q %v", path, c.RawTimestamps[n], c.Series.Timestamps[n], c.Series.Values[n], last[0], v)
		}
		if want := strings.TrimSuffix(filepath.Base(path), ".csv"); c.Series.Labels.Get("__name__") != want {
			t.Errorf("%s: name %q, want %q", path, c.Series.Labels.Get("__name__"), want)
		}
	}
}

// TestReadCSVServeGen reads a ServeGen chunk: no header, six columns.
func TestReadCSVServeGen(t *testing.T) {
	path := "../../shared/data/servegen/language/m-large/chunk-0-trace.csv"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("../shared/data/servegen is absent (%v); it is read from there when present", err)
	}
	c, err := ReadCSV(bytes.NewReader(data), path, CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(c.Series.Values) != len(lines) {
		t.Fatalf("%d rows, want %d", len(c.Series.Values), len(lines))
	}
	for i, line := range lines {
		fs := strings.Split(line, ",")
		sec, _ := strconv.ParseInt(fs[0], 10, 64)
		v, _ := strconv.ParseFloat(fs[1], 64)
		if c.Series.Timestamps[i] != sec*1000 || c.Series.Values[i] != v {
			t.Fatalf("row %d: got %d %v, want %d %v", i+1, c.Series.Timestamps[i], c.Series.Values[i], sec*1000, v)
		}
	}
}

// TestCSVDecimal checks the fast value path against strconv.ParseFloat.
func TestCSVDecimal(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, werr := strconv.ParseFloat(s, 64)
		got, ok := fastDecimal(s)
		if !ok {
			return // strconv.ParseFloat handles it
		}
		if werr != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: fast path %v (%x), strconv %v (%x) %v", s, got, math.Float64bits(got), want, math.Float64bits(want), werr)
		}
	}
	for _, s := range []string{"0", "-0", "0.0", "1", "73", "20.0", "1.06", ".5", "-.5", "123456789012345", "0.000000000000001",
		"9007199254740993", "1.7976931348623157", "3.141592653589793", "0.1", "0.3", "-12.75", "999999999999999"} {
		check(s)
	}
	for _, s := range []string{"1.", "", "-", ".", "1e3", "+1", "1.2.3", "NaN", "1234567890123456", "0x1p3"} {
		if v, ok := fastDecimal(s); ok {
			t.Errorf("%q: fast path took it as %v", s, v)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		intDigits, fracDigits := r.IntN(10), r.IntN(10)
		s := strconv.FormatUint(r.Uint64N(pow10u(intDigits)), 10)
		if fracDigits > 0 {
			f := strconv.FormatUint(r.Uint64N(pow10u(fracDigits)), 10)
			s += "." + strings.Repeat("0", fracDigits-len(f)) + f
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		check(s)
	}
}

func pow10u(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

func ExampleReadCSV() {
	in := "timestamp,value\n2014-04-01 00:00:00,20.5\n2014-04-01 00:05:00,\n"
	c, err := ReadCSV(strings.NewReader(in), "nab/art_daily.csv", CSVOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Series.Labels)
	for i, ts := range c.Series.Timestamps {
		fmt.Println(c.Lines[i], c.RawTimestamps[i], ts, c.Series.Values[i])
	}
	// Output:
	// art_daily{}
	// 2 2014-04-01 00:00:00 1396310400000 20.5
	// 3 2014-04-01 00:05:00 1396310700000 NaN
}

// genCSV builds an n-row CSV in NAB's layout.
func genCSV(n int) []byte {
	var b bytes.Buffer
	b.WriteString("timestamp,value\n")
	start := time.Date(2014, 4, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		b.WriteString(start.Add(time.Duration(i) * 5 * time.Minute).Format("2006-01-02 15:04:05"))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(20+10*math.Sin(float64(i)/50), 'f', -1, 64))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkReadCSV reads a generated NAB-sized file (22,000 rows).
func BenchmarkReadCSV(b *testing.B) {
	data := genCSV(22000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadCSV(bytes.NewReader(data), "gen.csv", CSVOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadCSVUnixSeconds reads 22,000 rows of fractional unix seconds.
func BenchmarkReadCSVUnixSeconds(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < 22000; i++ {
		fmt.Fprintf(&buf, "%d.%03d,%g\n", 1700000000+i*15, i%1000, float64(i)*0.25)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadCSV(bytes.NewReader(data), "gen.csv", CSVOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadCSVNAB reads every NAB file that ReadCSV accepts, when the
// corpus is present; rows/op and ns/row are reported.
func BenchmarkReadCSVNAB(b *testing.B) {
	files, _ := filepath.Glob("../../shared/data/nab/data/*/*.csv")
	if len(files) == 0 {
		b.Skip("../shared/data/nab is absent")
	}
	var inputs [][]byte
	rows, size := 0, 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		c, err := ReadCSV(bytes.NewReader(data), path, CSVOptions{})
		if err != nil {
			continue // the files with duplicate timestamps
		}
		inputs = append(inputs, data)
		rows += len(c.Lines)
		size += len(data)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, data := range inputs {
			if _, err := ReadCSV(bytes.NewReader(data), "nab.csv", CSVOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rows), "rows/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
}

func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("timestamp,value\n2014-04-01 00:00:00,1\n2014-04-01 00:05:00,2\n"))
	f.Add([]byte("\uFEFF1700000000.5,NaN\r\n\r\n1700000001,+Inf\r\n"))
	f.Add([]byte("t,v,x\n\"1\",\"2\",\"a,b\"\n2,,\n"))
	f.Add([]byte("1700000000000,1\n2023-11-14T22:13:21.5+01:00,2\n"))
	f.Add([]byte("t,v\n1,1\n1,2\n"))
	f.Add([]byte("t,v\n2,1\n1,2\n3,3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// In any order: the same rows as the strict read when that
		// succeeds, and never a row the strict read would not parse.
		lax, laxErr := ReadCSV(bytes.NewReader(data), "f.csv", CSVOptions{AllowDuplicates: true, AllowUnsorted: true})
		if laxErr == nil {
			for i := 1; i < len(lax.Lines); i++ {
				if lax.Lines[i] <= lax.Lines[i-1] {
					t.Fatalf("lax: lines %d/%d not in file order", lax.Lines[i], lax.Lines[i-1])
				}
			}
		}
		c, err := ReadCSV(bytes.NewReader(data), "f.csv", CSVOptions{})
		if err == nil && (laxErr != nil || !slices.Equal(lax.Lines, c.Lines) || !slices.Equal(lax.Series.Timestamps, c.Series.Timestamps)) {
			t.Fatalf("lax read differs from the strict one: %v", laxErr)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		s := c.Series
		n := len(s.Timestamps)
		if n == 0 || len(s.Values) != n || len(c.RawTimestamps) != n || len(c.Lines) != n {
			t.Fatalf("lengths %d %d %d %d", n, len(s.Values), len(c.RawTimestamps), len(c.Lines))
		}
		for i := range n {
			if i > 0 && (s.Timestamps[i] <= s.Timestamps[i-1] || c.Lines[i] <= c.Lines[i-1]) {
				t.Fatalf("row %d not after row %d: %d/%d, lines %d/%d", i, i-1, s.Timestamps[i], s.Timestamps[i-1], c.Lines[i], c.Lines[i-1])
			}
			if ms, ok := parseTimestamp(c.RawTimestamps[i]); !ok || ms != s.Timestamps[i] {
				t.Fatalf("raw timestamp %q does not give %d", c.RawTimestamps[i], s.Timestamps[i])
			}
		}
	})
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// equalFloatBits compares values with NaN equal to NaN of the same kind
// (a plain NaN is not a stale marker).
func equalFloatBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch {
		case IsStaleNaN(a[i]) || IsStaleNaN(b[i]):
			if !IsStaleNaN(a[i]) || !IsStaleNaN(b[i]) {
				return false
			}
		case math.IsNaN(a[i]) || math.IsNaN(b[i]):
			if !math.IsNaN(a[i]) || !math.IsNaN(b[i]) {
				return false
			}
		case a[i] != b[i]:
			return false
		}
	}
	return true
}

// TestReadCSVAllowDuplicates keeps rows that repeat the previous timestamp
// when asked, and still rejects rows that go back in time.
func TestReadCSVAllowDuplicates(t *testing.T) {
	o := CSVOptions{AllowDuplicates: true}
	in := "timestamp,value\n2014-04-01 00:00:00,1\n2014-04-01 00:05:00,2\n2014-04-01 00:05:00,3\n2014-04-01 00:10:00,4\n"
	c, err := ReadCSV(strings.NewReader(in), "x.csv", o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(c.Series.Values), "[1 2 3 4]"; got != want {
		t.Errorf("values %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(c.Lines), "[2 3 4 5]"; got != want {
		t.Errorf("lines %s, want %s", got, want)
	}
	if c.Series.Timestamps[1] != c.Series.Timestamps[2] || c.RawTimestamps[2] != "2014-04-01 00:05:00" {
		t.Errorf("the duplicate row was not kept as written: %v %q", c.Series.Timestamps, c.RawTimestamps)
	}
	_, err = ReadCSV(strings.NewReader("1700000000,1\n1700000000,2\n1699999999,3\n"), "x.csv", o)
	if err == nil || !strings.Contains(err.Error(), "x.csv:3: timestamp 1699999999 is not after line 2's 1700000000") {
		t.Errorf("an out-of-order row with AllowDuplicates: got %v", err)
	}
	// Without the option the same input fails at the duplicate.
	if _, err := ReadCSV(strings.NewReader(in), "x.csv", CSVOptions{}); err == nil || !strings.Contains(err.Error(), "x.csv:4:") {
		t.Errorf("a duplicate without AllowDuplicates: got %v", err)
	}
}

// TestReadCSVAllowUnsorted keeps rows that step back in time, in file
// order, when asked; a duplicate still needs AllowDuplicates.
func TestReadCSVAllowUnsorted(t *testing.T) {
	in := "timestamp,value\n2014-04-01 00:00:00,1\n2014-04-01 00:10:00,2\n2014-04-01 00:05:00,3\n2014-04-01 00:15:00,4\n"
	c, err := ReadCSV(strings.NewReader(in), "x.csv", CSVOptions{AllowUnsorted: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(c.Series.Values), "[1 2 3 4]"; got != want {
		t.Errorf("values %s, want %s in file order", got, want)
	}
	if got, want := fmt.Sprint(c.Lines), "[2 3 4 5]"; got != want {
		t.Errorf("lines %s, want %s", got, want)
	}
	if ts := c.Series.Timestamps; ts[2] >= ts[1] || c.RawTimestamps[2] != "2014-04-01 00:05:00" {
		t.Errorf("the row that steps back was not kept as written: %v %q", ts, c.RawTimestamps)
	}
	if _, err := ReadCSV(strings.NewReader(in), "x.csv", CSVOptions{AllowDuplicates: true}); err == nil ||
		!strings.Contains(err.Error(), "x.csv:4: timestamp 2014-04-01 00:05:00 is not after line 3's 2014-04-01 00:10:00") {
		t.Errorf("a row stepping back without AllowUnsorted: got %v", err)
	}
	dup := "1700000000,1\n1700000300,2\n1700000300,3\n"
	if _, err := ReadCSV(strings.NewReader(dup), "x.csv", CSVOptions{AllowUnsorted: true}); err == nil || !strings.Contains(err.Error(), "x.csv:3:") {
		t.Errorf("a duplicate with AllowUnsorted only: got %v", err)
	}
	if c, err := ReadCSV(strings.NewReader(dup+"1700000000,4\n"), "x.csv", CSVOptions{AllowUnsorted: true, AllowDuplicates: true}); err != nil || len(c.Lines) != 4 {
		t.Errorf("both options: %v", err)
	}
}
