package ingest

import (
	"errors"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strconv"
)

// ReadExport decodes the body of a VictoriaMetrics /api/v1/export response
// (the JSON lines ReadExportJSONL reads, one series per line) as it is read,
// within lim, with the same primitives, limits and errors as
// ReadQueryResponse: it holds the series decoded so far and a bounded
// window of the body. Values are numbers, null (a staleness marker,
// StaleNaN) or the strings "Infinity", "-Infinity", "Inf", "-Inf" and
// "NaN"; timestamps are integer unix milliseconds. Labels come sorted by
// name. A line whose timestamps are not ascending is sorted, the first of
// equal timestamps kept.
//
// VictoriaMetrics writes each series on one line, its samples merged and in
// time order (unless the request asks for reduce_mem_usage, which the
// client never does: see Client.fetch); lines are not merged by labels
// here.
func ReadExport(r io.Reader, lim ResponseLimits) ([]Series, error) {
	d := newReadDecoder(r, lim, 0, readBufSize)
	return d.exportLines(nil)
}

// exportLines decodes export lines until the end of the body. each, when
// set, rewrites the samples of a series before it is committed (see
// gridder); it may shorten or lengthen them.
func (d *decoder) exportLines(each func(ts []int64, vs []float64) ([]int64, []float64)) ([]Series, error) {
	return d.exportStream(each, nil, 0, nil)
}

