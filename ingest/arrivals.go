package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// TimeUnit is how a log's numeric times read.
type TimeUnit int

// The units of a log's numeric times.
const (
	UnitAuto         TimeUnit = iota // as ParseTimestamp reads them: unix seconds, or integer unix milliseconds from 1e11; dates too
	UnitSeconds                      // seconds, with a fraction or not
	UnitMilliseconds                 // milliseconds, with a fraction or not
)

func (u TimeUnit) String() string {
	switch u {
	case UnitAuto:
		return "auto"
	case UnitSeconds:
		return "s"
	case UnitMilliseconds:
		return "ms"
	}
	return fmt.Sprintf("TimeUnit(%d)", int(u))
}

// formats says what a time in the unit looks like, for errors.
func (u TimeUnit) formats() string {
	switch u {
	case UnitSeconds:
		return "a number of seconds"
	case UnitMilliseconds:
		return "a number of milliseconds"
	}
	return "unix seconds, integer unix milliseconds (from 1e11) or YYYY-MM-DD[T ]hh:mm:ss[.fff][Z|±hh:mm]"
}

// RelativeBefore is the unix time in milliseconds (2001-09-09) before
// which a log's numeric times are taken to count from its start rather
// than from 1970: read in UnitAuto, their unit is then a guess.
const RelativeBefore = 1e12

// ArrivalsOptions say how ReadArrivals reads a log.
type ArrivalsOptions struct {
	// Step is the step requests are counted in, a whole number of
	// milliseconds. Default: a minute.
	Step time.Duration
	// Unit is how numeric times read. Default: UnitAuto.
	Unit TimeUnit
	// TimeField names the CSV column or JSON field holding each request's
	// time, in any case. Default: the first of ArrivalTimeFields found,
	// or else a CSV's first column.
	TimeField string
}

// timeFields are the names a log's time goes by, the first found taken:
// Azure's and BurstGPT's TIMESTAMP/Timestamp, Mooncake's timestamp, and
// what access logs call it (Caddy's and zap's ts, Logstash's and ECS's
// @timestamp, Envoy's start_time).
var timeFields = []string{"timestamp", "time", "ts", "@timestamp", "arrival_time", "start_time"}

// ArrivalTimeFields are the names, in any case, that ReadArrivals looks
// for a log's time under when ArrivalsOptions.TimeField is not set, the
// first found taken.
func ArrivalTimeFields() []string { return slices.Clone(timeFields) }

// ReadArrivals reads a log of requests, one request per row, gzipped or
// not, as the request rate per step: the requests that arrived in each
// step of the grid from the first arrival's step, per second. It counts
// the requests of each step as it reads them, so a log costs the memory of
// its steps, not of its requests, and the rows may come in any order. The
// last step is cut off at the last request and is left out unless it is
// the only one.
//
// The log is JSON lines, one object per request, or CSV with a header (or
// with none, the time first): the time is the column or field o.TimeField
// names, or else the first of ArrivalTimeFields there (any case), or else,
// in CSV, the first column. Errors name the file and the line: a line
// that does not read is a *LineError (wrapping a *TimeError for a value
// that is not a time, ErrNoTimeField for a line without the time's
// field), a gzipped file cut off or corrupt a *DecompressError.
func ReadArrivals(path string, o ArrivalsOptions) (*EvenSeries, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseArrivals(f, path, o)
}

// ParseArrivals is ReadArrivals of the text in, named file in errors.
func ParseArrivals(in io.Reader, file string, o ArrivalsOptions) (*EvenSeries, error) {
	if o.Step == 0 {
		o.Step = time.Minute
	}
	if o.Step < 0 || o.Step%time.Millisecond != 0 {
		return nil, fmt.Errorf("%s: counting requests in steps of %s: a step is a whole number of milliseconds above 0", file, o.Step)
	}
	br := bufio.NewReaderSize(in, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, &DecompressError{Err: err})
		}
		br = bufio.NewReaderSize(gzipErrors{zr}, 64<<10)
	}
	if bom, _ := br.Peek(3); string(bom) == "\ufeff" {
		br.Discard(3) // a byte-order mark, as some editors and exports start a file with
	}
	head, _ := br.Peek(1)
	c := stepCounter{step: o.Step.Milliseconds(), n: map[int64]float64{}}
	var err error
	if len(head) == 1 && head[0] == '{' {
		err = jsonArrivals(br, file, o, c.add)
	} else {
		err = csvArrivals(br, file, o, c.add)
	}
	if err != nil {
		return nil, err
	}
	c.flush()
	if len(c.n) == 0 {
		return nil, fmt.Errorf("%s: no request in the file", file)
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for k := range c.n {
		first, last = min(first, k), max(last, k)
	}
	n := last - first + 1
	if n > maxSteps {
		return nil, fmt.Errorf("%s: the requests span %d steps of %s; too many (at most %d: a longer step, or times in another unit)", file, n, o.Step, maxSteps)
	}
	counts := make([]float64, n)
	for k, v := range c.n {
		counts[k-first] = v
	}
	// The last step is cut off at the last request: leave it out unless
	// it is the only one.
	if n > 1 {
		counts = counts[:n-1]
	}
	for i := range counts {
		counts[i] /= o.Step.Seconds()
	}
	return &EvenSeries{Start: first * c.step, Step: o.Step, Values: counts}, nil
}

