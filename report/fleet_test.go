package report_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
	"github.com/inferwatch/inferwatch/report"
	"github.com/inferwatch/inferwatch/report/jsread"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden (and docs/report.png)")

// The fixed fleet of the golden reports: seed 1, eight days at one-minute
// steps ending at fleetEnd. Its incidents (see examples/fleet) fall on
// Sat 21 Nov (a throughput decay on llama from 00:04), Sun 22 Nov (a
// traffic surge on qwen at 12:26), Mon 23 Nov (GPU saturation with jittery
// latency on vllm-llama-70b-2 at 15:15), Tue 24 Nov and Wed 25 Nov (latency
// spikes).
var fleetEnd = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

// fixture is one VictoriaMetrics holding the data sets, told apart by the
// label fleet, and one NATS server holding what the daemon published
// about the golden set.
type fixture struct {
	vm   *localvm.VM
	nats *natsjs.Embedded
	err  error
}

var (
	fxOnce sync.Once
	fx     fixture
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if fx.vm != nil {
		fx.vm.Stop()
	}
	if fx.nats != nil {
		fx.nats.Shutdown()
	}
	os.Exit(code)
}

// setup starts the store and NATS once and loads the data sets: golden
// (the fleet as generated), gap (two days of it with three hours missing
// and a pod that starts at 13:00) and dst (three days around the end of
// summer time in Europe/Berlin).
func setup(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts VictoriaMetrics and NATS")
	}
	fxOnce.Do(func() { fx.err = fx.start() })
	if fx.err != nil {
		t.Fatal(fx.err)
	}
	return &fx
}

func (f *fixture) start() error {
	ctx := context.Background()
	vm, err := localvm.Start(ctx, localvm.Options{})
	if err != nil {
		return err
	}
	f.vm = vm
	golden, err := fleet.New(fleet.Options{Seed: 1, End: fleetEnd, Duration: 8 * 24 * time.Hour, Step: time.Minute})
	if err != nil {
		return err
	}
	dstEnd := time.Date(2026, 10, 26, 6, 0, 0, 0, time.UTC)
	dst, err := fleet.New(fleet.Options{Seed: 2, End: dstEnd, Duration: 6 * 24 * time.Hour, Step: time.Minute})
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeSets(pw, golden, dst, dstEnd)) }()
	if err := vm.Import(ctx, pr); err != nil {
		return err
	}
	f.nats, err = natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	return f.publish(ctx)
}

// writeSets writes the three data sets for /api/v1/import, pod by pod.
func writeSets(w io.Writer, golden, dst *fleet.Fleet, dstEnd time.Time) error {
	for _, s := range golden.Series() {
		if err := ingest.WriteImportJSONL(w, relabel(s, "fleet", "golden")); err != nil {
			return err
		}
		gap := keep(s, day(23), day(25))
		gap = drop(gap, day(24).Add(3*time.Hour), day(24).Add(6*time.Hour))
		if err := ingest.WriteImportJSONL(w, relabel(gap, "fleet", "gap")); err != nil {
			return err
		}
		if s.Labels.Get("pod") == "vllm-qwen-32b-1" {
			// A new replica from 13:00, its counters starting at zero.
			np := startAt(keep(s, day(24).Add(13*time.Hour), day(25)))
			np = relabel(relabel(np, "pod", "vllm-qwen-32b-2"), "fleet", "gap")
			if err := ingest.WriteImportJSONL(w, np); err != nil {
				return err
			}
		}
	}
	for _, s := range dst.Series() {
		if err := ingest.WriteImportJSONL(w, relabel(keep(s, dstEnd.Add(-3*24*time.Hour), dstEnd), "fleet", "dst")); err != nil {
			return err
		}
	}
	return nil
}

func day(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }

func relabel(s ingest.Series, name, value string) ingest.Series {
	m := s.Labels.Map()
	m[name] = value
	return ingest.Series{Labels: ingest.LabelsFromMap(m), Timestamps: s.Timestamps, Values: s.Values}
}

// keep returns the samples of s in [from, to].
func keep(s ingest.Series, from, to time.Time) ingest.Series {
	out := ingest.Series{Labels: s.Labels}
	for i, t := range s.Timestamps {
		if t >= from.UnixMilli() && t <= to.UnixMilli() {
			out.Timestamps = append(out.Timestamps, t)
			out.Values = append(out.Values, s.Values[i])
		}
	}
	return out
}

// drop removes the samples of s in [from, to).
func drop(s ingest.Series, from, to time.Time) ingest.Series {
	out := ingest.Series{Labels: s.Labels}
	for i, t := range s.Timestamps {
		if t < from.UnixMilli() || t >= to.UnixMilli() {
			out.Timestamps = append(out.Timestamps, t)
			out.Values = append(out.Values, s.Values[i])
		}
	}
	return out
}

