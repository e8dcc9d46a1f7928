package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
)

// The backtest over a shared ServeGen file reproduces the forecasting
// library's own backtest, row for row and in its summary.
func TestForecastBacktestReproducesTheLibrary(t *testing.T) {
	file := sharedFile(t, "servegen/aggregate_rate_language_m-large.csv")
	code, out, errOut := runCmd(t, context.Background(), "forecast", "--input", file, "--backtest")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	c, err := ingest.ReadCSV(strings.NewReader(mustRead(t, file)), file, ingest.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := forecasting.Backtest(c.Series.Values, 10*time.Minute, forecasting.ModelAuto, 1, 0.9, 144)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "origin,target,yhat,yhat_lower,yhat_upper" || len(rows)-1 != len(want.Rows) {
		t.Fatalf("header %v, %d rows; want %d", rows[0], len(rows)-1, len(want.Rows))
	}
	for i, w := range want.Rows {
		r := rows[i+1]
		if r[0] != strconv.Itoa(w.Origin*600) || r[1] != strconv.Itoa(w.Target*600) || r[2] != strconv.FormatFloat(w.Yhat, 'g', -1, 64) ||
			r[3] != strconv.FormatFloat(w.Lower, 'g', -1, 64) || r[4] != strconv.FormatFloat(w.Upper, 'g', -1, 64) {
			t.Fatalf("row %d: %v, want %+v", i+1, r, w)
		}
	}
	for _, s := range []string{
		fmt.Sprintf("%d origins scored", want.Origins),
		fmt.Sprintf("MAE %.4g   naive %.4g   seasonal naive %.4g", want.MAE, want.NaiveMAE, want.SeasonalNaiveMAE),
		fmt.Sprintf("ratio %.4g", want.Ratio), fmt.Sprintf("sMAPE %.2f%%", want.SMAPE), fmt.Sprintf("coverage %.3f", want.Coverage),
	} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}
	t.Logf("%s", errOut)
}