// openFile opens a file to read, its error naming it first, as the
// readers' errors do.
func openFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// gzipErrors makes a gzipped file's read errors *DecompressError.
type gzipErrors struct{ r io.Reader }

func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = &DecompressError{Err: err}
	}
	return n, err
}

// stepCounter counts requests by the step of the grid they arrived in
// (their time in milliseconds floor-divided by step), in as much memory as
// the log has steps, however many requests it holds. A log in time order
// adds to one step after another, counted apart from the map.
type stepCounter struct {
	step     int64
	n        map[int64]float64
	cur      int64
	curCount float64
}

func (c *stepCounter) add(t int64) {
	k := floorDiv(t, c.step)
	if k != c.cur || c.curCount == 0 {
		c.flush()
		c.cur = k
	}
	c.curCount++
}

// flush moves the step being counted into the map.
func (c *stepCounter) flush() {
	if c.curCount > 0 {
		c.n[c.cur] += c.curCount
		c.curCount = 0
	}
}

// arrivalTime parses one time of a log, in unix milliseconds.
func arrivalTime(s string, unit TimeUnit) (int64, bool) {
	s = strings.TrimSpace(s)
	switch unit {
	case UnitSeconds, UnitMilliseconds:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !num.Finite(v) || math.Abs(v) > 1e15 {
			return 0, false
		}
		if unit == UnitSeconds {
			v *= 1000
		}
		return int64(math.Floor(v)), true
	}
	return ParseTimestamp(s)
}

// timeField is the index of the name in names the time is read from:
// field's, any case, or ("" field) the first of timeFields found, the
// first in names of equals (-1: none).
func timeField(names []string, field string) int {
	best, bestRank := -1, -1
	for i, n := range names {
		if r := fieldRank(n, field); r >= 0 && (bestRank < 0 || r < bestRank) {
			best, bestRank = i, r
		}
	}
	return best
}

// fieldRank is where the name (a CSV column's or a JSON field's, in any
// case, around spaces or after a byte-order mark) stands among the names
// the time is read from: 0 for field's (when not ""), or its place among
// timeFields; −1 for none.
func fieldRank(name, field string) int {
	name = strings.TrimSpace(strings.TrimPrefix(name, "\ufeff"))
	if field != "" {
		if strings.EqualFold(name, field) {
			return 0
		}
		return -1
	}
	return slices.IndexFunc(timeFields, func(want string) bool { return strings.EqualFold(name, want) })
}

// csvArrivals reads the times of a CSV log, its header first.
func csvArrivals(in io.Reader, file string, o ArrivalsOptions, add func(int64)) error {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return csvError(file, err)
	}
	header = slices.Clone(header) // the reader reuses its record
	headerLine, _ := r.FieldPos(0)
	// lineError is a bad time in a row: in the named column's field, or,
	// without a header, in the first column.
	var lineError func(line int, err error) error
	col := 0
	if t, ok := arrivalTime(header[0], o.Unit); ok && o.TimeField == "" {
		// No header: the first column is the time, from the first row.
		add(t)
		lineError = func(line int, err error) error {
			return &LineError{File: file, Line: line, Err: fmt.Errorf("column 1: %w", err)}
		}
	} else {
		if col = timeField(header, o.TimeField); col < 0 {
			if o.TimeField != "" {
				return &LineError{File: file, Line: headerLine,
					Err: fmt.Errorf("%w %q in the header %q", ErrNoTimeField, o.TimeField, strings.Join(header, ","))}
			}
			col = 0
		}
		name := strings.TrimSpace(strings.TrimPrefix(header[col], "\ufeff"))
		lineError = func(line int, err error) error {
			return &LineError{File: file, Line: line, Field: name, Err: err}
		}
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return csvError(file, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) <= col {
			return lineError(line, fmt.Errorf("the row has %d field%s; the time is field %d", len(rec), plural(len(rec)), col+1))
		}
		t, ok := arrivalTime(rec[col], o.Unit)
		if !ok {
			return lineError(line, &TimeError{Value: strings.TrimSpace(rec[col]), Unit: o.Unit})
		}
		add(t)
	}
}

