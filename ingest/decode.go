package ingest

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// ResponseLimits bound what ReadQueryResponse accepts. A field of 0 or less
// sets no limit. A response past a limit is refused with a *LimitError as
// soon as the limit is passed: the rest of the body is not read.
type ResponseLimits struct {
	Bytes  int64 // bytes of the body
	Series int   // series of the result
	Points int   // points (samples) over all series
}

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
	d := decoder{b: body, read: int64(len(body)), head: body[:min(len(body), maxBodyInError)]}
	// Every point ends in ']': counting them (a vectorised byte count)
	// sizes the first slab of points to hold them all.
	d.slab = bytes.Count(body, []byte{']'})
	return d.response()
}

// ReadQueryResponse decodes a query_range or query response from r as it
// is read, as DecodeQueryResponse decodes one in memory, with the same
// results and the same errors, offsets included. Besides the series decoded
// so far, each appended once it is complete, it holds a 64 KiB window of the
// body (more only while one string or number is longer) and the unfilled end
// of the slab the points are taken from (at most 2^20 points). An error of r
// other than io.EOF is returned as it is; a response past lim is refused
// with a *LimitError, and r is not read further.
//
// A result that comes before its resultType (no server we know of sends
// one) is held in memory until the type is known.
func ReadQueryResponse(r io.Reader, lim ResponseLimits) ([]Series, error) {
	return readQueryResponse(r, lim, 0)
}

// readQueryResponse is ReadQueryResponse for a caller that already holds
// prior points counted against lim.Points.
func readQueryResponse(r io.Reader, lim ResponseLimits, prior int) ([]Series, error) {
	return newReadDecoder(r, lim, prior, readBufSize).response()
}

// newReadDecoder is a decoder reading from r through a window of size
// bytes to begin with.
func newReadDecoder(r io.Reader, lim ResponseLimits, prior, size int) *decoder {
	return &decoder{r: r, lim: lim, npoints: prior, b: make([]byte, 0, size)}
}

// readBufSize is the window of the body a streaming decoder reads into.
const readBufSize = 64 << 10

// The slabs series take their points and labels from: the first as big as
// the least, each next as big as what was decoded before it, up to the most.
const (
	minPointSlab = 1 << 10
	maxPointSlab = 1 << 20
	minLabelSlab = 1 << 8
	maxLabelSlab = 1 << 16
)

// nearLen is how much of the body from a bad offset a DecodeError quotes.
const nearLen = 32

// decoder is a hand-written scanner over one response body, whole or read
// from a stream. It reads the fields it needs, skips every other one, and
// validates what it skips.
//
// Reading from a stream, b holds a window of the body starting at offset
// base; fill drops what lies before i and reads more. A scanning primitive
// keeps i at the start of its token until it has read all of it, so the
// token and any offset an error may name stay in the window.
type decoder struct {
	b    []byte
	i    int
	base int       // body offset of b[0]
	r    io.Reader // nil when b is the whole body
	rerr error     // what r returned last when not nil (io.EOF at the end)
	read int64     // bytes of the body read
	head []byte    // the first maxBodyInError bytes of the body
	lim  ResponseLimits
	err  error

	// The series decoded so far. The one being decoded has its labels in
	// labels[lcur:] and its points in ts[pcur:] and vs[pcur:]; a full slab
	// is replaced by a new one, the series in progress moved to it.
	out        []Series
	ts         []int64
	vs         []float64
	labels     []Label
	pcur, lcur int
	npoints    int // points of out, and of the caller's before it
	nlabels    int // labels of out
	slab       int // size of the next slab of points when known

	interned map[string]string
	// lc, when set, keeps the labels of "metric" objects across responses
	// (see metric); shared are the cached labels of the series being
	// decoded, cacheAs the key to cache its labels under once committed,
	// and hash the key of its object.
	lc      *labelCache
	shared  Labels
	cacheAs *[2]uint64
	hash    [2]uint64
	scr     []byte // scratch for unescaping strings
	key     []byte // the current object key, copied out of the window

	// A result met before its resultType, kept to decode once the type is
	// known: while capturing, the window from capAt on is appended to
	// deferred before fill drops it.
	capturing bool
	capAt     int
	deferred  []byte
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
						// The result came before its type: keep it and
						// decode it once the type is known.
						resultAt = d.off(d.i)
						return d.deferResult()
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
	if d.err != nil {
		return nil, d.err // the body was whole but its reader failed
	}
	if status == "error" || errorType != "" {
		return nil, &APIError{Status: status, ErrorType: errorType, Err: errMsg}
	}
	if status != "" && status != "success" {
		return nil, d.decodeError(0, "unknown status "+strconv.Quote(status))
	}
	if !haveData {
		return nil, d.decodeError(0, `no "data" field`)
	}
	if !haveResult {
		if resultType == "" {
			// "data":null or "data":{} — an empty answer.
			return nil, nil
		}
		return nil, d.decodeError(0, `no "data.result" field`)
	}
	if resultAt >= 0 {
		d.b, d.i, d.base, d.r = d.deferred, 0, resultAt, nil
		if !d.result(resultType) {
			return nil, d.err
		}
	}
	return d.out, nil
}

