package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBacktestScaleInputPointsToArrivals: a log of requests given as
// --input is refused with the flag that reads it.
func TestBacktestScaleInputPointsToArrivals(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log.csv")
	if err := os.WriteFile(file, []byte("TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.6,1\n2023-11-16 18:15:46.6,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, context.Background(), "backtest", "scale", "--input", file, "--capacity", "1")
	if want := "log.csv:3: timestamp 2023-11-16 18:15:46.6 repeats line 2's 2023-11-16 18:15:46.6; rows must not repeat a timestamp; a log of requests, one a row, is read with --arrivals"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
}

// TestBacktestScaleRelativeTimesNoted: times counted from a log's start
// carry no unit, so the report says how it read them and how to read them
// otherwise; unix times and an explicit unit need no note.
func TestBacktestScaleRelativeTimesNoted(t *testing.T) {
	dir := t.TempDir()
	var rel, abs strings.Builder
	rel.WriteString("timestamp,input_length\n")
	abs.WriteString("timestamp,input_length\n")
	for i := range 7200 { // a request every 5 s for 10 h, or 36 s read as ms
		fmt.Fprintf(&rel, "%d,100\n", i*5)
		fmt.Fprintf(&abs, "%d,100\n", 1700000000+i*5)
	}
	relFile, absFile := filepath.Join(dir, "rel.csv"), filepath.Join(dir, "abs.csv")
	if err := os.WriteFile(relFile, []byte(rel.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(absFile, []byte(abs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const note = "note: "
	code, _, errOut := runCmd(t, context.Background(), "backtest", "scale", "--arrivals", relFile, "--capacity", "1")
	want := relFile + ": the times count from 1970-01-01T00:00:00Z, read as seconds: the log spans 9h59m; if they are milliseconds, give --time-unit ms"
	if code != 0 || !strings.Contains(errOut, note+want) {
		t.Errorf("relative seconds: exit %d, stderr %q; want 0 and %q", code, errOut, want)
	}
	for _, args := range [][]string{{"--arrivals", relFile, "--time-unit", "s"}, {"--arrivals", relFile, "--time-unit", "ms", "--step", "1s"}, {"--arrivals", absFile}} {
		code, _, errOut := runCmd(t, context.Background(), append([]string{"backtest", "scale", "--capacity", "1"}, args...)...)
		if code != 0 || strings.Contains(errOut, note) {
			t.Errorf("%v: exit %d, stderr %q; want 0 and no note", args, code, errOut)
		}
	}
}

// TestBacktestScaleReaderErrorsNameTheFlag: an error reading --arrivals
// or --gentd26 names the flag, the file, the line and the field, and the
// flag that reads the log otherwise where one would.
func TestBacktestScaleReaderErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	log := writeText(t, dir, "requests.csv", "id,ts\n1,2026-01-01T00:00:00Z\n2,2026-13-01\n")
	jsonl := writeText(t, dir, "requests.jsonl", `{"ts": 1700000000}`+"\n"+`{"path": "/v1", "status": 200}`+"\n")
	qps := writeText(t, dir, "qps.csv", "timestamp_anon,value,container_ip,request_type\n0,1,a,x\n57,oops,a,x\n")
	qpsX := writeText(t, dir, "qps-x.csv", "timestamp_anon,value,container_ip,request_type\n0,1,a,x\n57,1,a,x\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--arrivals", log}, "--arrivals " + log + `:3: field "ts": "2026-13-01" is not a time: want unix seconds, integer unix milliseconds (from 1e11) or YYYY-MM-DD[T ]hh:mm:ss[.fff][Z|±hh:mm]; numbers in other units need --time-unit s or ms`},
		{[]string{"--arrivals", log, "--time-unit", "s"}, "--arrivals " + log + `:2: field "ts": "2026-01-01T00:00:00Z" is not a time: want a number of seconds` + "\n"},
		{[]string{"--arrivals", jsonl}, "--arrivals " + jsonl + ":2: no time field (timestamp, time, ts, @timestamp, arrival_time, start_time, any case); the object has path, status: name the time's field with --time-field"},
		{[]string{"--arrivals", log, "--time-field", "when"}, "--arrivals " + log + `:1: no time field "when" in the header "id,ts"` + "\n"},
		{[]string{"--arrivals", filepath.Join(dir, "nosuch.csv")}, "--arrivals " + filepath.Join(dir, "nosuch.csv") + ": no such file or directory"},
		{[]string{"--gentd26", qps}, "--gentd26 " + qps + `:3: field "value": "oops" is not a finite number`},
		{[]string{"--gentd26", qpsX, "--request-type", "y"}, "--gentd26 " + qpsX + `: no row of request_type "y"; the file has "x" (2 rows)`},
	} {
		code, _, errOut := runCmd(t, context.Background(), append([]string{"backtest", "scale", "--capacity", "1"}, tc.args...)...)
		if want := "inferwatch backtest scale: " + tc.want; code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, errOut, want)
		}
	}
}
