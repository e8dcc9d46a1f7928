package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// chunkReader returns b in reads of the given sizes in turn (0 is a read
// of nothing), as a network connection may.
type chunkReader struct {
	b     []byte
	sizes []int
	k     int
	empty bool // the last read was empty
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := len(r.b)
	if len(r.sizes) > 0 {
		n = r.sizes[r.k%len(r.sizes)]
		r.k++
		if n == 0 && r.empty {
			n = 1 // never two empty reads in a row
		}
		r.empty = n == 0
	}
	n = min(n, len(p), len(r.b))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// readers gives the ways the tests feed a body to ReadQueryResponse.
func readers(body []byte) map[string]io.Reader {
	return map[string]io.Reader{
		"one byte":        iotest.OneByteReader(bytes.NewReader(body)),
		"data with EOF":   iotest.DataErrReader(bytes.NewReader(body)),
		"half":            iotest.HalfReader(bytes.NewReader(body)),
		"chunks 3,0,7,1":  &chunkReader{b: body, sizes: []int{3, 0, 7, 1}},
		"chunks 31,32,33": &chunkReader{b: body, sizes: []int{31, 32, 33}},
		"whole":           bytes.NewReader(body),
	}
}

// decodeEvery decodes body with DecodeQueryResponse, with the decoder it
// replaced, and with ReadQueryResponse through each of readers; it fails
// unless all agree, series and error message alike, and returns the first.
func decodeEvery(t *testing.T, name string, body []byte) ([]Series, error) {
	t.Helper()
	got, err := DecodeQueryResponse(body)
	same := func(how string, ss []Series, e error) {
		t.Helper()
		if fmt.Sprint(e) != fmt.Sprint(err) {
			t.Fatalf("%s: %s: error\n%v\nwant\n%v", name, how, e, err)
		}
		if !sameSeries(ss, got) {
			t.Fatalf("%s: %s:\n got %+v\nwant %+v", name, how, ss, got)
		}
	}
	ss, e := refDecodeQueryResponse(body)
	same("the reference decoder", ss, e)
	for how, r := range readers(body) {
		ss, e := ReadQueryResponse(r, ResponseLimits{})
		same("read "+how, ss, e)
	}
	for _, size := range []int{1, 5, 64} {
		ss, e := newReadDecoder(&chunkReader{b: body, sizes: []int{2, 0, 9}}, ResponseLimits{}, 0, size).response()
		same(fmt.Sprintf("read through a window of %d bytes", size), ss, e)
	}
	return got, err
}

func TestReadQueryResponseLongTokens(t *testing.T) {
	// Tokens longer than the window, escapes across reads, and a result
	// before its type longer than the window.
	long := strings.Repeat("x", 3*readBufSize)
	esc := strings.Repeat(`\u00e9\ud83d\ude00\n`, readBufSize/4)
	pts := strings.Repeat(`[1700000000.5,"1.25"],`, readBufSize/8)
	for _, body := range []string{
		`{"status":"success","warnings":["` + long + `"],"data":{"resultType":"matrix","result":[{"metric":{"a":"` + esc + `"},"values":[[1,"2"]]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"` + long + `":"v"},"value":[1` + strings.Repeat("0", 2*readBufSize) + `e-` + strings.Repeat("0", readBufSize) + `9999999,"1"]}]}}`,
		`{"data":{"result":[{"metric":{"a":"b"},"values":[` + pts + `[2,"3"]]}],"resultType":"matrix"},"status":"success"}`,
		`{"data":{"result":[{"metric":{"a":"b"},"values":[` + pts + `[2,3]]}],"resultType":"matrix"},"status":"success"}`,
		`{"data":{"result":[{"metric":{"a":"b"},"values":[` + pts + `[2,"3"]]}],"resultType":"matrix"},"status":"error"}`,
		`{"data":{"result":[{"metric":{"a":"b"},"values":[` + pts + `[2,"3"]x]}],"resultType":"matrix"},"status":"success"}`,
		`{"data":{"result":A`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"` + esc + `\q"}}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"` + long + "\x01" + `"}}]}}`,
	} {
		decodeEvery(t, body[:min(len(body), 40)], []byte(body))
	}
}

func TestReadQueryResponseLimits(t *testing.T) {
	body := []byte(`{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"s":"a"},"values":[[1,"1"],[2,"2"],[3,"3"]]},` +
		`{"metric":{"s":"b"},"values":[[1,"1"],[2,"2"]]}]}}`)
	f := func(lim ResponseLimits, want string) {
		t.Helper()
		for how, r := range readers(body) {
			ss, err := ReadQueryResponse(r, lim)
			if want == "" {
				if err != nil || len(ss) != 2 {
					t.Fatalf("%+v, read %s: %d series, %v", lim, how, len(ss), err)
				}
				continue
			}
			var le *LimitError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), want) || ss != nil {
				t.Fatalf("%+v, read %s: got %d series, %v; want a LimitError %q", lim, how, len(ss), err, want)
			}
			if lim.Bytes > 0 && le.Read > lim.Bytes+1 {
				t.Fatalf("%+v, read %s: read %d bytes past the limit", lim, how, le.Read)
			}
		}
	}
	n := int64(len(body))
	f(ResponseLimits{Bytes: n, Series: 2, Points: 5}, "")
	f(ResponseLimits{Bytes: -1, Series: -1, Points: -1}, "")
	f(ResponseLimits{Bytes: n - 1}, fmt.Sprintf("response refused: past the bytes limit of %d; stopped reading after %d bytes of the body", n-1, n))
	f(ResponseLimits{Bytes: 10}, "past the bytes limit of 10; stopped reading after 11 bytes")
	f(ResponseLimits{Series: 1}, "response refused: past the series limit of 1; stopped reading after")
	f(ResponseLimits{Points: 4}, "response refused: past the points limit of 4; stopped reading after")
	f(ResponseLimits{Points: 2}, "past the points limit of 2")

	// Points the caller already holds count against the limit.
	if _, err := readQueryResponse(bytes.NewReader(body), ResponseLimits{Points: 7}, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := readQueryResponse(bytes.NewReader(body), ResponseLimits{Points: 7}, 3); err == nil {
		t.Fatal("3 points held and 5 read passed a limit of 7")
	}
}

func TestReadQueryResponseReaderError(t *testing.T) {
	body := []byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}}`)
	boom := errors.New("connection reset by peer")
	for _, cut := range []int{0, 10, len(body) - 1, len(body)} {
		r := io.MultiReader(bytes.NewReader(body[:cut]), iotest.ErrReader(boom))
		if _, err := ReadQueryResponse(r, ResponseLimits{}); err != boom {
			t.Fatalf("cut at %d: got %v, want the reader's error", cut, err)
		}
	}
}
