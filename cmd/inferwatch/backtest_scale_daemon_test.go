package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Each scale signal of the daemon's rules, on a stepped clock over the shared traces, is the replay's decision at that step.
func TestBacktestScaleDecidesAsTheDaemon(t *testing.T) {
	dir := sharedFile(t, "servegen")
	const n = 4 * 144
	// Four days of ServeGen's m-small traffic at 10-minute steps, the
	// aggregate and its 43 clients.
	t.Run("aggregate", func(t *testing.T) {
		s, err := readSeries(dir+"/aggregate_rate_language_m-small.csv", ingest.RowsOptions{}, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		decidesAsTheDaemon(t, "aggregate", [][]float64{s.Values[:n]}, false, 10*time.Minute)
	})
	t.Run("bottom-up", func(t *testing.T) {
		_, parts, err := readParts(dir+"/language/m-small/*.csv", 0, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range parts {
			parts[i] = parts[i][:n]
		}
		decidesAsTheDaemon(t, "clients", parts, true, 10*time.Minute)
	})
	// A minute's step, where the cooldown and the stable intervals span
	// several decisions: GenTD26's generative requests, 22.8 hours.
	t.Run("minutes", func(t *testing.T) {
		file := sharedFile(t, "gentd26/qps.csv")
		s, err := ingest.ReadGenTD26(file, "Generative Requests")
		if err != nil {
			t.Fatal(err)
		}
		decidesAsTheDaemon(t, "generative", [][]float64{s.Values}, false, time.Minute)
	})
	// Ten-second steps from a new series' first quarter of an hour on, a
	// history too short for the forecast's 60 steps to be scored:
	// Mooncake's conversation log.
	t.Run("ten seconds", func(t *testing.T) {
		file := sharedFile(t, "llm-traces/mooncake/conversation_trace.jsonl")
		s, err := ingest.ReadArrivals(file, ingest.ArrivalsOptions{Step: 10 * time.Second, Unit: ingest.UnitMilliseconds})
		if err != nil {
			t.Fatal(err)
		}
		decidesAsTheDaemon(t, "conversation", [][]float64{s.Values}, false, 10*time.Second)
	})
}

// decidesAsTheDaemon replays the load (the sum of parts, bottom-up when
// sumOf) with `backtest scale` and through the daemon's rules over a store
// in memory, and compares their decisions.
func decidesAsTheDaemon(t *testing.T, metric string, parts [][]float64, sumOf bool, step time.Duration) {
	// Both sides' default: the forecast's next step and start-up (3m), in
	// whole steps, of a forecast reaching 10m.
	horizon := min((step+3*time.Minute+step-1)/step*step, 10*time.Minute)
	n := len(parts[0])
	base := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()

	// The replay, as a user runs it.
	args := []string{"--peak-replicas", "8", "--json", "--write-decisions", filepath.Join(dir, "decisions.csv")}
	if sumOf {
		args = append(args, "--sum-of", filepath.Join(dir, "part-*.csv"))
	} else {
		args = append(args, "--input", filepath.Join(dir, "part-000.csv"))
	}
	for i, p := range parts {
		var in strings.Builder
		in.WriteString("timestamp,value\n")
		for k, v := range p {
			if !math.IsNaN(v) {
				fmt.Fprintf(&in, "%d,%s\n", base.Add(time.Duration(k)*step).Unix(), strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%03d.csv", i)), []byte(in.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := cmdBacktestScale(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("backtest scale: exit %d: %s", code, stderr.String())
	}
	var rep rules.ScaleReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	replayed := readDecisions(t, filepath.Join(dir, "decisions.csv"))
	if len(replayed) != n-rep.WarmupSteps || rep.HorizonSeconds != horizon.Seconds() || rep.ForecastHorizonSeconds != 600 {
		t.Fatalf("%d decisions after a warm-up of %d, horizon %vs of %vs; want %d, %v of 10m", len(replayed), rep.WarmupSteps, rep.HorizonSeconds, rep.ForecastHorizonSeconds,
			n-rep.WarmupSteps, horizon)
	}

	// The daemon, on the same samples stamped at their steps' ends (the
	// load over [t − step, t) at t; the replay's file stamps it at t −
	// step). It evaluates 10 s (half a step, if shorter) past its
	// evaluation delay after each step ends.
	store := rules.NewMemoryStore()
	series := func(query, name string, ls ingest.Labels, vs []float64) {
		var ts []int64
		var xs []float64
		for k, v := range vs {
			if !math.IsNaN(v) {
				ts, xs = append(ts, base.Add(time.Duration(k+1)*step).UnixMilli()), append(xs, v)
			}
		}
		if err := store.Add(query, append(ingest.Labels{{Name: "__name__", Value: name}}, ls...), ts, xs); err != nil {
			t.Fatal(err)
		}
	}
	// The daemon sums the clients in the order of their labels, the replay
	// in the order of its files: numbers of one width make them one order,
	// so that the sums agree to the last digit.
	expr := "sum by (model) (" + metric + ")"
	if sumOf {
		expr = metric + ", sum_by: [model]"
	}
	for i, p := range parts {
		query, client := expr, fmt.Sprintf("%03d", i)
		if sumOf {
			query = metric
		}
		series(query, metric, ingest.Labels{{Name: "client", Value: client}, {Name: "model", Value: "m-small"}}, p)
	}
	ones := make([]float64, n)
	for k := range ones {
		ones[k] = 1
	}
	series(metric+"_replicas", metric+"_replicas", ingest.Labels{{Name: "model", Value: "m-small"}}, ones)
	conf := fmt.Sprintf(`source: {url: %s}
groups:
  - name: serving
    interval: %[2]s
    rules:
      - name: rate
        forecast: {expr: %[3]s, step: %[2]s}
      - name: replicas
        scale: {forecast: rate, replicas: %[4]s_replicas, capacity_per_replica: %[5]v}
`, "http://127.0.0.1:8428", dur.Format(step), expr, metric, rep.Capacity)
	cfgPath := filepath.Join(dir, "inferwatch.yml")
	if err := os.WriteFile(cfgPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := rulefmt.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := rules.Build(cfg.Groups)
	if err != nil {
		t.Fatal(err)
	}
	var now time.Time
	sink := &scaleSink{}
	m, err := rules.NewManager(rules.ManagerOptions{Querier: store, Sink: sink, EvaluationDelay: cfg.Source.EvaluationDelay,
		SummaryEvery: -1, Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, groups)
	if err != nil {
		t.Fatal(err)
	}
	differ, held, changes := 0, 0, 0
	for i, want := range replayed {
		if strings.Contains(want.reason, "The highest load of the last") {
			held++
		}
		if i > 0 && want.desired != replayed[i-1].desired {
			changes++
		}
		at := base.Add(time.Duration(rep.WarmupSteps+i) * step)
		if !want.at.Equal(at) {
			t.Fatalf("decision %d of the replay at %v, want %v", i, want.at, at)
		}
		now = at.Add(cfg.Source.EvaluationDelay + min(10*time.Second, step/2))
		sink.last = nil
		if err := m.RunOnce(context.Background()); err != nil {
			t.Fatalf("evaluation at %v: %v", now, err)
		}
		got := sink.last
		if got == nil || !got.Time.Equal(at) || got.HorizonSeconds != horizon.Seconds() {
			t.Fatalf("evaluation at %v: scale signal %+v, want one at %v on the next %v", now, got, at, horizon)
		}
		upper, mean := float64(got.PredictedUpper), float64(got.PredictedLoad)
		if got.DesiredReplicas != want.desired || upper != want.upper || mean != want.mean || got.Reason != want.reason {
			differ++
			if differ <= 5 {
				t.Errorf("at %v (decision %d): the daemon asks for %d on a forecast of %.6g, upper bound %.6g (%s); the replay for %d on %.6g, %.6g (%s)",
					at.UTC().Format(time.RFC3339), i, got.DesiredReplicas, mean, upper, got.Reason, want.desired, want.mean, want.upper, want.reason)
			}
		}
	}
	t.Logf("%d decisions, %d changes of the replicas asked for, %d on the hold", len(replayed), changes, held)
	if differ > 0 {
		t.Errorf("%d of %d decisions differ", differ, len(replayed))
	}
}

// scaleSink keeps the newest scale signal an evaluation published.
type scaleSink struct{ last *alerting.ScaleData }

func (s *scaleSink) Send(_ context.Context, b alerting.Batch) error {
	for i := range b.Scales {
		s.last = &b.Scales[i]
	}
	return nil
}

type replayedDecision struct {
	at          time.Time
	desired     int
	mean, upper float64
	reason      string
}

// readDecisions reads the file --write-decisions wrote.
func readDecisions(t *testing.T, path string) []replayedDecision {
	t.Helper()
	rows := readCSVFile(t, path)
	if len(rows) == 0 || strings.Join(rows[0], ",") != "timestamp,load,desired_replicas,predicted_load,predicted_upper,tier,reactive_replicas,foresight_replicas,reason" {
		t.Fatalf("%s: header %v", path, rows)
	}
	var out []replayedDecision
	for _, r := range rows[1:] {
		sec, err1 := strconv.ParseInt(r[0], 10, 64)
		d, err2 := strconv.Atoi(r[2])
		m, err3 := strconv.ParseFloat(r[3], 64)
		u, err4 := strconv.ParseFloat(r[4], 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatalf("%s: row %v", path, r)
		}
		out = append(out, replayedDecision{at: time.Unix(sec, 0), desired: d, mean: m, upper: u, reason: r[8]})
	}
	return out
}