// csvError is an error of encoding/csv: a LineError where it names a
// line, else (a read error, a gzip cut off) an error naming the file.
func csvError(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{File: file, Line: pe.Line, Err: fmt.Errorf("column %d: %w", pe.Column, pe.Err)}
	}
	return fmt.Errorf("%s: %w", file, err)
}

// jsonArrivals reads the times of a log of JSON lines.
func jsonArrivals(in io.Reader, file string, o ArrivalsOptions, add func(int64)) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLine)
	line := 1
	for ; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var (
			name string
			raw  []byte
		)
		if k, v, ok := objectTime(b, o.TimeField); ok && json.Valid(b) {
			name, raw = string(k), v
		} else {
			// Decoding says what is wrong with the line, or reads what
			// objectTime does not (keys with escapes or beyond ASCII).
			var names []string
			var err error
			name, raw, names, err = decodedTime(b, o.TimeField)
			switch {
			case err != nil:
				if rerr := sc.Err(); rerr != nil {
					// The line was cut off by a read error: that is the news.
					return &LineError{File: file, Line: line, Err: rerr}
				}
				return &LineError{File: file, Line: line, Err: fmt.Errorf("%w; want one JSON object per request", err)}
			case name == "" && o.TimeField != "":
				return &LineError{File: file, Line: line,
					Err: fmt.Errorf("%w %q; the object has %s", ErrNoTimeField, o.TimeField, strings.Join(names, ", "))}
			case name == "":
				return &LineError{File: file, Line: line,
					Err: fmt.Errorf("%w (%s, any case); the object has %s", ErrNoTimeField, strings.Join(timeFields, ", "), strings.Join(names, ", "))}
			}
		}
		value := strings.Trim(string(raw), `"`)
		t, ok := arrivalTime(value, o.Unit)
		if !ok {
			return &LineError{File: file, Line: line, Field: name, Err: &TimeError{Value: strings.TrimSpace(value), Unit: o.Unit}}
		}
		add(t)
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return &LineError{File: file, Line: line, Err: fmt.Errorf("the line is longer than %d MiB", maxJSONLine>>20)}
	case err != nil:
		return &LineError{File: file, Line: line, Err: err}
	}
	return nil
}

// maxJSONLine is the longest line of JSON lines ParseArrivals reads.
const maxJSONLine = 16 << 20

// decodedTime decodes b, a JSON object, and returns the name and the raw
// value of its time field as timeField chooses it among its names, sorted
// so that of two names differing in case only the same is taken each line
// ("" name: none), and the names.
func decodedTime(b []byte, field string) (name string, raw []byte, names []string, err error) {
	var row map[string]json.RawMessage
	if err := json.Unmarshal(b, &row); err != nil {
		return "", nil, nil, err
	}
	for k := range row {
		names = append(names, k)
	}
	slices.Sort(names)
	i := timeField(names, field)
	if i < 0 {
		return "", nil, names, nil
	}
	return names[i], row[names[i]], names, nil
}

// objectTime is decodedTime's choice without decoding: it scans the top
// level of b, a JSON object its caller checks is valid, for the time's
// name and value, skipping the other values unread. Of names that rank
// alike it takes the least, and of a name repeated the last value, as
// decodedTime does. ok is false when b has no time field, or a name with
// an escape or beyond ASCII, which only decoding reads as decodedTime
// compares it; and when b is not an object it scans (invalid JSON among
// them).
func objectTime(b []byte, field string) (name, raw []byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, false
	}
	bestRank := -1
	for i = skipSpace(b, i+1); i < len(b) && b[i] != '}'; {
		if b[i] != '"' {
			return nil, nil, false
		}
		end := skipString(b, i)
		if end > len(b) {
			return nil, nil, false
		}
		key := b[i+1 : end-1]
		for _, c := range key {
			if c == '\\' || c >= 0x80 {
				return nil, nil, false
			}
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, nil, false
		}
		i = skipSpace(b, i+1)
		vEnd := skipValue(b, i)
		if vEnd > len(b) || vEnd == i {
			return nil, nil, false
		}
		if r := fieldRank(string(key), field); r >= 0 && (bestRank < 0 || r < bestRank || r == bestRank && string(key) <= string(name)) {
			bestRank, name, raw = r, key, b[i:vEnd]
		}
		i = skipSpace(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return name, raw, bestRank >= 0 && i < len(b)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString is the index just past the JSON string opening at b[i]
// (beyond len(b) when it does not close).
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b) + 1
}

// skipValue is the index just past the JSON value starting at b[i]
// (beyond len(b) when it does not end).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b) + 1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b) + 1
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
