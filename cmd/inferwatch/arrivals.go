package main

import (
	"bufio"
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

// readArrivals reads a log of requests, one a row, as the request rate per
// step: the requests that arrived in each step of the grid from the first
// arrival's step, per second. unit says how numeric times read: "auto" as
// the CSV input reads them (unix seconds, or integer milliseconds from
// 1e11), "s" or "ms".
func readArrivals(path string, step time.Duration, unit string) (*regular, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseArrivals(f, path, step, unit)
}

// parseArrivals is readArrivals of the text in, named path in errors. The
// text is JSON lines with a "timestamp" field, or CSV with a header: the
// time is the column named timestamp, time or arrival_time (any case), or
// the first column.
func parseArrivals(in io.Reader, path string, step time.Duration, unit string) (*regular, error) {
	if step <= 0 || step%time.Millisecond != 0 {
		return nil, fmt.Errorf("the step %s must be a whole number of milliseconds above 0", step)
	}
	br := bufio.NewReader(in)
	head, _ := br.Peek(1)
	var times []int64
	var err error
	if len(head) == 1 && head[0] == '{' {
		times, err = jsonArrivals(br, path, unit)
	} else {
		times, err = csvArrivals(br, path, unit)
	}
	if err != nil {
		return nil, err
	}
	if len(times) == 0 {
		return nil, fmt.Errorf("%s: no request in the file", path)
	}
	slices.Sort(times)
	stepMs := step.Milliseconds()
	t0 := floorDiv(times[0], stepMs) * stepMs
	n := (times[len(times)-1]-t0)/stepMs + 1
	if n > 10_000_000 {
		return nil, fmt.Errorf("%s: the requests span %d steps of %s; too many (a larger --step, or times in another --time-unit)", path, n, step)
	}
	counts := make([]float64, n)
	for _, t := range times {
		counts[(t-t0)/stepMs]++
	}
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

const arrivalFormats = "unix seconds, integer unix milliseconds (from 1e11) or YYYY-MM-DD hh:mm:ss[.fff]; numbers in other units need --time-unit s or ms"

func csvArrivals(in io.Reader, path, unit string) ([]int64, error) {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	header = slices.Clone(header) // the reader reuses its record
	col, line := 0, 1
	var times []int64
	if _, ok := arrivalTime(header[0], unit); ok {
		// No header: the first column is the time, from the first row.
		t, _ := arrivalTime(header[0], unit)
		times = append(times, t)
	} else {
		for i, h := range header {
			switch strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))) {
			case "timestamp", "time", "arrival_time":
				col = i
			}
		}
	}
	for {
		rec, err := r.Read()
		line++
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) <= col {
			return nil, fmt.Errorf("%s:%d: %d fields; the time is field %d (%q)", path, line, len(rec), col+1, header[col])
		}
		t, ok := arrivalTime(rec[col], unit)
		if !ok {
			return nil, fmt.Errorf("%s:%d: time %q (field %d, %q) is not a time: want %s", path, line, rec[col], col+1, header[col], arrivalFormats)
		}
		times = append(times, t)
	}
	return times, nil
}

func jsonArrivals(in io.Reader, path, unit string) ([]int64, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var times []int64
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var row struct {
			Timestamp json.RawMessage `json:"timestamp"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if row.Timestamp == nil {
			return nil, fmt.Errorf("%s:%d: no \"timestamp\" field; want one JSON object a request, with its time in timestamp", path, line)
		}
		s := strings.Trim(string(row.Timestamp), `"`)
		t, ok := arrivalTime(s, unit)
		if !ok {
			return nil, fmt.Errorf("%s:%d: timestamp %s is not a time: want %s", path, line, row.Timestamp, arrivalFormats)
		}
		times = append(times, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return times, nil
}
