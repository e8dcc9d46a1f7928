package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules"
)

// runScale runs backtest scale with --json and decodes the report.
func runScale(t *testing.T, args ...string) rules.ScaleReport {
	t.Helper()
	code, out, errOut := runCmd(t, context.Background(), append([]string{"backtest", "scale", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr:\n%s", args, code, errOut)
	}
	var rep rules.ScaleReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: output is not the report: %v\n%s", args, err, out)
	}
	if n := len(rep.Policies); n < 3 || rep.Policies[0].Policy != "forecast" || rep.Policies[n-1].Policy != "foresight" {
		t.Fatalf("%v: policies %+v", args, rep.Policies)
	}
	return rep
}

// An hourly spike (5 → 35 req/s, minutes 30–39) on an exact seasonal naive forecast: every figure worked out by hand.
func TestBacktestScaleSpike(t *testing.T) {
	var ts []int64
	var vs []float64
	for i := range 240 {
		v := 5.0
		if m := i % 60; m >= 30 && m < 40 {
			v = 35
		}
		ts = append(ts, t0+int64(i)*60_000)
		vs = append(vs, v)
	}
	// 10 req/s a replica, a start-up of 3 minutes, no burst headroom (the
	// figures below are the forecast, hold and band alone); judged over minutes
	// 120–239 after a two-hour warm-up, spikes at 150 and 210.
	file := writeSeriesCSV(t, t.TempDir(), "spike.csv", ts, vs)
	rep := runScale(t, "--burst-quantile", "0", "--input", file, "--capacity", "10", "--startup", "3m", "--model", "seasonal_naive", "--period", "1h", "--warmup", "2h", "--hold", "0s")
	if rep.Decisions != 120 || rep.HorizonSeconds != 240 || rep.Capacity != 10 || rep.PeakLoad != 35 {
		t.Errorf("report %+v", rep)
	}
	want := []rules.PolicyFigures{
		// The horizon is a step and the start-up, 4 minutes: at 147 the
		// window 147–150 holds the spike, 4 replicas ready at 150; from
		// 160 it asks for 1, and the third such decision, at 162, steps
		// down. 3 more replicas for 15 minutes a spike: 120 + 2·45.
		{Policy: "forecast", ReplicaMinutes: 210, UnderMinutes: 0, WorstShortfall: 0, Changes: 4, Minutes: 120, Level: 0.95},
		// At 151 it sees minute 150 and asks for 4, ready at 154: minutes
		// 150–153 short by 25. 4 stays the highest recommendation of the
		// last five minutes until 165: 120 + 2·42, 8 minutes short.
		{Policy: "reactive", ReplicaMinutes: 204, UnderMinutes: 8, WorstShortfall: 25, Changes: 4, Minutes: 120, HPATarget: 1, HPAWindowSecs: 300},
		// As the forecast, but down at once at 160: 120 + 2·39.
		{Policy: "foresight", ReplicaMinutes: 198, Changes: 4, Minutes: 120},
	}
	for i, w := range want {
		if got := rep.Policies[i]; got != w {
			t.Errorf("%s: %+v\nwant %+v", w.Policy, got, w)
		}
	}

	// The same as counts per minute.
	for i := range vs {
		vs[i] *= 60
	}
	counts := writeSeriesCSV(t, t.TempDir(), "counts.csv", ts, vs)
	rep = runScale(t, "--burst-quantile", "0", "--input", counts, "--counts", "--capacity", "10", "--startup", "3m", "--model", "seasonal_naive", "--period", "1h", "--warmup", "2h", "--hold", "0s")
	if rep.PeakLoad != 35 || rep.Policies[0] != want[0] || rep.Policies[1] != want[1] || rep.Policies[2] != want[2] {
		t.Errorf("per-minute counts: %+v", rep)
	}
	if len(rep.Policies) != 3 || rep.Frontier != nil {
		t.Errorf("one level and one target: policies %+v, frontier %+v", rep.Policies, rep.Frontier)
	}

	// Several levels and targets. The seasonal naive forecast is exact, so
	// its interval is empty at every level. At a target of 0.5 the
	// reactive policy sizes replicas for 5 req/s: 7 for the spike, 6 more
	// than the baseline's one for the same 14 minutes, 120 + 2·84 = 288
	// replica-minutes, and as late: the same 8 minutes short.
	rep = runScale(t, "--burst-quantile", "0", "--input", file, "--capacity", "10", "--startup", "3m", "--model", "seasonal_naive", "--period", "1h", "--warmup", "2h", "--hold", "0s",
		"--level", "0.95, 0.5", "--hpa-target", "1,0.5")
	half := want[1]
	half.ReplicaMinutes, half.HPATarget = 288, 0.5
	atHalf := want[0]
	atHalf.Level = 0.5
	want = []rules.PolicyFigures{want[0], atHalf, want[1], half, want[2]}
	if len(rep.Policies) != len(want) {
		t.Fatalf("policies %+v", rep.Policies)
	}
	for i, w := range want {
		if got := rep.Policies[i]; got != w {
			t.Errorf("row %d: %+v\nwant %+v", i, got, w)
		}
	}
	// No level pays at most the reactive policy's 204 replica-minutes: the
	// cheapest is the first of the two at 210. No target is short as
	// seldom as the forecast (never): the least short is the cheaper of
	// the two short 8 minutes.
	if fr := rep.Frontier; fr == nil || fr.ForecastWithin != nil || fr.ReactiveWithin != nil ||
		fr.CheapestForecast == nil || *fr.CheapestForecast != want[0] || fr.LeastShortReactive == nil || *fr.LeastShortReactive != want[2] ||
		fr.ReactiveAtCost == nil || *fr.ReactiveAtCost != want[2] {
		t.Errorf("frontier %+v", rep.Frontier)
	}
	code, out, _ := runCmd(t, context.Background(), "backtest", "scale", "--burst-quantile", "0", "--input", file, "--capacity", "10", "--model", "seasonal_naive", "--period", "1h", "--warmup", "2h", "--hold", "0s",
		"--level", "0.95,0.5", "--hpa-target", "1,0.5")
	for _, line := range []string{
		"forecast (level 0.5)", "reactive (target 0.5)",
		"forecast (level 0.95) / reactive (target 1): replica-minutes 1.029, under-provisioned minutes 0.000",
		"no forecast level replayed stays within reactive (target 1)'s 204 replica-minutes; the cheapest, forecast (level 0.95), pays 210 (1.029)",
		"no reactive target replayed is short at most forecast (level 0.95)'s 0 minutes; the least short, reactive (target 1), is short 8 minutes and pays 204 replica-minutes, 0.971 of the forecast's",
		"within forecast (level 0.95)'s 210 replica-minutes, reactive (target 1) is short least: 204 replica-minutes, 8 under-provisioned minutes; the forecast is short 0.000 as often",
	} {
		if code != 0 || !strings.Contains(out, line) {
			t.Errorf("exit %d; the text lacks %q:\n%s", code, line, out)
		}
	}

	// Without a scale-down window the reactive policy lets the 3 replicas
	// go at 161, on the first minute after the spike: 10 minutes a spike,
	// 120 + 2·30 = 180 replica-minutes, as short as with the window.
	code, out, _ = runCmd(t, context.Background(), "backtest", "scale", "--json", "--input", file, "--capacity", "10", "--model", "seasonal_naive", "--period", "1h", "--warmup", "2h", "--hold", "0s",
		"--hpa-window", "5m, 0s")
	rep = rules.ScaleReport{}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Policies) != 4 {
		t.Fatalf("two windows: exit %d, %v:\n%s", code, err, out)
	}
	noWindow := want[2]
	noWindow.ReplicaMinutes, noWindow.HPAWindowSecs = 180, 0
	if rep.Policies[1] != want[2] || rep.Policies[2] != noWindow {
		t.Errorf("two windows: %+v, %+v\nwant %+v, %+v", rep.Policies[1], rep.Policies[2], want[2], noWindow)
	}
	// Both are short 8 minutes within the forecast's 210 replica-minutes:
	// the cheaper is the one at the forecast's cost.
	if fr := rep.Frontier; fr == nil || fr.ReactiveAtCost == nil || *fr.ReactiveAtCost != noWindow {
		t.Errorf("two windows: frontier %+v", rep.Frontier)
	}
	_, out, _ = runCmd(t, context.Background(), "backtest", "scale", "--input", file, "--capacity", "10", "--model", "seasonal_naive", "--period", "1h", "--warmup", "2h", "--hold", "0s",
		"--hpa-window", "5m,0s")
	if !strings.Contains(out, "reactive (target 1, window 5m)") || !strings.Contains(out, "reactive (target 1, window 0s)") {
		t.Errorf("two windows: the rows are not named by their window:\n%s", out)
	}

	// With the default hold of 30 minutes a decision also asks for what the
	// last half hour needed: up at 120 for the warm-up's spike at 90–99,
	// down at 132; up at 147, down at 192; up at 207 to the end. 3 more
	// replicas for 12 + 45 + 33 minutes: 120 + 3·90, 5 changes.
	rep = runScale(t, "--burst-quantile", "0", "--input", file, "--capacity", "10", "--startup", "3m", "--model", "seasonal_naive", "--period", "1h", "--warmup", "2h")
	held := want[0] // want is now the rows of the lists: forecast at 0.95 first, reactive at 1 third
	held.ReplicaMinutes, held.Changes = 390, 5
	if rep.Policies[0] != held || rep.Policies[1] != want[2] {
		t.Errorf("the default hold: %+v, %+v\nwant %+v, %+v", rep.Policies[0], rep.Policies[1], held, want[2])
	}

	// What-if rows on the naive forecast, whose interval at 0.9 is wide
	// enough to hold a spike at every decision: scaled by 1 it is the
	// forecast row again; by 0 it is exact, and the scale rule decides as
	// on the exact seasonal naive forecast above (210 replica-minutes,
	// none short, 4 changes).
	rep = runScale(t, "--burst-quantile", "0", "--input", file, "--capacity", "10", "--startup", "3m", "--model", "naive", "--warmup", "2h", "--hold", "0s",
		"--what-if-errors", "1,0")
	if len(rep.Policies) != 5 || rep.Policies[1] != want[2] || rep.Policies[4].Policy != "foresight" {
		t.Fatalf("what-if: policies %+v", rep.Policies)
	}
	naive, same, exact := rep.Policies[0], rep.Policies[2], rep.Policies[3]
	if same.Policy != "what-if" || same.ErrorScale != 1 {
		t.Errorf("what-if ×1: %+v", same)
	}
	same.Policy, same.ErrorScale = "forecast", 0
	if same != naive {
		t.Errorf("what-if ×1: %+v\nwant the forecast row %+v", rep.Policies[2], naive)
	}
	wantExact := want[0]
	wantExact.Policy = "what-if"
	if exact != wantExact {
		t.Errorf("what-if ×0: %+v\nwant %+v", exact, wantExact)
	}
	_, out, _ = runCmd(t, context.Background(), "backtest", "scale", "--input", file, "--capacity", "10", "--model", "naive", "--warmup", "2h", "--hold", "0s",
		"--what-if-errors", "0.5", "--level", "0.9,0.5")
	if !strings.Contains(out, "what-if (errors ×0.5, level 0.9)") || !strings.Contains(out, "what-if (errors ×0.5, level 0.5)") {
		t.Errorf("what-if rows of two levels are not named by their level:\n%s", out)
	}

	// The capacity from the peak after the warm-up: 35 req/s over 7.
	rep = runScale(t, "--burst-quantile", "0", "--input", file, "--peak-replicas", "7", "--model", "seasonal_naive", "--period", "1h", "--warmup", "2h", "--hold", "0s")
	if rep.Capacity != 5 || !strings.Contains(rep.CapacityFrom, "35 req/s over 7 replicas") {
		t.Errorf("capacity %g from %q", rep.Capacity, rep.CapacityFrom)
	}
}