func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeSeries(t *testing.T, n int, step time.Duration, skip map[int]bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i := range n {
		if skip[i] {
			continue
		}
		fmt.Fprintf(&b, "%d,%g\n", 1_700_000_000+int64(i)*int64(step/time.Second), 50+20*math.Sin(2*math.Pi*float64(i)/60))
	}
	file := filepath.Join(t.TempDir(), "s.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestForecastFromTheEnd(t *testing.T) {
	file := writeSeries(t, 300, time.Minute, map[int]bool{100: true, 101: true})
	code, out, errOut := runCmd(t, context.Background(), "forecast", "--input", file, "--period", "1h", "--horizon", "10m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 11 {
		t.Fatalf("%d rows, err %v:\n%s", len(rows), err, out)
	}
	end := int64(1_700_000_000 + 299*60)
	for i, r := range rows[1:] {
		o, _ := strconv.ParseInt(r[0], 10, 64)
		tg, _ := strconv.ParseInt(r[1], 10, 64)
		y, _ := strconv.ParseFloat(r[2], 64)
		want := 50 + 20*math.Sin(2*math.Pi*float64(300+i)/60)
		if o != end || tg != end+int64(i+1)*60 || math.Abs(y-want) > 2 {
			t.Errorf("row %v: want origin %d target %d yhat ≈ %.2f", r, end, end+int64(i+1)*60, want)
		}
	}
	// The two missing minutes are filled, and said so.
	if !strings.Contains(errOut, "2 of 300 steps of 1m0s are missing") || !strings.Contains(errOut, "2 gaps filled") {
		t.Errorf("stderr does not report the gaps:\n%s", errOut)
	}
}

func TestForecastBadInput(t *testing.T) {
	short := writeSeries(t, 40, time.Minute, nil)
	f := func(name string, wantCode int, wantOut, wantErr []string, args ...string) {
		t.Helper()
		code, out, errOut := runCmd(t, context.Background(), append([]string{"forecast"}, args...)...)
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", name, code, wantCode, errOut)
		}
		for _, s := range wantOut {
			if !strings.Contains(out, s) {
				t.Errorf("%s: stdout lacks %q:\n%s", name, s, out)
			}
		}
		for _, s := range wantErr {
			if !strings.Contains(errOut, s) {
				t.Errorf("%s: stderr lacks %q:\n%s", name, s, errOut)
			}
		}
	}
	// Too little history for the model: the naive fallback, marked.
	f("fallback", 0, []string{"origin,target"}, []string{"too little history: auto needs", "the file has 40: FALLBACK to", "(fallback)"},
		"--input", short)
	// Too little for a backtest's minimum history: how much is needed.
	f("backtest too short", 1, nil, []string{"too little history for a backtest: 40 points of 1m0s; need at least 1442"},
		"--input", short, "--backtest")
	// A backtest whose early origins fall back says how many.
	f("backtest fallback", 0, []string{"origin,target"}, []string{"FALLBACK: ", "origins had too little history"},
		"--input", short, "--backtest", "--min-history", "10m", "--period", "1h")

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("timestamp,value\n1700000000,1\n1700000060,2\n1700000120,x\n"), 0o644)
	f("bad value", 1, nil, []string{"bad.csv:4"}, "--input", bad)
	off := filepath.Join(dir, "off.csv")
	os.WriteFile(off, []byte("timestamp,value\n1700000000,1\n1700000060,2\n1700000120,2\n1700000150,3\n"), 0o644)
	f("off the grid", 1, nil, []string{"off.csv:5: timestamp 1700000150 is off the grid of the file's step 1m0s"}, "--input", off)
	f("no input", 2, nil, []string{"one of --input FILE or --sum-of GLOB is required"})
	f("both inputs", 2, nil, []string{"one of --input FILE or --sum-of GLOB is required"}, "--input", short, "--sum-of", short)
	f("no part", 1, nil, []string{`--sum-of "` + filepath.Join(dir, "nosuch-*.csv") + `" matches no file`}, "--sum-of", filepath.Join(dir, "nosuch-*.csv"))
	pdir := t.TempDir()
	os.WriteFile(filepath.Join(pdir, "a.csv"), []byte("timestamp,value\n1700000000,1\n1700000060,2\n1700000120,3\n"), 0o644)
	os.WriteFile(filepath.Join(pdir, "b.csv"), []byte("timestamp,value\n1700000000,1\n1700000120,2\n1700000240,3\n1700000360,3\n"), 0o644)
	f("parts on other steps", 1, nil, []string{"b.csv: step 2m0s differs from the step 1m0s of " + filepath.Join(pdir, "a.csv"), "the parts of a sum must share one; give --resample 2m to average the samples in each step of 2m"}, "--sum-of", filepath.Join(pdir, "*.csv"))
	os.WriteFile(filepath.Join(pdir, "b.csv"), []byte("timestamp,value\n1700000030,1\n1700000090,2\n"), 0o644)
	f("parts off each other's grid", 1, nil, []string{"b.csv: its samples are off the grid of " + filepath.Join(pdir, "a.csv"), "; give --resample 1m to average the samples in each step of 1m"}, "--sum-of", filepath.Join(pdir, "*.csv"))
	os.WriteFile(filepath.Join(pdir, "b.csv"), []byte("timestamp,value\n1700000060,x\n"), 0o644)
	f("bad part", 1, nil, []string{"b.csv:2"}, "--sum-of", filepath.Join(pdir, "*.csv"))
	f("bad model", 2, nil, []string{"unknown forecasting model"}, "--input", short, "--model", "nosuch")
	f("bad horizon", 2, nil, []string{`--horizon "soon"`}, "--input", short, "--horizon", "soon")
}

