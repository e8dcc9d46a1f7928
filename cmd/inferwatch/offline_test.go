package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
)

// t0 is the first timestamp of the generated series, unix milliseconds.
const t0 int64 = 1_699_999_980_000 // a multiple of 60 s

// writeText writes content to name in dir and returns the path.
func writeText(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeSeriesCSV writes a timestamp,value CSV with a header.
func writeSeriesCSV(t testing.TB, dir, name string, ts []int64, vs []float64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i, x := range ts {
		fmt.Fprintf(&b, "%d,%s\n", x, strconv.FormatFloat(vs[i], 'g', -1, 64))
	}
	return writeText(t, dir, name, b.String())
}

// runJSON runs an offline command that must succeed and decodes its output.
func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errOut := runCmd(t, context.Background(), args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr:\n%s", args, code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: output is not JSON: %v\n%s", args, err, out)
	}
	return m
}

// numField returns a numeric field; it fails the test when the field is absent
// or null.
func numField(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	v, ok := m[key].(float64)
	if !ok {
		t.Fatalf("field %q is %v (%T), want a number; output: %v", key, m[key], m[key], m)
	}
	return v
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.6g, want %.6g ± %.3g", what, got, want, tol)
	}
}

// lagged returns x, an AR(1) series, and y(t) = x(t − lag·step) + noise,
// both sampled every step ms.
func lagged(n, lag int, step int64, noise float64, seed uint64) (ts []int64, x, y []float64) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	raw := make([]float64, n+lag)
	for i := range raw {
		prev := 0.0
		if i > 0 {
			prev = raw[i-1]
		}
		raw[i] = 0.5*prev + rng.NormFloat64()
	}
	for i := range n {
		ts = append(ts, t0+int64(i)*step)
		x = append(x, 10+raw[i+lag])
		y = append(y, 20+raw[i]+noise*rng.NormFloat64())
	}
	return ts, x, y
}

func TestCorrelateFindsAKnownLag(t *testing.T) {
	dir := t.TempDir()
	const step = 60_000
	ts, x, y := lagged(400, 3, step, 0.01, 7)
	xf := writeSeriesCSV(t, dir, "x.csv", ts, x)
	yf := writeSeriesCSV(t, dir, "y.csv", ts, y)

	m := runJSON(t, "correlate", "--x", xf, "--y", yf)
	near(t, "best_lag_seconds", numField(t, m, "best_lag_seconds"), 180, 0)
	near(t, "best_lag_steps", numField(t, m, "best_lag_steps"), 3, 0)
	if r := numField(t, m, "best_lag_correlation"); r < 0.999 {
		t.Errorf("best_lag_correlation = %v, want ≈ 1", r)
	}
	near(t, "align_step_seconds", numField(t, m, "align_step_seconds"), 60, 0)
	near(t, "max_lag_seconds", numField(t, m, "max_lag_seconds"), 600, 0)

	// Lag 0 against the analysis functions on the same grid.
	_, ax, ay := analysis.Align(ts, x, ts, y, step)
	p, s := analysis.Pearson(ax, ay), analysis.Spearman(ax, ay)
	near(t, "n", numField(t, m, "n"), float64(p.N), 0)
	near(t, "pearson", numField(t, m, "pearson"), p.R, 1e-12)
	near(t, "p_value", numField(t, m, "p_value"), p.P, 1e-12)
	near(t, "spearman", numField(t, m, "spearman"), s.R, 1e-12)
	near(t, "spearman_p_value", numField(t, m, "spearman_p_value"), s.P, 1e-12)

	// Swapping the series flips the sign: x follows y.
	m = runJSON(t, "correlate", "--x", yf, "--y", xf)
	near(t, "swapped best_lag_seconds", numField(t, m, "best_lag_seconds"), -180, 0)

	// A lag beyond --max-lag is not found.
	m = runJSON(t, "correlate", "--x", xf, "--y", yf, "--max-lag", "2m")
	near(t, "max_lag_seconds", numField(t, m, "max_lag_seconds"), 120, 0)
	if lag := numField(t, m, "best_lag_seconds"); math.Abs(lag) > 120 {
		t.Errorf("best_lag_seconds = %v beyond --max-lag 2m", lag)
	}
}

