package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// With --weekly, a file holding fifteen days of ten-minute data whose
// weekends are half as busy is forecast by a weekly model (alone or in a
// combination); without it the forecaster keeps a week and cannot be.
func TestForecastWeeklyFlag(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i := range 15 * 144 {
		lvl := 200.0
		if i/144%7 >= 5 {
			lvl = 100
		}
		v := lvl * (1 + 0.5*math.Sin(2*math.Pi*float64(i)/144)) * (1 + 0.02*rng.NormFloat64())
		fmt.Fprintf(&b, "%d,%g\n", 1_700_000_000+int64(i)*600, v)
	}
	file := filepath.Join(t.TempDir(), "weekly.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		weekly bool
	}{{nil, false}, {[]string{"--weekly"}, true}} {
		code, _, errOut := runCmd(t, context.Background(), append([]string{"forecast", "--input", file}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut)
		}
		_, after, _ := strings.Cut(errOut, ", model ")
		model, _, _ := strings.Cut(after, ", peak")
		if strings.Contains(model, "hw_weekly") != c.weekly {
			t.Errorf("%v: model %q; want a weekly one %v\n%s", c.args, model, c.weekly, errOut)
		}
	}
}

// A forecast rule with 15 days of history fetches it in several requests and forecasts with a weekly model; with 7 it cannot.
func TestWeeklyForecastThroughTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	vm := localvm.Run(t)
	end := time.Now().Truncate(time.Minute)
	const n = 16 * 1440
	rng := rand.New(rand.NewPCG(5, 5))
	ts := make([]int64, n)
	vs := make([]float64, n)
	for i := range n {
		lvl := 200.0
		if i/1440%7 >= 5 {
			lvl = 100
		}
		ts[i] = end.Add(time.Duration(i-n+1) * time.Minute).UnixMilli()
		vs[i] = lvl * (1 + 0.5*math.Sin(2*math.Pi*float64(i)/1440)) * (1 + 0.02*rng.NormFloat64())
	}
	importSeries(t, vm, ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "llm_requests_per_second"}, {Name: "model", Value: "m"}}, Timestamps: ts, Values: vs})
	srv, nc := natsClient(t)
	for _, c := range []struct {
		history string
		weekly  bool
	}{{"15d", true}, {"7d", false}} {
		cfg := filepath.Join(t.TempDir(), "weekly.yml")
		body := "source: {url: " + vm.URL() + "}\ngroups:\n  - name: g\n    interval: 1m\n    rules:\n" +
			"      - name: rps\n        forecast: {expr: llm_requests_per_second, step: 1m, history: " + c.history + ", horizon: 10m}\n"
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _ := forecastsOfOneRun(t, nc, srv.ClientURL(), cfg, "inferwatch.forecasts.rps")
		if len(got) != 1 {
			t.Fatalf("history %s: %d forecasts, want 1", c.history, len(got))
		}
		d := got[0]
		if strings.Contains(d.Model, "hw_weekly") != c.weekly || d.Fallback != "" || len(d.Points) != 10 {
			t.Errorf("history %s: model %q, fallback %q, %d points; want a weekly model %v", c.history, d.Model, d.Fallback, len(d.Points), c.weekly)
		}
		t.Logf("history %s: model %s, peak %.1f", c.history, d.Model, float64(d.Peak))
	}
}

// forecastsOfOneRun runs the daemon once with cfg, publishing to the NATS
// server at url, and returns the forecasts published on subject (read
// through nc) and the daemon's stderr; a run that fails fails the test.
func forecastsOfOneRun(t *testing.T, nc *nats.Conn, url, cfg, subject string) ([]alerting.ForecastData, string) {
	t.Helper()
	var mu sync.Mutex
	var got []alerting.ForecastData
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var ev struct {
			Data alerting.ForecastData `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Error(err)
		}
		mu.Lock()
		got = append(got, ev.Data)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, context.Background(), "run", "--config", cfg, "--once", "--nats.url", url, "--web.listen-address", "")
	if code != 0 {
		t.Fatalf("inferwatch run --config %s exited %d:\n%s", cfg, code, errOut)
	}
	nc.Flush()
	time.Sleep(100 * time.Millisecond)
	sub.Unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(got), errOut
}
