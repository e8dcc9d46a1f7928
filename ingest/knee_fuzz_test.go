package ingest

import (
	"math"
	"strings"
	"testing"
)

func FuzzParseKneeCurve(f *testing.F) {
	for _, s := range []string{
		"concurrency,qps\n1,10\n2,20\n3,25\n4,26\n5,26\n",
		"\uFEFF1,10\r\n2,20\r\n\r\n3,25\r\n4,26\r\n5,26,extra\r\n",
		`"1","10"` + "\n2,x\n",
		"c\n1\n",
		"1e309,1\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, q, err := ParseKneeCurve(data, "f.csv", 5)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(c) != len(q) || len(c) < 5 {
			t.Fatalf("%d concurrencies, %d qps", len(c), len(q))
		}
		for i := range c {
			if !(c[i] >= 0 && q[i] >= 0) || math.IsInf(c[i], 0) || math.IsInf(q[i], 0) {
				t.Fatalf("row %d: %v,%v", i, c[i], q[i])
			}
		}
	})
}
