package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// CSV is a parsed timestamp,value CSV file.
type CSV struct {
	// Series holds the rows in file order. Its labels are
	// {__name__="<file base name without extension>"} unless
	// CSVOptions.Name names it; with neither a name nor a file it has no labels.
	Series Series
	// RawTimestamps holds each row's timestamp text verbatim (without
	// surrounding spaces or quotes), for writing it back out.
	RawTimestamps []string
	// Lines holds each row's 1-based line number in the file.
	Lines []int
}

// CSVOptions tune ReadCSV. The zero value reads the second column.
type CSVOptions struct {
	// ValueColumn is the header name of the value column. Default: the
	// second column. Naming a column requires a header row.
	ValueColumn string
	// Name is the series' __name__ label. Default: the file's base name
	// without its extension.
	Name string
	// AllowDuplicates keeps a row whose timestamp equals the previous row's
	// (a few NAB files have such rows), instead of rejecting the file.
	// Series.Timestamps then repeats that timestamp; rows out of order are
	// still rejected unless AllowUnsorted is set.
	AllowDuplicates bool
	// AllowUnsorted keeps a row whose timestamp is before the previous
	// row's (NAB's machine_temperature_system_failure.csv steps back an
	// hour once), instead of rejecting the file. The rows stay in file
	// order, so Series.Timestamps is then not sorted: a caller sorts it
	// or feeds detectors only the rows that move forward in time. A
	// timestamp equal to the previous row's still needs AllowDuplicates.
	AllowUnsorted bool
}

// csvTimestampFormats lists the accepted timestamp formats for error messages.
const csvTimestampFormats = `unix seconds (1700000000 or 1700000000.25), ` +
	`unix milliseconds (an integer >= 1e11, e.g. 1700000000000), ` +
	`RFC 3339 (2023-11-14T22:13:20Z, 2023-11-14T22:13:20.5+01:00; without a zone it is UTC), ` +
	`"2023-11-14 22:13:20" (UTC)`

// ReadCSV reads a CSV file of timestamp,value rows. file names the input in
// error messages and gives the series its default name.
//
// The first column is the timestamp. A header row is optional: the first row
// is taken as a header when its timestamp field does not parse. Timestamps
// may be
//   - unix seconds, integer or fractional (1700000000, 1700000000.25);
//   - unix milliseconds: an integer of at least 1e11 (1700000000000) — so an
//     integer below 1e11 is read as seconds (1e11 s is the year 5138, 1e11 ms
//     is March 1973);
//   - RFC 3339, with or without fractional seconds and zone
//     (2023-11-14T22:13:20Z, 2023-11-14T22:13:20.123+01:00,
//     2023-11-14T22:13:20 is UTC);
//   - YYYY-MM-DD hh:mm:ss, in UTC (the NAB corpus' format), optionally with
//     fractional seconds and a zone as above.
//
// Fractions finer than a millisecond are truncated. Rows must be sorted by
// time without duplicates (CSVOptions.AllowDuplicates admits duplicates,
// CSVOptions.AllowUnsorted rows that step back). Values are parsed with
// strconv.ParseFloat; NaN, nan and an empty field give NaN and ±Inf are
// kept, so offline tools can pass such rows through (Series.Clean drops
// them). Extra columns are allowed and ignored; blank lines are skipped;
// \r\n line ends and a UTF-8 byte order mark are handled. Fields may be
// double-quoted, but a quoted field may not span lines.
func ReadCSV(r io.Reader, file string, o CSVOptions) (*CSV, error) {
	if file == "" {
		file = "<csv>"
	}
	var buf bytes.Buffer
	if l, ok := r.(interface{ Len() int }); ok { // bytes.Reader, strings.Reader: read in one go
		buf.Grow(l.Len() + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("%s: reading: %w", file, err)
	}
	p := csvParser{file: file, data: buf.String(), opts: o}
	return p.parse()
}

type csvParser struct {
	file string
	data string
	opts CSVOptions
	ts   tsParser
}

func (p *csvParser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, line, fmt.Sprintf(format, args...))
}

// nextLine returns the line starting at off, without its \n or \r\n, and the
// offset of the next line.
func nextLine(data string, off int) (string, int) {
	rest := data[off:]
	n := strings.IndexByte(rest, '\n')
	var line string
	if n < 0 {
		line, off = rest, len(data)
	} else {
		line, off = rest[:n], off+n+1
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, off
}

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\r' {
			return false
		}
	}
	return true
}

