package promexport

import (
	"bytes"
	"context"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferwatch/inferwatch/alerting"
)

var t0 = time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)

// clock is a settable clock for the exporter.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// scrape writes what w writes and parses it as Prometheus does, with the
// classic (legacy) name rules, failing the test on any error.
func scrape(t *testing.T, write func(*bytes.Buffer)) map[string]*dto.MetricFamily {
	t.Helper()
	var buf bytes.Buffer
	write(&buf)
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("parsing the exposition: %v\n%s", err, buf.String())
	}
	return mfs
}

func scrapeExporter(t *testing.T, e *Exporter) map[string]*dto.MetricFamily {
	t.Helper()
	return scrape(t, func(b *bytes.Buffer) { e.WritePrometheus(b) })
}

// value returns the value of the series of family name with exactly the
// labels want.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		ok := true
		for _, l := range m.Label {
			if v, has := want[l.GetName()]; !has || v != l.GetValue() {
				ok = false
				break
			}
		}
		if ok {
			if m.Gauge != nil {
				return m.Gauge.GetValue(), true
			}
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func count(mfs map[string]*dto.MetricFamily, name string) int {
	if mf := mfs[name]; mf != nil {
		return len(mf.Metric)
	}
	return 0
}

func labelsOf(mfs map[string]*dto.MetricFamily, name string) []string {
	var out []string
	for _, m := range mfs[name].GetMetric() {
		var b strings.Builder
		for _, l := range m.Label {
			b.WriteString(l.GetName() + "=" + l.GetValue() + ";")
		}
		out = append(out, b.String())
	}
	sort.Strings(out)
	return out
}

// forecast builds a forecast from origin over steps of one minute, each
// point's mean m+i with the band ±1.
func forecast(rule string, labels map[string]string, origin time.Time, steps int, m float64) alerting.ForecastData {
	f := alerting.ForecastData{Group: "g", Rule: rule, Labels: labels, Origin: origin, StepSeconds: 60,
		HorizonSeconds: float64(steps * 60), Level: 0.9, Model: "naive"}
	peak := math.Inf(-1)
	for i := 1; i <= steps; i++ {
		v := m + float64(i)
		f.Points = append(f.Points, alerting.ForecastPoint{Time: origin.Add(time.Duration(i) * time.Minute),
			Mean: alerting.JSONFloat(v), Lower: alerting.JSONFloat(v - 1), Upper: alerting.JSONFloat(v + 1)})
		peak = max(peak, v)
	}
	f.Peak, f.UpperPeak = alerting.JSONFloat(peak), alerting.JSONFloat(peak+1)
	return f
}

func scale(rule string, labels map[string]string, at time.Time, desired, current, tier int) alerting.ScaleData {
	return alerting.ScaleData{Group: "g", Rule: rule, Target: targetOf(labels), Labels: labels, Time: at,
		DesiredReplicas: desired, CurrentReplicas: current, CurrentKnown: current >= 0, Tier: tier,
		ValidUntil: at.Add(10 * time.Minute)}
}

func targetOf(ls map[string]string) string {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=\"" + ls[k] + "\"")
	}
	b.WriteByte('}')
	return b.String()
}