// x = 1 2 3 4 5, y = 2 4 5 4 5. By hand: Σdx·dy = 6, Σdx² = 10, Σdy² = 6,
// so r = 6/√60. The ranks of y are 1 2.5 4.5 2.5 4.5: Σdx·dr = 7, Σdr² = 9,
// so Spearman's ρ = 7/√90. With n = 5, t = r·√(3/(1−r²)) and Student's t
// with 3 degrees of freedom has the closed form
// F(t) = 1/2 + (u/(1+u²) + atan u)/π, u = t/√3.
func TestCorrelateHandComputed(t *testing.T) {
	dir := t.TempDir()
	ts := []int64{t0, t0 + 60_000, t0 + 120_000, t0 + 180_000, t0 + 240_000}
	xf := writeSeriesCSV(t, dir, "x.csv", ts, []float64{1, 2, 3, 4, 5})
	yf := writeSeriesCSV(t, dir, "y.csv", ts, []float64{2, 4, 5, 4, 5})
	m := runJSON(t, "correlate", "--x", xf, "--y", yf)

	r := 6 / math.Sqrt(60)
	u := r * math.Sqrt(3/(1-r*r)) / math.Sqrt(3)
	p := 2 * (0.5 - (u/(1+u*u)+math.Atan(u))/math.Pi)
	near(t, "n", numField(t, m, "n"), 5, 0)
	near(t, "pearson", numField(t, m, "pearson"), r, 1e-12)
	near(t, "p_value", numField(t, m, "p_value"), p, 1e-9)
	near(t, "spearman", numField(t, m, "spearman"), 7/math.Sqrt(90), 1e-12)
	// 5 pairs are fewer than the 30 a lag needs by default.
	if m["best_lag_seconds"] != nil || m["best_lag_correlation"] != nil {
		t.Errorf("best lag reported from 5 pairs: %v", m)
	}
	m = runJSON(t, "correlate", "--x", xf, "--y", yf, "--min-pairs", "3", "--max-lag", "1m")
	if _, ok := m["best_lag_seconds"].(float64); !ok {
		t.Errorf("--min-pairs 3: no best lag: %v", m)
	}
}

func TestCorrelateAlignsDifferentSteps(t *testing.T) {
	dir := t.TempDir()
	// x every 15 s, y every 60 s, y the 60 s mean of x plus 1.
	rng := rand.New(rand.NewPCG(3, 4))
	var xt, yt []int64
	var xv, yv []float64
	for i := range 240 {
		xt = append(xt, t0+int64(i)*15_000)
		xv = append(xv, rng.Float64())
	}
	for i := 0; i+4 <= len(xv); i += 4 {
		yt = append(yt, xt[i])
		yv = append(yv, 1+(xv[i]+xv[i+1]+xv[i+2]+xv[i+3])/4)
	}
	m := runJSON(t, "correlate",
		"--x", writeSeriesCSV(t, dir, "x.csv", xt, xv),
		"--y", writeSeriesCSV(t, dir, "y.csv", yt, yv))
	near(t, "align_step_seconds", numField(t, m, "align_step_seconds"), 60, 0)
	near(t, "n", numField(t, m, "n"), 60, 0)
	near(t, "pearson", numField(t, m, "pearson"), 1, 1e-9)
	x := m["x"].(map[string]any)
	near(t, "x.median_step_seconds", numField(t, x, "median_step_seconds"), 15, 0)
	near(t, "x.samples", numField(t, x, "samples"), 240, 0)
}

func TestCorrelateYJitter(t *testing.T) {
	dir := t.TempDir()
	// x is a load level switching every 30 minutes; y is noise whose
	// spread follows the load. y itself is uncorrelated with x; its jitter
	// is strongly correlated.
	rng := rand.New(rand.NewPCG(5, 6))
	var ts []int64
	var x, y []float64
	for i := range 24 * 60 { // one day, every minute
		level := 1.0
		if (i/30)%2 == 1 {
			level = 5
		}
		ts = append(ts, t0+int64(i)*60_000)
		x = append(x, level)
		y = append(y, 100+level*rng.NormFloat64())
	}
	xf := writeSeriesCSV(t, dir, "load.csv", ts, x)
	yf := writeSeriesCSV(t, dir, "latency.csv", ts, y)
	plain := runJSON(t, "correlate", "--x", xf, "--y", yf)
	if r := numField(t, plain, "pearson"); math.Abs(r) > 0.15 {
		t.Errorf("load vs latency: pearson %v, want ≈ 0", r)
	}
	jit := runJSON(t, "correlate", "--x", xf, "--y", yf, "--y-jitter", "10m")
	if r := numField(t, jit, "pearson"); r < 0.6 {
		t.Errorf("load vs latency jitter: pearson %v, want > 0.6", r)
	}
	near(t, "y_jitter_seconds", numField(t, jit, "y_jitter_seconds"), 600, 0)
	// The trailing window makes the jitter follow the load: it peaks
	// after the switch, at a positive lag.
	if lag := numField(t, jit, "best_lag_seconds"); lag < 0 {
		t.Errorf("jitter best_lag_seconds = %v, want ≥ 0 (the jitter follows the load)", lag)
	}
}

