package ingest

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// ReadGenTD26 reads qps.csv of Alibaba's GenTD26 trace
// (timestamp_anon,value,container_ip,request_type: one row per container
// and sample time, sampled every 57 s, rows of zero left out) as the
// per-minute request rate of requestType ("": every type), or with
// requestType "" one of its gateway files without a request_type
// (queue_size_raw_anon.csv: value,container_ip,timestamp_anon) as the
// per-minute mean of its values. At each time of
// the file's sample grid (its most common spacing from its first time) the
// containers' values are added, 0 where no row of the type; each sum holds
// until the next time; and each whole minute the grid covers takes their
// time-weighted mean. Errors name the file, and the line and field where
// one is at fault (a *LineError).
func ReadGenTD26(path, requestType string) (*EvenSeries, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseGenTD26(f, path, requestType)
}

// ParseGenTD26 is ReadGenTD26 of the text in, named file in errors.
func ParseGenTD26(in io.Reader, file, requestType string) (*EvenSeries, error) {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the header: %w", file, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	need := []string{"timestamp_anon", "value", "request_type"}
	if requestType == "" {
		// A gateway's file (queue_size_raw_anon.csv) has no request_type.
		need = need[:2]
	}
	for _, need := range need {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no %s column in the header %q; want GenTD26's qps.csv (timestamp_anon,value,container_ip,request_type) or, for every row, a gateway file such as queue_size_raw_anon.csv (value,container_ip,timestamp_anon)",
				file, need, strings.Join(header, ","))
		}
	}
	tCol, vCol := col["timestamp_anon"], col["value"]
	typeCol, typed := col["request_type"]
	type row struct {
		t    int64 // ms
		v    float64
		line int
	}
	var rows []row
	var times []int64
	types := map[string]int{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(file, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) <= max(tCol, vCol, typeCol) {
			return nil, &LineError{File: file, Line: line, Err: fmt.Errorf("the row has %d field%s; want %d", len(rec), plural(len(rec)), len(header))}
		}
		ts, err := strconv.ParseFloat(rec[tCol], 64)
		if err != nil || !num.Finite(ts) || math.Abs(ts) > 1e15 {
			return nil, &LineError{File: file, Line: line, Field: "timestamp_anon", Err: fmt.Errorf("%q is not a number of seconds", rec[tCol])}
		}
		v, err := strconv.ParseFloat(rec[vCol], 64)
		if err != nil || !num.Finite(v) {
			return nil, &LineError{File: file, Line: line, Field: "value", Err: fmt.Errorf("%q is not a finite number", rec[vCol])}
		}
		t := int64(math.Round(ts * 1000))
		times = append(times, t)
		typ := ""
		if typed {
			typ = rec[typeCol]
		}
		types[typ]++
		if requestType == "" || typ == requestType {
			rows = append(rows, row{t, v, line})
		}
	}
	if len(rows) == 0 {
		have := make([]string, 0, len(types))
		for _, t := range slices.Sorted(maps.Keys(types)) {
			have = append(have, fmt.Sprintf("%q (%d rows)", t, types[t]))
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("%s: no rows after the header", file)
		}
		return nil, fmt.Errorf("%s: no row of request_type %q; the file has %s", file, requestType, strings.Join(have, ", "))
	}
	// The grid: the most common spacing between the file's distinct times.
	slices.Sort(times)
	times = slices.Compact(times)
	if len(times) < 2 {
		return nil, fmt.Errorf("%s: one sample time; two are needed to know the sampling step", file)
	}
	s := CommonSpacing(times, 1)
	first, last := times[0], times[len(times)-1]
	if steps := (last - first) / s; steps > maxSteps {
		return nil, fmt.Errorf("%s: %d sampling steps of %s between the first and the last time; too many", file, steps, time.Duration(s)*time.Millisecond)
	}
	rate := make([]float64, (last-first)/s+1)
	for _, rw := range rows {
		if (rw.t-first)%s != 0 {
			return nil, &LineError{File: file, Line: rw.line, Field: "timestamp_anon",
				Err: fmt.Errorf("%s is off the file's sampling grid of %s from %s", FormatUnixMillis(rw.t), time.Duration(s)*time.Millisecond, FormatUnixMillis(first))}
		}
		rate[(rw.t-first)/s] += rw.v
	}
	const minute = int64(60_000)
	m0 := (first + minute - 1) / minute * minute
	end := (last + s) / minute * minute // the held value of the last time reaches last+s
	switch {
	case end-m0 < 2*minute:
		return nil, fmt.Errorf("%s: the samples cover less than two whole minutes", file)
	case (end-m0)/minute > maxSteps:
		return nil, fmt.Errorf("%s: the samples span %d minutes; too many", file, (end-m0)/minute)
	}
	out := &EvenSeries{Start: m0, Step: time.Minute, Values: make([]float64, (end-m0)/minute)}
	for i := range out.Values {
		a, b := m0+int64(i)*minute, m0+int64(i+1)*minute
		sum := 0.0
		for j := max((a-first)/s, 0); j < int64(len(rate)); j++ {
			ta := first + j*s
			if ta >= b {
				break
			}
			lo, hi := max(ta, a), min(ta+s, b)
			if hi > lo {
				sum += rate[j] * float64(hi-lo)
			}
		}
		out.Values[i] = sum / float64(minute)
	}
	return out, nil
}
