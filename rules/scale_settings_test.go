package rules

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// TestScaleRulesAreAConfigurations: the forecast and scale rules
// ScaleRules makes are those a configuration setting the same keys, with
// the group's interval the step, gives: with the default horizons and
// with one set.
func TestScaleRulesAreAConfigurations(t *testing.T) {
	f := func(step, horizon time.Duration, horizonKeys string) {
		t.Helper()
		s := ScaleSettings{Model: "naive", Period: 6 * time.Hour, Horizon: horizon, Startup: 5 * time.Minute, Cooldown: 2 * time.Minute,
			Hold: 20 * time.Minute, MinReplicas: 2, MaxReplicas: 9, StableIntervals: 4, ScaleDownMargin: 0.2, WaitingPerReplica: 3}
		fc, sc := ScaleRules(step, s)
		yaml := fmt.Sprintf(`source: {url: "http://127.0.0.1:8428"}
groups:
  - name: g
    interval: %[1]s
    rules:
      - name: rate
        forecast: {expr: rate, step: %[1]s, model: naive, period: 6h%[2]s}
      - name: scale
        scale: {forecast: rate, replicas: replicas, capacity_per_replica: 7, startup: 5m, cooldown: 2m, hold: 20m,
                min_replicas: 2, max_replicas: 9, scale_down_stable_intervals: 4, scale_down_margin: 0.2, waiting_per_replica: 3%[2]s}
`, step, horizonKeys)
		cfg, err := rulefmt.Parse([]byte(yaml), "scale.yml")
		if err != nil {
			t.Fatal(err)
		}
		want := cfg.Groups[0].Rules[0].Spec.(*rulefmt.Forecast)
		wantScale := cfg.Groups[0].Rules[1].Spec.(*rulefmt.Scale)
		if fc.Horizon != want.Horizon || !slices.Equal(fc.Horizons, want.Horizons) || fc.Model != want.Model || fc.Period != want.Period ||
			fc.Step != want.Step || fc.Level != want.Level || fc.History != want.History || fc.BottomUp {
			t.Errorf("step %s, horizon %s: forecast %+v, want %+v", step, horizon, fc, *want)
		}
		got := []any{sc.Horizon, sc.Startup, sc.Cooldown, sc.Hold, sc.MinReplicas, sc.MaxReplicas, sc.ScaleDownStableIntervals, sc.ScaleDownMargin, sc.WaitingPerReplica}
		exp := []any{wantScale.Horizon, wantScale.Startup, wantScale.Cooldown, wantScale.Hold, wantScale.MinReplicas, wantScale.MaxReplicas,
			wantScale.ScaleDownStableIntervals, wantScale.ScaleDownMargin, wantScale.WaitingPerReplica}
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("step %s, horizon %s: scale %v, want %v", step, horizon, got, exp)
		}
	}
	f(time.Minute, 0, "")                            // a decision on 1m + 5m: 6m
	f(10*time.Minute, 0, "")                         // 10m + 5m, at most the forecast's 10m
	f(2*time.Minute, 7*time.Minute, ", horizon: 8m") // 7m, rounded up to whole steps
	if _, sc := ScaleRules(time.Minute, ScaleSettings{Startup: 5 * time.Minute}); sc.Horizon != 6*time.Minute {
		t.Errorf("the default horizon at 1m steps with a start-up of 5m: %s, want 6m", sc.Horizon)
	}
}

func TestDefaultWarmup(t *testing.T) {
	for _, c := range []struct {
		period, step time.Duration
		n, want      int
	}{
		{24 * time.Hour, 10 * time.Minute, 2016, 144}, // a day of 10-minute steps
		{24 * time.Hour, time.Minute, 1369, 342},      // GenTD26's 22.8 hours: a quarter
	} {
		if got := DefaultWarmup(c.period, c.step, c.n); got != c.want {
			t.Errorf("DefaultWarmup(%s, %s, %d) = %d, want %d", c.period, c.step, c.n, got, c.want)
		}
	}
}

func TestDefaultFrontierTargets(t *testing.T) {
	ts := DefaultFrontierTargets()
	if len(ts) != 13 || ts[0] != 0.4 || ts[1] != 0.45 || ts[12] != 1 {
		t.Errorf("DefaultFrontierTargets = %v, want 0.4 to 1 by 0.05", ts)
	}
}
