package writeback_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/writeback"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localprom"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

const step = 15 * time.Second

// horizons are the leads of the forecasts, 1 to 4 steps, as the horizon
// label writes them.
var horizons = []string{1: "15s", 2: "30s", 3: "45s", 4: "1m"}

// fleet is what the test writes: the scores of two series of an anomaly
// rule and the forecasts of a forecast rule over successive origins, with
// values a decimal store holds exactly.
type fleet struct {
	t0      time.Time
	n       int // points scored per series
	origins int // successive forecasts
	leads   int // points per forecast
}

func (f fleet) at(i int) time.Time { return f.t0.Add(time.Duration(i) * step) }

// batches are the evaluations' batches: the scores in the first, then one
// forecast per batch, as a forecast rule publishes its newest outlook.
func (f fleet) batches(group string) []alerting.Batch {
	nan := math.NaN()
	var scores []alerting.Scores
	for _, model := range []string{"m1", "m2"} {
		sc := alerting.Scores{
			Group: group, Rule: "running", Kind: "anomaly", Series: `vllm:num_requests_running{model="` + model + `"}`,
			Labels: map[string]string{"__name__": "vllm:num_requests_running", "model": model, "team": "serving"},
		}
		for i := range f.n {
			v := float64(i%7) + 0.25
			sc.T = append(sc.T, f.at(i).UnixMilli())
			sc.Value = append(sc.Value, v)
			if i < 3 { // not ready yet
				sc.Score, sc.Expected = append(sc.Score, nan), append(sc.Expected, nan)
				sc.Lower, sc.Upper = append(sc.Lower, nan), append(sc.Upper, nan)
				continue
			}
			sc.Score = append(sc.Score, float64(i%5)*0.5)
			sc.Expected = append(sc.Expected, 3.5)
			lower := 0.125
			if model == "m2" {
				lower = nan // a one-sided band
			}
			sc.Lower, sc.Upper = append(sc.Lower, lower), append(sc.Upper, 7.75)
		}
		scores = append(scores, sc)
	}
	out := []alerting.Batch{{Group: group, Scores: scores}}
	for o := range f.origins {
		origin := f.at(o)
		fd := alerting.ForecastData{Group: group, Rule: "rps", Labels: map[string]string{"model": "m1"},
			Series: `{model="m1"}`, Origin: origin, StepSeconds: step.Seconds(), Level: 0.9}
		for l := 1; l <= f.leads; l++ {
			mean := float64(o) + float64(l)/4
			fd.Points = append(fd.Points, alerting.ForecastPoint{Time: origin.Add(time.Duration(l) * step),
				Mean: alerting.JSONFloat(mean), Lower: alerting.JSONFloat(mean - 1), Upper: alerting.JSONFloat(mean + 2)})
		}
		out = append(out, alerting.Batch{Group: group, Forecasts: []alerting.ForecastData{fd}})
	}
	return out
}

// want is what the store must hold afterwards, computed from the figures
// above without the package's help: series in selector syntax → t=v list.
func (f fleet) want(group string, at writeback.ForecastTime) map[string]string {
	out := map[string]string{}
	add := func(labels string, t time.Time, v float64) {
		out[labels] += fmt.Sprintf(" %d=%g", t.UnixMilli(), v)
	}
	for _, model := range []string{"m1", "m2"} {
		base := fmt.Sprintf(`{for="running",group=%q,metric="vllm:num_requests_running",model=%q,rule="running",team="serving"}`, group, model)
		for i := range f.n {
			add("y"+base, f.at(i), float64(i%7)+0.25)
			if i < 3 {
				continue
			}
			add("anomaly_score"+base, f.at(i), float64(i%5)*0.5)
			add("yhat"+base, f.at(i), 3.5)
			add("yhat_upper"+base, f.at(i), 7.75)
			if model == "m1" {
				add("yhat_lower"+base, f.at(i), 0.125)
			}
		}
	}
	for o := range f.origins {
		for l := 1; l <= f.leads; l++ {
			mean := float64(o) + float64(l)/4
			ts := f.at(o + l)
			if at == writeback.AtOrigin {
				ts = f.at(o)
			}
			h := horizons[l]
			for kind, v := range map[string]float64{"yhat": mean, "yhat_lower": mean - 1, "yhat_upper": mean + 2} {
				add(fmt.Sprintf(`inferwatch_predicted{at=%q,for="rps",group=%q,horizon=%q,kind=%q,model="m1",rule="rps"}`, at, group, h, kind), ts, v)
			}
		}
	}
	return out
}

// readRange reads the series of query with a range query over [start, end]
// at the step and renders them as want does.
func readRange(t *testing.T, c *ingest.Client, query string, start, end time.Time) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := c.QueryRange(ctx, query, start, end, step)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range got {
		var b strings.Builder
		for i, ts := range s.Timestamps {
			fmt.Fprintf(&b, " %d=%g", ts, s.Values[i])
		}
		out[s.Labels.String()] = b.String()
	}
	return out
}