// On the shared traces every policy is judged over the same minutes, its replicas carry the load but for the shortfalls counted, and foresight is never short.
func TestBacktestScaleSharedTraces(t *testing.T) {
	data := sharedFile(t, "")
	runs := map[string][]string{
		"m-large":         {"--input", filepath.Join(data, "servegen/aggregate_rate_language_m-large.csv")},
		"m-small":         {"--input", filepath.Join(data, "servegen/aggregate_rate_language_m-small.csv")},
		"m-large clients": {"--sum-of", filepath.Join(data, "servegen/language/m-large/*.csv")},
		"gentd26":         {"--gentd26", filepath.Join(data, "gentd26/qps.csv")},
		"gentd26 api":     {"--gentd26", filepath.Join(data, "gentd26/qps.csv"), "--request-type", "API Requests"},
		"azure arrivals":  {"--arrivals", filepath.Join(data, "llm-traces/AzureLLMInferenceTrace_code.csv"), "--step", "10s"},
		"mooncake":        {"--arrivals", filepath.Join(data, "llm-traces/mooncake/conversation_trace.jsonl"), "--time-unit", "ms", "--step", "10s"},
	}
	for name, args := range runs {
		t.Run(name, func(t *testing.T) {
			series := filepath.Join(t.TempDir(), "series.csv")
			rep := runScale(t, append(args, "--peak-replicas", "8", "--write-series", series)...)
			load := readBack(t, series)
			requests := 0.0 // replayed after the warm-up, in req/s × minutes
			for _, v := range load[rep.WarmupSteps:] {
				requests += v * rep.StepSeconds / 60
			}
			if rep.Decisions != len(load)-rep.WarmupSteps || rep.Decisions < 100 || math.Abs(rep.Capacity*8-rep.PeakLoad) > 1e-9*rep.PeakLoad {
				t.Fatalf("report %+v for %d steps", rep, len(load))
			}
			minutes := float64(rep.Decisions) * rep.StepSeconds / 60
			for _, p := range rep.Policies {
				if math.Abs(p.Minutes-minutes) > 1e-6 || p.UnderMinutes < 0 || p.UnderMinutes > minutes ||
					p.WorstShortfall < 0 || p.WorstShortfall > rep.PeakLoad || (p.UnderMinutes == 0) != (p.WorstShortfall == 0) ||
					p.Changes > rep.Decisions || p.ReplicaMinutes < minutes {
					t.Errorf("%s: figures out of bounds: %+v over %g minutes", p.Policy, p, minutes)
				}
				if carried := p.ReplicaMinutes * rep.Capacity; carried < requests-p.WorstShortfall*p.UnderMinutes-1e-6*requests {
					t.Errorf("%s: %g replica-minutes at %g req/s carry %g, less than the %g requests served less the shortfalls", p.Policy, p.ReplicaMinutes, rep.Capacity, carried, requests)
				}
			}
			if o := rep.Policies[2]; o.UnderMinutes != 0 {
				t.Errorf("foresight: %+v; want no minute short", o)
			}
			t.Logf("%s: forecast %+v, reactive %+v, foresight %+v", name, rep.Policies[0], rep.Policies[1], rep.Policies[2])
		})
	}
}

