package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/valyala/fastjson"
)

// ReadExportJSONL reads the JSON-lines format that VictoriaMetrics'
// /api/v1/export writes (and /api/v1/import reads), one object per line:
//
//	{"metric":{"__name__":"x","job":"y"},"values":[1,2.5,null],"timestamps":[1700000000000,1700000015000,1700000030000]}
//
// Timestamps are unix milliseconds. A null value becomes a staleness marker
// (see StaleNaN): VictoriaMetrics writes its stored NaNs, which are
// staleness markers, as null. The strings "Infinity", "-Infinity", "Inf",
// "-Inf" and "NaN" are read as the values they name, as VictoriaMetrics does.
//
// VictoriaMetrics splits a series into blocks, so the same series may appear
// on several lines: lines with the same labels are merged, sorted by
// timestamp, and of samples with the same timestamp the first one in the
// file is kept. Series are returned in the order they first appear. Blank
// lines are skipped, a UTF-8 byte order mark is dropped, and lines may be
// of any length. file names the input in
// error messages.
func ReadExportJSONL(r io.Reader, file string) ([]Series, error) {
	if file == "" {
		file = "<jsonl>"
	}
	br := bufio.NewReaderSize(r, 1<<16)
	var (
		p      fastjson.Parser
		buf    []byte
		out    []Series
		index  = map[string]int{}
		merged []bool // out[i] got samples from more than one line
		key    []byte
	)
	for lineNo := 1; ; lineNo++ {
		line, err := readLine(br, &buf)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s:%d: reading: %w", file, lineNo, err)
		}
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		}
		if s := strings.TrimSpace(string(line)); s != "" {
			ls, ts, vs, perr := parseExportLine(&p, s)
			if perr != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, lineNo, perr)
			}
			key = appendLabelsKey(key[:0], ls)
			if i, ok := index[string(key)]; ok {
				out[i].Timestamps = append(out[i].Timestamps, ts...)
				out[i].Values = append(out[i].Values, vs...)
				merged[i] = true
			} else {
				index[string(key)] = len(out)
				out = append(out, Series{Labels: ls, Timestamps: ts, Values: vs})
				merged = append(merged, false)
			}
		}
		if err == io.EOF {
			break
		}
	}
	for i := range out {
		if merged[i] || !strictlyAscending(out[i].Timestamps) {
			sortDedup(&out[i])
		}
	}
	return out, nil
}

// readLine reads one line of any length into *buf and returns it without
// its line end. At the end of the input it returns the last (possibly
// empty) line with io.EOF.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			*buf = append(*buf, chunk...)
			continue
		}
		if len(*buf) == 0 {
			// The common case: the line fitted the reader's buffer.
			return chunk, err
		}
		*buf = append(*buf, chunk...)
		return *buf, err
	}
}

// parseExportLine parses one export line. The values it returns do not
// refer to p's memory.
func parseExportLine(p *fastjson.Parser, line string) (Labels, []int64, []float64, error) {
	v, err := p.Parse(line)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("not a JSON object (expected {\"metric\":{...},\"values\":[...],\"timestamps\":[...]}): %v", err)
	}
	if v.Type() != fastjson.TypeObject {
		return nil, nil, nil, fmt.Errorf("got a JSON %s, expected an object {\"metric\":{...},\"values\":[...],\"timestamps\":[...]}", v.Type())
	}

	mv := v.Get("metric")
	if mv == nil || mv.Type() != fastjson.TypeObject {
		return nil, nil, nil, errors.New(`missing "metric" object (expected e.g. "metric":{"__name__":"up","job":"x"})`)
	}
	m, _ := mv.Object()
	var ls Labels
	var lerr error
	m.Visit(func(k []byte, lv *fastjson.Value) {
		if lerr != nil {
			return
		}
		b, err := lv.StringBytes()
		if err != nil {
			lerr = fmt.Errorf("label %q has a %s value, expected a string", k, lv.Type())
			return
		}
		ls = append(ls, Label{Name: string(k), Value: string(b)})
	})
	if lerr != nil {
		return nil, nil, nil, lerr
	}
	if len(ls) == 0 {
		return nil, nil, nil, errors.New(`"metric" object has no labels (expected at least "__name__")`)
	}
	ls.Sort()
	for i := 1; i < len(ls); i++ {
		if ls[i].Name == ls[i-1].Name {
			return nil, nil, nil, fmt.Errorf("label %q appears twice in \"metric\"", ls[i].Name)
		}
	}

	vals, err := arrayField(v, "values")
	if err != nil {
		return nil, nil, nil, err
	}
	tss, err := arrayField(v, "timestamps")
	if err != nil {
		return nil, nil, nil, err
	}
	if len(vals) != len(tss) {
		return nil, nil, nil, fmt.Errorf(`"values" has %d elements but "timestamps" has %d; they must pair up`, len(vals), len(tss))
	}
	ts := make([]int64, len(tss))
	for i, t := range tss {
		n, err := t.Int64()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("timestamps[%d] = %s is not an integer (expected unix milliseconds)", i, t)
		}
		ts[i] = n
	}
	vs := make([]float64, len(vals))
	for i, x := range vals {
		f, ok := exportValue(x)
		if !ok {
			return nil, nil, nil, fmt.Errorf("values[%d] = %s is not a number (expected a number, null, \"Infinity\", \"-Infinity\" or \"NaN\")", i, x)
		}
		vs[i] = f
	}
	return ls, ts, vs, nil
}

func arrayField(v *fastjson.Value, name string) ([]*fastjson.Value, error) {
	a := v.Get(name)
	if a == nil {
		return nil, fmt.Errorf("missing %q array", name)
	}
	arr, err := a.Array()
	if err != nil {
		return nil, fmt.Errorf("%q is a %s, expected an array", name, a.Type())
	}
	return arr, nil
}

func exportValue(x *fastjson.Value) (float64, bool) {
	switch x.Type() {
	case fastjson.TypeNumber:
		f, err := x.Float64()
		return f, err == nil
	case fastjson.TypeNull:
		return math.Float64frombits(StaleNaN), true
	case fastjson.TypeString:
		b, _ := x.StringBytes()
		switch string(b) {
		case "Infinity", "+Infinity", "Inf", "+Inf", "inf", "infinity":
			return math.Inf(1), true
		case "-Infinity", "-Inf", "-inf", "-infinity":
			return math.Inf(-1), true
		case "NaN", "nan":
			return math.NaN(), true
		}
	}
	return 0, false
}

// appendLabelsKey appends an unambiguous identity of ls to dst.
func appendLabelsKey(dst []byte, ls Labels) []byte {
	for _, l := range ls {
		dst = append(dst, l.Name...)
		dst = append(dst, 0)
		dst = append(dst, l.Value...)
		dst = append(dst, 0)
	}
	return dst
}

func strictlyAscending(ts []int64) bool {
	for i := 1; i < len(ts); i++ {
		if ts[i] <= ts[i-1] {
			return false
		}
	}
	return true
}

// sortDedup sorts s's samples by timestamp, keeping the first of samples
// with equal timestamps.
func sortDedup(s *Series) {
	idx := make([]int, len(s.Timestamps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return s.Timestamps[idx[a]] < s.Timestamps[idx[b]] })
	ts := make([]int64, 0, len(idx))
	vs := make([]float64, 0, len(idx))
	for _, i := range idx {
		if n := len(ts); n > 0 && ts[n-1] == s.Timestamps[i] {
			continue
		}
		ts = append(ts, s.Timestamps[i])
		vs = append(vs, s.Values[i])
	}
	s.Timestamps, s.Values = ts, vs
}
