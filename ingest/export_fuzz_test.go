package ingest

import (
	"errors"
	"fmt"
	"testing"
)

// FuzzReadExport feeds export bodies through the streaming decoder in
// chunks and windows of every size, as a whole and one point per series:
// it never panics, fails only with a *DecodeError or a *LimitError whose
// offset lies in the body, and reads the same whatever the chunks.
func FuzzReadExport(f *testing.F) {
	for i, seed := range []string{
		exportBody,
		`{"metric":{"a":"b"},"values":[1,2],"timestamps":[1]}`,
		`{"timestamps":[3,1],"values":[null,"NaN"],"metric":{"a":"b"}}` + "\n" + `{"metric":{"a":"b"},"values":[1],"timestamps":[2]}`,
		`<html>502</html>`,
		`{"metric":{"a":"b"},"values":[1e400,-0.0],"timestamps":[-1,9223372036854]}`,
	} {
		f.Add([]byte(seed), []byte{byte(i), 0, 7, 1}, uint8(i*13), uint32(i*977))
	}
	f.Fuzz(func(t *testing.T, body, chunks []byte, window uint8, limits uint32) {
		sizes := make([]int, len(chunks))
		for i, c := range chunks {
			sizes[i] = int(c % 80)
		}
		lim := ResponseLimits{Series: int(limits & 0xff), Points: int(limits >> 8 & 0xfff)}
		check := func(how string, ss []Series, err error) {
			if err == nil {
				return
			}
			var de *DecodeError
			var le *LimitError
			switch {
			case errors.As(err, &de):
				if de.Offset < 0 || de.Offset > len(body) {
					t.Fatalf("%s: offset %d outside the body of %d bytes", how, de.Offset, len(body))
				}
			case errors.As(err, &le):
			default:
				t.Fatalf("%s: error of type %T: %v", how, err, err)
			}
			if ss != nil {
				t.Fatalf("%s: %d series with an error", how, len(ss))
			}
		}
		whole, werr := newReadDecoder(&chunkReader{b: body}, lim, 0, readBufSize).exportLines(nil)
		check("whole", whole, werr)
		got, err := newReadDecoder(&chunkReader{b: body, sizes: sizes}, lim, 0, int(window)+1).exportLines(nil)
		check("chunked", got, err)
		// A refusal says how much it had read, which depends on the reads.
		var le, wle *LimitError
		sameErr := fmt.Sprint(err) == fmt.Sprint(werr) ||
			errors.As(err, &le) && errors.As(werr, &wle) && le.Limit == wle.Limit
		if !sameErr || !sameSeries(got, whole) {
			t.Fatalf("chunked: %v %+v; whole: %v %+v", err, got, werr, whole)
		}
		// Through a label cache, twice: as without it.
		lc := newLabelCache(64)
		for range 2 {
			d := newReadDecoder(&chunkReader{b: body, sizes: sizes}, lim, 0, int(window)+1)
			d.lc = lc
			got, err := d.exportLines(nil)
			if !sameError(err, werr) && !(errors.As(err, &le) && errors.As(werr, &wle) && le.Limit == wle.Limit) || !sameSeries(got, whole) {
				t.Fatalf("with a label cache: %v %+v; without: %v %+v", err, got, werr, whole)
			}
		}
		last, lerr := newReadDecoder(&chunkReader{b: body, sizes: sizes}, lim, 0, int(window)+1).exportLast(1 << 40)
		check("one point", last, lerr)
		for _, s := range last {
			if len(s.Timestamps) != 1 || len(s.Values) != 1 || s.Timestamps[0] != 1<<40 {
				t.Fatalf("one point: %+v", s)
			}
		}
	})
}
