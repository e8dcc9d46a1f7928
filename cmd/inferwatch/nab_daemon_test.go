package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// The daemon's findings on the NAB files a store holds unchanged fire at the rows `inferwatch detect` marks, with its scores.
func TestNABThroughTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics, NATS and the daemon")
	}
	files, err := filepath.Glob(filepath.Join(nabData, "data", "*", "*.csv"))
	if err != nil || len(files) == 0 {
		t.Skipf("NAB data not found at %s", nabData)
	}
	const step = 5 * time.Minute
	const day = 24 * time.Hour
	now := time.Now()
	var lines bytes.Buffer
	var imported []string
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ingest.ReadCSV(bytes.NewReader(data), path, ingest.CSVOptions{})
		if err != nil {
			continue // repeats or steps back: not what a store returns
		}
		ts := c.Series.Timestamps
		regular := true
		for i, x := range ts {
			regular = regular && x%step.Milliseconds() == 0 && (i == 0 || x-ts[i-1] == step.Milliseconds())
		}
		if !regular {
			continue
		}
		// Whole days, so the series keeps its time of day; it ends at most
		// a day before now and at least two hours.
		last := time.UnixMilli(ts[len(ts)-1])
		shift := now.Add(-2*time.Hour).Sub(last) / day * day
		key := filepath.Base(filepath.Dir(path)) + "/" + filepath.Base(path)
		rec := struct {
			Metric     map[string]string `json:"metric"`
			Values     []float64         `json:"values"`
			Timestamps []int64           `json:"timestamps"`
		}{Metric: map[string]string{"__name__": "nab", "file": key}, Values: c.Series.Values}
		for _, x := range ts {
			rec.Timestamps = append(rec.Timestamps, x+shift.Milliseconds())
		}
		if err := json.NewEncoder(&lines).Encode(rec); err != nil {
			t.Fatal(err)
		}
		imported = append(imported, key)
	}
	if len(imported) < 10 {
		t.Fatalf("only %d regular files in the subset: %v", len(imported), imported)
	}
	vm := localvm.Run(t)
	if err := vm.Import(context.Background(), &lines); err != nil {
		t.Fatal(err)
	}

	// The samples as the store holds them: the offline command reads these.
	dir := t.TempDir()
	held := exportSeries(t, vm.URL(), dir)
	if len(held) != len(imported) {
		t.Fatalf("the store holds %d series, %d were imported", len(held), len(imported))
	}

	cfg := filepath.Join(dir, "nab.yml")
	if err := os.WriteFile(cfg, []byte(`source:
  url: `+vm.URL()+`
groups:
  - name: nab
    interval: 5m
    rules:
      - name: nab
        expr: nab
        step: 5m
`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t)
	bin := daemonBinary(t)
	cmd := exec.Command(bin, "run", "--config", cfg, "--once", "--backfill", "20d",
		"--nats.url", srv.ClientURL(), "--web.listen-address", "")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("inferwatch run --once: %v\n%s", err, out)
	}
	next := natstest.Collect(t, srv.ClientURL(), "inferwatch.findings.>")
	byFile := map[string][]alerting.Finding{}
	total := 0
	for {
		msgs := next(1000, 2*time.Second)
		for _, m := range msgs {
			var ev struct {
				Data alerting.Finding `json:"data"`
			}
			if err := json.Unmarshal(m.Data(), &ev); err != nil {
				t.Fatalf("undecodable finding: %v", err)
			}
			byFile[ev.Data.Labels["file"]] = append(byFile[ev.Data.Labels["file"]], ev.Data)
			total++
		}
		if len(msgs) == 0 {
			break
		}
	}
	if total == 0 {
		t.Fatal("the daemon published no finding")
	}

	detections := 0
	for _, s := range held {
		key := s.Labels.Get("file")
		csv := filepath.Join(dir, strings.NewReplacer("/", "_").Replace(key))
		var b strings.Builder
		b.WriteString("timestamp,value\n")
		for i, x := range s.Timestamps {
			fmt.Fprintf(&b, "%s,%s\n", ingest.FormatUnixMillis(x), strconv.FormatFloat(s.Values[i], 'g', -1, 64))
		}
		if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCmd(t, context.Background(), "detect", "--input", csv)
		if code != 0 {
			t.Fatalf("%s: detect exited %d: %s", key, code, errOut)
		}
		rows := parseDetectOutput(t, out)
		var want []int64
		scoreAt := map[int64]float64{}
		for i, r := range rows {
			scoreAt[s.Timestamps[i]], _ = strconv.ParseFloat(r[2], 64)
			if r[3] == "1" {
				want = append(want, s.Timestamps[i])
			}
		}
		var got []int64
		for _, f := range byFile[key] {
			got = append(got, f.WindowEnd.UnixMilli())
			if sc, ok := scoreAt[f.WindowEnd.UnixMilli()]; !ok || math.Abs(sc-f.Score) > 1e-9*max(1, math.Abs(sc)) {
				t.Errorf("%s: the finding at %v scores %v, detect %v", key, f.WindowEnd, f.Score, sc)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the daemon's findings fired at %v, detect marks %v", key, times(got), times(want))
		}
		detections += len(want)
	}
	t.Logf("%d files, %d findings, each where detect marks one", len(held), detections)
}

// exportSeries reads every series of the store back through
// /api/v1/export into a file of dir, and returns them.
func exportSeries(t *testing.T, base, dir string) []ingest.Series {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/export?" + url.Values{"match[]": {`{__name__="nab"}`}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %v %d %s", err, resp.StatusCode, body)
	}
	path := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err := ingest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

func times(ms []int64) []string {
	out := make([]string, len(ms))
	for i, x := range ms {
		out[i] = time.UnixMilli(x).UTC().Format("01-02T15:04")
	}
	return out
}