func TestFamiliesAndLabels(t *testing.T) {
	c := &clock{t0}
	e := New(Options{Now: c.Now})
	qwen := map[string]string{"model": "qwen"}
	b := alerting.Batch{Group: "g",
		Forecasts: []alerting.ForecastData{forecast("request_rate", qwen, t0, 10, 5)},
		Scales:    []alerting.ScaleData{scale("vllm-qwen", qwen, t0, 3, 2, 3)},
		Scores: []alerting.Scores{{Group: "g", Rule: "ttft", Kind: "anomaly", Labels: qwen, Series: `{model="qwen"}`,
			T: []int64{1, 2, 3}, Score: []float64{0.2, 1.5, math.NaN()}}},
	}
	if err := e.Send(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	mfs := scrapeExporter(t, e)
	f := func(name string, labels map[string]string, want float64) {
		t.Helper()
		got, ok := value(mfs, name, labels)
		if !ok {
			t.Fatalf("no %s%v; have %v", name, labels, labelsOf(mfs, name))
		}
		if got != want {
			t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
		}
	}
	fl := func(q string) map[string]string {
		return map[string]string{"rule": "request_rate", "model": "qwen", "horizon": "10m", "quantile": q}
	}
	f(FamilyForecast, fl("0.5"), 15)
	f(FamilyForecast, fl("0.05"), 14)
	f(FamilyForecast, fl("0.95"), 16)
	f(FamilyForecastPeak, fl("0.5"), 15)
	f(FamilyForecastPeak, fl("0.95"), 16)
	sl := map[string]string{"rule": "vllm-qwen", "model": "qwen"}
	f(FamilyScaleDesired, sl, 3)
	f(FamilyScaleCurrent, sl, 2)
	f(FamilyScaleTier, sl, 3)
	f(FamilyScaleValidUntil, sl, float64(t0.Add(10*time.Minute).Unix()))
	f(FamilyAnomalyScore, map[string]string{"rule": "ttft", "model": "qwen"}, 1.5) // the newest finite score
	if n := count(mfs, FamilyForecast); n != 3 {
		t.Fatalf("%d forecast series, want 3: %v", n, labelsOf(mfs, FamilyForecast))
	}
}

func TestLeads(t *testing.T) {
	e := New(Options{Leads: []time.Duration{time.Minute, 5 * time.Minute, 90 * time.Second, time.Hour}})
	e.Send(context.Background(), alerting.Batch{Forecasts: []alerting.ForecastData{forecast("rr", nil, t0, 10, 0)}})
	mfs := scrapeExporter(t, e)
	// 90s falls between steps and 1h past the horizon: only 1m and 5m.
	want := []string{
		"horizon=1m;quantile=0.05;rule=rr;", "horizon=1m;quantile=0.5;rule=rr;", "horizon=1m;quantile=0.95;rule=rr;",
		"horizon=5m;quantile=0.05;rule=rr;", "horizon=5m;quantile=0.5;rule=rr;", "horizon=5m;quantile=0.95;rule=rr;",
	}
	if got := labelsOf(mfs, FamilyForecast); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("forecast series:\n%v\nwant\n%v", got, want)
	}
	if v, _ := value(mfs, FamilyForecast, map[string]string{"rule": "rr", "horizon": "5m", "quantile": "0.5"}); v != 5 {
		t.Fatalf("forecast at 5m = %v, want 5", v)
	}
	// The peak is over the whole horizon, whatever the leads.
	if v, _ := value(mfs, FamilyForecastPeak, map[string]string{"rule": "rr", "horizon": "10m", "quantile": "0.95"}); v != 11 {
		t.Fatalf("upper peak = %v, want 11", v)
	}
}

// TestServedHorizons: a forecast rule serving several horizons is exposed
// at each, with the peaks over each.
func TestServedHorizons(t *testing.T) {
	e := New(Options{})
	f := forecast("rr", nil, t0, 10, 0)
	f.Horizons = []alerting.ForecastHorizon{
		{HorizonSeconds: 180, Peak: 3, UpperPeak: 4, PeakTime: t0.Add(3 * time.Minute)},
		{HorizonSeconds: 600, Peak: 10, UpperPeak: 11, PeakTime: t0.Add(10 * time.Minute)},
	}
	e.Send(context.Background(), alerting.Batch{Forecasts: []alerting.ForecastData{f}})
	mfs := scrapeExporter(t, e)
	for _, c := range []struct {
		family, horizon, quantile string
		want                      float64
	}{
		{FamilyForecast, "3m", "0.5", 3}, {FamilyForecast, "3m", "0.95", 4}, {FamilyForecast, "10m", "0.05", 9},
		{FamilyForecastPeak, "3m", "0.5", 3}, {FamilyForecastPeak, "3m", "0.95", 4},
		{FamilyForecastPeak, "10m", "0.5", 10}, {FamilyForecastPeak, "10m", "0.95", 11},
	} {
		if v, ok := value(mfs, c.family, map[string]string{"rule": "rr", "horizon": c.horizon, "quantile": c.quantile}); !ok || v != c.want {
			t.Errorf("%s{horizon=%q,quantile=%q} = %v (present %v), want %v", c.family, c.horizon, c.quantile, v, ok, c.want)
		}
	}
	if n := count(mfs, FamilyForecast); n != 6 {
		t.Errorf("%d forecast series, want 3 quantiles at each of 2 horizons", n)
	}
}

