package nab

import (
	"strings"
	"testing"
)

func TestParseWindows(t *testing.T) {
	got, err := ParseWindows([]byte(`{"a/x.csv": [["2014-04-10 09:00:00.000000", "2014-04-10 10:00:00"], ["2014-04-10 07:15:00.000000", "2014-04-10 07:20:00.500000"]], "a/y.csv": []}`), "w.json")
	if err != nil {
		t.Fatal(err)
	}
	// 2014-04-10 07:15 UTC is unix 1397114100; sorted by start.
	want := [][2]int64{{1397114100_000, 1397114400_500}, {1397120400_000, 1397124000_000}}
	if x := got["a/x.csv"]; len(x) != 2 || x[0] != want[0] || x[1] != want[1] {
		t.Errorf("a/x.csv: %v, want %v", x, want)
	}
	if y, ok := got["a/y.csv"]; !ok || len(y) != 0 {
		t.Errorf("a/y.csv: %v, %v; want an entry without windows", y, ok)
	}
	for _, tc := range []struct{ data, want string }{
		{`[1]`, "w.json: not NAB's windows file"},
		{`{"a/x.csv": [["2014-04-10 09:00:00"]]}`, "w.json: a/x.csv: window 1 has 1 times"},
		{`{"a/x.csv": [["10 April", "2014-04-10 09:00:00"]]}`, `w.json: a/x.csv: window 1: time "10 April" is not YYYY-MM-DD hh:mm:ss`},
		{`{"a/x.csv": [["2014-04-10 09:00:00", "2014-04-10 08:00:00"]]}`, "window 1 ends (2014-04-10 08:00:00) before it starts"},
	} {
		if _, err := ParseWindows([]byte(tc.data), "w.json"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.data, err, tc.want)
		}
	}
}
