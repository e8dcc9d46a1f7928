package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sharedData is where the project's shared data sets are, seen from this
// package's directory; nabData its NAB subset.
const (
	sharedData = "../../../shared/data"
	nabData    = sharedData + "/nab"
)

// sharedFile returns the path of a shared data file or directory,
// skipping the test or benchmark when it is absent.
func sharedFile(tb testing.TB, rel string) string {
	tb.Helper()
	p := filepath.Join(sharedData, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared data not present: %v (the shared data sets live in %s beside the repository)", err, sharedData)
	}
	return p
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rampCSV writes n rows at a 5-minute step with a gentle wave, and a spike
// of height spike at row spikeAt (none when spikeAt < 0).
func rampCSV(n, spikeAt int, spike float64) string {
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	t0 := time.Date(2014, 4, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		v := 10 + float64(i%7)*0.5
		if i == spikeAt {
			v = spike
		}
		fmt.Fprintf(&b, "%s,%g\n", t0.Add(time.Duration(i)*5*time.Minute).Format("2006-01-02 15:04:05"), v)
	}
	return b.String()
}

func TestDetectBadInput(t *testing.T) {
	f := func(name, content string, want ...string) {
		t.Helper()
		path := writeFile(t, "in.csv", content)
		code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1; stderr %q", name, code, errOut)
		}
		if out != "" {
			t.Errorf("%s: wrote to stdout: %q", name, out)
		}
		for _, w := range want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q does not contain %q", name, errOut, w)
			}
		}
	}
	f("empty", "", "in.csv: no rows")
	f("header only", "timestamp,value\n", "in.csv: no parsable rows", "header on line 1")
	f("unsorted", "timestamp,value\n2014-04-01 00:00:00,1\n2014-04-01 00:10:00,2\n2014-04-01 00:05:00,3\n",
		"in.csv:4: timestamp 2014-04-01 00:05:00 is before line 3's 2014-04-01 00:10:00", "--sort")
	f("duplicate", "timestamp,value\n2014-04-01 00:00:00,1\n2014-04-01 00:05:00,2\n2014-04-01 00:05:00,3\n",
		"in.csv:4: timestamp 2014-04-01 00:05:00 repeats line 3's", "--allow-duplicates")
	f("non-numeric", "timestamp,value\n2014-04-01 00:00:00,1\n2014-04-01 00:05:00,twelve\n",
		`in.csv:3: value "twelve" is not a number`)
	f("bad timestamp", "timestamp,value\n2014-04-01 00:00:00,1\nyesterday,2\n",
		`in.csv:3: timestamp "yesterday" is not in an accepted format`)
}

func TestDetectUsageErrors(t *testing.T) {
	path := writeFile(t, "in.csv", rampCSV(50, -1, 0))
	for _, args := range [][]string{
		{"detect"},
		{"detect", "--input", path, "--detector", "nope"},
		{"detect", "--input", path, "--param", "k"},
		{"detect", "--input", path, "--param", "q=1"},
		{"detect", "--input", path, "extra"},
	} {
		if code, _, errOut := runCmd(t, context.Background(), args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
	code, _, errOut := runCmd(t, context.Background(), "detect", "--input", path, "--window", "soon")
	if code != 2 || !strings.Contains(errOut, `--window "soon"`) {
		t.Errorf("bad --window: exit %d, stderr %q", code, errOut)
	}
}

// parseDetectOutput splits detect's CSV into rows of fields.
func parseDetectOutput(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "timestamp,value,anomaly_score,is_anomaly" {
		t.Fatalf("header %q", lines[0])
	}
	var rows [][]string
	for _, l := range lines[1:] {
		rows = append(rows, strings.Split(l, ","))
	}
	return rows
}

func TestDetectFindsASpikeAndKeepsTimestampsVerbatim(t *testing.T) {
	// Timestamps in three spellings of the formats ReadCSV accepts: each
	// must come back as written.
	in := "timestamp,value\n" +
		"1396310400,10\n1396310700.000,10.5\n\"1396311000\",11\n"
	for i := 3; i < 60; i++ {
		v := "10"
		switch {
		case i == 50:
			v = "95"
		case i%2 == 1:
			v = "10.5"
		}
		in += fmt.Sprintf("%d,%s\n", 1396310400+300*i, v)
	}
	path := writeFile(t, "spike.csv", in)
	code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path, "--window", "2h")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := parseDetectOutput(t, out)
	if len(rows) != 60 {
		t.Fatalf("%d rows, want 60", len(rows))
	}
	for i, want := range []string{"1396310400", "1396310700.000", "1396311000"} {
		if rows[i][0] != want {
			t.Errorf("row %d: timestamp %q, want %q as written", i, rows[i][0], want)
		}
	}
	for i, r := range rows {
		score, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatalf("row %d: score %q", i, r[2])
		}
		if i < 10 && (score != 0 || r[3] != "0") {
			t.Errorf("row %d: scored %v/%s before the window holds min_points", i, score, r[3])
		}
		if (r[3] == "1") != (i == 50) {
			t.Errorf("row %d: value %s score %v is_anomaly %s", i, r[1], score, r[3])
		}
		if (r[3] == "1") != (score >= 1) {
			t.Errorf("row %d: is_anomaly %s disagrees with score %v", i, r[3], score)
		}
	}
}

