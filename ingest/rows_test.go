package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadRowsOrder(t *testing.T) {
	dir := t.TempDir()
	f := func(name, text string, o RowsOptions, wantErr string, wantTS ...int64) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadRows(path, o)
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("%s: error %v, want %q", name, err, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, ts := range wantTS {
			if rows.Timestamps[i] != ts*1000 {
				t.Fatalf("%s: timestamps %v, want %v s", name, rows.Timestamps, wantTS)
			}
		}
	}
	f("back.csv", "timestamp,value\n1,1\n3,2\n2,3\n", RowsOptions{}, "back.csv:4: timestamp 2 is before line 3's 3 (rows must be in time order)")
	f("back-hint.csv", "timestamp,value\n1,1\n3,2\n2,3\n", RowsOptions{OrderHint: "sort them"}, "(sort them)")
	f("repeat.csv", "timestamp,value\n1,1\n1,2\n", RowsOptions{}, "repeat.csv:3: timestamp 1 repeats line 2's 1; rows must not repeat a timestamp")
	f("repeat-hint.csv", "timestamp,value\n1,1\n1,2\n", RowsOptions{RepeatHint: "keep them"}, "; keep them")
	f("sorted.csv", "timestamp,value\n3,1\n1,2\n1,3\n", RowsOptions{Sort: true, AllowDuplicates: true}, "", 1, 1, 3)
	f("two.jsonl", `{"metric":{"__name__":"a"},"values":[1],"timestamps":[1000]}`+"\n"+`{"metric":{"__name__":"b"},"values":[1],"timestamps":[1000]}`+"\n",
		RowsOptions{}, "holds 2 series (a{}, b{})")
}

func TestReadOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.jsonl")
	data := `{"metric":{"__name__":"a","pod":"p0"},"values":[1,2,3,4],"timestamps":[0,60000,180000,120000]}` + "\n" +
		`{"metric":{"__name__":"a","pod":"p1"},"values":[1,2],"timestamps":[0,60000]}` + "\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		selector, wantErr string
	}{
		{"", "holds 2 series, need exactly one: a{pod=\"p0\"}, a{pod=\"p1\"}; pick one with --sel SELECTOR"},
		{`{pod="p2"}`, "no series matches --sel {pod=\"p2\"}"},
		{`a`, "2 series match --sel a, need exactly one"},
		{`{pod="p1"}`, "has 2 finite samples (0 dropped as NaN, Inf or stale), need at least 3"},
	} {
		_, _, err := ReadOne(path, OneOptions{Selector: tc.selector, SelectorName: "--sel", MinSamples: 3})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("selector %q: error %v, want %q", tc.selector, err, tc.wantErr)
		}
	}
	s, info, err := ReadOne(path, OneOptions{Selector: `{pod="p0"}`, SelectorName: "--sel", MinSamples: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by time: 0, 60, 120, 180 s; the median spacing is 60 s.
	if got := s.Values; got[2] != 4 || got[3] != 3 || info.MedianStep != 60_000 || info.Samples != 4 {
		t.Errorf("values %v, info %+v; want [1 2 4 3], 4 samples, a median step of 60000 ms", got, info)
	}
}