func (p *csvParser) parse() (*CSV, error) {
	data := strings.TrimPrefix(p.data, "\uFEFF")
	// Size the output by a cheap line count.
	n := strings.Count(data, "\n") + 1
	out := &CSV{
		Series: Series{
			Labels:     p.labels(),
			Timestamps: make([]int64, 0, n),
			Values:     make([]float64, 0, n),
		},
		RawTimestamps: make([]string, 0, n),
		Lines:         make([]int, 0, n),
	}

	valueCol := 1
	valueName := "" // for messages
	headerLine := 0
	sawRow := false
	var prevMS int64

	lineNo := 0
	for off := 0; off < len(data); {
		var line string
		line, off = nextLine(data, off)
		lineNo++
		if isBlank(line) {
			continue
		}
		if !sawRow {
			sawRow = true
			ts, _, ncol, err := splitFields(line, 0, false)
			if err != nil {
				return nil, p.errorf(lineNo, "%v", err)
			}
			if _, ok := parseTimestamp(ts); !ok {
				// A header row.
				headerLine = lineNo
				col, name, err := p.headerColumn(line, lineNo, ncol)
				if err != nil {
					return nil, err
				}
				valueCol, valueName = col, name
				continue
			}
			if p.opts.ValueColumn != "" {
				return nil, p.errorf(lineNo, "value column %q was asked for, but the file has no header row (its first row starts with the timestamp %q)", p.opts.ValueColumn, ts)
			}
		}

		raw, vs, ncol, err := splitFields(line, valueCol, true)
		if err != nil {
			return nil, p.errorf(lineNo, "%v", err)
		}
		if ncol <= valueCol {
			return nil, p.errorf(lineNo, "row has %d column%s, need at least %d (the timestamp in column 1 and the value in column %d%s)",
				ncol, plural(ncol), valueCol+1, valueCol+1, quotedName(valueName))
		}
		ms, ok := p.ts.parse(raw)
		if !ok {
			return nil, p.errorf(lineNo, "timestamp %q is not in an accepted format: %s", raw, csvTimestampFormats)
		}
		if k := len(out.Lines); k > 0 && (ms < prevMS && !p.opts.AllowUnsorted || ms == prevMS && !p.opts.AllowDuplicates) {
			return nil, p.errorf(lineNo, "timestamp %s is not after line %d's %s (rows must be sorted by time, without duplicates)",
				raw, out.Lines[k-1], out.RawTimestamps[k-1])
		}
		v, err := parseCSVValue(vs)
		if err != nil {
			return nil, p.errorf(lineNo, "value %q is not a number (column %d%s; expected e.g. 12.5, -3e4, NaN, +Inf, or an empty field for NaN)",
				vs, valueCol+1, quotedName(valueName))
		}
		prevMS = ms
		out.Series.Timestamps = append(out.Series.Timestamps, ms)
		out.Series.Values = append(out.Series.Values, v)
		out.RawTimestamps = append(out.RawTimestamps, raw)
		out.Lines = append(out.Lines, lineNo)
	}

	switch {
	case !sawRow:
		return nil, fmt.Errorf("%s: no rows (expected timestamp,value rows, optionally after a header row)", p.file)
	case len(out.Lines) == 0:
		return nil, fmt.Errorf("%s: no parsable rows: only the header on line %d, whose first field does not parse as a timestamp (expected timestamp,value rows after it; accepted timestamps: %s)",
			p.file, headerLine, csvTimestampFormats)
	}
	return out, nil
}