func TestQuantileLabels(t *testing.T) {
	f := func(level float64, lo, hi string) {
		t.Helper()
		if l, h := quantileLabels(level); l != lo || h != hi {
			t.Fatalf("level %v: %s, %s; want %s, %s", level, l, h, lo, hi)
		}
	}
	f(0.9, "0.05", "0.95")
	f(0.8, "0.1", "0.9")
	f(0.95, "0.025", "0.975")
	f(0.99, "0.005", "0.995")
	f(0, "lower", "upper")
	f(math.NaN(), "lower", "upper")
}

func TestSanitizeLabelName(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := SanitizeLabelName(in); got != want {
			t.Fatalf("SanitizeLabelName(%q) = %q, want %q", in, got, want)
		}
		if !model.LegacyValidation.IsValidLabelName(SanitizeLabelName(in)) {
			t.Fatalf("SanitizeLabelName(%q) = %q is not a valid label name", in, SanitizeLabelName(in))
		}
	}
	f("model", "model")
	f("model_name", "model_name")
	f("k8s.pod.name", "k8s_pod_name")
	f("9lives", "_9lives")
	f("gpu-id", "gpu_id")
	f("modèle", "mod_le")
	f("", "_")
	f("_x", "_x")
}

func TestLabelTranslation(t *testing.T) {
	set := metrics.NewSet()
	e := New(Options{Metrics: set})
	labels := map[string]string{
		"__name__":     "vllm:num_requests_running", // reserved: dropped
		"rule":         "theirs",                    // ours: exported_rule
		"k8s.pod.name": "p-1",                       // sanitised
		"a.b":          "first",                     // would be a_b
		"a_b":          "second",                    // valid as it is: it keeps a_b, and a.b is dropped
		"odd":          "quote\" back\\ nl\n",       // escaped in the text, read back as is
		"bad":          "x\xffy",                    // not UTF-8: repaired
		"empty":        "",                          // absent in Prometheus
	}
	sc := alerting.Scores{Rule: "r", Labels: labels, Score: []float64{2}}
	e.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{sc}})
	mfs := scrape(t, func(b *bytes.Buffer) { set.WritePrometheus(b) })
	want := map[string]string{"rule": "r", "exported_rule": "theirs", "k8s_pod_name": "p-1", "a_b": "second",
		"odd": "quote\" back\\ nl\n", "bad": "x\uFFFDy"}
	if v, ok := value(mfs, FamilyAnomalyScore, want); !ok || v != 2 {
		t.Fatalf("no score series with %v (%v); have %v", want, v, labelsOf(mfs, FamilyAnomalyScore))
	}
	counter := func(action string, want float64) {
		t.Helper()
		got, ok := value(mfs, "inferwatch_export_labels_changed_total", map[string]string{"action": action})
		if !ok || got != want {
			t.Fatalf("labels changed{action=%q} = %v (%v), want %v", action, got, ok, want)
		}
	}
	counter("renamed", 2) // rule, k8s.pod.name
	counter("dropped_reserved", 1)
	counter("dropped_collision", 1)
	counter("value_repaired", 1)
	// Counted once per series created, not per update.
	e.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{sc}})
	mfs = scrape(t, func(b *bytes.Buffer) { set.WritePrometheus(b) })
	counter("renamed", 2)
}