// startAt makes a counter start from zero, as a new process's does.
func startAt(s ingest.Series) ingest.Series {
	n := s.Labels.Get("__name__")
	if len(s.Values) == 0 || !(strings.HasSuffix(n, "_total") || strings.HasSuffix(n, "_bucket") || strings.HasSuffix(n, "_sum") || strings.HasSuffix(n, "_count")) {
		return s
	}
	out := ingest.Series{Labels: s.Labels, Timestamps: s.Timestamps, Values: make([]float64, len(s.Values))}
	for i, v := range s.Values {
		out.Values[i] = v - s.Values[0]
	}
	return out
}

// configText is the configuration of the tests: the daemon's rules over
// the golden set, two SLOs and the reports.
const configText = `source: {url: %[1]s}
nats: {url: %[2]s}
groups:
  - name: latency
    interval: 1m
    rules:
      - name: ttft_mean
        expr: sum by (model, pod) (rate(vllm:time_to_first_token_seconds_sum{fleet="golden"}[2m])) / sum by (model, pod) (rate(vllm:time_to_first_token_seconds_count{fleet="golden"}[2m]))
        step: 1m
        lookback: 1h
        detector: {name: sigma, k: 3, min_points: 30}
        for: 1m
        labels: {signal: latency}
  - name: capacity
    interval: 1m
    rules:
      - name: request_rate
        expr: sum by (model) (rate(vllm:request_success_total{fleet="golden"}[2m]))
        step: 1m
        lookback: 1h
        detector: {name: sigma, k: 4, min_points: 30}
        for: 2m
        labels: {signal: request_rate}
  - name: saturation
    interval: 5m
    rules:
      - name: decode_throughput_decay
        expr: sum by (model) (rate(vllm:generation_tokens_total{fleet="golden"}[10m])) / sum by (model) (avg_over_time(vllm:num_requests_running{fleet="golden"}[10m]))
        decay: {min_eta: 0.25, min_slope: 0.1}
        step: 5m
        lookback: 1d
        labels: {signal: throughput_decay}
  - name: forecasting
    interval: 1m
    rules:
      - name: request_rate
        forecast:
          expr: sum by (model) (rate(vllm:request_success_total{fleet="golden"}[5m]))
          step: 5m
          horizon: 10m
slos:
  - name: ttft-2s
    description: time to first token under 2.5 s
    objective: 99
    window: 7d
    sli:
      latency: {metric: vllm:time_to_first_token_seconds, threshold: 2.5s}
  - name: e2e-40s
    objective: 99
    window: 7d
    sli:
      latency: {metric: vllm:e2e_request_latency_seconds, threshold: 40s}
reports:
  - name: daily
    schedule: "@daily"
    selector: '{fleet="golden"}'
    by: [model]
    output_dir: %[3]s
    keep: 2
  - name: gap
    schedule: "0 0 * * *"
    selector: '{fleet="gap"}'
    by: [model]
    output_dir: %[3]s
  - name: dst
    schedule: "0 0 * * *"
    time_zone: Europe/Berlin
    selector: '{fleet="dst"}'
    by: [model]
    slos: [e2e-40s]
    output_dir: %[3]s
`

