package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
)

// readArrivals reads a log of requests, one a row, gzipped or not, as the
// request rate per step: the requests that arrived in each step of the
// grid from the first arrival's step, per second. unit says how numeric
// times read: "auto" as the CSV input reads them (unix seconds, or integer
// milliseconds from 1e11), "s" or "ms". field names the CSV column or JSON
// field holding the time ("": the first of timeFields there, any case).
func readArrivals(path string, step time.Duration, unit, field string) (*regular, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var in io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		in = gzipErrors{zr}
	}
	return parseArrivals(in, path, step, unit, field)
}

// gzipErrors says of a gzipped file's read errors that they are the
// decompression's.
type gzipErrors struct{ r io.Reader }

func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("decompressing: %w (is the gzip file whole?)", err)
	}
	return n, err
}

// timeFields are the names a log's time goes by, the first found taken:
// Azure's and BurstGPT's TIMESTAMP/Timestamp, Mooncake's timestamp, and
// what access logs call it (Caddy's and zap's ts, Logstash's and ECS's
// @timestamp, Envoy's start_time).
var timeFields = []string{"timestamp", "time", "ts", "@timestamp", "arrival_time", "start_time"}

// parseArrivals is readArrivals of the text in, named path in errors. The
// text is JSON lines, one object a request, or CSV with a header (or
// with none, the time first): the time is the field or column named
// field, or else the first of timeFields there (any case), or else, in
// CSV, the first column.
func parseArrivals(in io.Reader, path string, step time.Duration, unit, field string) (*regular, error) {
	if step <= 0 || step%time.Millisecond != 0 {
		return nil, fmt.Errorf("the step %s must be a whole number of milliseconds above 0", step)
	}
	br := bufio.NewReader(in)
	if bom, _ := br.Peek(3); string(bom) == "\ufeff" {
		br.Discard(3) // a byte-order mark, as some editors and exports start a file with
	}
	head, _ := br.Peek(1)
	c := stepCounter{step: step.Milliseconds(), n: map[int64]float64{}}
	var err error
	if len(head) == 1 && head[0] == '{' {
		err = jsonArrivals(br, path, unit, field, c.add)
	} else {
		err = csvArrivals(br, path, unit, field, c.add)
	}
	if err != nil {
		return nil, err
	}
	c.flush()
	if len(c.n) == 0 {
		return nil, fmt.Errorf("%s: no request in the file", path)
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for k := range c.n {
		first, last = min(first, k), max(last, k)
	}
	n := last - first + 1
	if n > 10_000_000 {
		return nil, fmt.Errorf("%s: the requests span %d steps of %s; too many (a larger --step, or times in another --time-unit)", path, n, step)
	}
	counts := make([]float64, n)
	for k, v := range c.n {
		counts[k-first] = v
	}
	t0 := first * c.step
	// The last step is cut off at the last request: leave it out unless
	// it is the only one.
	if n > 1 {
		counts = counts[:n-1]
	}
	for i := range counts {
		counts[i] /= step.Seconds()
	}
	return &regular{t0: t0, step: step, y: counts}, nil
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

// relativeBefore is the unix time in milliseconds (2001-09-09) before
// which a log's numeric times are taken to count from its start rather than
// from 1970: their unit is then a guess.
const relativeBefore = 1e12

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// arrivalTime parses one time of an arrivals file.
func arrivalTime(s, unit string) (int64, bool) {
	s = strings.TrimSpace(s)
	switch unit {
	case "s", "ms":
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !isFinite(v) || math.Abs(v) > 1e15 {
			return 0, false
		}
		if unit == "s" {
			v *= 1000
		}
		return int64(math.Floor(v)), true
	}
	return ingest.ParseTimestamp(s)
}

const arrivalFormats = "unix seconds, integer unix milliseconds (from 1e11) or YYYY-MM-DD[T ]hh:mm:ss[.fff][Z|±hh:mm]; numbers in other units need --time-unit s or ms"

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

func csvArrivals(in io.Reader, path, unit, field string, add func(int64)) error {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	header = slices.Clone(header) // the reader reuses its record
	col, line := 0, 1
	if t, ok := arrivalTime(header[0], unit); ok && field == "" {
		// No header: the first column is the time, from the first row.
		add(t)
	} else if col = timeField(header, field); col < 0 {
		if field != "" {
			return fmt.Errorf("%s:1: no column %q (--time-field) in the header %q", path, field, strings.Join(header, ","))
		}
		col = 0
	}
	for {
		rec, err := r.Read()
		line++
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) <= col {
			return fmt.Errorf("%s:%d: %d fields; the time is field %d (%q)", path, line, len(rec), col+1, header[col])
		}
		t, ok := arrivalTime(rec[col], unit)
		if !ok {
			return fmt.Errorf("%s:%d: time %q (field %d, %q) is not a time: want %s", path, line, rec[col], col+1, header[col], arrivalFormats)
		}
		add(t)
	}
	return nil
}

func jsonArrivals(in io.Reader, path, unit, field string, add func(int64)) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var (
			name string
			raw  []byte
		)
		if k, v, ok := objectTime(b, field); ok && json.Valid(b) {
			name, raw = string(k), v
		} else {
			// Decoding says what is wrong with the line, or reads what
			// objectTime does not (keys with escapes or beyond ASCII).
			var names []string
			var err error
			name, raw, names, err = decodedTime(b, field)
			switch {
			case err != nil:
				if rerr := sc.Err(); rerr != nil {
					// The line was cut off by a read error: that is the news.
					return fmt.Errorf("%s:%d: %w", path, line, rerr)
				}
				return fmt.Errorf("%s:%d: %v; want one JSON object a request", path, line, err)
			case name == "" && field != "":
				return fmt.Errorf("%s:%d: no field %q (--time-field); the object has %s", path, line, field, strings.Join(names, ", "))
			case name == "":
				return fmt.Errorf("%s:%d: no time field (%s, any case); the object has %s: name the time's field with --time-field", path, line, strings.Join(timeFields, ", "), strings.Join(names, ", "))
			}
		}
		t, ok := arrivalTime(strings.Trim(string(raw), `"`), unit)
		if !ok {
			return fmt.Errorf("%s:%d: %s %s is not a time: want %s", path, line, name, raw, arrivalFormats)
		}
		add(t)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

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
