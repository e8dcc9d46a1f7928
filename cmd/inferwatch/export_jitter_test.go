package main

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// TestBacktestScaleReadsARawExport: samples scraped a little off their
// 15-second schedule, written to VictoriaMetrics and read back raw from
// /api/v1/export, replay on the 15 s grid, with a note of how many moved.
func TestBacktestScaleReadsARawExport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := localvm.Run(t)
	end := time.Now().Truncate(15 * time.Second)
	const n = 960 // four hours
	rng := rand.New(rand.NewPCG(3, 4))
	ts := make([]int64, n)
	vs := make([]float64, n)
	for i := range n {
		ts[i] = end.Add(time.Duration(i-n)*15*time.Second).UnixMilli() + rng.Int64N(401) - 200 // ±200 ms
		vs[i] = 10 + 5*math.Sin(2*math.Pi*float64(i)/240) + rng.Float64()
	}
	importSeries(t, vm, ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "rps"}}, Timestamps: ts, Values: vs})
	resp, err := http.Get(vm.URL() + "/api/v1/export?" + url.Values{"match[]": {"rps"}, "start": {"0"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	export, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d, %v", resp.StatusCode, err)
	}
	file := filepath.Join(t.TempDir(), "rps.jsonl")
	if err := os.WriteFile(file, export, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, context.Background(), "backtest", "scale", "--input", file, "--peak-replicas", "4")
	if code != 0 || !strings.Contains(errOut, "note: "+file+": ") || !strings.Contains(errOut, "off the 15s grid were taken at their nearest step") ||
		!strings.Contains(out, "960 steps of 15s") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
