package ingest

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// refDecodeQueryResponse is DecodeQueryResponse as it was before the
// decoder read from a stream: one pass over the whole body. It is kept,
// unchanged but for its names, as the reference the fuzz targets compare
// the streaming decoder with, error messages and offsets included.
func refDecodeQueryResponse(body []byte) ([]Series, error) {
	d := refDecoder{b: body}
	if n := bytes.Count(body, []byte{']'}); n > 0 {
		d.ts = make([]int64, 0, n)
		d.vs = make([]float64, 0, n)
	}
	return d.response()
}

// refDecoder is a hand-written scanner over one response body. It reads the
// fields it needs, skips every other one, and validates what it skips.
type refDecoder struct {
	b   []byte
	i   int
	err error

	// Values gathered while scanning; cut into series at the end.
	ts       []int64
	vs       []float64
	labels   []Label
	spans    []refSpan
	interned map[string]string
	scr      []byte // scratch for unescaping strings
}

// refSpan locates one series in the shared arrays.
type refSpan struct {
	l0, l1 int // labels
	p0, p1 int // points
}

func (d *refDecoder) response() ([]Series, error) {
	var (
		status, resultType, errorType, errMsg string
		haveData, haveResult                  bool
		resultAt                              = -1
	)
	d.ws()
	if !d.expect('{') {
		return nil, d.err
	}
	err := d.object(func(key []byte) bool {
		switch string(key) {
		case "status":
			s, ok := d.str()
			status = s
			return ok
		case "errorType":
			s, ok := d.str()
			errorType = s
			return ok
		case "error":
			s, ok := d.str()
			errMsg = s
			return ok
		case "data":
			haveData = true
			if d.peek() == 'n' {
				return d.literal("null")
			}
			if !d.expect('{') {
				return false
			}
			return d.object(func(key []byte) bool {
				switch string(key) {
				case "resultType":
					s, ok := d.str()
					resultType = s
					return ok
				case "result":
					haveResult = true
					if resultType == "" {
						// The result came before its type: remember where
						// it is and decode it once the type is known.
						resultAt = d.i
						return d.skip(0)
					}
					return d.result(resultType)
				default:
					return d.skip(0)
				}
			}) == nil
		default:
			return d.skip(0)
		}
	})
	if err != nil {
		return nil, err
	}
	d.ws()
	if d.i < len(d.b) {
		d.fail("unexpected data after the top-level object")
		return nil, d.err
	}
	if status == "error" || errorType != "" {
		return nil, &APIError{Status: status, ErrorType: errorType, Err: errMsg}
	}
	if status != "" && status != "success" {
		return nil, refDecodeError(d.b, 0, "unknown status "+strconv.Quote(status))
	}
	if !haveData {
		return nil, refDecodeError(d.b, 0, `no "data" field`)
	}
	if !haveResult {
		if resultType == "" {
			// "data":null or "data":{} — an empty answer.
			return nil, nil
		}
		return nil, refDecodeError(d.b, 0, `no "data.result" field`)
	}
	if resultAt >= 0 {
		d.i = resultAt
		if !d.result(resultType) {
			return nil, d.err
		}
	}
	return d.series(), nil
}

// result decodes data.result for the given resultType.
func (d *refDecoder) result(resultType string) bool {
	switch resultType {
	case "matrix", "vector":
		if d.peek() == 'n' {
			return d.literal("null")
		}
		if !d.expect('[') {
			return false
		}
		return d.array(func() bool { return d.sample(resultType == "matrix") })
	case "scalar":
		l0, p0 := len(d.labels), len(d.ts)
		if !d.point() {
			return false
		}
		d.spans = append(d.spans, refSpan{l0, l0, p0, len(d.ts)})
		return true
	case "":
		return d.fail(`"result" without "resultType"`)
	default:
		return d.fail("unsupported resultType " + strconv.Quote(resultType))
	}
}

// sample decodes one element of a matrix or vector result.
func (d *refDecoder) sample(matrix bool) bool {
	d.ws()
	if !d.expect('{') {
		return false
	}
	l0, p0 := len(d.labels), len(d.ts)
	err := d.object(func(key []byte) bool {
		switch string(key) {
		case "metric":
			if !d.expect('{') {
				return false
			}
			return d.object(func(name []byte) bool {
				n := d.intern(name)
				vb, ok := d.strBytes()
				if !ok {
					return false
				}
				d.labels = append(d.labels, Label{Name: n, Value: d.intern(vb)})
				return true
			}) == nil
		case "values":
			if !matrix {
				return d.skip(0)
			}
			if d.peek() == 'n' {
				return d.literal("null")
			}
			if !d.expect('[') {
				return false
			}
			return d.array(d.point)
		case "value":
			if matrix {
				return d.skip(0)
			}
			return d.point()
		default: // "histogram", "histograms" and anything else
			return d.skip(0)
		}
	})
	if err != nil {
		return false
	}
	sortLabels(d.labels[l0:])
	d.spans = append(d.spans, refSpan{l0, len(d.labels), p0, len(d.ts)})
	return true
}

// point decodes [timestamp, "value"].
func (d *refDecoder) point() bool {
	d.ws()
	if !d.expect('[') {
		return false
	}
	d.ws()
	ts, ok := d.timestamp()
	if !ok {
		return false
	}
	d.ws()
	if !d.expect(',') {
		return false
	}
	d.ws()
	at := d.i
	vb, ok := d.strBytes()
	if !ok {
		return false
	}
	v, ok := parseValue(vb)
	if !ok {
		return d.failAt(at, "bad sample value "+strconv.Quote(string(vb)))
	}
	d.ws()
	if !d.expect(']') {
		return false
	}
	d.ts = append(d.ts, ts)
	d.vs = append(d.vs, v)
	return true
}