func TestCapAndExpiry(t *testing.T) {
	c := &clock{t0}
	set := metrics.NewSet()
	e := New(Options{Metrics: set, MaxSeries: 4, Expiry: 5 * time.Minute, Now: c.Now})
	send := func(fs ...alerting.ForecastData) {
		t.Helper()
		if err := e.Send(context.Background(), alerting.Batch{Forecasts: fs}); err != nil {
			t.Fatal(err)
		}
	}
	read := func() map[string]*dto.MetricFamily {
		return scrape(t, func(b *bytes.Buffer) { set.WritePrometheus(b) })
	}
	dropped := func(mfs map[string]*dto.MetricFamily, fam string) float64 {
		v, _ := value(mfs, "inferwatch_export_series_dropped_total", map[string]string{"family": fam})
		return v
	}
	a := forecast("rr", map[string]string{"model": "a"}, t0, 10, 0)
	b := forecast("rr", map[string]string{"model": "b"}, t0, 10, 0)
	send(a, b)
	mfs := read()
	// a's three series fit under the cap of 4; b's three would pass it and
	// are dropped whole, not one of them kept.
	if n := count(mfs, FamilyForecast); n != 3 {
		t.Fatalf("%d forecast series under a cap of 4, want 3: %v", n, labelsOf(mfs, FamilyForecast))
	}
	if _, ok := value(mfs, FamilyForecast, map[string]string{"rule": "rr", "model": "a", "horizon": "10m", "quantile": "0.5"}); !ok {
		t.Fatal("the first forecast was not kept")
	}
	if d := dropped(mfs, FamilyForecast); d != 3 {
		t.Fatalf("dropped %v forecast series, want 3", d)
	}
	if v, _ := value(mfs, "inferwatch_export_series", map[string]string{"family": FamilyForecast}); v != 3 {
		t.Fatalf("inferwatch_export_series = %v, want 3", v)
	}
	// a is updated while b keeps being dropped.
	c.now = t0.Add(4 * time.Minute)
	a2 := forecast("rr", map[string]string{"model": "a"}, t0.Add(4*time.Minute), 10, 100)
	send(a2, b)
	mfs = read()
	if v, _ := value(mfs, FamilyForecast, map[string]string{"rule": "rr", "model": "a", "horizon": "10m", "quantile": "0.5"}); v != 110 {
		t.Fatalf("updated forecast = %v, want 110", v)
	}
	if d := dropped(mfs, FamilyForecast); d != 6 {
		t.Fatalf("dropped %v forecast series, want 6", d)
	}
	// 5m after its last update a is still there; past 5m it is gone,
	// and b finds room.
	c.now = t0.Add(9 * time.Minute)
	if n := count(read(), FamilyForecast); n != 3 {
		t.Fatalf("%d forecast series at the expiry, want 3", n)
	}
	c.now = t0.Add(9*time.Minute + time.Second)
	if n := count(read(), FamilyForecast); n != 0 {
		t.Fatalf("%d forecast series after the expiry, want 0", n)
	}
	send(b)
	mfs = read()
	if _, ok := value(mfs, FamilyForecast, map[string]string{"rule": "rr", "model": "b", "horizon": "10m", "quantile": "0.95"}); !ok {
		t.Fatalf("b not exported once there was room: %v", labelsOf(mfs, FamilyForecast))
	}
}

func TestScaleSignals(t *testing.T) {
	e := New(Options{})
	m := map[string]string{"model": "m"}
	// After a backfill a batch holds a target's changes in time order:
	// the newest is exposed.
	e.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{
		scale("s", m, t0, 2, 1, 3), scale("s", m, t0.Add(time.Minute), 5, 2, 1), scale("s", m, t0.Add(2*time.Minute), 4, 4, 3),
	}})
	mfs := scrapeExporter(t, e)
	sl := map[string]string{"rule": "s", "model": "m"}
	if v, _ := value(mfs, FamilyScaleDesired, sl); v != 4 {
		t.Fatalf("desired = %v, want 4 (the newest)", v)
	}
	if v, _ := value(mfs, FamilyScaleCurrent, sl); v != 4 {
		t.Fatalf("current = %v, want 4", v)
	}
	// Current replicas unknown: the series goes, the others stay.
	e.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{scale("s", m, t0.Add(3*time.Minute), 4, -1, 0)}})
	mfs = scrapeExporter(t, e)
	if _, ok := value(mfs, FamilyScaleCurrent, sl); ok {
		t.Fatal("current replicas exposed while unknown")
	}
	if v, _ := value(mfs, FamilyScaleTier, sl); v != 0 {
		t.Fatalf("tier = %v, want 0", v)
	}
}