func TestCorrelateSeriesSelector(t *testing.T) {
	f := "../../testdata/offline/two-series.jsonl"
	code, _, errOut := runCmd(t, context.Background(), "correlate", "--x", f, "--y", f)
	if code != 1 || !strings.Contains(errOut, "two-series.jsonl: holds 2 series") || !strings.Contains(errOut, "--x-series") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	m := runJSON(t, "correlate", "--x", f, "--x-series", `vllm:num_requests_running{pod="llama-0"}`,
		"--y", f, "--y-series", `{pod=~"llama-1|other"}`)
	// x = 1..6, y = 2 4 5 4 5 7.
	x, y := []float64{1, 2, 3, 4, 5, 6}, []float64{2, 4, 5, 4, 5, 7}
	near(t, "pearson", numField(t, m, "pearson"), analysis.Pearson(x, y).R, 1e-12)
	if got := m["y"].(map[string]any)["series"]; got != `vllm:num_requests_running{model="llama",pod="llama-1"}` {
		t.Errorf("y.series = %v", got)
	}
}

// Throughput declining by 3 % of a 100 tokens/s peak per day over a week of
// 15-minute samples, with noise.
func decliningSeries(days int, perDay, noise float64, seed uint64) ([]int64, []float64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	var ts []int64
	var vs []float64
	for i := range days * 24 * 4 {
		d := float64(i) / (24 * 4)
		ts = append(ts, t0+int64(i)*15*60_000)
		vs = append(vs, 100*(1-perDay*d)+noise*rng.NormFloat64())
	}
	return ts, vs
}

func TestDecayKnownLinearDecline(t *testing.T) {
	dir := t.TempDir()
	ts, vs := decliningSeries(7, 0.03, 0.5, 11)
	f := writeSeriesCSV(t, dir, "tput.csv", ts, vs)

	m := runJSON(t, "decay", "--input", f, "--peak", "100")
	near(t, "peak", numField(t, m, "peak"), 100, 0)
	near(t, "eta_trend_per_day", numField(t, m, "eta_trend_per_day"), 0.03, 0.001)
	lo, hi := numField(t, m, "eta_trend_ci_lower"), numField(t, m, "eta_trend_ci_upper")
	if !(lo <= 0.03 && 0.03 <= hi && lo > 0) {
		t.Errorf("CI [%v, %v] should hold 0.03 and exclude 0", lo, hi)
	}
	if m["significant"] != true || m["peak_estimated"] != false {
		t.Errorf("significant %v, peak_estimated %v", m["significant"], m["peak_estimated"])
	}
	// The last hour is 7 days minus 30 minutes on average in: η ≈ 0.03·6.98.
	near(t, "eta_current", numField(t, m, "eta_current"), 0.03*(7-0.5/24-1.0/96), 0.003)
	near(t, "day_over_day", numField(t, m, "day_over_day"), 0.03, 0.002)
	near(t, "n", numField(t, m, "n"), float64(len(ts)), 0)
	if m["week_over_week"] != nil {
		t.Errorf("week_over_week from 7 days of data: %v, want null", m["week_over_week"])
	}

	// An estimated peak scales the trend by 100/peak.
	m = runJSON(t, "decay", "--input", f)
	peak := numField(t, m, "peak")
	near(t, "estimated peak", peak, 100, 2)
	near(t, "eta_trend_per_day with estimated peak", numField(t, m, "eta_trend_per_day"), 0.03*100/peak, 0.001)
	if m["peak_estimated"] != true {
		t.Errorf("peak_estimated = %v", m["peak_estimated"])
	}
}