// read reads back what the fleet wrote for group, each series over the
// range it was written in: a store repeats a series' last value for a while
// after it (Prometheus for five minutes), so a longer range would not
// compare.
func (f fleet) read(t *testing.T, c *ingest.Client, group string, at writeback.ForecastTime) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"anomaly_score", "y", "yhat", "yhat_lower", "yhat_upper"} {
		maps.Copy(out, readRange(t, c, fmt.Sprintf(`%s{group=%q}`, name, group), f.at(0), f.at(f.n-1)))
	}
	for l := 1; l <= f.leads; l++ {
		from, to := f.at(l), f.at(f.origins-1+l)
		if at == writeback.AtOrigin {
			from, to = f.at(0), f.at(f.origins-1)
		}
		maps.Copy(out, readRange(t, c, fmt.Sprintf(`inferwatch_predicted{group=%q,horizon=%q}`, group, horizons[l]), from, to))
	}
	return out
}

// instant runs query at ts and renders the result as labels=value, sorted.
func instant(t *testing.T, c *ingest.Client, query string, ts time.Time) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := c.Query(ctx, query, ts)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var out []string
	for _, s := range got {
		for _, v := range s.Values {
			out = append(out, fmt.Sprintf("%s=%g", s.Labels, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// checkDocumentedQueries runs the queries docs/writeback.md shows for alerting on
// the score and plotting a forecast beside its metric.
func checkDocumentedQueries(t *testing.T, c *ingest.Client, f fleet, group string, at writeback.ForecastTime) {
	t.Helper()
	// i = 9: score (9%5)*0.5 = 2 for both models.
	q := fmt.Sprintf(`max by (group, for, model) (anomaly_score{group=%q}) >= 1`, group)
	want := fmt.Sprintf(`{for="running",group=%q,model="m1"}=2 {for="running",group=%q,model="m2"}=2`, group, group)
	if got := instant(t, c, q, f.at(9)); got != want {
		t.Errorf("%s:\n got %s\nwant %s", q, got, want)
	}
	// The forecast for the time of origin 5 + 1 lead, made at origin 5:
	// 5 + 1/4.
	q = fmt.Sprintf(`inferwatch_predicted{group=%q,for="rps",horizon="15s",kind="yhat"}`, group)
	if at == writeback.AtOrigin {
		q += " offset 15s"
	}
	want = fmt.Sprintf(`inferwatch_predicted{at=%q,for="rps",group=%q,horizon="15s",kind="yhat",model="m1",rule="rps"}=5.25`, at, group)
	got := instant(t, c, q, f.at(6))
	if got != want {
		t.Errorf("%s at origin 6:\n got %s\nwant %s", q, got, want)
	}
}

func compareStored(t *testing.T, got, want map[string]string) {
	t.Helper()
	// m1: five figures; m2: four (its band is one-sided); the forecast:
	// three figures for each of four leads.
	if len(want) != 5+4+3*4 {
		t.Fatalf("want %d series, the test expects 21", len(want))
	}
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s:\n got%s\nwant%s", k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected series %s:%s", k, got[k])
		}
	}
}

func write(t *testing.T, o writeback.Options, bs []alerting.Batch) *metrics.Set {
	t.Helper()
	set := metrics.NewSet()
	o.Metrics = set
	o.BatchDeadline = 10 * time.Millisecond
	w, err := writeback.New(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if err := w.Send(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if left, err := w.Close(ctx); left != 0 || err != nil {
		t.Fatalf("Close: %d left: %v", left, err)
	}
	return set
}

func get(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
}

// TestWriteBackToVictoriaMetrics writes a generated fleet's scores and
// forecasts to a real VictoriaMetrics over both protocols and reads them
// back with range queries: every value and label as written.
func TestWriteBackToVictoriaMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := localvm.Run(t)
	f := fleet{t0: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), n: 80, origins: 10, leads: 4}
	for _, tc := range []struct {
		group    string
		protocol writeback.Protocol
		at       writeback.ForecastTime
	}{
		{"import", writeback.VMImport, ""}, // forecasts at their target time, the default
		{"rw", writeback.RemoteWrite, writeback.AtTarget},
		{"rw_origin", writeback.RemoteWrite, ""}, // at the origin, the default
	} {
		t.Run(tc.group, func(t *testing.T) {
			at := tc.at
			if at == "" {
				at = map[writeback.Protocol]writeback.ForecastTime{writeback.VMImport: writeback.AtTarget, writeback.RemoteWrite: writeback.AtOrigin}[tc.protocol]
			}
			set := write(t, writeback.Options{URL: vm.URL(), Protocol: tc.protocol, ForecastAt: tc.at}, f.batches(tc.group))
			if got := dropped(set); got != "" {
				t.Errorf("dropped: %s", got)
			}
			get(t, vm.URL()+"/internal/force_flush")
			get(t, vm.URL()+"/internal/resetRollupResultCache")
			c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL()})
			if err != nil {
				t.Fatal(err)
			}
			compareStored(t, f.read(t, c, tc.group, at), f.want(tc.group, at))
			checkDocumentedQueries(t, c, f, tc.group, at)
		})
	}
}

