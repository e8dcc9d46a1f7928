package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// withCache decodes body as a query response (or, with export, export
// lines) through lc, in chunks, through a window of size bytes.
func withCache(lc *labelCache, body []byte, export bool, sizes []int, size int) ([]Series, error) {
	d := newReadDecoder(&chunkReader{b: body, sizes: sizes}, ResponseLimits{}, 0, size)
	d.lc = lc
	if export {
		return d.exportLines(nil)
	}
	return d.response()
}

// sameError tells whether two decode errors say the same: the same offset
// and reason (the bytes a DecodeError quotes after a "metric" object read
// from the cache's copy may be fewer).
func sameError(a, b error) bool {
	var da, db *DecodeError
	if errors.As(a, &da) && errors.As(b, &db) {
		return da.Offset == db.Offset && da.Reason == db.Reason
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestLabelCacheDecodesAsWithout(t *testing.T) {
	bodies := []struct {
		body   string
		export bool
	}{
		{string(benchBody(30, 3)), false},
		{exportBody, true},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"b":"2","a":"1"},"values":[[1,"1"]]},{"metric":{"b":"2","a":"1"},"values":[[2,"2"]]},{"metric":{"a":"\u00e9\n","z":""},"metric":{"c":"3"},"values":[]}]}}`, false},
		{`{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"],"metric":{"a":"b"}},{"metric":{"a":1},"value":[1,"1"]}]}}`, false},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b","c":{"d":"e"}},"values":[]}]}}`, false},
		{`{"metric":{"a":"b"},"values":[1],"timestamps":[1]}` + "\n" + `{"metric":{"a":"b"` + strings.Repeat(`,"x`+"\x01"+`":"y"`, 2) + `},"values":[1],"timestamps":[1]}`, true},
		{`{"metric":{"a":"` + strings.Repeat("v", 3*readBufSize) + `"},"values":[1],"timestamps":[1]}` + "\n", true},
	}
	for _, tc := range bodies {
		body := []byte(tc.body)
		var want []Series
		var wantErr error
		if tc.export {
			want, wantErr = ReadExport(bytes.NewReader(body), ResponseLimits{})
		} else {
			want, wantErr = ReadQueryResponse(bytes.NewReader(body), ResponseLimits{})
		}
		lc := newLabelCache(1 << 10)
		for round, sizes := range [][]int{nil, {3, 0, 7, 1}, {31, 32, 33}, nil} {
			for _, size := range []int{1, 7, readBufSize} {
				got, err := withCache(lc, body, tc.export, sizes, size)
				if !sameError(err, wantErr) || !sameSeries(got, want) {
					t.Fatalf("%.60q, round %d, window %d: %v\n got %+v\nwant %v %+v", tc.body, round, size, err, got, wantErr, want)
				}
			}
		}
	}
}

// TestLabelCacheShares: a series met again gets the labels of the first
// answer, not a copy; a series not met for a whole generation is dropped.
func TestLabelCacheShares(t *testing.T) {
	lc := newLabelCache(4)
	line := func(pod string) []byte {
		return []byte(`{"metric":{"__name__":"up","pod":"` + pod + `"},"values":[1],"timestamps":[1]}` + "\n")
	}
	a1, err := withCache(lc, line("a"), true, nil, readBufSize)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := withCache(lc, line("a"), true, nil, readBufSize)
	if err != nil {
		t.Fatal(err)
	}
	if &a1[0].Labels[0] != &a2[0].Labels[0] || a2[0].Labels.String() != `up{pod="a"}` {
		t.Fatalf("not shared: %p %p %s", &a1[0].Labels[0], &a2[0].Labels[0], a2[0].Labels)
	}
	var many []byte
	for i := range 9 {
		many = append(many, line(fmt.Sprint("p", i))...)
	}
	if _, err := withCache(lc, many, true, nil, readBufSize); err != nil {
		t.Fatal(err)
	}
	if n := lc.len(); n > 8 {
		t.Fatalf("%d entries, want at most two generations of 4", n)
	}
	a3, _ := withCache(lc, line("a"), true, nil, readBufSize)
	if &a3[0].Labels[0] == &a1[0].Labels[0] {
		t.Fatal("an entry not met for a whole generation was kept")
	}
}

// TestLabelCacheForgetsStoppedSeries: a generation lasts at most
// labelCacheAge, so the labels of series no longer met are dropped within
// two of them however few series come, and those met go on shared.
func TestLabelCacheForgetsStoppedSeries(t *testing.T) {
	lc := newLabelCache(1 << 10)
	now := lc.born
	lc.now = func() time.Time { return now }
	line := func(pod string) []byte {
		return []byte(`{"metric":{"__name__":"up","pod":"` + pod + `"},"values":[1],"timestamps":[1]}` + "\n")
	}
	live, err := withCache(lc, line("live"), true, nil, readBufSize)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := withCache(lc, line(fmt.Sprint("gone-", i)), true, nil, readBufSize); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		now = now.Add(labelCacheAge)
		again, err := withCache(lc, line("live"), true, nil, readBufSize)
		if err != nil {
			t.Fatal(err)
		}
		if &again[0].Labels[0] != &live[0].Labels[0] {
			t.Fatal("a series met every generation was decoded again")
		}
	}
	if n := lc.len(); n > 2 {
		t.Fatalf("%d entries two generations on, want the live series' only (in one generation or both)", n)
	}
}
