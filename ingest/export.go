package ingest

import (
	"io"
	"math"
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
// client never does); lines are not merged by labels here.
func ReadExport(r io.Reader, lim ResponseLimits) ([]Series, error) {
	d := newReadDecoder(r, lim, 0, readBufSize)
	return d.exportLines(nil)
}

// exportLines decodes export lines until the end of the body. each, when
// set, rewrites the samples of a series before it is committed (see
// gridder); it may shorten or lengthen them.
func (d *decoder) exportLines(each func(ts []int64, vs []float64) ([]int64, []float64)) ([]Series, error) {
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
		sortLabels(d.labels[d.lcur:])
		d.commit()
	}
	if d.err != nil {
		return nil, d.err
	}
	return d.out, nil
}

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
			if !d.expect('{') {
				return false
			}
			return d.object(func(name []byte) bool {
				n := d.intern(name)
				vb, ok := d.strBytes()
				if !ok {
					return false
				}
				d.addLabel(Label{Name: n, Value: d.intern(vb)})
				return true
			}) == nil
		case "values":
			if haveValues {
				return d.fail(`"values" twice`)
			}
			haveValues = true
			if !d.expect('[') {
				return false
			}
			return d.array(func() bool {
				at := d.off(d.i)
				v, ok := d.exportValue()
				if !ok {
					return false
				}
				if !d.setPoint(nv, nt, haveTimes, 0, v, false) {
					return d.failAt(at, `"values" has more elements than "timestamps"`)
				}
				nv++
				return true
			})
		case "timestamps":
			if haveTimes {
				return d.fail(`"timestamps" twice`)
			}
			haveTimes = true
			if !d.expect('[') {
				return false
			}
			return d.array(func() bool {
				at := d.off(d.i)
				t, ok := d.millis()
				if !ok {
					return false
				}
				if !d.setPoint(nt, nv, haveValues, t, 0, true) {
					return d.failAt(at, `"timestamps" has more elements than "values"`)
				}
				nt++
				return true
			})
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

// rewrite replaces the samples of the series being decoded by what each
// makes of them.
func (d *decoder) rewrite(each func(ts []int64, vs []float64) ([]int64, []float64)) bool {
	ts, vs := each(d.ts[d.pcur:], d.vs[d.pcur:])
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
