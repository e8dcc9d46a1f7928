package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// exported reads what VictoriaMetrics holds for the series selector match,
// from /api/v1/export: one entry per series, with its labels and values.
func exported(t *testing.T, vm *localvm.VM, match string) []struct {
	Metric     map[string]string `json:"metric"`
	Values     []float64         `json:"values"`
	Timestamps []int64           `json:"timestamps"`
} {
	t.Helper()
	// Samples just imported are searchable after the next flush.
	if resp, err := http.Get(vm.URL() + "/internal/force_flush"); err == nil {
		resp.Body.Close()
	}
	// Forecasts lie at their target times, ahead of now: the export's end
	// is an hour ahead.
	resp, err := http.Get(vm.URL() + "/api/v1/export?match[]=" + url.QueryEscape(match) +
		"&end=" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export %s: %s", match, resp.Status)
	}
	var out []struct {
		Metric     map[string]string `json:"metric"`
		Values     []float64         `json:"values"`
		Timestamps []int64           `json:"timestamps"`
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var s struct {
			Metric     map[string]string `json:"metric"`
			Values     []float64         `json:"values"`
			Timestamps []int64           `json:"timestamps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The daemon writes scores, bands and forecasts back to the store, named and labelled as docs/writeback.md says.
func TestRunOnceWritesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	vm := liveVM(t)
	srv := natstest.Start(t)
	now := time.Now().Truncate(time.Second)
	spikeAt := now.Add(-3 * time.Second)
	if spikeAt.Second() == 0 {
		// The forecast rule's one-minute grid would read the spike as its
		// last point: keep it off the minute.
		spikeAt = spikeAt.Add(-time.Second)
	}
	liveSeries(t, vm, now.Add(-30*time.Minute), now, func(ts time.Time) float64 {
		if ts.Equal(spikeAt) {
			return 50
		}
		return 10 + 0.1*float64(ts.Unix()%3)
	})
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source: {url: %s, evaluation_delay: 0s}
nats: {url: %s, outbox_dir: none}
writeback:
  url: %s
  horizons: [5m]
groups:
  - name: latency
    interval: 1s
    rules:
      - name: ttft_spike
        expr: ttft
        step: 1s
        lookback: 10m
        detector: {name: sigma, k: 4, min_points: 30}
  - name: traffic
    interval: 1m
    rules:
      - name: ttft_outlook
        forecast: {expr: ttft, step: 1m, history: 30m, horizon: 10m, model: naive}
`, vm.URL(), srv.ClientURL(), vm.URL())), 0o644); err != nil {
		t.Fatal(err)
	}
	waitPast(now)
	runOnce(t, cfg, "--backfill", "1m")

	scores := exported(t, vm, `anomaly_score{for="ttft_spike"}`)
	if len(scores) != 1 {
		t.Fatalf("anomaly_score: %d series, want 1: %+v", len(scores), scores)
	}
	s := scores[0]
	for k, want := range map[string]string{"for": "ttft_spike", "rule": "ttft_spike", "group": "latency", "metric": "ttft", "pod": "p0"} {
		if s.Metric[k] != want {
			t.Errorf("anomaly_score label %s=%q, want %q (%v)", k, s.Metric[k], want, s.Metric)
		}
	}
	var atSpike float64
	var others int
	for i, ts := range s.Timestamps {
		if ts == spikeAt.UnixMilli() {
			atSpike = s.Values[i]
		} else if s.Values[i] >= 1 {
			others++
		}
	}
	if atSpike < 1 {
		t.Errorf("anomaly_score at the spike = %v, want ≥ 1 (scores %v)", atSpike, s.Values)
	}
	if others != 0 {
		t.Errorf("%d points besides the spike scored ≥ 1", others)
	}
	values := exported(t, vm, `y{for="ttft_spike"}`)
	if len(values) != 1 {
		t.Fatalf("y: %d series, want 1", len(values))
	}
	for i, ts := range values[0].Timestamps {
		if ts == spikeAt.UnixMilli() && values[0].Values[i] != 50 {
			t.Errorf("y at the spike = %v, want the value judged, 50", values[0].Values[i])
		}
	}
	for _, name := range []string{"yhat", "yhat_lower", "yhat_upper"} {
		if got := exported(t, vm, name+`{for="ttft_spike"}`); len(got) != 1 || len(got[0].Values) != len(s.Values) {
			t.Errorf("%s: %d series, want 1 with a point per score", name, len(got))
		}
	}

	fc := exported(t, vm, `inferwatch_predicted{rule="ttft_outlook"}`)
	kinds := map[string]float64{}
	for _, f := range fc {
		if f.Metric["horizon"] != "5m" || f.Metric["at"] != "target" || f.Metric["group"] != "traffic" {
			t.Errorf("forecast series %v: want horizon 5m (the only one asked for), at target, group traffic", f.Metric)
		}
		if len(f.Values) != 1 {
			t.Errorf("forecast series %v: %d samples, want 1", f.Metric, len(f.Values))
			continue
		}
		if ahead := time.UnixMilli(f.Timestamps[0]).Sub(now); ahead < 4*time.Minute || ahead > 6*time.Minute {
			t.Errorf("forecast series %v lies %v ahead of now, want about the horizon, 5m", f.Metric, ahead)
		}
		kinds[f.Metric["kind"]] = f.Values[0]
	}
	mean, lo, hi := kinds["yhat"], kinds["yhat_lower"], kinds["yhat_upper"]
	if len(kinds) != 3 || !(lo <= mean && mean <= hi) || math.Abs(mean-10.1) > 0.2 {
		t.Errorf("forecast figures %v: want yhat_lower ≤ yhat ≤ yhat_upper around 10.1", kinds)
	}
	if strings.Contains(fmt.Sprint(fc), `"10m"`) {
		t.Errorf("a horizon not asked for was written: %v", fc)
	}
}