func TestDetectNaNPassesThrough(t *testing.T) {
	in := rampCSV(40, -1, 0)
	lines := strings.Split(in, "\n")
	// Rows 20 and 30 (lines 22 and 32): NaN and an empty field.
	lines[21] = strings.Split(lines[21], ",")[0] + ",NaN"
	lines[31] = strings.Split(lines[31], ",")[0] + ","
	path := writeFile(t, "nan.csv", strings.Join(lines, "\n"))
	code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path, "--window", "1h")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := parseDetectOutput(t, out)
	if len(rows) != 40 {
		t.Fatalf("%d rows, want 40", len(rows))
	}
	for _, i := range []int{20, 30} {
		if rows[i][1] != "NaN" || rows[i][2] != "0" || rows[i][3] != "0" {
			t.Errorf("row %d: %q, want value NaN, score 0, is_anomaly 0", i, rows[i])
		}
	}
	// The rows after a NaN are scored as usual.
	if rows[21][2] == "0" {
		t.Errorf("row 21 after the NaN was not scored: %q", rows[21])
	}
}

func TestDetectAllowDuplicates(t *testing.T) {
	in := rampCSV(30, -1, 0) + "2014-04-01 02:30:00,100\n2014-04-01 02:30:00,10\n2014-04-01 02:35:00,10\n"
	path := writeFile(t, "dup.csv", in)
	code, _, errOut := runCmd(t, context.Background(), "detect", "--input", path)
	if code != 1 || !strings.Contains(errOut, "dup.csv:33:") || !strings.Contains(errOut, "--allow-duplicates") {
		t.Fatalf("without --allow-duplicates: exit %d, %s", code, errOut)
	}
	code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path, "--allow-duplicates")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := parseDetectOutput(t, out)
	if len(rows) != 33 {
		t.Fatalf("%d rows, want 33", len(rows))
	}
	// Row 30 is the spike; row 31 repeats its instant and takes its score.
	if rows[30][3] != "1" || rows[31][2] != rows[30][2] || rows[31][3] != "1" || rows[31][1] != "10" {
		t.Errorf("rows 30, 31: %q %q; want the duplicate to repeat the spike's score and decision", rows[30], rows[31])
	}
}