func TestDecayFlatIsNotSignificant(t *testing.T) {
	dir := t.TempDir()
	ts, vs := decliningSeries(7, 0, 2, 12)
	m := runJSON(t, "decay", "--input", writeSeriesCSV(t, dir, "flat.csv", ts, vs), "--peak", "100")
	if m["significant"] != false {
		t.Errorf("flat series: significant = %v", m["significant"])
	}
	near(t, "eta_trend_per_day", numField(t, m, "eta_trend_per_day"), 0, 0.002)
	near(t, "eta_current", numField(t, m, "eta_current"), 0, 0.02)
}

func TestDecayWindow(t *testing.T) {
	dir := t.TempDir()
	// Flat for 5 days, then a decline of 5 % of the peak a day for 2 days.
	ts, vs := decliningSeries(7, 0, 0.3, 13)
	start := 5 * 24 * 4
	for i := start; i < len(vs); i++ {
		vs[i] -= 5 * float64(i-start) / (24 * 4)
	}
	f := writeSeriesCSV(t, dir, "tput.csv", ts, vs)
	m := runJSON(t, "decay", "--input", f, "--peak", "100", "--window", "2d")
	near(t, "n", numField(t, m, "n"), 2*24*4, 0)
	near(t, "eta_trend_per_day", numField(t, m, "eta_trend_per_day"), 0.05, 0.002)
	if m["significant"] != true {
		t.Errorf("decline over the window: significant = %v", m["significant"])
	}
}

// kneeCSV formats concurrency,qps rows.
func kneeCSV(c, q []float64) string {
	var b strings.Builder
	b.WriteString("concurrency,qps\n")
	for i := range c {
		fmt.Fprintf(&b, "%g,%g\n", c[i], q[i])
	}
	return b.String()
}

func TestKneeSaturationWithNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	var c, q []float64
	for rep := range 3 {
		for x := 1; x <= 40; x++ {
			c = append(c, float64(x))
			q = append(q, 50*min(float64(x), 10)+3*rng.NormFloat64()+float64(rep))
		}
	}
	f := writeText(t, t.TempDir(), "curve.csv", kneeCSV(c, q))
	m := runJSON(t, "knee", "--input", f)
	if kc := numField(t, m, "knee_concurrency"); kc < 9 || kc > 12 {
		t.Errorf("knee_concurrency = %v, want 9…12", kc)
	}
	if m["method"] != "kneedle" {
		t.Errorf("method = %v", m["method"])
	}
	want, err := analysis.FindKnee(c, q, analysis.KneeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "knee_concurrency", numField(t, m, "knee_concurrency"), want.Concurrency, 0)
	near(t, "knee_qps", numField(t, m, "knee_qps"), want.QPS, 1e-9)
	near(t, "strength", numField(t, m, "strength"), want.Strength, 1e-12)
	near(t, "n", numField(t, m, "n"), 120, 0)
}

func TestKneeExactCurves(t *testing.T) {
	// qps = min(c, 10) for c = 1…30 (the fixture, with a header): without
	// smoothing Kneedle's difference curve (q−1)/9 − (c−1)/29 peaks at 10.
	m := runJSON(t, "knee", "--input", "../../testdata/offline/knee-min10.csv", "--smooth", "1")
	near(t, "kneedle knee_concurrency", numField(t, m, "knee_concurrency"), 10, 0)
	near(t, "kneedle knee_qps", numField(t, m, "knee_qps"), 10, 0)
	near(t, "kneedle strength", numField(t, m, "strength"), 1-9.0/29, 1e-12)

	// qps = 3000 + 300(c−10) − (c−10)³ turns from convex to concave at 10.
	var c, q []float64
	for x := 1.0; x <= 19; x++ {
		c = append(c, x)
		q = append(q, 3000+300*(x-10)-math.Pow(x-10, 3))
	}
	f := writeText(t, t.TempDir(), "cubic.csv", kneeCSV(c, q))
	m = runJSON(t, "knee", "--input", f, "--method", "cubic")
	near(t, "cubic knee_concurrency", numField(t, m, "knee_concurrency"), 10, 1e-9)
	near(t, "cubic knee_qps", numField(t, m, "knee_qps"), 3000, 1e-6)
	if m["method"] != "cubic" || m["inside"] != true || m["strength"] != nil {
		t.Errorf("method %v inside %v strength %v", m["method"], m["inside"], m["strength"])
	}
}

