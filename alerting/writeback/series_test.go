package writeback

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
)

// render is ss one series a line: labels, then t=v pairs.
func render(ss []*series) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.key)
		for i, t := range s.t {
			fmt.Fprintf(&b, " %d=%g", t, s.v[i])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestConvertScores(t *testing.T) {
	nan := math.NaN()
	sc := alerting.Scores{
		Group: "latency", Rule: "ttft", Kind: "anomaly",
		Labels: map[string]string{"__name__": "vllm:ttft_seconds", "model": "m1", "team": "serving", "empty": ""},
		T:      []int64{1000, 2000, 3000},
		Value:  []float64{1, 2, 30},
		Score:  []float64{nan, 0.5, 4},
		// Expected known from the second point, the band one-sided.
		Expected: []float64{nan, 1.5, 1.6},
		Lower:    []float64{nan, nan, nan},
		Upper:    []float64{nan, 3, 3.1},
	}
	c := converter{scores: true, forecasts: true}
	ss, d := c.convert(alerting.Batch{Group: "latency", Scores: []alerting.Scores{sc}})
	want := `anomaly_score{for="ttft",group="latency",metric="vllm:ttft_seconds",model="m1",rule="ttft",team="serving"} 2000=0.5 3000=4
y{for="ttft",group="latency",metric="vllm:ttft_seconds",model="m1",rule="ttft",team="serving"} 1000=1 2000=2 3000=30
yhat{for="ttft",group="latency",metric="vllm:ttft_seconds",model="m1",rule="ttft",team="serving"} 2000=1.5 3000=1.6
yhat_upper{for="ttft",group="latency",metric="vllm:ttft_seconds",model="m1",rule="ttft",team="serving"} 2000=3 3000=3.1
`
	if got := render(ss); got != want {
		t.Errorf("series:\n%s\nwant:\n%s", got, want)
	}
	if d != (dropCounts{}) {
		t.Errorf("drops %+v, want none: NaN is no sample, not a drop", d)
	}
	for _, s := range ss {
		for i := 1; i < len(s.labels); i++ {
			if s.labels[i-1].Name >= s.labels[i].Name {
				t.Fatalf("%s: labels not sorted by name", s.key)
			}
		}
	}
}

func TestConvertLabels(t *testing.T) {
	f := func(src map[string]string, want string) {
		t.Helper()
		ls, err := outputLabels(src, "yhat", "g", "r")
		if err != nil {
			t.Fatalf("%v: %v", src, err)
		}
		if got := ls.String(); got != want {
			t.Errorf("%v:\n got %s\nwant %s", src, got, want)
		}
	}
	// An aggregation: no __name__, so no metric label.
	f(map[string]string{"model": "m"}, `yhat{for="r",group="g",model="m",rule="r"}`)
	// Clashing source labels are kept as exported_<name>, Prometheus' way.
	f(map[string]string{"__name__": "up", "group": "k8s", "for": "x", "metric": "m"},
		`yhat{exported_for="x",exported_group="k8s",exported_metric="m",for="r",group="g",metric="up",rule="r"}`)
	f(map[string]string{"group": "a", "exported_group": "b"},
		`yhat{exported_exported_group="a",exported_group="b",for="r",group="g",rule="r"}`)
	f(map[string]string{"rule": "x"}, `yhat{exported_rule="x",for="r",group="g",rule="r"}`)
	f(map[string]string{"horizon": "x", "kind": "y", "at": "z"},
		`yhat{exported_at="z",exported_horizon="x",exported_kind="y",for="r",group="g",rule="r"}`)

	for _, src := range []map[string]string{
		{"": "v"},
		{"bad\xff": "v"},
		{"ok": "bad\xff"},
		{"__name__": "bad\xff"},
	} {
		if _, err := outputLabels(src, "yhat", "g", "r"); err == nil {
			t.Errorf("%q: no error, want one", src)
		}
	}
}

func TestConvertInvalidAndInf(t *testing.T) {
	inf := math.Inf(1)
	c := converter{scores: true}
	ss, d := c.convert(alerting.Batch{Scores: []alerting.Scores{
		{Group: "g", Rule: "bad", Labels: map[string]string{"x": "\xff"}, T: []int64{1, 2},
			Value: []float64{1, math.NaN()}, Score: []float64{1, 2}, Expected: []float64{1, 1},
			Lower: []float64{0, 0}, Upper: []float64{2, 2}},
		{Group: "g", Rule: "inf", Labels: map[string]string{"x": "y"}, T: []int64{1, 2},
			Value: []float64{1, 2}, Score: []float64{inf, 0.5}, Expected: []float64{1, 1},
			Lower: []float64{math.Inf(-1), 0}, Upper: []float64{2, 2}},
	}})
	// The first series' finite figures: 1 value, 2 scores, 2 expected, 2
	// lower, 2 upper.
	if d.invalid != 9 || d.inf != 2 {
		t.Errorf("drops %+v, want invalid 9, inf 2", d)
	}
	for _, s := range ss {
		if strings.Contains(s.key, `"\xff"`) || s.labels.Get("for") == "bad" {
			t.Errorf("invalid series written: %s", s.key)
		}
	}
	if got := samples(ss); got != 8 {
		t.Errorf("%d samples written, want 8 (10 figures less 2 infinite)", got)
	}
}

func TestConvertForecasts(t *testing.T) {
	origin := time.UnixMilli(1_700_000_000_000).UTC()
	fd := alerting.ForecastData{
		Group: "capacity", Rule: "rps", Labels: map[string]string{"model": "m"}, Origin: origin,
		Points: []alerting.ForecastPoint{
			{Time: origin.Add(5 * time.Minute), Mean: 10, Lower: 8, Upper: 12},
			{Time: origin.Add(10 * time.Minute), Mean: 11, Lower: alerting.JSONFloat(math.NaN()), Upper: 14},
			{Time: origin.Add(90 * time.Minute), Mean: 12, Lower: 7, Upper: 17},
		},
	}
	f := func(c converter, want string) {
		t.Helper()
		ss, _ := c.convert(alerting.Batch{Forecasts: []alerting.ForecastData{fd}})
		if got := render(ss); got != want {
			t.Errorf("%+v:\n%s\nwant:\n%s", c, got, want)
		}
	}
	f(converter{forecasts: true, forecastAt: AtTarget}, `inferwatch_predicted{at="target",for="rps",group="capacity",horizon="5m",kind="yhat",model="m",rule="rps"} 1700000300000=10
inferwatch_predicted{at="target",for="rps",group="capacity",horizon="5m",kind="yhat_lower",model="m",rule="rps"} 1700000300000=8
inferwatch_predicted{at="target",for="rps",group="capacity",horizon="5m",kind="yhat_upper",model="m",rule="rps"} 1700000300000=12
inferwatch_predicted{at="target",for="rps",group="capacity",horizon="10m",kind="yhat",model="m",rule="rps"} 1700000600000=11
inferwatch_predicted{at="target",for="rps",group="capacity",horizon="10m",kind="yhat_upper",model="m",rule="rps"} 1700000600000=14
inferwatch_predicted{at="target",for="rps",group="capacity",horizon="1h30m",kind="yhat",model="m",rule="rps"} 1700005400000=12
inferwatch_predicted{at="target",for="rps",group="capacity",horizon="1h30m",kind="yhat_lower",model="m",rule="rps"} 1700005400000=7
inferwatch_predicted{at="target",for="rps",group="capacity",horizon="1h30m",kind="yhat_upper",model="m",rule="rps"} 1700005400000=17
`)
	f(converter{forecasts: true, forecastAt: AtOrigin, horizons: map[time.Duration]bool{10 * time.Minute: true}},
		`inferwatch_predicted{at="origin",for="rps",group="capacity",horizon="10m",kind="yhat",model="m",rule="rps"} 1700000000000=11
inferwatch_predicted{at="origin",for="rps",group="capacity",horizon="10m",kind="yhat_upper",model="m",rule="rps"} 1700000000000=14
`)
	// Forecasts skipped.
	f(converter{scores: true, forecastAt: AtTarget}, "")
}

func TestRuleSelection(t *testing.T) {
	b := alerting.Batch{Scores: []alerting.Scores{
		{Group: "latency", Rule: "ttft", T: []int64{1}, Value: []float64{1}, Score: []float64{1}, Expected: []float64{1}, Lower: []float64{1}, Upper: []float64{1}},
		{Group: "latency", Rule: "itl", T: []int64{1}, Value: []float64{1}, Score: []float64{1}, Expected: []float64{1}, Lower: []float64{1}, Upper: []float64{1}},
		{Group: "capacity", Rule: "ttft", T: []int64{1}, Value: []float64{1}, Score: []float64{1}, Expected: []float64{1}, Lower: []float64{1}, Upper: []float64{1}},
	}}
	f := func(sel []string, want string) {
		t.Helper()
		p, err := rulePatterns(sel)
		if err != nil {
			t.Fatal(err)
		}
		c := converter{scores: true, rules: p}
		ss, _ := c.convert(b)
		var got []string
		for _, s := range ss {
			if s.labels.Get("__name__") == NameScore {
				got = append(got, s.labels.Get("group")+"/"+s.labels.Get("for"))
			}
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("%q: wrote %q, want %q", sel, g, want)
		}
	}
	f(nil, "latency/ttft latency/itl capacity/ttft")
	f([]string{"ttft"}, "latency/ttft capacity/ttft")
	f([]string{"latency/*"}, "latency/ttft latency/itl")
	f([]string{"capacity/ttft", "latency/i*"}, "latency/itl capacity/ttft")
	f([]string{"nothing"}, "")

	if !MatchRule("lat*/t?ft", "latency", "ttft") || MatchRule("latency/ttft", "capacity", "ttft") || MatchRule("[x", "a", "[x") {
		t.Error("MatchRule")
	}
	if ValidateRules([]string{"ttft", "g/*"}) != nil || ValidateRules([]string{"a/b/c"}) == nil {
		t.Error("ValidateRules")
	}
	for _, bad := range [][]string{{"a/b/c"}, {"[x"}, {""}, {"g/"}, {"/r"}} {
		_, err := rulePatterns(bad)
		if err == nil || !strings.Contains(err.Error(), "writeback rules") {
			t.Errorf("%q: error %v, want one naming writeback rules", bad, err)
		}
	}
}

func TestOrderAdmit(t *testing.T) {
	var o order
	now := time.Unix(1_700_000_000, 0)
	mk := func(key string, ts ...int64) *series {
		s := &series{key: key}
		for _, t := range ts {
			s.t, s.v = append(s.t, t), append(s.v, float64(t))
		}
		return s
	}
	f := func(s *series, wantT []int64, wantDup, wantOOO int) {
		t.Helper()
		dup, ooo := o.admit(s, now)
		if fmt.Sprint(s.t) != fmt.Sprint(wantT) || dup != wantDup || ooo != wantOOO {
			t.Errorf("%s: kept %v (dup %d, ooo %d), want %v (dup %d, ooo %d)", s.key, s.t, dup, ooo, wantT, wantDup, wantOOO)
		}
		for i, v := range s.v {
			if v != float64(s.t[i]) {
				t.Fatalf("%s: value %g at %d", s.key, v, s.t[i])
			}
		}
	}
	f(mk("a", 1, 2, 3), []int64{1, 2, 3}, 0, 0)
	f(mk("a", 3, 4), []int64{4}, 1, 0)
	f(mk("a", 2, 5, 5, 4, 6), []int64{5, 6}, 1, 2)
	f(mk("b", 1), []int64{1}, 0, 0)
	// Forgotten once unused for longer than orderTTL.
	now = now.Add(orderTTL + time.Minute)
	f(mk("b", 2), []int64{2}, 0, 0)
	f(mk("a", 1), []int64{1}, 0, 0)
}