// Over a generated week of the fleet the forecast is near the next ten minutes, and the surge raises the desired replicas.
func TestForecastAndScaleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	ctx := context.Background()
	// The fleet runs twelve minutes past now, so the next ten minutes after
	// the daemon's newest point are known.
	vm, f := backfillFleet(t, time.Now().Add(12*time.Minute))
	srv, nc := natsClient(t)
	var mu sync.Mutex
	var forecasts, bottomUp []alerting.ForecastData
	var signals []alerting.ScaleData
	sub, err := nc.Subscribe("inferwatch.>", func(m *nats.Msg) {
		var ev struct {
			Type string          `json:"type"`
			ID   string          `json:"id"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil || m.Header.Get("Nats-Msg-Id") != ev.ID {
			t.Errorf("event %s: %v", m.Data, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case m.Subject == "inferwatch.forecasts.request_rate" && ev.Type == alerting.ForecastEventType:
			var d alerting.ForecastData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Error(err)
			}
			forecasts = append(forecasts, d)
		case m.Subject == "inferwatch.forecasts.request_rate_by_pod" && ev.Type == alerting.ForecastEventType:
			var d alerting.ForecastData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Error(err)
			}
			bottomUp = append(bottomUp, d)
		case m.Subject == "inferwatch.scale.vllm-qwen-32b" && ev.Type == alerting.ScaleEventType:
			var d alerting.ScaleData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Error(err)
			}
			signals = append(signals, d)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	args := []string{"run", "--config", "../../testdata/config/forecast.good.yaml", "--once", "--backfill", "5d",
		"--source.url", vm.URL(), "--nats.url", srv.ClientURL(), "--web.listen-address", ""}
	if code, _, errOut := runCmd(t, ctx, args...); code != 0 {
		t.Fatalf("inferwatch run exited %d:\n%s", code, errOut)
	}
	nc.Flush()
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()

	const qwen = "qwen2.5-32b-instruct"
	var fq *alerting.ForecastData
	for i := range forecasts {
		if forecasts[i].Labels["model"] == qwen {
			fq = &forecasts[i]
		}
	}
	if len(forecasts) != 3 || fq == nil {
		t.Fatalf("%d forecasts, want one per model", len(forecasts))
	}
	// What the fleet did: qwen's request rate over 2 minutes, summed over
	// its pods, at each forecast point.
	actual := func(at time.Time) float64 {
		var sum float64
		for _, s := range f.Series() {
			if s.Labels.Get("__name__") != "vllm:request_success_total" || s.Labels.Get("model") != qwen {
				continue
			}
			val := func(ms int64) float64 {
				for i, ts := range s.Timestamps {
					if ts > ms {
						return s.Values[max(i-1, 0)]
					}
				}
				return s.Values[len(s.Values)-1]
			}
			sum += (val(at.UnixMilli()) - val(at.Add(-2*time.Minute).UnixMilli())) / 120
		}
		return sum
	}
	var absErr, mean float64
	inside := 0
	for _, p := range fq.Points {
		y := actual(p.Time)
		absErr += math.Abs(float64(p.Mean) - y)
		mean += y
		if y >= float64(p.Lower) && y <= float64(p.Upper) {
			inside++
		}
	}
	n := float64(len(fq.Points))
	t.Logf("qwen forecast from %v by %s: MAE %.3f req/s over the next %d minutes (mean rate %.3f), %d of %d inside the %g interval; recent accuracy %+v",
		fq.Origin, fq.Model, absErr/n, len(fq.Points), mean/n, inside, len(fq.Points), fq.Level, fq.Accuracy)
	if len(fq.Points) != 10 || absErr/n > 0.25*mean/n || inside < 7 || fq.Accuracy.N < 100 {
		t.Errorf("qwen forecast off: MAE %.3f against a mean of %.3f, %d of 10 inside, accuracy %+v", absErr/n, mean/n, inside, fq.Accuracy)
	}

	// The same rate forecast bottom-up from each pod's: one forecast per
	// model, labelled by the model alone, as close to what came.
	var bq *alerting.ForecastData
	for i := range bottomUp {
		if d := &bottomUp[i]; d.Labels["model"] == qwen && len(d.Labels) == 1 && d.Model == forecasting.ModelBottomUp {
			bq = d
		}
	}
	if len(bottomUp) != 3 || bq == nil || len(bq.Points) != 10 || !bq.Origin.Equal(fq.Origin) {
		t.Fatalf("bottom-up forecasts %+v; want one per model, labelled by model, from %v", bottomUp, fq.Origin)
	}
	absErr = 0
	for _, p := range bq.Points {
		absErr += math.Abs(float64(p.Mean) - actual(p.Time))
	}
	t.Logf("qwen bottom-up forecast: MAE %.3f req/s; recent accuracy %+v", absErr/n, bq.Accuracy)
	if absErr/n > 0.25*mean/n || bq.Accuracy.N < 100 {
		t.Errorf("qwen bottom-up forecast off: MAE %.3f against a mean of %.3f, accuracy %+v", absErr/n, mean/n, bq.Accuracy)
	}

	var surge fleet.Incident
	for _, inc := range f.Incidents {
		if inc.Kind == fleet.TrafficSurge {
			surge = inc
		}
	}
	if surge.Model != qwen {
		t.Fatalf("the surge hit %q; the test expects qwen", surge.Model)
	}
	before, during := 0, 0
	for _, s := range signals {
		switch {
		case s.Time.Before(surge.Start) && s.Time.After(surge.Start.Add(-time.Hour)):
			before = s.DesiredReplicas
		case !s.Time.Before(surge.Start) && s.Time.Before(surge.End.Add(10*time.Minute)):
			during = max(during, s.DesiredReplicas)
		}
	}
	if len(signals) == 0 || before == 0 {
		// A signal at each change: take the last one before the surge.
		for _, s := range signals {
			if s.Time.Before(surge.Start) {
				before = s.DesiredReplicas
			}
		}
	}
	last := signals[len(signals)-1]
	t.Logf("%d scale signals for qwen; desired %d before the surge at %v, up to %d during it; newest %d (tier %d): %s",
		len(signals), before, surge.Start, during, last.DesiredReplicas, last.Tier, last.Reason)
	if during <= before || before == 0 {
		t.Errorf("the surge did not raise qwen's desired replicas: %d before, %d during", before, during)
	}
	if last.CurrentReplicas != 2 || !last.CurrentKnown || last.CapacityPerReplica != 7 || last.DesiredReplicas < 1 || last.DesiredReplicas > 4 {
		t.Errorf("newest signal %+v", last)
	}
}

// TestForecastSumOf forecasts the sum of two files bottom-up: one part
// starts a day after the other and counts as 0 before it.
func TestForecastSumOf(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, from, n int, v float64) {
		var b strings.Builder
		b.WriteString("timestamp,value\n")
		for i := range n {
			fmt.Fprintf(&b, "%d,%g\n", 1_700_000_000+(from+i)*600, v)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("client-a.csv", 0, 3*144, 10)
	write("client-b.csv", 144, 2*144, 5)
	glob := filepath.Join(dir, "client-*.csv")
	code, out, errOut := runCmd(t, context.Background(), "forecast", "--sum-of", glob)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	end := 1_700_000_000 + (3*144-1)*600
	if want := fmt.Sprintf("origin,target,yhat,yhat_lower,yhat_upper\n%d,%d,15,", end, end+600); !strings.HasPrefix(out, want) {
		t.Errorf("forecast:\n%s\nwant it to start %q", out, want)
	}
	if !strings.Contains(errOut, "model bottom_up") {
		t.Errorf("stderr does not name the model:\n%s", errOut)
	}
	code, out, errOut = runCmd(t, context.Background(), "forecast", "--sum-of", glob, "--backtest")
	if code != 0 {
		t.Fatalf("backtest: exit %d: %s", code, errOut)
	}
	if want := "backtest of bottom_up on the sum of the 2 files matching " + glob + ": 287 origins"; !strings.Contains(errOut, want) {
		t.Errorf("backtest stderr lacks %q:\n%s", want, errOut)
	}
	if rows := strings.Count(out, "\n"); rows != 1+287 {
		t.Errorf("%d lines of backtest output, want a header and 287 rows", rows)
	}
}

// forecast takes samples a little off their schedule at their nearest step; one too far off is refused with --resample.
func TestForecastJitter(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, ts []int64, vs []float64) string {
		var b strings.Builder
		b.WriteString("timestamp,value\n")
		for i := range ts {
			fmt.Fprintf(&b, "%d.%03d,%g\n", ts[i]/1000, ts[i]%1000, vs[i])
		}
		return writeText(t, dir, name, b.String())
	}
	const base = 1_700_000_000_000
	offs := []int64{120, -310, 40, 0, 250, -90, 180, -400, 60, 10} // ms off each 15 s point
	var ts []int64
	var vs []float64
	for i, o := range offs {
		if i == 6 {
			continue // a gap
		}
		ts, vs = append(ts, base+int64(i)*15_000+o), append(vs, float64(i))
	}
	file := write("jitter.csv", ts, vs)
	_, _, errOut := runCmd(t, context.Background(), "forecast", "--input", file)
	if want := "note: " + file + ": 8 samples up to 520ms off the 15s grid were taken at their nearest step"; !strings.Contains(errOut, want) {
		t.Errorf("forecast's stderr %q lacks %q", errOut, want)
	}
	// 5 s off a 15 s step is more than a quarter of it.
	far := slices.Clone(ts)
	far[4] += 5000
	code, _, errOut := runCmd(t, context.Background(), "forecast", "--input", write("far.csv", far, vs))
	if want := "far.csv:6: timestamp 1700000065.250 is off the grid of the file's step 15s from its first sample by 5.13s, more than 0.25 of a step; give --resample 15s to average the samples in each step of 15s\n"; code != 1 || !strings.HasSuffix(errOut, want) {
		t.Errorf("5 s off: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}

	pdir := filepath.Join(dir, "parts")
	if err := os.Mkdir(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := write("parts/a.csv", ts, vs)
	shifted := make([]int64, len(ts))
	for i := range ts {
		shifted[i] = ts[i] - 200
	}
	write("parts/b.csv", shifted, vs)
	sum, parts, err := readParts(filepath.Join(pdir, "*.csv"), 0, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || sum.Start != base+120 || len(sum.Values) != 10 || sum.Values[3] != 6 || sum.Snapped != 16 {
		t.Errorf("sum of %s and its shift: start %d, %v, snapped %d", a, sum.Start, sum.Values, sum.Snapped)
	}
}