func TestOfflineBadInputs(t *testing.T) {
	dir := t.TempDir()
	w := func(name, content string) string { return writeText(t, dir, name, content) }
	good := w("good.csv", "timestamp,value\n1700000000,1\n1700000060,2\n1700000120,3\n1700000180,5\n")
	later := w("later.csv", "1800000000,1\n1800000060,2\n1800000120,3\n")
	empty := w("empty.csv", "")
	bad := w("bad.csv", "timestamp,value\n1700000000,1\n1700000060,fast\n")
	two := w("two.csv", "1700000000,1\n1700000060,2\n")
	nans := w("nans.csv", "1700000000,1\n1700000060,NaN\n1700000120,2\n1700000180,+Inf\n")
	missing := filepath.Join(dir, "nosuch.csv")
	multi := "../../testdata/offline/two-series.jsonl"
	kneeOK := "../../testdata/offline/knee-min10.csv"
	kneeBad := w("knee-bad.csv", "concurrency,qps\n1,10\n2,x20\n")
	kneeFew := w("knee-few.csv", "1,10\n2,20\n3,25\n4,26\n")
	kneeHeader := w("knee-header.csv", "concurrency,qps\n\n")
	kneeOneCol := w("knee-onecol.csv", "1,10\n2\n")
	kneeNeg := w("knee-neg.csv", "1,10\n2,20\n-3,25\n4,26\n5,26\n")
	kneeNaN := w("knee-nan.csv", "1,10\n2,NaN\n3,25\n4,26\n5,26\n")
	kneeLine := w("knee-line.csv", "1,10\n2,20\n3,30\n4,40\n5,50\n6,60\n")

	f := func(code int, want []string, args ...string) {
		t.Helper()
		got, out, errOut := runCmd(t, context.Background(), args...)
		if got != code {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", args, got, code, errOut)
			return
		}
		if out != "" {
			t.Errorf("%v: failed but wrote to stdout:\n%s", args, out)
		}
		for _, s := range want {
			if !strings.Contains(errOut, s) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, s, errOut)
			}
		}
	}
	// Bad input: exit 1, the file (and line) named.
	f(1, []string{"nosuch.csv", "no such file"}, "correlate", "--x", missing, "--y", good)
	f(1, []string{"empty.csv", "no rows"}, "correlate", "--x", good, "--y", empty)
	f(1, []string{"bad.csv:3:", `"fast"`}, "correlate", "--x", bad, "--y", good)
	f(1, []string{"two.csv", "2 finite samples", "need at least 3"}, "correlate", "--x", good, "--y", two)
	f(1, []string{"nans.csv", "2 finite samples", "2 dropped"}, "correlate", "--x", nans, "--y", good)
	f(1, []string{"two-series.jsonl: holds 2 series", "--y-series"}, "correlate", "--x", good, "--y", multi)
	f(1, []string{"two-series.jsonl: no series matches", "llama-9"}, "correlate", "--x", good, "--y", multi, "--y-series", `{pod="llama-9"}`)
	f(1, []string{"2 series match", "narrow"}, "correlate", "--x", good, "--y", multi, "--y-series", `{model="llama"}`)
	f(1, []string{"share 0 buckets", "do they overlap"}, "correlate", "--x", good, "--y", later)
	f(1, []string{"--x-series", "not a series selector"}, "correlate", "--x", good, "--y", good, "--x-series", "rate(x[5m])")
	f(1, []string{"nosuch.csv"}, "decay", "--input", missing)
	f(1, []string{"empty.csv", "no rows"}, "decay", "--input", empty)
	f(1, []string{"bad.csv:3:"}, "decay", "--input", bad)
	f(1, []string{"two.csv", "need at least 3"}, "decay", "--input", two)
	f(1, []string{"two-series.jsonl: holds 2 series", "--series"}, "decay", "--input", multi)
	f(1, []string{"two-series.jsonl: holds 2 series (vllm:num_requests_running{model=\"llama\",pod=\"llama-0\"}, ", "a file gives one series"}, "forecast", "--input", multi)
	f(1, []string{"two-series.jsonl: holds 2 series (vllm:num_requests_running{model=\"llama\",pod=\"llama-0\"}, ", "a file gives one series"}, "backtest", "scale", "--input", multi, "--capacity", "1")
	f(1, []string{"good.csv", "widen --window"}, "decay", "--input", good, "--window", "90s")
	f(1, []string{"nosuch.csv"}, "knee", "--input", missing)
	f(1, []string{"empty.csv", "no rows"}, "knee", "--input", empty)
	f(1, []string{"knee-bad.csv:3:", `qps "x20"`, "not a number"}, "knee", "--input", kneeBad)
	f(1, []string{"knee-few.csv", "4 rows", "at least 5"}, "knee", "--input", kneeFew)
	f(1, []string{"knee-header.csv", "0 rows after the header on line 1"}, "knee", "--input", kneeHeader)
	f(1, []string{"knee-onecol.csv:2:", "need 2"}, "knee", "--input", kneeOneCol)
	f(1, []string{"knee-neg.csv:3:", "negative"}, "knee", "--input", kneeNeg)
	f(1, []string{"knee-nan.csv:2:", "not a finite number"}, "knee", "--input", kneeNaN)
	f(1, []string{"knee-line.csv", "no knee"}, "knee", "--input", kneeLine)

	// Usage errors: exit 2.
	f(2, []string{"--x FILE and --y FILE are required"}, "correlate", "--x", good)
	f(2, []string{"not a duration"}, "correlate", "--x", good, "--y", good, "--max-lag", "soon")
	f(2, []string{"--min-pairs"}, "correlate", "--x", good, "--y", good, "--min-pairs", "2")
	f(2, []string{"unexpected argument"}, "correlate", "--x", good, "--y", good, "extra")
	f(2, []string{"flag provided but not defined"}, "correlate", "--z", good)
	f(2, []string{"--input FILE is required"}, "decay")
	f(2, []string{"--peak"}, "decay", "--input", good, "--peak", "-1")
	f(2, []string{"--confidence"}, "decay", "--input", good, "--confidence", "1")
	f(2, []string{"--input FILE is required"}, "knee")
	f(2, []string{`--method "elbow"`}, "knee", "--input", kneeOK, "--method", "elbow")
	f(2, []string{"--smooth"}, "knee", "--input", kneeOK, "--smooth", "0")
}