func loadConfig(t *testing.T, dir string) *rulefmt.Config {
	t.Helper()
	natsURL := "nats://127.0.0.1:1"
	if fx.nats != nil {
		natsURL = fx.nats.ClientURL()
	}
	url := "http://127.0.0.1:1"
	if fx.vm != nil {
		url = fx.vm.URL()
	}
	path := filepath.Join(t.TempDir(), "inferwatch.yml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(configText, url, natsURL, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := rulefmt.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// publish runs the daemon's rules once over the golden days 21 to 23 Nov
// with a backfill, as `inferwatch run --once --backfill 3d` does (its
// findings and alerts), and adds what a once-run does not publish: a
// forecast every five minutes of 22 Nov (the value at the same time the
// day before, ±20 %) and two scale signals.
func (f *fixture) publish(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "inferwatch-report-cfg-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "c.yml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(configText, f.vm.URL(), f.nats.ClientURL(), tmp)), 0o644); err != nil {
		return err
	}
	cfg, err := rulefmt.Load(path)
	if err != nil {
		return err
	}
	var groups []rulefmt.Group
	for _, g := range cfg.Groups {
		if g.Name != "forecasting" {
			groups = append(groups, g)
		}
	}
	built, err := rules.Build(groups)
	if err != nil {
		return err
	}
	js, err := natsjs.Connect(ctx, natsjs.Options{URL: f.nats.ClientURL()})
	if err != nil {
		return err
	}
	defer js.Close()
	pub, err := alerting.NewPublisher(alerting.PublisherOptions{Output: js})
	if err != nil {
		return err
	}
	policy := rules.IncidentPolicy(cfg)
	levels := alerting.NewLevelStore(alerting.LevelOptions{Policy: policy})
	incidents := alerting.NewIncidents(alerting.IncidentOptions{Policy: policy, Levels: levels})
	sink := &alerting.Pipeline{Lifecycle: alerting.NewLifecycle(alerting.LifecycleOptions{}), Levels: levels,
		Incidents: incidents, Receivers: []alerting.Receiver{pub}}
	client, err := ingest.NewClient(ingest.ClientOptions{URL: f.vm.URL()})
	if err != nil {
		return err
	}
	now := day(24).Add(30 * time.Second)
	// The groups are judged at once, as the daemon's run --once does; the
	// incidents wait for every group's first batch, so the group whose
	// alert fired first opens each, whichever evaluation finishes first.
	var names []string
	for _, g := range built {
		names = append(names, g.Name())
	}
	incidents.Expect(names, time.Hour)
	m, err := rules.NewManager(rules.ManagerOptions{Querier: client, Sink: sink, EvaluationDelay: 30 * time.Second,
		Backfill: 3 * 24 * time.Hour, Now: func() time.Time { return now }, SummaryEvery: -1}, built)
	if err != nil {
		return err
	}
	if err := m.RunOnce(ctx); err != nil {
		return fmt.Errorf("running the rules once: %w", err)
	}
	if err := pub.Flush(ctx); err != nil {
		return err
	}
	// Forecasts of 22 Nov: seasonal naive with a ±20 % interval.
	q := `sum by (model) (rate(vllm:request_success_total{fleet="golden"}[5m]))`
	ss, err := client.QueryRange(ctx, q, day(21), day(23), 5*time.Minute)
	if err != nil {
		return err
	}
	for _, s := range ss {
		model := s.Labels.Get("model")
		for o := day(22).Add(-10 * time.Minute); o.Before(day(23).Add(-10 * time.Minute)); o = o.Add(5 * time.Minute) {
			target := o.Add(10 * time.Minute)
			last := report.ValueAt(s.Timestamps, s.Values, o.UnixMilli(), 0)
			mean := report.ValueAt(s.Timestamps, s.Values, target.Add(-24*time.Hour).UnixMilli(), 0)
			if math.IsNaN(last) || math.IsNaN(mean) {
				continue
			}
			d := alerting.ForecastData{Group: "forecasting", Rule: "request_rate", Labels: map[string]string{"model": model},
				Series: s.Labels.String(), Origin: o, LastValue: alerting.JSONFloat(last), StepSeconds: 300, HorizonSeconds: 600,
				Model: "seasonal_naive", Level: 0.9, Peak: alerting.JSONFloat(mean), PeakTime: target, UpperPeak: alerting.JSONFloat(1.2 * mean),
				Points: []alerting.ForecastPoint{
					{Time: o.Add(5 * time.Minute), Mean: alerting.JSONFloat(mean), Lower: alerting.JSONFloat(0.8 * mean), Upper: alerting.JSONFloat(1.2 * mean)},
					{Time: target, Mean: alerting.JSONFloat(mean), Lower: alerting.JSONFloat(0.8 * mean), Upper: alerting.JSONFloat(1.2 * mean)}},
				Accuracy: alerting.ForecastAccuracy{LeadSeconds: 600, N: 288, MAE: 0.3, NaiveMAE: 0.25, Coverage: 0.88}}
			ev, err := alerting.NewForecastEvent(d, "")
			if err != nil {
				return err
			}
			if err := js.PublishEvent(ctx, alerting.ForecastSubject("inferwatch", "request_rate"), ev); err != nil {
				return err
			}
		}
	}
	for i, desired := range []int{3, 2} {
		sd := alerting.ScaleData{Group: "forecasting", Rule: "vllm-qwen-32b", Target: `{model="qwen2.5-32b-instruct"}`,
			Labels: map[string]string{"model": "qwen2.5-32b-instruct"}, Time: day(22).Add(12*time.Hour + 30*time.Minute + time.Duration(i)*time.Hour),
			DesiredReplicas: desired, CurrentReplicas: 2, CurrentKnown: true, Tier: 1 + 2*i, Reason: fmt.Sprintf("test signal %d", i+1)}
		ev, err := alerting.NewScaleEvent(sd, "")
		if err != nil {
			return err
		}
		if err := js.PublishEvent(ctx, alerting.ScaleSubject("inferwatch", "vllm-qwen-32b"), ev); err != nil {
			return err
		}
	}
	return nil
}

// reporter makes reports against the fixture, at a fixed clock.
func reporter(t *testing.T, cfg *rulefmt.Config, events bool) *report.Reporter {
	t.Helper()
	client, err := ingest.NewClient(ingest.ClientOptions{URL: fx.vm.URL()})
	if err != nil {
		t.Fatal(err)
	}
	o := report.Options{Querier: client, Now: func() time.Time { return time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC) },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Forecasts: func(group, rule string) (string, time.Duration, bool) {
			for _, g := range cfg.Groups {
				for _, r := range g.Rules {
					if fc, ok := r.Spec.(*rulefmt.Forecast); ok && g.Name == group && r.Name == rule {
						return fc.Expr, fc.Step, true
					}
				}
			}
			return "", 0, false
		}}
	if events {
		rd, err := jsread.Open(jsread.Options{URL: fx.nats.ClientURL(), Stream: "INFERWATCH"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rd.Close)
		o.Events = rd
	}
	r, err := report.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func spec(t *testing.T, cfg *rulefmt.Config, name string) report.Spec {
	t.Helper()
	s, err := report.Find(report.Specs(cfg), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
