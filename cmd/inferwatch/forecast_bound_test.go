package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// A forecast rule with hw_log on NAB's disk write bytes publishes points within twice the range seen beyond it.
func TestRunawayTrendBoundedThroughTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	file := sharedFile(t, "nab/data/realAWSCloudwatch/ec2_disk_write_bytes_c0d644.csv")
	all, err := ingest.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1458
	vs := all[0].Values[:n]
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	bound := hi + 2*(hi-lo)
	end := time.Now().Truncate(5 * time.Minute)
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = end.Add(time.Duration(i-n+1) * 5 * time.Minute).UnixMilli()
	}
	vm := localvm.Run(t)
	importSeries(t, vm, ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "disk_write_bytes"}}, Timestamps: ts, Values: vs})
	srv, nc := natsClient(t)
	cfg := filepath.Join(t.TempDir(), "disk.yml")
	conf := "source: {url: " + vm.URL() + "}\ngroups:\n  - name: g\n    interval: 5m\n    rules:\n" +
		"      - name: disk\n        forecast: {expr: disk_write_bytes, step: 5m, history: 7d, horizon: 1h, model: hw_log}\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	got, errOut := forecastsOfOneRun(t, nc, srv.ClientURL(), cfg, "inferwatch.forecasts.disk")
	if len(got) != 1 {
		t.Fatalf("%d forecasts, want 1\n%s", len(got), errOut)
	}
	d := got[0]
	if d.Model != "hw_log" || len(d.Points) != 12 {
		t.Fatalf("model %q, %d points; want hw_log, 12", d.Model, len(d.Points))
	}
	var top float64
	for _, p := range d.Points {
		top = max(top, float64(p.Mean))
	}
	t.Logf("samples up to %.3g; highest point %.3g (bound %.3g), peak %.3g", hi, top, bound, float64(d.Peak))
	if top > 1.01*bound || float64(d.Peak) > 1.01*bound {
		t.Errorf("a point of %.3g (peak %.3g) beyond %.3g, twice the range seen beyond it", top, float64(d.Peak), bound)
	}
}