func TestDetectReadsExportJSONL(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"metric":{"__name__":"m"},"values":[`)
	for i := range 30 {
		if i > 0 {
			b.WriteString(",")
		}
		v := 10 + i%2
		if i == 25 {
			v = 90
		}
		fmt.Fprintf(&b, "%d", v)
	}
	b.WriteString(`],"timestamps":[`)
	for i := range 30 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%d", 1700000000000+int64(i)*30000+int64(i%2)*500)
	}
	b.WriteString("]}\n")
	path := writeFile(t, "x.jsonl", b.String())
	code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := parseDetectOutput(t, out)
	if len(rows) != 30 || rows[0][0] != "1700000000" || rows[1][0] != "1700000030.5" {
		t.Fatalf("rows %d, first timestamps %q %q", len(rows), rows[0][0], rows[1][0])
	}
	if rows[25][3] != "1" {
		t.Errorf("the spike at row 25 was not found: %q", rows[25])
	}
}

// TestDetectNAB runs detect over the largest NAB file of the subset and one
// with a duplicate timestamp.
func TestDetectNAB(t *testing.T) {
	path := filepath.Join(nabData, "data/realAWSCloudwatch/ec2_disk_write_bytes_1ef3de.csv")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skip(nabData + " is absent; the NAB corpus is read from there when present")
	}
	code, _, errOut := runCmd(t, context.Background(), "detect", "--input", path)
	if code != 1 || !strings.Contains(errOut, "ec2_disk_write_bytes_1ef3de.csv:2121:") || !strings.Contains(errOut, "--allow-duplicates") {
		t.Fatalf("the duplicate on line 2121: exit %d, %s", code, errOut)
	}
	code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path, "--allow-duplicates")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	in := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")[1:]
	rows := parseDetectOutput(t, out)
	if len(rows) != len(in) {
		t.Fatalf("%d rows out, %d in", len(rows), len(in))
	}
	for i, r := range rows {
		if want := strings.Split(in[i], ","); r[0] != want[0] {
			t.Fatalf("row %d: timestamp %q, input %q", i, r[0], want[0])
		}
	}
}

func BenchmarkDetectNAB(b *testing.B) {
	path := sharedFile(b, "nab/data/realAWSCloudwatch/ec2_disk_write_bytes_1ef3de.csv")
	for b.Loop() {
		var out, errOut strings.Builder
		if code := runMain(context.Background(), []string{"detect", "--input", path, "--allow-duplicates"}, &out, &errOut); code != 0 {
			b.Fatal(errOut.String())
		}
	}
}

// TestDetectOneRow: a single row cannot be judged, but is written.
func TestDetectOneRow(t *testing.T) {
	path := writeFile(t, "one.csv", "timestamp,value\n2014-04-01 00:00:00,1\n")
	code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path)
	if code != 0 || out != "timestamp,value,anomaly_score,is_anomaly\n2014-04-01 00:00:00,1,0,0\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestDetectRowsSteppingBack: detect refuses a file whose timestamps step
// back, naming the line and --sort; with --sort it scores the rows in time
// order, exactly as it scores the file sorted beforehand, and writes them
// in that order with their timestamps as written.
func TestDetectRowsSteppingBack(t *testing.T) {
	path := filepath.Join(stepBackCorpus, "data/synthetic/late_rows.csv")
	code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path, "--detector", "sigma")
	if want := "late_rows.csv:101: timestamp 2014-01-01 07:00:00 is before line 100's 2014-01-01 09:10:00"; code != 1 || out != "" ||
		!strings.Contains(errOut, want) || !strings.Contains(errOut, "pass --sort") {
		t.Fatalf("without --sort: exit %d, stdout %q, stderr %q; want 1 and %q naming --sort", code, out, errOut, want)
	}

	code, out, errOut = runCmd(t, context.Background(), "detect", "--input", path, "--detector", "sigma", "--sort")
	if code != 0 {
		t.Fatalf("--sort: exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	body := slices.Clone(lines[1:])
	slices.Sort(body) // YYYY-MM-DD hh:mm:ss sorts as text
	sorted := writeFile(t, "sorted.csv", lines[0]+"\n"+strings.Join(body, "\n")+"\n")
	code, want, errOut := runCmd(t, context.Background(), "detect", "--input", sorted, "--detector", "sigma")
	if code != 0 {
		t.Fatalf("the sorted file: exit %d: %s", code, errOut)
	}
	if out != want {
		t.Errorf("--sort differs from scoring the sorted file:\n%s\nwant\n%s", out, want)
	}
	rows := parseDetectOutput(t, out)
	if len(rows) != 200 {
		t.Fatalf("%d rows, want 200", len(rows))
	}
	for i, r := range rows {
		if r[0] != strings.Split(body[i], ",")[0] {
			t.Fatalf("row %d: timestamp %q, want %q", i, r[0], body[i])
		}
		// The spikes at 08:40 and 12:30 are steps 104 and 150.
		if (r[3] == "1") != (i == 104 || i == 150) {
			t.Errorf("row %d: %q", i, r)
		}
	}
}

// TestDetectSortIsStable: rows with equal timestamps keep their file order;
// sorted together they are duplicates, which need --allow-duplicates.
func TestDetectSortIsStable(t *testing.T) {
	path := writeFile(t, "in.csv", "timestamp,value\n"+
		"2014-04-01 00:00:00,1\n2014-04-01 00:10:00,2\n2014-04-01 00:05:00,3\n2014-04-01 00:10:00,4\n2014-04-01 00:15:00,5\n")
	code, _, errOut := runCmd(t, context.Background(), "detect", "--input", path, "--sort")
	if want := "in.csv:5: timestamp 2014-04-01 00:10:00 repeats line 3's 2014-04-01 00:10:00; pass --allow-duplicates"; code != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("--sort: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	code, out, errOut := runCmd(t, context.Background(), "detect", "--input", path, "--sort", "--allow-duplicates")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []string
	for _, r := range parseDetectOutput(t, out) {
		got = append(got, r[0][11:]+"="+r[1])
	}
	if want := "00:00:00=1 00:05:00=3 00:10:00=2 00:10:00=4 00:15:00=5"; strings.Join(got, " ") != want {
		t.Errorf("rows %q, want %q", got, want)
	}
}