func TestOfflineHelpDocumentsTheFields(t *testing.T) {
	for cmd, want := range map[string][]string{
		"correlate": {"n ", "pearson", "spearman", "p_value", "best_lag_seconds", "best_lag_correlation",
			"Lag sign convention", "positive best_lag_seconds means y follows x", "-align-step", "-y-jitter", "-max-lag"},
		"decay": {"peak", "eta_current", "eta_trend_per_day", "eta_trend_ci_lower", "significant", "-window", "-peak"},
		"knee":  {"knee_concurrency", "knee_qps", "method", "-method", "kneedle or cubic"},
	} {
		code, out, errOut := runCmd(t, context.Background(), cmd, "--help")
		if code != 0 || errOut != "" {
			t.Errorf("%s --help: exit %d, stderr %q", cmd, code, errOut)
		}
		for _, s := range want {
			if !strings.Contains(out, s) {
				t.Errorf("%s --help lacks %q", cmd, s)
			}
		}
	}
	code, out, _ := runCmd(t, context.Background(), "help")
	if code != 0 || !strings.Contains(out, "inferwatch correlate") || !strings.Contains(out, "inferwatch knee") {
		t.Errorf("the usage does not list the offline commands:\n%s", out)
	}
}

// A week of two series at 30 s, the lag search over ±10 steps.
func BenchmarkCorrelateWeek(b *testing.B) {
	dir := b.TempDir()
	ts, x, y := lagged(7*24*120, 3, 30_000, 0.1, 1)
	o := correlateOptions{
		xFile:    writeSeriesCSV(b, dir, "x.csv", ts, x),
		yFile:    writeSeriesCSV(b, dir, "y.csv", ts, y),
		minPairs: 30,
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := correlate(o); err != nil {
			b.Fatal(err)
		}
	}
}

// A week at 60 s: 10,080 points, more pairs than TheilSen computes exactly.
func BenchmarkDecayWeek(b *testing.B) {
	dir := b.TempDir()
	var ts []int64
	var vs []float64
	for i := range 7 * 24 * 60 {
		ts = append(ts, t0+int64(i)*60_000)
		vs = append(vs, 100-0.001*float64(i)+math.Sin(float64(i)))
	}
	o := decayOptions{file: writeSeriesCSV(b, dir, "tput.csv", ts, vs), current: time.Hour, minSlope: 0.01, confid: 0.95}
	b.ResetTimer()
	for b.Loop() {
		if _, err := decay(o); err != nil {
			b.Fatal(err)
		}
	}
}