// deferResult skips and keeps a result whose type is not known yet, with
// the bytes after it that an error in it may quote.
func (d *decoder) deferResult() bool {
	d.capturing, d.capAt, d.deferred = true, d.i, d.deferred[:0]
	if !d.skip(0) {
		d.capturing = false
		return false
	}
	d.ensure(nearLen)
	end := min(len(d.b), d.i+nearLen)
	if d.r == nil {
		d.deferred = d.b[d.capAt:end]
	} else {
		d.deferred = append(d.deferred, d.b[d.capAt:end]...)
	}
	d.capturing = false
	return true
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
		if !d.startSeries() || !d.point() {
			return false
		}
		d.commit()
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
	if !d.expect('{') || !d.startSeries() {
		return false
	}
	err := d.object(func(key []byte) bool {
		switch string(key) {
		case "metric":
			return d.metric()
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
	sortLabels(d.labels[d.lcur:])
	d.commit()
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
	at := d.off(d.i)
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
	if len(d.ts) == cap(d.ts) && !d.growPoints() {
		return false
	}
	d.ts = append(d.ts, ts)
	d.vs = append(d.vs, v)
	return true
}

// startSeries refuses a series past the series limit.
func (d *decoder) startSeries() bool {
	if d.lim.Series > 0 && len(d.out) >= d.lim.Series {
		return d.refuse("series", int64(d.lim.Series))
	}
	return true
}

// commit appends the series being decoded to out.
func (d *decoder) commit() {
	l1, p1 := len(d.labels), len(d.ts)
	ls := Labels(d.labels[d.lcur:l1:l1])
	switch {
	case d.shared != nil:
		ls = d.shared
	case d.cacheAs != nil:
		d.lc.put(*d.cacheAs, ls)
	}
	d.shared, d.cacheAs = nil, nil
	d.out = append(d.out, Series{
		Labels:     ls,
		Timestamps: d.ts[d.pcur:p1:p1],
		Values:     d.vs[d.pcur:p1:p1],
	})
	d.npoints += p1 - d.pcur
	d.nlabels += l1 - d.lcur
	d.pcur, d.lcur = p1, l1
}

// growPoints moves the points of the series being decoded to a new slab,
// the current one being full, or refuses the point past the points limit.
// A slab never holds more points than the limit leaves room for.
func (d *decoder) growPoints() bool {
	part := len(d.ts) - d.pcur
	if d.lim.Points > 0 && d.npoints+part >= d.lim.Points {
		return d.refuse("points", int64(d.lim.Points))
	}
	n := d.slab
	d.slab = 0
	if n <= 0 {
		n = min(max(d.npoints+part, minPointSlab), maxPointSlab)
	}
	n = max(n, 2*part)
	if d.lim.Points > 0 {
		n = min(n, d.lim.Points-d.npoints)
	}
	ts := make([]int64, part, n)
	vs := make([]float64, part, n)
	copy(ts, d.ts[d.pcur:])
	copy(vs, d.vs[d.pcur:])
	d.ts, d.vs, d.pcur = ts, vs, 0
	return true
}

// addLabel appends a label to the series being decoded.
func (d *decoder) addLabel(l Label) {
	if len(d.labels) == cap(d.labels) {
		part := len(d.labels) - d.lcur
		n := max(min(max(d.nlabels+part, minLabelSlab), maxLabelSlab), 2*part)
		ls := make([]Label, part, n)
		copy(ls, d.labels[d.lcur:])
		d.labels, d.lcur = ls, 0
	}
	d.labels = append(d.labels, l)
}

// refuse records that the response went past a limit.
func (d *decoder) refuse(limit string, max int64) bool {
	if d.err == nil {
		d.err = &LimitError{Limit: limit, Max: max, Read: d.read}
	}
	return false
}

// timestamp reads a JSON number of unix seconds and returns exact unix
// milliseconds. Up to three fractional digits are taken exactly; longer
// fractions and exponents are rounded to the nearest millisecond.
func (d *decoder) timestamp() (int64, bool) {
	end := d.numberEnd()
	if end < 0 {
		return 0, false
	}
	start := d.i
	b := d.b[start:end]
	d.i = end
	if ms, ok := exactMillis(b); ok {
		return ms, true
	}
	f, err := strconv.ParseFloat(bytesString(b), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > 9.2e15 {
		return 0, d.failAt(d.off(start), "timestamp out of range: "+string(b))
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

// --- reading the body ---

// off is the body offset of b[i].
func (d *decoder) off(i int) int { return d.base + i }

// fill reads more of the body, keeping b[i:]: the bytes before i are
// dropped and the rest moved to the front. It returns how far the kept bytes
// moved (to subtract from any index into b held across the call) and
// whether any byte was added. It reads nothing when b is the whole body,
// after the body ended or failed, and past the bytes limit.
func (d *decoder) fill() (int, bool) {
	if d.r == nil || d.rerr != nil {
		return 0, false
	}
	shift := d.i
	if d.capturing {
		d.deferred = append(d.deferred, d.b[d.capAt:shift]...)
		d.capAt = 0
	}
	if shift > 0 {
		n := copy(d.b, d.b[shift:])
		d.b = d.b[:n]
		d.i = 0
		d.base += shift
	}
	if free := cap(d.b) - len(d.b); free == 0 || free < cap(d.b)/2 {
		// A token longer than half the window: grow it, so that reading
		// the token takes time linear in its length.
		nb := make([]byte, len(d.b), max(2*cap(d.b), 16))
		copy(nb, d.b)
		d.b = nb
	}
	want := cap(d.b) - len(d.b)
	if d.lim.Bytes > 0 {
		// Read at most one byte past the limit.
		want = int(min(int64(want), d.lim.Bytes+1-d.read))
	}
	for empty := 0; ; empty++ {
		at := len(d.b)
		n, err := d.r.Read(d.b[at : at+want])
		if n < 0 || n > want {
			n, err = 0, errBadRead
		}
		d.b = d.b[:at+n]
		d.read += int64(n)
		if n > 0 && d.read-int64(n) < maxBodyInError {
			k := min(n, maxBodyInError-int(d.read-int64(n)))
			d.head = append(d.head, d.b[at:at+k]...)
		}
		if d.lim.Bytes > 0 && d.read > d.lim.Bytes {
			d.refuse("bytes", d.lim.Bytes)
			d.rerr = errRefused
			return shift, false
		}
		switch {
		case err != nil:
			d.rerr = err
			if err != io.EOF && d.err == nil {
				d.err = err
			}
			return shift, n > 0
		case n > 0:
			return shift, true
		case empty >= 100:
			d.rerr = io.ErrNoProgress
			if d.err == nil {
				d.err = io.ErrNoProgress
			}
			return shift, false
		}
	}
}

// ensure reads until n bytes from i are in the window or the body ends,
// and reports whether they are.
func (d *decoder) ensure(n int) bool {
	for len(d.b)-d.i < n {
		if _, ok := d.fill(); !ok {
			return false
		}
	}
	return true
}

// --- scanning primitives ---

// ws skips white space. After it, i < len(b) unless the body has ended.
func (d *decoder) ws() {
	if d.i < len(d.b) && d.b[d.i] > ' ' {
		return
	}
	d.wsSlow()
}

func (d *decoder) wsSlow() {
	for {
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ' ', '\t', '\n', '\r':
				d.i++
			default:
				return
			}
		}
		if _, ok := d.fill(); !ok {
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
	d.ensure(len(lit))
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return d.fail("expected " + lit)
}

// object reads the members of an object whose '{' has been consumed,
// calling member with each key once the ':' has been consumed. The key is
// valid until member reads on.
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
		if d.r != nil {
			// Reading on may move the window under the key.
			d.key = append(d.key[:0], kb...)
			kb = d.key
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
// aliases the window or the scratch buffer and is valid until the next read.
func (d *decoder) strBytes() ([]byte, bool) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, d.fail("expected a string")
	}
	start := d.i + 1
	j := start
	for {
		b := d.b
		for ; j < len(b); j++ {
			switch c := b[j]; {
			case c == '"':
				d.i = j + 1
				return b[start:j], true
			case c == '\\':
				return d.unescape(start, j)
			case c < 0x20:
				return nil, d.failAt(d.off(j), "control character in string")
			}
		}
		s, ok := d.fill()
		j -= s
		start -= s
		if !ok {
			return nil, d.failAt(d.off(len(d.b)), "unterminated string")
		}
	}
}

// unescape decodes a string with escapes; b[start:j] is the plain prefix.
func (d *decoder) unescape(start, j int) ([]byte, bool) {
	out := append(d.scr[:0], d.b[start:j]...)
	for {
		if j >= len(d.b) {
			s, ok := d.fill()
			j -= s
			if !ok {
				break
			}
		}
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			d.scr = out
			return out, true
		case c < 0x20:
			return nil, d.failAt(d.off(j), "control character in string")
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		// An escape takes at most 12 bytes: \uXXXX\uXXXX.
		for len(d.b)-j < 12 {
			s, ok := d.fill()
			j -= s
			if !ok {
				break
			}
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
				return nil, d.failAt(d.off(j-2), `bad \u escape`)
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
			return nil, d.failAt(d.off(j-2), "bad escape")
		}
	}
	d.scr = out
	return nil, d.failAt(d.off(len(d.b)), "unterminated string")
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

// numberEnd validates a JSON number at i and returns the index in b just
// after it, or -1 after recording an error. A number that runs to the end
// of the window is read on until a byte that cannot be part of it, then
// scanned again.
func (d *decoder) numberEnd() int {
	end, reason, atEnd := scanNumber(d.b, d.i)
	if atEnd && d.r != nil {
		for j := end; ; {
			for j < len(d.b) && isNumberByte(d.b[j]) {
				j++
			}
			if j < len(d.b) {
				break
			}
			s, ok := d.fill()
			j -= s
			if !ok {
				break
			}
		}
		end, reason, _ = scanNumber(d.b, d.i)
	}
	if reason != "" {
		d.failAt(d.off(end), reason)
		return -1
	}
	return end
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// scanNumber validates a JSON number at b[i:]. It returns the index just
// after it, or the index of the error and its reason, and whether it
// stopped at the end of b.
func scanNumber(b []byte, i int) (end int, reason string, atEnd bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return i, "expected a number", j == len(b)
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return j, "expected digits after '.'", j == len(b)
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return j, "expected exponent digits", j == len(b)
		}
	}
	return j, "", j == len(b)
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

func (d *decoder) fail(msg string) bool { return d.failAt(d.off(d.i), msg) }

// failAt records the first error, at a body offset; later ones are
// consequences of it.
func (d *decoder) failAt(off int, msg string) bool {
	if d.err == nil {
		e := d.decodeError(off, msg)
		d.err = e // over any error of reading ahead for it
	}
	return false
}

// decodeError describes a bad body at offset off, reading ahead for the
// bytes it quotes.
func (d *decoder) decodeError(off int, reason string) *DecodeError {
	d.capturing = false
	var near []byte
	if k := off - d.base; k >= 0 {
		d.i = min(k, len(d.b))
		for len(d.head) < maxBodyInError || len(d.b)-d.i < nearLen {
			if _, ok := d.fill(); !ok {
				break
			}
		}
		off = d.off(d.i)
		near = d.b[d.i:min(len(d.b), d.i+nearLen)]
	} else {
		near = d.head[min(off, len(d.head)):min(off+nearLen, len(d.head))]
	}
	return &DecodeError{Offset: off, Reason: reason, Near: string(near), Head: string(d.head)}
}

// bytesString views b as a string for a call that does not keep it.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
