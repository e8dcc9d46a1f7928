package rules

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

func runWindowRule(t *testing.T, r rulefmt.Rule, byExpr map[string][]ingest.Series, now time.Time, backfill time.Duration) []alerting.Finding {
	t.Helper()
	g := []rulefmt.Group{{Name: "g", Interval: 5 * time.Minute, Rules: []rulefmt.Rule{r}}}
	out := &recorder{}
	e, err := newTestManager(testOptions{Groups: g, Querier: &exprStore{byExpr: byExpr}, Output: out,
		Backfill: backfill, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.got
}

func TestKneeRuleFiresWhenConcurrencyRunsPastTheKnee(t *testing.T) {
	// A day at 1-minute steps: concurrency sweeps 1…60 and back every two
	// hours; QPS saturates at concurrency 20 (qps = min(c, 20) with a
	// little noise). In the last 20 minutes concurrency stays at 45: past
	// the knee. Model b never goes past 15.
	const n = 1440
	conc := func(i int) float64 {
		if i >= n-20 {
			return 45
		}
		ph := float64(i%120) / 120
		return 1 + 59*(1-math.Abs(2*ph-1))
	}
	qps := func(c float64, i int) float64 { return math.Min(c, 20) + 0.2*wobble(i) }
	ca := podSeries("conc", "a", n, conc)
	qa := podSeries("qps", "a", n, func(i int) float64 { return qps(conc(i), i) })
	cb := podSeries("conc", "b", n, func(i int) float64 { return math.Min(conc(i), 15) })
	qb := podSeries("qps", "b", n, func(i int) float64 { return qps(math.Min(conc(i), 15), i) })
	got := runWindowRule(t, rulefmt.Rule{
		Name: "knee", Step: time.Minute, Lookback: 12 * time.Hour,
		Kind: rulefmt.KindKnee, Spec: &rulefmt.Knee{Concurrency: "conc", QPS: "qps", On: []string{"pod"}, Method: "kneedle", Margin: 1.5},
	}, map[string][]ingest.Series{"conc": {ca, cb}, "qps": {qa, qb}}, t0.Add((n-1)*time.Minute), 0)
	if len(got) != 1 {
		t.Fatalf("want 1 finding (a), got %d: %+v", len(got), got)
	}
	f := got[0]
	k := f.Details["knee_concurrency"].(float64)
	if f.Labels["pod"] != "a" || f.Kind != "knee" || k < 15 || k > 26 || f.Value != 45 || f.Upper != 1.5*k {
		t.Fatalf("finding %+v details %v", f, f.Details)
	}
}

func TestSpikinessRuleLevels(t *testing.T) {
	// A day of latency at 1-minute steps, uniform-ish in [0.9, 1.1] (P99
	// ≈ 1.1, P999 ≈ 1.1); pod a ends with 1.15 (level 1), pod b with 2.0
	// (level 2), pod c stays normal.
	const n = 1440
	base := func(i int) float64 { return 1 + 0.1*math.Sin(float64(i)*2.3) }
	mk := func(pod string, last float64) ingest.Series {
		return podSeries("lat", pod, n, func(i int) float64 {
			if i == n-1 && last > 0 {
				return last
			}
			return base(i)
		})
	}
	got := runWindowRule(t, rulefmt.Rule{
		Name: "spiky", Expr: "lat", Step: time.Minute, Lookback: 24 * time.Hour,
		Kind: rulefmt.KindSpikiness, Spec: &rulefmt.Spikiness{Recent: 5 * time.Minute, Factor: 1.2},
	}, map[string][]ingest.Series{"lat": {mk("a", 1.15), mk("b", 2.0), mk("c", 0)}}, t0.Add((n-1)*time.Minute), 0)
	sev := map[string]string{}
	for _, f := range got {
		sev[f.Labels["pod"]] = f.Severity
		if f.Kind != "spikiness" || f.Details["p99"] == nil {
			t.Fatalf("finding %+v", f)
		}
	}
	if len(got) != 2 || sev["a"] != "warning" || sev["b"] != "critical" {
		t.Fatalf("severities %v from %d findings, want a warning (level 1), b critical (level 2), nothing on c", sev, len(got))
	}
}

func TestImbalanceRuleAcrossPods(t *testing.T) {
	// Model m: pod p0 at 90 % and p1 at 40 % — LII = 50/90 = 0.56,
	// critical; model n: 60 % and 55 % — LII = 0.083, balanced.
	const n = 60
	mk := func(model, pod string, v float64) ingest.Series {
		s := podSeries("gpu", pod, n, func(i int) float64 { return v + 0.5*wobble(i) })
		s.Labels = ingest.Labels{{Name: "__name__", Value: "gpu"}, {Name: "model", Value: model}, {Name: "pod", Value: pod}}
		return s
	}
	got := runWindowRule(t, rulefmt.Rule{
		Name: "imb", Expr: "gpu", Step: time.Minute, Lookback: time.Hour,
		Kind: rulefmt.KindImbalance, Spec: &rulefmt.Imbalance{Across: "pod", Warn: 0.2, Critical: 0.5},
	}, map[string][]ingest.Series{"gpu": {mk("m", "p0", 90), mk("m", "p1", 40), mk("n", "q0", 60), mk("n", "q1", 55)}},
		t0.Add((n-1)*time.Minute), 0)
	if len(got) != 1 {
		t.Fatalf("want 1 finding (model m), got %d: %+v", len(got), got)
	}
	f := got[0]
	if f.Labels["model"] != "m" || f.Labels["pod"] != "" || f.Severity != "critical" || math.Abs(f.Value-50.0/90) > 0.01 ||
		f.Details["most_loaded"] != "p0" || f.Details["least_loaded"] != "p1" {
		t.Fatalf("finding %+v details %v", f, f.Details)
	}
}