func (p *csvParser) labels() Labels {
	name := p.opts.Name
	if name == "" && p.file != "<csv>" {
		base := filepath.Base(p.file)
		name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if name == "" {
		return nil
	}
	return Labels{{Name: "__name__", Value: name}}
}

// headerColumn finds the value column in the header row.
func (p *csvParser) headerColumn(line string, lineNo, ncol int) (int, string, error) {
	if p.opts.ValueColumn == "" {
		if ncol < 2 {
			return 0, "", p.errorf(lineNo, "header row has %d column, need at least 2 (timestamp and value)", ncol)
		}
		_, name, _, err := splitFields(line, 1, true)
		if err != nil {
			return 0, "", p.errorf(lineNo, "%v", err)
		}
		return 1, name, nil
	}
	names := make([]string, ncol)
	for i := range names {
		_, name, _, err := splitFields(line, i, true)
		if err != nil {
			return 0, "", p.errorf(lineNo, "%v", err)
		}
		names[i] = name
	}
	for i, n := range names {
		if i > 0 && n == p.opts.ValueColumn {
			return i, n, nil
		}
	}
	if len(names) > 0 && names[0] == p.opts.ValueColumn {
		return 0, "", p.errorf(lineNo, "value column %q is the first column, which holds the timestamps", p.opts.ValueColumn)
	}
	return 0, "", p.errorf(lineNo, "header row has no column %q (it has %s)", p.opts.ValueColumn, strings.Join(quoteAll(names), ", "))
}

// splitFields reads the fields of a comma-separated line, trimmed of spaces
// and of surrounding double quotes. It returns the first field, field col
// when the line has it, and the number of fields: all of them, or col+1 when
// stopEarly lets it stop at field col.
func splitFields(line string, col int, stopEarly bool) (first, at string, n int, err error) {
	for i := 0; ; {
		f, next, err := nextField(line, i)
		if err != nil {
			return "", "", n, fmt.Errorf("column %d: %w", n+1, err)
		}
		if n == 0 {
			first = f
		}
		if n == col {
			at = f
		}
		n++
		if next < 0 || (stopEarly && n > col) {
			return first, at, n, nil
		}
		i = next
	}
}

// nextField reads the field starting at line[i:]; next is the offset after
// its comma, or -1 at the end of the line.
func nextField(line string, i int) (field string, next int, err error) {
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i < len(line) && line[i] == '"' {
		var b strings.Builder
		j := i + 1
		for {
			k := strings.IndexByte(line[j:], '"')
			if k < 0 {
				return "", -1, errors.New(`quoted field has no closing '"' (a quoted field may not span lines)`)
			}
			b.WriteString(line[j : j+k])
			j += k + 1
			if j < len(line) && line[j] == '"' { // "" is an escaped quote
				b.WriteByte('"')
				j++
				continue
			}
			break
		}
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		switch {
		case j == len(line):
			return b.String(), -1, nil
		case line[j] == ',':
			return b.String(), j + 1, nil
		default:
			return "", -1, fmt.Errorf("unexpected %q after a quoted field (expected a comma)", line[j])
		}
	}
	k := strings.IndexByte(line[i:], ',')
	if k < 0 {
		return trimRightSpace(line[i:]), -1, nil
	}
	return trimRightSpace(line[i : i+k]), i + k + 1, nil
}

func trimRightSpace(s string) string {
	n := len(s)
	for n > 0 && (s[n-1] == ' ' || s[n-1] == '\t') {
		n--
	}
	return s[:n]
}

func parseCSVValue(s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	if v, ok := fastDecimal(s); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return v, nil // ±Inf or 0 beyond float64's range
		}
		return 0, err
	}
	return v, nil
}

// ParseTimestamp parses a timestamp as ReadCSV does, into unix
// milliseconds: unix seconds (integer or fractional), integer unix
// milliseconds (from 1e11), or YYYY-MM-DD[T ]hh:mm:ss[.fff][Z|±hh:mm] (UTC
// without a zone).
func ParseTimestamp(s string) (int64, bool) { return parseTimestamp(s) }

// parseTimestamp parses one of the formats ReadCSV accepts into unix
// milliseconds.
func parseTimestamp(s string) (int64, bool) {
	var p tsParser
	return p.parse(s)
}

// tsParser parses timestamps, remembering the last date it converted to
// days: consecutive rows mostly share their date.
type tsParser struct {
	date string // YYYY-MM-DD
	days int64  // since 1970-01-01
}

func (p *tsParser) parse(s string) (int64, bool) {
	if len(s) >= 19 && s[4] == '-' {
		return p.parseDateTime(s)
	}
	return parseUnix(s)
}

// parseUnix parses unix seconds (integer or fractional) or integer unix
// milliseconds (>= 1e11).
func parseUnix(s string) (int64, bool) {
	k := strings.IndexByte(s, '.')
	intPart := s
	if k >= 0 {
		intPart = s[:k]
	}
	if len(intPart) > 15 {
		return 0, false
	}
	n, ok := digits(intPart)
	if !ok {
		return 0, false
	}
	if k < 0 {
		if n >= 1e11 {
			return n, true // milliseconds
		}
		return n * 1000, true
	}
	ms, ok := fracMillis(s[k+1:])
	if !ok {
		return 0, false
	}
	return n*1000 + ms, true
}

// digits parses a non-empty run of ASCII digits that fits an int64 comfortably.
func digits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	return n, true
}

// fracMillis turns the digits after a decimal point into milliseconds,
// truncating finer digits.
func fracMillis(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var ms int64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		if i < 3 {
			ms = ms*10 + int64(c)
		}
	}
	for i := len(s); i < 3; i++ {
		ms *= 10
	}
	return ms, true
}

// parseDateTime parses YYYY-MM-DD[T ]hh:mm:ss[.fff][Z|±hh:mm].
func (p *tsParser) parseDateTime(s string) (int64, bool) {
	if s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	rest := s[19:]
	var ms int64
	if len(rest) > 0 && rest[0] == '.' {
		k := 1
		for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
			k++
		}
		var ok bool
		if ms, ok = fracMillis(rest[1:k]); !ok {
			return 0, false
		}
		rest = rest[k:]
	}
	var offset int64 // seconds east of UTC
	switch {
	case rest == "" || rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	if s[:10] != p.date {
		p.date, p.days = s[:10], daysFromCivil(year, month, day)
	}
	days := p.days
	secs := days*86400 + hour*3600 + minute*60 + sec - offset
	return secs*1000 + ms, true
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar (H. Hinnant's algorithm), for y >= 0.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func quotedName(name string) string {
	if name == "" {
		return ""
	}
	return " " + strconv.Quote(name)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
