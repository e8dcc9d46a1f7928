package ingest

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// DecodeQueryResponse decodes the JSON body of a Prometheus
// /api/v1/query_range or /api/v1/query response.
//
// A matrix yields one Series per result with all its points; a vector yields
// one Series per result with its single point; a scalar yields one Series
// without labels and one point. Labels come sorted by name with __name__
// included. Timestamps are exact unix milliseconds; values keep NaN and ±Inf
// as sent. Native histogram samples are skipped.
//
// A body with "status":"error" yields an *APIError. A body that is not a
// valid response yields a *DecodeError giving the offset and the first bytes
// of the body. DecodeQueryResponse never panics and keeps no reference to body.
//
// The series of one response share backing arrays, each sliced with its
// capacity capped at its length, so appending to one never overwrites another.
func DecodeQueryResponse(body []byte) ([]Series, error) {
	d := decoder{b: body}
	// Every point ends in ']': counting them (a vectorised byte count)
	// sizes the shared arrays once instead of growing them.
	if n := bytes.Count(body, []byte{']'}); n > 0 {
		d.ts = make([]int64, 0, n)
		d.vs = make([]float64, 0, n)
	}
	return d.response()
}

// decoder is a hand-written scanner over one response body. It reads the
// fields it needs, skips every other one, and validates what it skips.
type decoder struct {
	b   []byte
	i   int
	err error

	// Values gathered while scanning; cut into series at the end.
	ts       []int64
	vs       []float64
	labels   []Label
	spans    []span
	interned map[string]string
	scr      []byte // scratch for unescaping strings
}

// span locates one series in the shared arrays.
type span struct {
	l0, l1 int // labels
	p0, p1 int // points
}

// maxDepth bounds the nesting of skipped values so hostile input cannot
// exhaust the stack.
const maxDepth = 512

func (d *decoder) response() ([]Series, error) {
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
		return nil, newDecodeError(d.b, 0, "unknown status "+strconv.Quote(status))
	}
	if !haveData {
		return nil, newDecodeError(d.b, 0, `no "data" field`)
	}
	if !haveResult {
		if resultType == "" {
			// "data":null or "data":{} — an empty answer.
			return nil, nil
		}
		return nil, newDecodeError(d.b, 0, `no "data.result" field`)
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
func (d *decoder) result(resultType string) bool {
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
		d.spans = append(d.spans, span{l0, l0, p0, len(d.ts)})
		return true
	case "":
		return d.fail(`"result" without "resultType"`)
	default:
		return d.fail("unsupported resultType " + strconv.Quote(resultType))
	}
}

// sample decodes one element of a matrix or vector result.
func (d *decoder) sample(matrix bool) bool {
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
	d.spans = append(d.spans, span{l0, len(d.labels), p0, len(d.ts)})
	return true
}

// point decodes [timestamp, "value"].
func (d *decoder) point() bool {
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
func (d *decoder) timestamp() (int64, bool) {
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

// exactMillis parses [-]digits[.ddd] without going through float64.
func exactMillis(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	var sec int64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i >= 15 {
			return 0, false
		}
		sec = sec*10 + int64(b[i]-'0')
	}
	if i == 0 {
		return 0, false
	}
	ms := sec * 1000
	if i < len(b) {
		if b[i] != '.' {
			return 0, false // exponent
		}
		frac := b[i+1:]
		if len(frac) == 0 || len(frac) > 3 {
			return 0, false
		}
		mul := int64(100)
		for _, c := range frac {
			if c < '0' || c > '9' {
				return 0, false
			}
			ms += int64(c-'0') * mul
			mul /= 10
		}
	}
	if neg {
		ms = -ms
	}
	return ms, true
}

// parseValue parses a sample value as Prometheus writes it: a decimal or
// exponent form, NaN, +Inf or -Inf.
func parseValue(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	// Fast path: short plain decimals, exact by Clinger's argument (the
	// mantissa and the power of ten are both exact in float64).
	if v, ok := fastDecimal(b); ok {
		return v, true
	}
	v, err := strconv.ParseFloat(bytesString(b), 64)
	if err != nil {
		// ParseFloat returns ±Inf with ErrRange for overflowing literals
		// such as "1e999"; Prometheus would have sent "+Inf".
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return v, true
		}
		return 0, false
	}
	return v, true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastDecimal parses a plain decimal of at most 15 digits, [-]ddd[.ddd],
// the common case, faster than strconv.ParseFloat and with the same result:
// the mantissa and the power of ten are exact in float64, so one division
// rounds correctly (Clinger's fast path). It reports false for anything
// else, which strconv.ParseFloat then handles. The decoder passes bytes,
// the CSV reader strings.
func fastDecimal[T ~string | ~[]byte](b T) (float64, bool) {
	neg := false
	i := 0
	if len(b) > 0 && b[0] == '-' {
		neg = true
		i = 1
	}
	var mant uint64
	digits, frac := 0, -1
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || frac == 0 {
		return 0, false
	}
	v := float64(mant)
	if frac > 0 {
		v /= pow10[frac]
	}
	if neg {
		v = -v
	}
	return v, true
}

// series cuts the gathered arrays into Series.
func (d *decoder) series() []Series {
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

// sortLabels sorts by name with insertion sort: label sets are small and
// usually already sorted, and it does not allocate.
func sortLabels(ls []Label) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].Name < ls[j-1].Name; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// intern returns a string equal to b, shared by every equal label name or
// value of the response.
func (d *decoder) intern(b []byte) string {
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

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) expect(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return d.fail("expected " + strconv.QuoteRune(rune(c)))
}

func (d *decoder) literal(lit string) bool {
	d.ws()
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return d.fail("expected " + lit)
}

// object reads the members of an object whose '{' has been consumed,
// calling member with each key once the ':' has been consumed.
func (d *decoder) object(member func(key []byte) bool) error {
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
func (d *decoder) array(elem func() bool) bool {
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
func (d *decoder) str() (string, bool) {
	b, ok := d.strBytes()
	return string(b), ok
}

// strBytes reads a JSON string and returns its unescaped bytes. The result
// aliases the body or the scratch buffer and is valid until the next call.
func (d *decoder) strBytes() ([]byte, bool) {
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
func (d *decoder) unescape(start, j int) ([]byte, bool) {
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

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// numberEnd validates a JSON number at d.i and returns the offset just
// after it, or -1 after recording an error.
func (d *decoder) numberEnd() int {
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
func (d *decoder) skip(depth int) bool {
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

func (d *decoder) fail(msg string) bool { return d.failAt(d.i, msg) }

// failAt records the first error; later ones are consequences of it.
func (d *decoder) failAt(off int, msg string) bool {
	if d.err == nil {
		d.err = newDecodeError(d.b, off, msg)
	}
	return false
}

// bytesString views b as a string for a call that does not keep it.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