// writeNoisyDays writes three days of a minute's load around a daily sine,
// with uniform noise drawn from seed, as noisy.csv in dir.
func writeNoisyDays(t *testing.T, dir string, seed uint64) string {
	t.Helper()
	var ts []int64
	var vs []float64
	x := seed
	for i := range 3 * 1440 {
		x = x*6364136223846793005 + 1442695040888963407
		noise := float64(x>>11)/(1<<53) - 0.5
		ts = append(ts, t0+int64(i)*60_000)
		vs = append(vs, 40+25*math.Sin(2*math.Pi*float64(i)/1440)+12*noise)
	}
	return writeSeriesCSV(t, dir, "noisy.csv", ts, vs)
}

// readCSVFile reads the CSV file at path, every row.
func readCSVFile(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// TestBacktestScaleLevelsReplayAlone checks that a replay of several
// levels and targets gives each the figures it has replayed alone, on a
// noisy series whose levels differ.
func TestBacktestScaleLevelsReplayAlone(t *testing.T) {
	file := writeNoisyDays(t, t.TempDir(), 1)
	base := []string{"--input", file, "--peak-replicas", "8"}
	rep := runScale(t, append(base, "--level", "0.9,0.5,0.2", "--hpa-target", "1,0.8")...)
	if len(rep.Policies) != 6 || rep.Frontier == nil {
		t.Fatalf("policies %+v, frontier %+v", rep.Policies, rep.Frontier)
	}
	for i, args := range [][]string{
		{"--level", "0.9"}, {"--level", "0.5"}, {"--level", "0.2"},
	} {
		alone := runScale(t, append(base, args...)...)
		if rep.Policies[i] != alone.Policies[0] {
			t.Errorf("%v: %+v in the list, %+v alone", args, rep.Policies[i], alone.Policies[0])
		}
	}
	for i, args := range [][]string{{"--hpa-target", "1"}, {"--hpa-target", "0.8"}} {
		alone := runScale(t, append(base, args...)...)
		if rep.Policies[3+i] != alone.Policies[1] {
			t.Errorf("%v: %+v in the list, %+v alone", args, rep.Policies[3+i], alone.Policies[1])
		}
	}
	if rep.Policies[0] == rep.Policies[1] || rep.Policies[3] == rep.Policies[4] {
		t.Errorf("the levels or the targets replayed alike: %+v", rep.Policies)
	}
	if rep.Policies[5] != runScale(t, base...).Policies[2] {
		t.Errorf("foresight differs with lists: %+v", rep.Policies[5])
	}
}

// TestBacktestScaleWritesEveryLane: with several levels, targets and
// windows, --write-decisions writes each one's decisions, its columns
// named by it, and they are those it writes replayed alone.
func TestBacktestScaleWritesEveryLane(t *testing.T) {
	dir := t.TempDir()
	file := writeNoisyDays(t, dir, 7)
	read := func(path string) (header []string, cols map[string][]string) {
		t.Helper()
		rows := readCSVFile(t, path)
		if len(rows) < 2 {
			t.Fatalf("%s: %d rows", path, len(rows))
		}
		cols = map[string][]string{}
		for _, r := range rows[1:] {
			for i, c := range rows[0] {
				cols[c] = append(cols[c], r[i])
			}
		}
		return rows[0], cols
	}
	replay := func(name string, args ...string) (header []string, cols map[string][]string) {
		t.Helper()
		out := filepath.Join(dir, name)
		runScale(t, append([]string{"--input", file, "--peak-replicas", "8", "--write-decisions", out}, args...)...)
		return read(out)
	}
	header, all := replay("all.csv", "--level", "0.9,0.5", "--hpa-target", "1,0.8", "--hpa-window", "5m,0s", "--what-if-errors", "1,0")
	plain := []string{"timestamp", "load", "desired_replicas", "predicted_load", "predicted_upper", "tier", "reactive_replicas", "foresight_replicas", "reason"}
	want := append(slices.Clone(plain), "desired_replicas_level_0.5", "predicted_load_level_0.5", "predicted_upper_level_0.5", "tier_level_0.5", "reason_level_0.5",
		"reactive_replicas_target_0.8_window_5m", "reactive_replicas_target_1_window_0s", "reactive_replicas_target_0.8_window_0s")
	cols := []string{"desired_replicas", "predicted_load", "predicted_upper", "tier", "reason"}
	for _, w := range []string{"level_0.9_errors_1", "level_0.9_errors_0", "level_0.5_errors_1", "level_0.5_errors_0"} {
		for _, c := range cols {
			want = append(want, c+"_what_if_"+w)
		}
	}
	if !slices.Equal(header, want) {
		t.Fatalf("header %v\nwant   %v", header, want)
	}
	if h, _ := replay("one.csv"); !slices.Equal(h, plain) {
		t.Errorf("one level and one reactive policy: header %v, want %v", h, plain)
	}
	same := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s differs from its replay alone", what)
		}
	}
	_, l5 := replay("l5.csv", "--level", "0.5")
	for _, c := range cols {
		same(c+"_level_0.5", all[c+"_level_0.5"], l5[c])
		// Errors scaled by 1 leave the forecast as it is.
		same(c+"_what_if_level_0.9_errors_1", all[c+"_what_if_level_0.9_errors_1"], all[c])
		same(c+"_what_if_level_0.5_errors_1", all[c+"_what_if_level_0.5_errors_1"], l5[c])
	}
	if slices.Equal(all["desired_replicas_what_if_level_0.9_errors_0"], all["desired_replicas"]) {
		t.Error("a perfect forecast asked for the replicas the forecast asked for at every decision")
	}
	same("foresight_replicas", all["foresight_replicas"], l5["foresight_replicas"])
	if slices.Equal(all["desired_replicas"], all["desired_replicas_level_0.5"]) {
		t.Error("levels 0.9 and 0.5 asked for the same replicas at every decision")
	}
	for _, r := range [][]string{{"0.8", "5m"}, {"1", "0s"}, {"0.8", "0s"}} {
		_, alone := replay("r.csv", "--hpa-target", r[0], "--hpa-window", r[1])
		same("reactive target "+r[0]+" window "+r[1], all["reactive_replicas_target_"+r[0]+"_window_"+r[1]], alone["reactive_replicas"])
	}
}