// timestamp reads a JSON number of unix seconds and returns exact unix
// milliseconds. Up to three fractional digits are taken exactly; longer
// fractions and exponents are rounded to the nearest millisecond.
func (d *refDecoder) timestamp() (int64, bool) {
	start := d.i
	end := d.numberEnd()
	if end < 0 {
		return 0, false
	}
	b := d.b[start:end]
	d.i = end
	if ms, ok := exactMillis(b); ok {
		return ms, true
	}
	f, err := strconv.ParseFloat(bytesString(b), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > 9.2e15 {
		return 0, d.failAt(start, "timestamp out of range: "+string(b))
	}
	return int64(math.Round(f * 1000)), true
}

// series cuts the gathered arrays into Series.
func (d *refDecoder) series() []Series {
	if len(d.spans) == 0 {
		return nil
	}
	out := make([]Series, len(d.spans))
	for k, s := range d.spans {
		out[k] = Series{
			Labels:     Labels(d.labels[s.l0:s.l1:s.l1]),
			Timestamps: d.ts[s.p0:s.p1:s.p1],
			Values:     d.vs[s.p0:s.p1:s.p1],
		}
	}
	return out
}

// intern returns a string equal to b, shared by every equal label name or
// value of the response.
func (d *refDecoder) intern(b []byte) string {
	if d.interned == nil {
		d.interned = make(map[string]string, 64)
	}
	if s, ok := d.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.interned) < 1<<16 {
		d.interned[s] = s
	}
	return s
}

// --- scanning primitives ---

func (d *refDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *refDecoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *refDecoder) expect(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return d.fail("expected " + strconv.QuoteRune(rune(c)))
}

func (d *refDecoder) literal(lit string) bool {
	d.ws()
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return d.fail("expected " + lit)
}

// object reads the members of an object whose '{' has been consumed,
// calling member with each key once the ':' has been consumed.
func (d *refDecoder) object(member func(key []byte) bool) error {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		kb, ok := d.strBytes()
		if !ok {
			return d.err
		}
		if !d.expect(':') {
			return d.err
		}
		d.ws()
		if !member(kb) {
			if d.err == nil {
				d.fail("bad value")
			}
			return d.err
		}
		d.ws()
		if d.i >= len(d.b) {
			d.fail("unexpected end of input in object")
			return d.err
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			d.fail("expected ',' or '}'")
			return d.err
		}
	}
}

// array reads the elements of an array whose '[' has been consumed.
func (d *refDecoder) array(elem func() bool) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return true
	}
	for {
		if !elem() {
			if d.err == nil {
				d.fail("bad array element")
			}
			return false
		}
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

// str reads a string value into a new Go string.
func (d *refDecoder) str() (string, bool) {
	b, ok := d.strBytes()
	return string(b), ok
}

// strBytes reads a JSON string and returns its unescaped bytes. The result
// aliases the body or the scratch buffer and is valid until the next call.
func (d *refDecoder) strBytes() ([]byte, bool) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, d.fail("expected a string")
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			return d.b[start:j], true
		case c == '\\':
			return d.unescape(start, j)
		case c < 0x20:
			return nil, d.failAt(j, "control character in string")
		}
	}
	return nil, d.failAt(len(d.b), "unterminated string")
}

// unescape decodes a string with escapes; b[start:j] is the plain prefix.
func (d *refDecoder) unescape(start, j int) ([]byte, bool) {
	out := append(d.scr[:0], d.b[start:j]...)
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			d.scr = out
			return out, true
		case c < 0x20:
			return nil, d.failAt(j, "control character in string")
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(d.b) {
			break
		}
		e := d.b[j+1]
		j += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d.b, j)
			if !ok {
				return nil, d.failAt(j-2, `bad \u escape`)
			}
			j += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if j+6 <= len(d.b) && d.b[j] == '\\' && d.b[j+1] == 'u' {
					r2, ok = hex4(d.b, j+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					j += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, d.failAt(j-2, "bad escape")
		}
	}
	d.scr = out
	return nil, d.failAt(len(d.b), "unterminated string")
}

// numberEnd validates a JSON number at d.i and returns the offset just
// after it, or -1 after recording an error.
func (d *refDecoder) numberEnd() int {
	b, j := d.b, d.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(b) && b[j] == '0' {
		j++
	} else if !digits() {
		d.failAt(d.i, "expected a number")
		return -1
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			d.failAt(j, "expected digits after '.'")
			return -1
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			d.failAt(j, "expected exponent digits")
			return -1
		}
	}
	return j
}

// skip validates and skips any JSON value.
func (d *refDecoder) skip(depth int) bool {
	if depth > maxDepth {
		return d.fail("nesting too deep")
	}
	d.ws()
	if d.i >= len(d.b) {
		return d.fail("unexpected end of input")
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		return d.object(func([]byte) bool { return d.skip(depth + 1) }) == nil
	case c == '[':
		d.i++
		return d.array(func() bool { return d.skip(depth + 1) })
	case c == '"':
		_, ok := d.strBytes()
		return ok
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	default:
		end := d.numberEnd()
		if end < 0 {
			return false
		}
		d.i = end
		return true
	}
}

func (d *refDecoder) fail(msg string) bool { return d.failAt(d.i, msg) }

// failAt records the first error; later ones are consequences of it.
func (d *refDecoder) failAt(off int, msg string) bool {
	if d.err == nil {
		d.err = refDecodeError(d.b, off, msg)
	}
	return false
}

func refDecodeError(body []byte, off int, reason string) *DecodeError {
	if off > len(body) {
		off = len(body)
	}
	near := body[off:]
	if len(near) > 32 {
		near = near[:32]
	}
	return &DecodeError{Offset: off, Reason: reason, Near: string(near), Head: headOf(body)}
}
