package rulefmt

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func init() {
	badFiles["forecast.bad.yaml"] = []string{
		`forecast.bad.yaml:6:15: group "g": rule "rate.fc": rule name "rate.fc" must not contain '.': it ends the NATS subjects of the rule's events`,
		`forecast.bad.yaml:7:39: group "g": rule "rate.fc": forecast.horizon 30s is shorter than the step 1m; forecast at least one step ahead`,
		`forecast.bad.yaml:9:9: group "g": rule "fc_expr": a forecast rule takes its query from forecast.expr, not expr: remove expr`,
		`forecast.bad.yaml:10:9: group "g": rule "fc_expr": a forecast rule takes its lookback from forecast.history: remove lookback`,
		`forecast.bad.yaml:11:19: group "g": rule "fc_expr": forecast.history 1m must hold at least two steps of 1m`,
		`forecast.bad.yaml:11:26: group "g": rule "fc_expr": forecast.expr "rate(x[5m]" is not valid MetricsQL`,
		`forecast.bad.yaml:11:47: group "g": rule "fc_expr": forecast.level must be below 1, got 1`,
		`forecast.bad.yaml:13:19: group "g": rule "no_expr": forecast needs expr`,
		`forecast.bad.yaml:14:9: group "g": rule "sc": scale.forecast "nosuch" names no rule of this group`,
		`forecast.bad.yaml:16:11: group "g": rule "sc": scale needs replicas`,
		`forecast.bad.yaml:16:11: group "g": rule "sc": scale needs capacity_per_replica`,
		`forecast.bad.yaml:18:25: group "g": rule "sc": scale.max_replicas 2 is below min_replicas 4`,
		`forecast.bad.yaml:19:9: group "g": rule "sc_anomaly": scale.forecast "no_expr_anomaly" is an anomaly rule, not a forecast rule`,
		`forecast.bad.yaml:20:81: group "g": rule "sc_anomaly": scale.capacity_per_replica must be in (0, +Inf], got 0`,
		`forecast.bad.yaml:20:94: group "g": rule "sc_anomaly": scale.cooldown must be 0 or greater, got -1m`,
		`forecast.bad.yaml:20:105: group "g": rule "sc_anomaly": scale.hold must be 0 or greater, got -5m`,
		`forecast.bad.yaml:24:38: group "g": rule "fc_sum": forecast.sum_by must be a list of label names, got "model"`,
		`forecast.bad.yaml:26:93: group "g": rule "sc_margin": scale.scale_down_margin must be in [0, 0.5], got 0.6`,
		`forecast.bad.yaml:28:83: group "g": rule "sc_startup": scale.startup must be 0 or greater, got -1m`,
		`forecast.bad.yaml:30:83: group "g": rule "sc_startup_word": scale.startup: "slow" is not a duration`,
		`forecast.bad.yaml:32:81: group "g": rule "sc_level": scale.level must be below 1, got 1: no finite bound covers every load`,
		`forecast.bad.yaml:34:81: group "g": rule "sc_level_zero": scale.level must be in (0, 1], got 0`,
	}
}

func init() {
	badFiles["forecast-horizons.bad.yaml"] = []string{
		`forecast-horizons.bad.yaml:9:40: group "g": rule "sc": scale.horizon 3m is not a horizon of forecast rule "fc", which serves 2m, 10m; add it to its forecast.horizons or choose one of those`,
		`forecast-horizons.bad.yaml:11:30: group "g": rule "both": forecast has both horizon and horizons; keep horizons (horizon is the form for one)`,
		`forecast-horizons.bad.yaml:13:41: group "g": rule "bad_list": forecast.horizons 30s is shorter than the step 1m; forecast at least one step ahead`,
		`forecast-horizons.bad.yaml:13:50: group "g": rule "bad_list": forecast.horizons lists 2m twice; list each once`,
		`forecast-horizons.bad.yaml:13:60: group "g": rule "bad_list": forecast.horizons 365d is more than 10000 steps of 1m; raise the step`,
		`forecast-horizons.bad.yaml:13:64: group "g": rule "bad_list": forecast.horizons: "soon" is not a duration`,
		`forecast-horizons.bad.yaml:15:40: group "g": rule "not_a_list": forecast.horizons must be a list of durations such as [2m, 3m, 10m], got "10m"`,
		`forecast-horizons.bad.yaml:17:40: group "g": rule "empty_list": forecast.horizons is empty; list at least one duration, or leave it out for the default [10m]`,
		`forecast-horizons.bad.yaml:19:40: group "g": rule "sc_zero": scale.horizon must be greater than 0, got 0s`,
		`forecast-horizons.bad.yaml:24:41: group "g": rule "sc5": scale.horizon 12m (15m in whole steps of 5m) is not a horizon of forecast rule "fc5", which serves 10m`,
	}
}