// TestBacktestScaleListErrors: a bad list item, or a policy flag out of
// range, is refused with the flag and the value named.
func TestBacktestScaleListErrors(t *testing.T) {
	file := writeSeriesCSV(t, t.TempDir(), "s.csv", []int64{t0, t0 + 60_000}, []float64{1, 2})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--level", "0.9,1.5"}, `--level 0.9,1.5: "1.5" is not a number in (0, 1)`},
		{[]string{"--level", "0.9,"}, `--level 0.9,: "" is not a number in (0, 1)`},
		{[]string{"--forecast-level", "1"}, `--forecast-level 1: want a number in (0, 1)`},
		{[]string{"--hpa-target", "1,0.8,0.8"}, `--hpa-target 1,0.8,0.8: 0.8 is listed twice`},
		{[]string{"--hpa-target", "0"}, `--hpa-target 0: "0" is not a share of the capacity in (0, 1]`},
		{[]string{"--hpa-window", "5m,5m"}, `--hpa-window 5m,5m: 5m is listed twice`},
		{[]string{"--hpa-window", "5m,"}, `--hpa-window "5m,": an empty item`},
		{[]string{"--hpa-window", "5m,soon"}, `--hpa-window "soon": want a duration`},
		{[]string{"--scale-down-margin", "0.6"}, `--scale-down-margin 0.6: "0.6" is not a share of the capacity in [0, 0.5]`},
		{[]string{"--scale-down-margin", "-0.1"}, `--scale-down-margin -0.1: "-0.1" is not a share of the capacity in [0, 0.5]`},
		{[]string{"--scale-down-margin", "0.1,0.2"}, `--scale-down-margin 0.1,0.2: several margins are replayed with --frontier`},
		{[]string{"--frontier", "--startups", "5m,1m"}, `--startups 5m,1m: want ascending start-ups, each once`},
		{[]string{"--frontier", "--ablation", "naive,bogus"}, `--ablation: forecasting options: unknown forecasting model "bogus"`},
		{[]string{"--frontier", "--ablation", "auto"}, `--ablation auto: auto is --model already`},
		{[]string{"--frontier", "--bootstrap", "-1"}, `--bootstrap -1: want 0 or more resamples`},
		{[]string{"--bootstrap", "10"}, `--bootstrap is a setting of --frontier`},
		{[]string{"--seed", "3"}, `--seed seeds the draws of --servegen-clients and the bootstrap of --frontier`},
		{[]string{"--gentd26-queue", "q.csv"}, `--gentd26-queue is the queue of the --gentd26 trace`},
		{[]string{"--waiting-per-replica", "0"}, `--waiting-per-replica 0: want more than 0`},
		{[]string{"--time-field", "ts"}, `--time-field "ts" names the time of a log of requests, read with --arrivals`},
		{[]string{"--what-if-errors", "0.5,1.5"}, `--what-if-errors 0.5,1.5: "1.5" is not a number in [0, 1]`},
		{[]string{"--what-if-errors", "0,0"}, `--what-if-errors 0,0: 0 is listed twice`},
	} {
		code, _, errOut := runCmd(t, context.Background(), append([]string{"backtest", "scale", "--input", file, "--capacity", "1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func readBack(t *testing.T, path string) []float64 {
	t.Helper()
	in, err := ingest.ReadRows(path, ingest.RowsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return in.Values
}

// TestBacktestScaleRefusesNegativeLoad: a negative request rate is bad
// input, refused with its time, whether read as a rate or as counts; a gap
// is not.
func TestBacktestScaleRefusesNegativeLoad(t *testing.T) {
	dir := t.TempDir()
	var ts []int64
	var badV, gapV []float64
	for i := range 12 {
		ts = append(ts, t0+int64(i)*60_000)
		badV, gapV = append(badV, float64(1+i%3)), append(gapV, float64(1+i%3))
	}
	badV[2], gapV[2] = -0.5, math.NaN()
	bad := writeSeriesCSV(t, dir, "bad.csv", ts, badV)
	gap := writeSeriesCSV(t, dir, "gap.csv", ts, gapV)
	for _, args := range [][]string{{"--input", bad}, {"--input", bad, "--counts"}} {
		code, _, errOut := runCmd(t, context.Background(), append([]string{"backtest", "scale", "--capacity", "1"}, args...)...)
		want := fmt.Sprintf("bad.csv: the load at 2023-11-14T22:15:00Z (unix %d) is -0.5; a request rate cannot be negative", (t0+120_000)/1000)
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", args, code, errOut, want)
		}
	}
	if code, _, errOut := runCmd(t, context.Background(), "backtest", "scale", "--capacity", "1", "--input", gap); code != 0 {
		t.Errorf("a gap: exit %d, stderr %q; want 0", code, errOut)
	}
	// A part below 0 is refused by its file's name, though the other
	// part makes the sum positive.
	sumDir := t.TempDir()
	big := make([]float64, len(ts))
	for i := range big {
		big[i] = 10
	}
	writeSeriesCSV(t, sumDir, "a.csv", ts, big)
	writeSeriesCSV(t, sumDir, "b.csv", ts, badV)
	code, _, errOut := runCmd(t, context.Background(), "backtest", "scale", "--capacity", "1", "--sum-of", filepath.Join(sumDir, "*.csv"))
	want := fmt.Sprintf("b.csv: the load at 2023-11-14T22:15:00Z (unix %d) is -0.5; a request rate cannot be negative", (t0+120_000)/1000)
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("--sum-of with a part below 0: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
}

// TestBacktestScaleReportsItsPolicy: the report names the scale rule's
// settings it replayed, in JSON and in text.
func TestBacktestScaleReportsItsPolicy(t *testing.T) {
	var ts []int64
	var vs []float64
	for i := range 12 {
		ts, vs = append(ts, t0+int64(i)*60_000), append(vs, float64(1+i%3))
	}
	file := writeSeriesCSV(t, t.TempDir(), "s.csv", ts, vs)
	args := []string{"backtest", "scale", "--input", file, "--capacity", "1", "--hold", "45m", "--scale-down-margin", "0.05",
		"--cooldown", "0s", "--scale-down-stable-intervals", "2", "--max-replicas", "6", "--model", "naive"}
	code, out, errOut := runCmd(t, context.Background(), append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep rules.ScaleReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := rules.ScalePolicySettings{HoldSeconds: 2700, ScaleDownMargin: 0.05, ScaleDownStableIntervals: 2, CooldownSeconds: 0, MinReplicas: 1, MaxReplicas: 6}
	if rep.Model != "naive" || rep.ScalePolicy != want {
		t.Errorf("model %q, scale policy %+v; want naive, %+v", rep.Model, rep.ScalePolicy, want)
	}
	code, out, _ = runCmd(t, context.Background(), args...)
	if line := "  forecast model naive; hold 45m; scale-down margin 0.05, 2 stable intervals, cooldown 0s; 1 to 6 replicas\n"; code != 0 || !strings.Contains(out, line) {
		t.Errorf("exit %d; text lacks %q:\n%s", code, line, out)
	}
}

// TestBacktestScaleServeGenClients draws the requests of two client
// traces per minute and replays them, at the HPA's frontier too; a glob
// that matches nothing and a trace that does not read are named.
func TestBacktestScaleServeGenClients(t *testing.T) {
	dir := t.TempDir()
	var a, b strings.Builder
	for i := range 3 * 144 { // three days of 10-minute windows
		rate := 5 + 4*math.Sin(2*math.Pi*float64(i)/144)
		fmt.Fprintf(&a, "%d,%g,2,Gamma,0.25,%g\n", 600*i, rate, 4/rate)
		fmt.Fprintf(&b, "%d,%g,1.5,Weibull,0.7,1\n", 600*i, rate/2)
	}
	for name, body := range map[string]string{"chunk-0-trace.csv": a.String(), "chunk-1-trace.csv": b.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	glob := filepath.Join(dir, "chunk-*-trace.csv")
	code, out, errOut := runCmd(t, context.Background(), "backtest", "scale", "--servegen-clients", glob, "--peak-replicas", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Steps       int     `json:"steps"`
		StepSeconds float64 `json:"step_seconds"`
		Input       string  `json:"input"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Steps != 3*1440 || rep.StepSeconds != 60 || !strings.Contains(rep.Input, "seed 1") {
		t.Errorf("%d steps of %vs from %q; want 4320 of 60s, seed 1", rep.Steps, rep.StepSeconds, rep.Input)
	}
	code, out, errOut = runCmd(t, context.Background(), "backtest", "scale", "--servegen-clients", glob, "--peak-replicas", "8",
		"--frontier", "--startups", "1m,5m", "--ablation", "naive", "--hpa-target", "0.6,0.8,1", "--bootstrap", "20")
	if code != 0 || !strings.Contains(out, "start-up 5m") || !strings.Contains(out, "signal naive level 0.9") || !strings.Contains(out, "crossover") {
		t.Errorf("frontier: exit %d, stderr %s, stdout:\n%s", code, errOut, out)
	}
	for _, tc := range []struct{ glob, want string }{
		{filepath.Join(dir, "none-*.csv"), "no file matches"},
		{filepath.Join(dir, "chunk-0-trace.csv"), ""},
	} {
		code, _, errOut := runCmd(t, context.Background(), "backtest", "scale", "--servegen-clients", tc.glob, "--peak-replicas", "8", "--step", "7m")
		want := cmp.Or(tc.want, "a step of 7m0s does not divide the windows' span of 10m0s")
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", tc.glob, code, errOut, want)
		}
	}
}