func TestNonFiniteForecastRemovesSeries(t *testing.T) {
	e := New(Options{})
	f := forecast("rr", nil, t0, 3, 0)
	e.Send(context.Background(), alerting.Batch{Forecasts: []alerting.ForecastData{f}})
	f.Points[2].Upper = alerting.JSONFloat(math.NaN())
	e.Send(context.Background(), alerting.Batch{Forecasts: []alerting.ForecastData{f}})
	mfs := scrapeExporter(t, e)
	if _, ok := value(mfs, FamilyForecast, map[string]string{"rule": "rr", "horizon": "3m", "quantile": "0.95"}); ok {
		t.Fatal("an undefined upper bound is still exposed with its old value")
	}
	if n := count(mfs, FamilyForecast); n != 2 {
		t.Fatalf("%d forecast series, want 2", n)
	}
}

func TestMetadata(t *testing.T) {
	metrics.ExposeMetadata(true)
	defer metrics.ExposeMetadata(false)
	set := metrics.NewSet()
	e := New(Options{Metrics: set})
	e.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{scale("s", nil, t0, 1, 1, 3)}})
	mfs := scrape(t, func(b *bytes.Buffer) { set.WritePrometheus(b) })
	mf := mfs[FamilyScaleDesired]
	if mf == nil || mf.GetType() != dto.MetricType_GAUGE || !strings.Contains(mf.GetHelp(), "Replicas") {
		t.Fatalf("family %s: %v", FamilyScaleDesired, mf)
	}
}

func BenchmarkSend(b *testing.B) {
	e := New(Options{})
	var batch alerting.Batch
	for i := range 200 {
		batch.Forecasts = append(batch.Forecasts, forecast("rr", map[string]string{"model": "m", "pod": strings.Repeat("p", i%7) + string(rune('a'+i%26))}, t0, 10, 0))
	}
	b.ResetTimer()
	for range b.N {
		e.Send(context.Background(), batch)
	}
}

// TestScoreSeriesFollowTheirLabels: a watched series handed on again keeps
// its series; one whose labels changed under the same rule and series name
// (a reload that changed the rule's labels) is exported with the new
// labels; and what the exporter remembers of a series expires with it.
func TestScoreSeriesFollowTheirLabels(t *testing.T) {
	c := &clock{t0}
	set := metrics.NewSet()
	e := New(Options{Metrics: set, Expiry: 5 * time.Minute, Now: c.Now})
	send := func(labels map[string]string, score float64) {
		t.Helper()
		sc := alerting.Scores{Group: "g", Rule: "r", Series: `{model="a"}`, Labels: labels, Score: []float64{score}}
		if err := e.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{sc}}); err != nil {
			t.Fatal(err)
		}
	}
	read := func() map[string]*dto.MetricFamily {
		return scrape(t, func(b *bytes.Buffer) { set.WritePrometheus(b) })
	}
	send(map[string]string{"model": "a"}, 0.5)
	send(map[string]string{"model": "a"}, 0.7)
	mfs := read()
	if v, ok := value(mfs, FamilyAnomalyScore, map[string]string{"rule": "r", "model": "a"}); !ok || v != 0.7 || count(mfs, FamilyAnomalyScore) != 1 {
		t.Fatalf("score %v (%v), %d series; want 0.7 in one: %v", v, ok, count(mfs, FamilyAnomalyScore), labelsOf(mfs, FamilyAnomalyScore))
	}
	send(map[string]string{"model": "a", "team": "x"}, 1.5)
	mfs = read()
	if v, ok := value(mfs, FamilyAnomalyScore, map[string]string{"rule": "r", "model": "a", "team": "x"}); !ok || v != 1.5 {
		t.Fatalf("after the labels changed: %v (%v); have %v", v, ok, labelsOf(mfs, FamilyAnomalyScore))
	}
	c.now = t0.Add(6 * time.Minute)
	if err := e.Send(context.Background(), alerting.Batch{}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.scoreKeys); n != 0 {
		t.Fatalf("%d series remembered after their expiry, want 0", n)
	}
}