// exportStream decodes export lines and hands the series to flush in parts
// as they are decoded, each part once it holds partPoints points (0: no
// parts); it returns the last part, or all of them. each, when set,
// rewrites the samples of a series before it is committed (see gridder);
// a series left with no point is dropped, as query_range would not return
// it. After a flush the points
// limit counts only the points decoded since. keep, when set, is asked
// of each series (its samples rewritten and labels sorted) before it is
// committed; false drops it. flush returning false stops the decoding
// with errStopped.
func (d *decoder) exportStream(each func(ts []int64, vs []float64) ([]int64, []float64), keep func(Labels) bool, partPoints int, flush func([]Series) bool) ([]Series, error) {
	base := d.npoints
	for {
		d.ws()
		if d.i >= len(d.b) {
			break
		}
		if !d.expect('{') || !d.startSeries() || !d.exportLine() {
			return nil, d.err
		}
		if each != nil && !d.rewrite(each) {
			return nil, d.err
		}
		if each != nil && len(d.ts) == d.pcur {
			d.dropSeries()
			continue
		}
		sortLabels(d.labels[d.lcur:])
		if keep != nil {
			ls := d.shared
			if ls == nil {
				ls = Labels(d.labels[d.lcur:])
			}
			if !keep(ls) {
				d.dropSeries()
				continue
			}
		}
		d.commit()
		if partPoints > 0 && d.npoints-base >= partPoints {
			if !flush(d.out) {
				return nil, errStopped
			}
			d.out, d.npoints = nil, base
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return d.out, nil
}

// errStopped ends a streamed request whose caller stopped taking parts.
var errStopped = errors.New("the caller stopped reading")

// exportLine decodes the members of one line, its '{' consumed, into the
// series being decoded.
func (d *decoder) exportLine() bool {
	var haveMetric, haveValues, haveTimes bool
	nv, nt := 0, 0 // values and timestamps read; the first array read appends
	err := d.object(func(key []byte) bool {
		switch string(key) {
		case "metric":
			if haveMetric {
				return d.fail(`"metric" twice`)
			}
			haveMetric = true
			return d.metric()
		case "values":
			if haveValues {
				return d.fail(`"values" twice`)
			}
			haveValues = true
			if !d.expect('[') {
				return false
			}
			return d.numbers(false, haveTimes, nt, &nv)
		case "timestamps":
			if haveTimes {
				return d.fail(`"timestamps" twice`)
			}
			haveTimes = true
			if !d.expect('[') {
				return false
			}
			return d.numbers(true, haveValues, nv, &nt)
		default:
			return d.skip(0)
		}
	})
	switch {
	case err != nil:
		return false
	case !haveMetric:
		return d.fail(`line without "metric"`)
	case !haveValues || !haveTimes:
		return d.fail(`line without "values" and "timestamps"`)
	case nv != nt:
		return d.fail(`"values" has ` + strconv.Itoa(nv) + ` elements but "timestamps" has ` + strconv.Itoa(nt))
	}
	ts := d.ts[d.pcur:]
	for k := 1; k < len(ts); k++ {
		if ts[k] <= ts[k-1] {
			s := Series{Timestamps: ts, Values: d.vs[d.pcur:]}
			sortDedup(&s)
			d.ts = append(d.ts[:d.pcur], s.Timestamps...)
			d.vs = append(d.vs[:d.pcur], s.Values...)
			break
		}
	}
	return true
}

// numbers reads the elements of "values" (or, with isTime, "timestamps")
// of a line, its '[' consumed, counting them in *n; second tells whether
// the other array, of other elements, was read before. Plain numbers
// followed by a ',' or the ']' within the window are read in a tight
// loop; anything else (null, strings, exponents, white space, a number at
// the end of the window) one element at a time by the general scanner,
// with the same errors.
func (d *decoder) numbers(isTime, second bool, other int, n *int) bool {
	longer := `"values" has more elements than "timestamps"`
	if isTime {
		longer = `"timestamps" has more elements than "values"`
	}
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return true
	}
	for {
		for {
			b := d.b[d.i:]
			k := plainNumber(b, !isTime)
			if k == 0 || (b[k] != ',' && b[k] != ']') || (isTime && k > 18) {
				break
			}
			var t int64
			var v float64
			if isTime {
				t = plainInt(b[:k])
			} else {
				var ok bool
				if v, ok = fastDecimal(b[:k]); !ok {
					break
				}
			}
			if !d.setPoint(*n, other, second, t, v, isTime) {
				return d.failAt(d.off(d.i), longer)
			}
			*n++
			end := b[k] == ']'
			d.i += k + 1
			if end {
				return true
			}
		}
		at := d.off(d.i)
		var t int64
		var v float64
		var ok bool
		if isTime {
			t, ok = d.millis()
		} else {
			v, ok = d.exportValue()
		}
		if !ok {
			return false
		}
		if !d.setPoint(*n, other, second, t, v, isTime) {
			return d.failAt(at, longer)
		}
		*n++
		d.ws()
		if d.i >= len(d.b) {
			return d.fail("unexpected end of input in array")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return d.fail("expected ',' or ']'")
		}
	}
}

// plainInt is the value of [-]digits, at most 18 of them.
func plainInt(b []byte) int64 {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var v int64
	for _, c := range b {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v
}

// setPoint stores element k of one of a line's two arrays: the first array
// read appends a point (the other field zero until its array is read), the
// second fills its field in. It reports false when the second array is
// longer than the first.
func (d *decoder) setPoint(k, other int, second bool, t int64, v float64, isTime bool) bool {
	if second {
		if k >= other {
			return false
		}
		if isTime {
			d.ts[d.pcur+k] = t
		} else {
			d.vs[d.pcur+k] = v
		}
		return true
	}
	if len(d.ts) == cap(d.ts) && !d.growPoints() {
		return false
	}
	d.ts = append(d.ts, t)
	d.vs = append(d.vs, v)
	return true
}

// dropSeries forgets the series being decoded.
func (d *decoder) dropSeries() {
	d.labels, d.ts, d.vs = d.labels[:d.lcur], d.ts[:d.pcur], d.vs[:d.pcur]
	d.shared, d.cacheAs = nil, nil
}

// rewrite replaces the samples of the series being decoded by what each
// makes of them.
func (d *decoder) rewrite(each func(ts []int64, vs []float64) ([]int64, []float64)) bool {
	raw := len(d.ts) - d.pcur
	ts, vs := each(d.ts[d.pcur:], d.vs[d.pcur:])
	if len(ts) <= raw {
		// The common case: no more points than samples.
		n := copy(d.ts[d.pcur:], ts)
		copy(d.vs[d.pcur:], vs)
		d.ts, d.vs = d.ts[:d.pcur+n], d.vs[:d.pcur+n]
		return true
	}
	d.ts, d.vs = d.ts[:d.pcur], d.vs[:d.pcur]
	for k := range ts {
		if len(d.ts) == cap(d.ts) && !d.growPoints() {
			return false
		}
		d.ts = append(d.ts, ts[k])
		d.vs = append(d.vs, vs[k])
	}
	return true
}

// exportValue reads one element of "values".
func (d *decoder) exportValue() (float64, bool) {
	d.ws()
	if d.i >= len(d.b) {
		return 0, d.fail("expected a value")
	}
	if n := plainNumber(d.b[d.i:], true); n > 0 {
		if v, ok := fastDecimal(d.b[d.i : d.i+n]); ok {
			d.i += n
			return v, true
		}
	}
	switch d.b[d.i] {
	case 'n':
		if !d.literal("null") {
			return 0, false
		}
		return math.Float64frombits(StaleNaN), true
	case '"':
		at := d.off(d.i)
		b, ok := d.strBytes()
		if !ok {
			return 0, false
		}
		switch string(b) {
		case "Infinity", "+Infinity", "Inf", "+Inf", "inf", "infinity":
			return math.Inf(1), true
		case "-Infinity", "-Inf", "-inf", "-infinity":
			return math.Inf(-1), true
		case "NaN", "nan":
			return math.NaN(), true
		}
		return 0, d.failAt(at, "bad sample value "+strconv.Quote(string(b)))
	}
	// numberEnd may move the window; the number starts at i after it.
	end := d.numberEnd()
	if end < 0 {
		return 0, false
	}
	start := d.i
	d.i = end
	v, ok := parseValue(d.b[start:end])
	if !ok {
		return 0, d.failAt(d.off(start), "bad sample value "+string(d.b[start:end]))
	}
	return v, true
}

// millis reads an integer of unix milliseconds.
func (d *decoder) millis() (int64, bool) {
	d.ws()
	if n := plainNumber(d.b[d.i:], false); n > 0 && n <= 18 {
		v := plainInt(d.b[d.i : d.i+n])
		d.i += n
		return v, true
	}
	end := d.numberEnd()
	if end < 0 {
		return 0, false
	}
	start := d.i
	d.i = end
	b := d.b[start:end]
	var n int64
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, d.failAt(d.off(start), "timestamp is not integer milliseconds: "+string(b))
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, d.failAt(d.off(start), "timestamp is not integer milliseconds: "+string(b))
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// exportLast decodes the lines of an export of the samples in (t-step, t].
// Each series becomes the one point query_range returns at t: its newest
// sample, dropped when that is NaN (a staleness marker). A series that
// comes on several lines (as VictoriaMetrics writes its blocks when asked
// for reduce_mem_usage or max_rows_per_line) is one series, its newest
// sample that of all its lines.
func (d *decoder) exportLast(t int64) ([]Series, error) {
	var (
		index    map[uint64]int32 // hash of the labels → index in out
		overflow map[string]int32 // label sets whose hash another has
		newest   []int64          // by index in out: the time of its point's sample
		key      []byte
		seed     = maphash.MakeSeed()
	)
	for {
		d.ws()
		if d.i >= len(d.b) {
			break
		}
		if !d.expect('{') || !d.startSeries() || !d.exportLine() {
			return nil, d.err
		}
		ls := d.labels[d.lcur:]
		sortLabels(ls)
		n := len(d.ts) - d.pcur
		if n == 0 {
			d.dropSeries()
			continue
		}
		lt, lv := d.ts[len(d.ts)-1], d.vs[len(d.vs)-1]
		at, seen := int32(-1), false
		var h uint64
		if d.lc != nil && (d.shared != nil || d.cacheAs != nil) {
			// The hash of the object's bytes, which VictoriaMetrics writes
			// the same way for every block of a series.
			h = d.hash[0] ^ d.hash[1]<<1
			key = append(key[:0], byte(d.hash[1]), byte(d.hash[1]>>8), byte(d.hash[1]>>16), byte(d.hash[1]>>24),
				byte(d.hash[1]>>32), byte(d.hash[1]>>40), byte(d.hash[1]>>48), byte(d.hash[1]>>56))
			if d.shared != nil {
				ls = d.shared
			}
		} else {
			key = appendLabelsKey(key[:0], Labels(ls))
			h = maphash.Bytes(seed, key)
		}
		if k, ok := index[h]; ok {
			if slices.Equal(d.out[k].Labels, Labels(ls)) {
				at, seen = k, true
			} else if k2, ok := overflow[string(key)]; ok {
				at, seen = k2, true
			}
		}
		if seen {
			// Another block of a series met before: keep the newer sample.
			if lt > newest[at] {
				newest[at], d.out[at].Values[0] = lt, lv
			}
			d.dropSeries()
			continue
		}
		d.ts, d.vs = append(d.ts[:d.pcur], t), append(d.vs[:d.pcur], lv)
		d.commit()
		k := int32(len(d.out) - 1)
		newest = append(newest, lt)
		if index == nil {
			index = map[uint64]int32{}
		}
		if _, ok := index[h]; !ok {
			index[h] = k
		} else {
			if overflow == nil {
				overflow = map[string]int32{}
			}
			overflow[string(key)] = k
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	out := d.out[:0]
	for _, s := range d.out {
		if !math.IsNaN(s.Values[0]) {
			out = append(out, s)
		}
	}
	return out, nil
}

// plainNumber is the length of the JSON number [-]digits (with frac, also
// [.digits]) at the start of b when a byte that ends a number follows it
// within b, else 0: the common case, read without going through
// numberEnd. A number that runs to the end of b, or has an exponent, is
// left to the slow path.
func plainNumber(b []byte, frac bool) int {
	j := 0
	if j < len(b) && b[j] == '-' {
		j++
	}
	d0 := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == d0 || (b[d0] == '0' && j-d0 > 1) {
		return 0
	}
	if frac && j < len(b) && b[j] == '.' {
		j++
		f0 := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == f0 {
			return 0
		}
	}
	if j >= len(b) {
		return 0
	}
	switch b[j] {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return j
	}
	return 0
}
