package ingest

import (
	"slices"
	"strings"
	"testing"
)

func TestParseKneeCurve(t *testing.T) {
	c, q, err := ParseKneeCurve([]byte("\uFEFFconcurrency,qps\r\n1,10\r\n\r\n\"2\",20,x\r\n3,25\r\n"), "k.csv", 3)
	if err != nil || !slices.Equal(c, []float64{1, 2, 3}) || !slices.Equal(q, []float64{10, 20, 25}) {
		t.Fatalf("got %v, %v, %v; want [1 2 3], [10 20 25]", c, q, err)
	}
	for _, tc := range []struct{ data, want string }{
		{"", "k.csv: no rows"},
		{"c,q\n1,2\n", "k.csv: 1 row after the header on line 1, need at least 3"},
		{"1,2\n2\n", "k.csv:2: row has 1 column"},
		{"1,2\nx,3\n", `k.csv:2: concurrency "x" (column 1) is not a number`},
		{"1,2\n2,NaN\n", `k.csv:2: qps "NaN" (column 2) is not a finite number`},
		{"1,2\n2,-3\n", "k.csv:2: qps -3 (column 2) is negative"},
	} {
		if _, _, err := ParseKneeCurve([]byte(tc.data), "k.csv", 3); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.data, err, tc.want)
		}
	}
}