// TestScoreCap: at the cap a new watched series is dropped and counted,
// every cycle it comes, while the series exported go on being updated.
func TestScoreCap(t *testing.T) {
	set := metrics.NewSet()
	e := New(Options{Metrics: set, MaxSeries: 1})
	score := func(model string, v float64) alerting.Scores {
		return alerting.Scores{Group: "g", Rule: "r", Series: `{model="` + model + `"}`, Labels: map[string]string{"model": model}, Score: []float64{v}}
	}
	for i := range 3 {
		if err := e.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{score("a", float64(i)), score("b", 9)}}); err != nil {
			t.Fatal(err)
		}
	}
	mfs := scrape(t, func(b *bytes.Buffer) { set.WritePrometheus(b) })
	if v, ok := value(mfs, FamilyAnomalyScore, map[string]string{"rule": "r", "model": "a"}); !ok || v != 2 || count(mfs, FamilyAnomalyScore) != 1 {
		t.Fatalf("a = %v (%v), %d series; want 2 in one: %v", v, ok, count(mfs, FamilyAnomalyScore), labelsOf(mfs, FamilyAnomalyScore))
	}
	if d, _ := value(mfs, "inferwatch_export_series_dropped_total", map[string]string{"family": FamilyAnomalyScore}); d != 3 {
		t.Fatalf("dropped %v, want 3 (b, each cycle)", d)
	}
}

// TestForgetGroup: a group evaluated elsewhere now takes its series with
// it at once; another group's stay.
func TestForgetGroup(t *testing.T) {
	e := New(Options{})
	mine := scale("s", map[string]string{"model": "a"}, t0, 3, 2, 3)
	mine.Group = "g1"
	other := scale("s", map[string]string{"model": "b"}, t0, 5, 4, 3)
	other.Group = "g2"
	scores := []alerting.Scores{
		{Group: "g1", Rule: "r", Series: `{pod="p1"}`, Labels: map[string]string{"pod": "p1"}, Score: []float64{0.4}},
		{Group: "g2", Rule: "r", Series: `{pod="p2"}`, Labels: map[string]string{"pod": "p2"}, Score: []float64{0.6}},
	}
	if err := e.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{mine, other}, Scores: scores}); err != nil {
		t.Fatal(err)
	}
	e.Forget("g1")
	mfs := scrapeExporter(t, e)
	if _, ok := value(mfs, FamilyScaleDesired, map[string]string{"rule": "s", "model": "a"}); ok {
		t.Error("the forgotten group's scale signal is still exported")
	}
	if _, ok := value(mfs, FamilyAnomalyScore, map[string]string{"rule": "r", "pod": "p1"}); ok {
		t.Error("the forgotten group's score is still exported")
	}
	if v, ok := value(mfs, FamilyScaleDesired, map[string]string{"rule": "s", "model": "b"}); !ok || v != 5 {
		t.Errorf("the other group's signal: %v (%v), want 5", v, ok)
	}
	if v, ok := value(mfs, FamilyAnomalyScore, map[string]string{"rule": "r", "pod": "p2"}); !ok || v != 0.6 {
		t.Errorf("the other group's score: %v (%v), want 0.6", v, ok)
	}
	if count(mfs, FamilyScaleTier) != 1 || len(e.scoreKeys) != 1 {
		t.Errorf("%d tier series and %d score keys left, want 1 and 1", count(mfs, FamilyScaleTier), len(e.scoreKeys))
	}
}
