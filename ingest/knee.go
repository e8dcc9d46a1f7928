package ingest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseKneeCurve reads concurrency,qps rows, at least minRows of them. The first non-blank row is a
// header when its first field is not a number. Blank lines are skipped,
// \r\n line ends, a UTF-8 byte order mark and double-quoted fields are
// handled, and columns after the second are ignored. Both values must be
// finite and ≥ 0. Errors are "file:line: what is wrong".
func ParseKneeCurve(data []byte, file string, minRows int) (conc, qps []float64, err error) {
	text := strings.TrimPrefix(string(data), "\uFEFF")
	lineNo, sawRow, header := 0, false, 0
	for len(text) > 0 {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimSuffix(line, "\r")
		lineNo++
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, ",")
		for i, f := range fields {
			f = strings.TrimSpace(f)
			if len(f) >= 2 && f[0] == '"' && f[len(f)-1] == '"' {
				f = f[1 : len(f)-1]
			}
			fields[i] = f
		}
		if !sawRow {
			sawRow = true
			if _, err := strconv.ParseFloat(fields[0], 64); err != nil {
				header = lineNo
				continue
			}
		}
		if len(fields) < 2 {
			return nil, nil, fmt.Errorf("%s:%d: row has 1 column, need 2: concurrency,qps", file, lineNo)
		}
		c, err := kneeValue(fields[0], "concurrency", 1)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", file, lineNo, err)
		}
		q, err := kneeValue(fields[1], "qps", 2)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", file, lineNo, err)
		}
		conc = append(conc, c)
		qps = append(qps, q)
	}
	switch {
	case !sawRow:
		return nil, nil, fmt.Errorf("%s: no rows (expected concurrency,qps rows, optionally after a header row)", file)
	case len(conc) < minRows:
		what := fmt.Sprintf("%d row%s", len(conc), plural(len(conc)))
		if header > 0 {
			what += fmt.Sprintf(" after the header on line %d", header)
		}
		return nil, nil, fmt.Errorf("%s: %s, need at least %d concurrency,qps points to find a knee", file, what, minRows)
	}
	return conc, qps, nil
}

// kneeValue parses one field of a knee row: a finite number ≥ 0.
func kneeValue(s, name string, col int) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s %q (column %d) is not a number", name, s, col)
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("%s %q (column %d) is not a finite number", name, s, col)
	case v < 0:
		return 0, fmt.Errorf("%s %v (column %d) is negative", name, v, col)
	}
	return v, nil
}
