package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// --resample STEP: each step on the epoch's grid is the mean of its samples (--counts: their sum); without it, the file is refused.
func TestResample(t *testing.T) {
	dir := t.TempDir()
	// 1700000100 is a multiple of 300.
	file := writeText(t, dir, "uneven.csv", "timestamp,value\n"+
		"1700000100,10\n"+ // step 0
		"1700000390,20\n"+ // step 0: 290 s in
		"1700001000,60\n"+ // step 3, before the rows of step 2
		"1700000710,30\n"+ // step 2 (step 1 has none)
		"1700000710,50\n"+ // step 2 again
		"1700001605,70\n") // step 5 (step 4 has none)
	// The parts of a sum share the epoch's grid: the first part's steps 0
	// and 1, the second's steps 1 and 2, each 0 outside its own range.
	pdir := filepath.Join(dir, "parts")
	if err := os.Mkdir(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeText(t, pdir, "a.csv", "timestamp,value\n1700000130,1\n1700000170,3\n1700000420,5\n")
	writeText(t, pdir, "b.csv", "timestamp,value\n1700000599,10\n1700000777,20\n")
	total, parts, err := readParts(filepath.Join(pdir, "*.csv"), 5*time.Minute, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if total.Start != 1_700_000_100_000 || len(parts) != 2 || !slices.Equal(total.Values, []float64{2, 15, 20}) || total.Resampled != 5 || total.Crowded != 1 {
		t.Fatalf("a sum of uneven parts: start %d, %v (%d samples, %d crowded); want 1700000100, [2 15 20]", total.Start, total.Values, total.Resampled, total.Crowded)
	}

	for _, tc := range []struct{ name, data, want string }{
		{"out of order", "", "uneven.csv:5: timestamp 1700000710 is before line 4's"},
		{"uneven", "timestamp,value\n1700000100,1\n1700000400,2\n1700000700,3\n1700001090,4\n",
			"uneven.csv:5: timestamp 1700001090 is off the grid of the file's step 5m0s from its first sample by 1m30s, more than 0.25 of a step; give --resample 5m to average the samples in each step of 5m"},
		{"a repeated time", "timestamp,value\n1700000100,1\n1700000400,2\n1700000400,2\n1700000700,3\n",
			"uneven.csv:4: timestamp 1700000400 repeats line 3's 1700000400; rows must not repeat a timestamp; give --resample STEP"},
	} {
		in := file
		if tc.data != "" {
			in = writeText(t, t.TempDir(), "uneven.csv", tc.data)
		}
		if code, _, errOut := runCmd(t, context.Background(), "forecast", "--input", in); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s without --resample: exit %d, %s; want 1 and %q", tc.name, code, errOut, tc.want)
		}
	}
	code, out, errOut := runCmd(t, context.Background(), "forecast", "--input", file, "--resample", "5m", "--model", "naive")
	if code != 0 || !strings.Contains(errOut, "note: "+file+": 6 samples were taken into 6 steps of 5m0s, 2 of which held more than one") {
		t.Fatalf("forecast --resample 5m: exit %d\n%s", code, errOut)
	}
	// The forecast is from the last step, 70.
	if rows := strings.Split(strings.TrimSpace(out), "\n"); len(rows) < 2 || strings.Split(rows[1], ",")[0] != "1700001600" || strings.Split(rows[1], ",")[2] != "70" {
		t.Errorf("forecast --resample 5m from the last step: %q", out)
	}
	if code, _, errOut := runCmd(t, context.Background(), "forecast", "--input", file, "--resample", "0s"); code != 2 || !strings.Contains(errOut, "--resample") {
		t.Errorf("--resample 0s: exit %d, %s", code, errOut)
	}

	// backtest scale: with --counts the sums, per second, are replayed.
	long := filepath.Join(dir, "long.csv")
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i := range 3 * 288 {
		// Two rows a 5-minute step, 100 s and 200 s in: counts of 30 each.
		for _, s := range []int64{100, 200} {
			b.WriteString(strconv.FormatInt(1_700_000_100+int64(i)*300+s, 10) + ",30\n")
		}
	}
	if err := os.WriteFile(long, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	series := filepath.Join(dir, "replayed.csv")
	code, _, errOut = runCmd(t, context.Background(), "backtest", "scale", "--input", long, "--resample", "5m", "--counts", "--capacity", "0.1", "--write-series", series)
	if code != 0 {
		t.Fatalf("backtest scale --resample 5m --counts: exit %d\n%s", code, errOut)
	}
	data, err := os.ReadFile(series)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(rows) != 1+3*288 {
		t.Fatalf("%d rows replayed, want %d", len(rows)-1, 3*288)
	}
	for _, row := range rows[1:] {
		// 60 requests a 300 s step: 0.2 req/s.
		if v, err := strconv.ParseFloat(strings.Split(row, ",")[1], 64); err != nil || math.Abs(v-0.2) > 1e-12 {
			t.Fatalf("replayed %q, want 0.2 req/s", row)
		}
	}
	if code, _, errOut := runCmd(t, context.Background(), "backtest", "scale", "--arrivals", long, "--resample", "5m", "--capacity", "1"); code != 2 || !strings.Contains(errOut, "--resample reads --input or --sum-of") {
		t.Errorf("--resample with --arrivals: exit %d, %s", code, errOut)
	}
}