// TestForecastHorizons: a forecast rule serves several horizons, rounded
// up to whole steps and sorted; each scale rule takes one of them, by
// default the longest.
func TestForecastHorizons(t *testing.T) {
	cfg, err := Load(configDir + "/forecast-horizons.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]Rule{}
	for _, r := range cfg.Groups[0].Rules {
		rules[r.Name] = r
	}
	f := func(rule string, want ...time.Duration) {
		t.Helper()
		fc := specOf[*Forecast](rules[rule])
		if !slices.Equal(fc.Horizons, want) || fc.Horizon != want[len(want)-1] {
			t.Errorf("%s: horizons %v, horizon %v; want %v", rule, fc.Horizons, fc.Horizon, want)
		}
	}
	f("request_rate", 2*time.Minute, 3*time.Minute, 10*time.Minute)
	f("coarse", 10*time.Minute, 30*time.Minute) // 6m in steps of 5m is 10m
	// Without a horizon, a scale rule decides on the interval (1m, or the
	// step when longer) plus its start-up (3m), in whole steps, at most
	// the longest horizon: keda 1m + 3m; keda_slow_start 1m + 8m;
	// keda_slower 1m + 20m, past 10m; coarse_default 5m + 3m, 10m in
	// steps of 5m.
	for rule, want := range map[string]time.Duration{"dynamo": 3 * time.Minute, "aibrix": 2 * time.Minute, "keda": 4 * time.Minute,
		"keda_slow_start": 9 * time.Minute, "keda_slower": 10 * time.Minute, "keda_twin": 4 * time.Minute,
		"coarse_scale": 10 * time.Minute, "coarse_default": 10 * time.Minute} {
		if h := specOf[*Scale](rules[rule]).Horizon; h != want {
			t.Errorf("%s: scale horizon %v, want %v", rule, h, want)
		}
	}
	// The defaults the forecast rule does not serve it hands over, each
	// once; it publishes only its own.
	for rule, want := range map[string][]time.Duration{"request_rate": {4 * time.Minute, 9 * time.Minute}, "coarse": nil} {
		if got := specOf[*Forecast](rules[rule]).ScaleHorizons; !slices.Equal(got, want) {
			t.Errorf("%s: scale horizons %v, want %v", rule, got, want)
		}
	}
	// Deciding every 5m on a forecast stepped by the minute: 5m + 3m.
	cfg, err = Parse([]byte(`source: {url: http://127.0.0.1:8428}
groups:
  - name: g
    interval: 5m
    rules:
      - {name: fc, step: 1m, forecast: {expr: up}}
      - {name: sc, scale: {forecast: fc, replicas: up, capacity_per_replica: 7}}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if h, hs := specOf[*Scale](cfg.Groups[0].Rules[1]).Horizon, specOf[*Forecast](cfg.Groups[0].Rules[0]).ScaleHorizons; h != 8*time.Minute || !slices.Equal(hs, []time.Duration{8 * time.Minute}) {
		t.Errorf("a 5m interval over a 1m step: scale horizon %v, handed %v; want 8m", h, hs)
	}
	// The default, and the single form.
	for text, want := range map[string][]time.Duration{
		"{expr: up}":                          {10 * time.Minute},
		"{expr: up, horizon: 3m}":             {3 * time.Minute},
		"{expr: up, horizon: 90s}":            {2 * time.Minute},
		"{expr: up, step: 15m}":               {15 * time.Minute},
		"{expr: up, horizons: [1h, 5m, 30m]}": {5 * time.Minute, 30 * time.Minute, time.Hour},
	} {
		cfg, err := Parse([]byte("source: {url: http://127.0.0.1:8428}\ngroups:\n  - name: g\n    rules:\n      - {name: fc, forecast: "+text+"}\n"), "x.yaml")
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		if fc := specOf[*Forecast](cfg.Groups[0].Rules[0]); !slices.Equal(fc.Horizons, want) || fc.Horizon != want[len(want)-1] {
			t.Errorf("%s: horizons %v, horizon %v; want %v", text, fc.Horizons, fc.Horizon, want)
		}
	}
}

func TestForecastAndScaleRules(t *testing.T) {
	cfg, err := Load(configDir + "/forecast.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fr, sr := cfg.Groups[0].Rules[0], cfg.Groups[0].Rules[1]
	if fr.Kind != "forecast" || sr.Kind != "scale" {
		t.Fatalf("kinds %q, %q", fr.Kind, sr.Kind)
	}
	fc := specOf[*Forecast](fr)
	if fc.Step != time.Minute || fc.History != 7*24*time.Hour || fc.Horizon != 10*time.Minute || fc.Model != "auto" || fc.Level != 0.9 || fc.Period != 24*time.Hour {
		t.Errorf("forecast %+v", *fc)
	}
	// The forecast's query, step and history are the rule's.
	if fr.Expr != fc.Expr || fr.Step != fc.Step || fr.Lookback != fc.History {
		t.Errorf("rule expr %q step %v lookback %v; forecast %+v", fr.Expr, fr.Step, fr.Lookback, *fc)
	}
	sc := specOf[*Scale](sr)
	if sc.Forecast != "request_rate" || len(sc.On) != 1 || sc.On[0] != "model" || sc.CapacityPerReplica != 7 ||
		sc.SLO == nil || sc.SLO.P99 != 30*time.Second || sc.MinReplicas != 1 || sc.MaxReplicas != 8 ||
		sc.ScaleDownStableIntervals != 3 || sc.ScaleDownMargin != 0.1 || sc.Cooldown != 5*time.Minute || sc.Hold != 45*time.Minute || sc.GPUMemoryHigh != 0.8 ||
		sc.WaitingPerReplica != 5 || sc.P99Near != 0.9 || !strings.Contains(sc.Waiting, "num_requests_waiting") ||
		sc.Startup != 3*time.Minute || sc.Horizon != 4*time.Minute {
		t.Errorf("scale %+v", *sc)
	}
	if !slices.Equal(fc.ScaleHorizons, []time.Duration{4 * time.Minute}) {
		t.Errorf("forecast scale horizons %v, want [4m]", fc.ScaleHorizons)
	}
	// The scale rule plans at 0.95 by default, and the forecast rule,
	// publishing its interval at 0.9, hands the upper bound at 0.95 over.
	if sc.Level != 0.95 || !slices.Equal(fc.ScaleLevels, []float64{0.95}) {
		t.Errorf("scale level %v, forecast scale levels %v; want 0.95 and [0.95]", sc.Level, fc.ScaleLevels)
	}
}

// A forecast rule hands over the upper bound at each level its scale
// rules plan with but its own, once each, ascending.
func TestScaleLevels(t *testing.T) {
	cfg, err := Parse([]byte(`source: {url: http://127.0.0.1:8428}
groups:
  - name: g
    interval: 1m
    rules:
      - {name: fc, forecast: {expr: up, level: 0.8}}
      - {name: a, scale: {forecast: fc, replicas: up, capacity_per_replica: 7, level: 0.99}}
      - {name: b, scale: {forecast: fc, replicas: up, capacity_per_replica: 7}}
      - {name: c, scale: {forecast: fc, replicas: up, capacity_per_replica: 7, level: 0.8}}
      - {name: d, scale: {forecast: fc, replicas: up, capacity_per_replica: 7, level: 0.99}}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Groups[0].Rules
	if got := specOf[*Forecast](rs[0]).ScaleLevels; !slices.Equal(got, []float64{0.95, 0.99}) {
		t.Errorf("scale levels %v, want [0.95 0.99]", got)
	}
	for i, want := range []float64{0.99, 0.95, 0.8, 0.99} {
		if got := specOf[*Scale](rs[i+1]).Level; got != want {
			t.Errorf("rule %s: scale.level %v, want %v", rs[i+1].Name, got, want)
		}
	}
}

func TestForecastDefaults(t *testing.T) {
	f := func(rule string, check func(r Rule) bool) {
		t.Helper()
		cfg, err := Parse([]byte("source: {url: http://127.0.0.1:8428}\ngroups:\n  - name: g\n    interval: 30s\n    rules:\n"+rule), "x.yaml")
		if err != nil {
			t.Fatalf("%s: %v", rule, err)
		}
		if r := cfg.Groups[0].Rules[0]; !check(r) {
			t.Errorf("%s: %+v", rule, r)
		}
	}
	f("      - {name: fc, forecast: {expr: up}}\n", func(r Rule) bool {
		fc := specOf[*Forecast](r)
		return fc.Step == 30*time.Second && fc.History == 10_000*30*time.Second && fc.Horizon == DefaultForecastHorizon &&
			fc.Model == "auto" && fc.Level == 0.9 && r.Step == 30*time.Second && r.Lookback == fc.History
	})
	f("      - {name: fc, step: 5m, forecast: {expr: up, history: 2d, model: robust}}\n", func(r Rule) bool {
		return specOf[*Forecast](r).Step == 5*time.Minute && r.Lookback == 48*time.Hour && specOf[*Forecast](r).Model == "robust"
	})
	f("      - {name: fc, forecast: {expr: up, sum_by: [model_name, zone]}}\n", func(r Rule) bool {
		return specOf[*Forecast](r).BottomUp && len(specOf[*Forecast](r).SumBy) == 2 && specOf[*Forecast](r).SumBy[1] == "zone"
	})
	f("      - {name: fc, forecast: {expr: up, sum_by: []}}\n", func(r Rule) bool {
		return specOf[*Forecast](r).BottomUp && len(specOf[*Forecast](r).SumBy) == 0
	})
	f("      - {name: fc, forecast: {expr: up}}\n", func(r Rule) bool { return !specOf[*Forecast](r).BottomUp })
	f("      - {name: fc, forecast: {expr: up}}\n      - {name: s, scale: {forecast: fc, replicas: up, slo: {p99: 2s, concurrency: '64'}}}\n", func(r Rule) bool {
		return true
	})
	cfg, err := Parse([]byte("source: {url: http://127.0.0.1:8428}\ngroups:\n  - name: g\n    rules:\n      - {name: fc, forecast: {expr: up}}\n      - {name: s, scale: {forecast: fc, replicas: up, slo: {p99: 2s, concurrency: '64'}}}\n"), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := specOf[*Scale](cfg.Groups[0].Rules[1])
	if s.MinReplicas != 1 || s.MaxReplicas != 0 || s.ScaleDownStableIntervals != 3 || s.ScaleDownMargin != 0.15 || s.Cooldown != 5*time.Minute || s.Hold != 30*time.Minute ||
		s.CapacityPerReplica != 0 || s.SLO.Concurrency != "64" || s.SLO.P99 != 2*time.Second {
		t.Errorf("scale defaults %+v slo %+v", *s, *s.SLO)
	}
}

// TestForecastHistoryLimit: a forecast's history may hold more points than
// one range query returns (it is fetched in several), up to
// MaxForecastPoints.
func TestForecastHistoryLimit(t *testing.T) {
	parse := func(history string) error {
		_, err := Parse([]byte("source: {url: http://127.0.0.1:8428}\ngroups:\n  - name: g\n    rules:\n"+
			"      - {name: fc, forecast: {expr: up, step: 1m, history: "+history+"}}\n"), "x.yaml")
		return err
	}
	if err := parse("15d"); err != nil { // 21,600 points: the weekly models' two weeks
		t.Errorf("history 15d at 1m: %v", err)
	}
	if err := parse("34d"); err != nil { // 48,960 points
		t.Errorf("history 34d at 1m: %v", err)
	}
	err := parse("35d") // 50,400 points
	want := `x.yaml:5:30: group "g": rule "fc": forecast.history 35d / step 1m gives more than 50000 points per series; raise the step or shorten the history`
	if err == nil || err.Error() != want {
		t.Errorf("history 35d at 1m: got %v, want %s", err, want)
	}
}
