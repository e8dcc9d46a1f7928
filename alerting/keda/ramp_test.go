package keda_test

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/tidwall/gjson"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/keda"
	pb "github.com/inferwatch/inferwatch/alerting/keda/externalscaler"
	"github.com/inferwatch/inferwatch/alerting/promexport"
	"github.com/inferwatch/inferwatch/forecasting"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// kedaReplicas is what KEDA and the HPA it drives make of a metric: no
// replicas while the trigger is inactive (metric ≤ activation, 0 here),
// else ceil(metric / target) for an external metric of type AverageValue,
// within the ScaledObject's bounds (wide enough here not to bind).
func kedaReplicas(metric, target float64) int {
	if metric <= 0 {
		return 0
	}
	return int(math.Ceil(metric / target))
}

// ramp is a request rate that rises from nothing to 40 req/s, holds and
// falls back to nothing, one value a minute.
func ramp() []float64 {
	var load []float64
	for range 5 {
		load = append(load, 0)
	}
	for i := range 40 {
		load = append(load, float64(i+1))
	}
	for range 10 {
		load = append(load, 40)
	}
	for i := range 40 {
		load = append(load, float64(39-i))
	}
	for range 15 {
		load = append(load, 0)
	}
	return load
}

// TestKEDAClientsOverARamp feeds the scale signals of a traffic ramp to
// the three feeds, and after each evaluation reads each of them as KEDA
// does: the Prometheus trigger scrapes (here: the daemon's /metrics, as
// Prometheus would) and reads the gauge; the metrics-api trigger GETs the
// target's URL and reads valueLocation; the external trigger calls
// GetMetricSpec once, then IsActive and GetMetrics, and the external-push
// trigger listens to StreamIsActive. Each must come to the replicas the
// signal says, at every step.
func TestKEDAClientsOverARamp(t *testing.T) {
	c := &clock{now: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)}
	set := metrics.NewSet()
	exp := promexport.New(promexport.Options{Metrics: set, Now: c.Now})
	sigs, err := keda.New(keda.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer sigs.Close()

	// The daemon's web listener: /metrics and the metrics-api paths.
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { set.WritePrometheus(w) })
	mux.Handle(keda.PathPrefix, sigs.Handler())
	web := listen(t)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(web)
	defer srv.Close()
	base := "http://" + web.Addr().String()
	// The external scaler's gRPC listener.
	gln := listen(t)
	gs := sigs.NewGRPCServer()
	go gs.Serve(gln)
	defer gs.Stop()
	conn, err := grpc.NewClient(gln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewExternalScalerClient(conn)

	const rule, capacity = "vllm-qwen", 7.0
	labels := map[string]string{"model": "qwen2.5-32b-instruct"}
	target := `{model="qwen2.5-32b-instruct"}`
	ref := &pb.ScaledObjectRef{Name: "qwen", Namespace: "serving", ScalerMetadata: map[string]string{
		"scalerAddress": gln.Addr().String(), "rule": rule, "target": "model=qwen2.5-32b-instruct"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec, err := client.GetMetricSpec(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	targetSize := spec.MetricSpecs[0].TargetSizeFloat
	if targetSize <= 0 {
		targetSize = float64(spec.MetricSpecs[0].TargetSize)
	}
	push, err := client.StreamIsActive(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}

	policy := forecasting.ScalePolicy{MinReplicas: 0, MaxReplicas: 10, ScaleDownStableIntervals: 3,
		Cooldown: 5 * time.Minute, ValidFor: 10 * time.Minute, ScaleDownMargin: forecasting.DefaultScaleDownMargin}
	var state forecasting.ScaleState
	load := ramp()
	const lead = 10 // the forecast sees 10 steps ahead
	activeSent, rose, fell := false, 0, 0
	for step := range load {
		now := c.Now()
		// A forecast that knows the ramp: its peak over the next ten
		// minutes, with an upper bound 15 % above.
		peak := 0.0
		for k := step + 1; k <= step+lead && k < len(load); k++ {
			peak = max(peak, load[k])
		}
		upper := 1.15 * peak
		current := float64(state.Desired) // the deployment followed the signal
		sig, next := forecasting.Decide(state, forecasting.ScaleInputs{Observed: current, CapacityPerReplica: capacity,
			HasForecast: true, PredictedLoad: peak, PredictedUpper: upper, GPUMemory: math.NaN(), Waiting: math.NaN(), P99: math.NaN()},
			policy, now)
		if sig.Desired > state.Desired {
			rose++
		} else if sig.Desired < state.Desired {
			fell++
		}
		state = next
		batch := alerting.Batch{Group: "capacity",
			Forecasts: []alerting.ForecastData{forecastOf(labels, now, load[step], peak, upper)},
			Scales: []alerting.ScaleData{{Group: "capacity", Rule: rule, Target: target, Labels: labels, Time: now,
				DesiredReplicas: sig.Desired, CurrentReplicas: sig.Why.Observed, CurrentKnown: sig.Why.ObservedKnown,
				PredictedLoad: alerting.JSONFloat(sig.Why.Saw.PredictedLoad), PredictedUpper: alerting.JSONFloat(sig.Why.Saw.PredictedUpper),
				CapacityPerReplica: alerting.JSONFloat(sig.Why.Saw.CapacityPerReplica), Tier: sig.Why.Cause.Tier(), Reason: sig.Reason(),
				ValidUntil: sig.ValidUntil}},
		}
		if err := exp.Send(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := sigs.Send(ctx, batch); err != nil {
			t.Fatal(err)
		}
		want := sig.Desired
		c.Set(now.Add(30 * time.Second)) // KEDA polls between evaluations

		// Prometheus trigger: query inferwatch_scale_desired_replicas{rule, model}, threshold 1.
		mfs := scrapeMetrics(t, base+"/metrics")
		v, ok := gauge(mfs, promexport.FamilyScaleDesired, map[string]string{"rule": rule, "model": labels["model"]})
		if !ok {
			t.Fatalf("step %d: no %s in the scrape", step, promexport.FamilyScaleDesired)
		}
		if got := kedaReplicas(v, 1); got != want {
			t.Fatalf("step %d: the Prometheus trigger scales to %d, the signal says %d", step, got, want)
		}
		if up, _ := gauge(mfs, promexport.FamilyForecastPeak, map[string]string{"rule": "request_rate", "model": labels["model"], "horizon": "10m", "quantile": "0.95"}); up != upper {
			t.Fatalf("step %d: exported upper peak %v, want %v", step, up, upper)
		}

		// metrics-api trigger: valueLocation desired_replicas, targetValue 1.
		body := getBody(t, base+keda.PathPrefix+"targets/"+rule+"/model=qwen2.5-32b-instruct")
		r := gjson.GetBytes(body, "desired_replicas")
		if r.Type != gjson.Number {
			t.Fatalf("step %d: desired_replicas is %s in %s", step, r.Type, body)
		}
		if got := kedaReplicas(r.Num, 1); got != want {
			t.Fatalf("step %d: the metrics-api trigger scales to %d, the signal says %d", step, got, want)
		}

		// External trigger: IsActive, then GetMetrics over the spec's target.
		act, err := client.IsActive(ctx, ref)
		if err != nil {
			t.Fatalf("step %d: IsActive: %v", step, err)
		}
		mv, err := client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref, MetricName: spec.MetricSpecs[0].MetricName})
		if err != nil {
			t.Fatalf("step %d: GetMetrics: %v", step, err)
		}
		m := float64(mv.MetricValues[0].MetricValue)
		if f := mv.MetricValues[0].MetricValueFloat; f > 0 {
			m = f
		}
		got := 0
		if act.Result {
			got = max(kedaReplicas(m, targetSize), 1)
		}
		if got != want {
			t.Fatalf("step %d: the external trigger scales to %d (active %v, metric %v), the signal says %d", step, got, act.Result, m, want)
		}

		// External-push trigger: each change of activity arrives on the
		// stream, in order.
		if active := want > 0; step == 0 || active != activeSent {
			msg, err := push.Recv()
			if err != nil {
				t.Fatalf("step %d: StreamIsActive: %v", step, err)
			}
			if msg.Result != active {
				t.Fatalf("step %d: the stream says active %v, the signal %d replicas", step, msg.Result, want)
			}
			activeSent = active
		}
		c.Set(now.Add(time.Minute))
	}
	if rose < 5 || fell < 5 || state.Desired != 0 {
		t.Fatalf("the ramp did not exercise the signal: %d rises, %d falls, ending at %d replicas", rose, fell, state.Desired)
	}
}

func forecastOf(labels map[string]string, origin time.Time, last, peak, upper float64) alerting.ForecastData {
	f := alerting.ForecastData{Group: "capacity", Rule: "request_rate", Labels: labels, Origin: origin,
		LastValue: alerting.JSONFloat(last), StepSeconds: 60, HorizonSeconds: 600, Level: 0.9, Model: "ramp",
		Peak: alerting.JSONFloat(peak), UpperPeak: alerting.JSONFloat(upper)}
	for i := 1; i <= 10; i++ {
		f.Points = append(f.Points, alerting.ForecastPoint{Time: origin.Add(time.Duration(i) * time.Minute),
			Mean: alerting.JSONFloat(peak), Lower: 0, Upper: alerting.JSONFloat(upper)})
	}
	return f
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func getBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(getBody(t, url)))
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return mfs
}

func gauge(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range mfs[name].GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if match {
			if m.Gauge != nil {
				return m.Gauge.GetValue(), true
			}
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}