// dropped lists the non-zero drop counters of set.
func dropped(set *metrics.Set) string {
	var b strings.Builder
	set.WritePrometheus(&b)
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "inferwatch_writeback_samples_dropped_total") && !strings.HasSuffix(line, " 0") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "; ")
}

func counter(set *metrics.Set, name string) float64 {
	var b strings.Builder
	set.WritePrometheus(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var x float64
			fmt.Sscan(v, &x)
			return x
		}
	}
	return math.NaN()
}

// TestRemoteWriteToPrometheus writes the fleet to a real Prometheus through
// its remote-write receiver and reads it back; then, as a restarted daemon
// would, writes a series again from before its newest stored sample beside
// a new series: Prometheus refuses the request (400, out of order), the
// writer splits it, the new series is stored, the refused one is counted,
// and what comes after is written.
func TestRemoteWriteToPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	prom := localprom.Run(t, nil, "--web.enable-remote-write-receiver")
	// Recent, so that it lies within the hour the head accepts before its
	// newest sample.
	f := fleet{t0: time.Now().Add(-40 * time.Minute).Truncate(time.Minute), n: 60, origins: 10, leads: 4}
	set := write(t, writeback.Options{URL: prom.URL, Protocol: writeback.RemoteWrite}, f.batches("latency"))
	if got := dropped(set); got != "" {
		t.Errorf("dropped: %s", got)
	}
	c, err := ingest.NewClient(ingest.ClientOptions{URL: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	compareStored(t, f.read(t, c, "latency", writeback.AtOrigin), f.want("latency", writeback.AtOrigin))
	checkDocumentedQueries(t, c, f, "latency", writeback.AtOrigin)
	end := f.at(f.n - 1)

	// A second writer (a restart): y of m1 again from 4 steps before its
	// newest stored sample to 4 after, and a series never written.
	score := func(model string, from, to int) alerting.Scores {
		sc := alerting.Scores{Group: "latency", Rule: "running", Kind: "anomaly",
			Labels: map[string]string{"__name__": "vllm:num_requests_running", "model": model, "team": "serving"}}
		nan := math.NaN()
		for i := from; i <= to; i++ {
			sc.T = append(sc.T, f.at(i).UnixMilli())
			sc.Value = append(sc.Value, float64(i%7)+0.25+100)
			sc.Score, sc.Expected, sc.Lower, sc.Upper = append(sc.Score, nan), append(sc.Expected, nan), append(sc.Lower, nan), append(sc.Upper, nan)
		}
		return sc
	}
	o := writeback.Options{URL: prom.URL, Protocol: writeback.RemoteWrite, SkipForecasts: true}
	set = write(t, o, []alerting.Batch{{Group: "latency", Scores: []alerting.Scores{score("m1", f.n-5, f.n+3), score("m3", f.n-5, f.n+3)}}})
	if got := counter(set, `inferwatch_writeback_requests_total{code="400"}`); got < 1 {
		t.Errorf("Prometheus answered 400 %g times, want at least once", got)
	}
	if got := counter(set, `inferwatch_writeback_samples_dropped_total{reason="rejected"}`); got < 9 || got > 18 {
		t.Errorf("%g samples dropped as rejected, want m1's 9 (and m3's too, at most, from a Prometheus that stores what it can of a refused request)", got)
	}
	if got := counter(set, "inferwatch_writeback_retries_total"); got != 0 {
		t.Errorf("%g retries of a refusal", got)
	}
	base := `{for="running",group="latency",metric="vllm:num_requests_running",model=%q,rule="running",team="serving"}`
	m1, m3 := "y"+fmt.Sprintf(base, "m1"), "y"+fmt.Sprintf(base, "m3")
	var wantM3 strings.Builder
	for i := f.n - 5; i <= f.n+3; i++ {
		fmt.Fprintf(&wantM3, " %d=%g", f.at(i).UnixMilli(), float64(i%7)+0.25+100)
	}
	if got := readRange(t, c, m3, f.at(f.n-5), f.at(f.n+3))[m3]; got != wantM3.String() {
		t.Errorf("the series refused with it kept %s from being stored:\n got%s\nwant%s", m3, got, wantM3.String())
	}
	if got, want := readRange(t, c, m1, f.at(0), end)[m1], f.want("latency", writeback.AtOrigin)[m1]; got != want {
		t.Errorf("%s changed:\n got%s\nwant%s", m1, got, want)
	}

	// What comes next for m1 is written.
	set = write(t, o, []alerting.Batch{{Group: "latency", Scores: []alerting.Scores{score("m1", f.n+4, f.n+6)}}})
	if got := dropped(set); got != "" {
		t.Errorf("dropped: %s", got)
	}
	var wantM1 strings.Builder
	for i := f.n + 4; i <= f.n+6; i++ {
		fmt.Fprintf(&wantM1, " %d=%g", f.at(i).UnixMilli(), float64(i%7)+0.25+100)
	}
	if got := readRange(t, c, m1, f.at(f.n+4), f.at(f.n+6))[m1]; got != wantM1.String() {
		t.Errorf("%s after the refusal:\n got%s\nwant%s", m1, got, wantM1.String())
	}
}
