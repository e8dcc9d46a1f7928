package rulefmt

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKindsTable: every kind has one entry of kinds, under a block key of
// its own that no other rule key uses, and its Spec names the kind.
func TestKindsTable(t *testing.T) {
	specs := []Spec{&Detector{}, &Correlate{}, &Decay{}, &Knee{}, &Spikiness{}, &Imbalance{}, &Forecast{}, &Scale{}}
	if len(kinds) != len(specs) {
		t.Errorf("kinds has %d entries, there are %d Spec types", len(kinds), len(specs))
	}
	seen := map[string]Kind{}
	for _, s := range specs {
		k := formatOf(s.Kind())
		if prev, dup := seen[k.block]; dup {
			t.Errorf("block %q is both %s's and %s's", k.block, prev, k.kind)
		}
		seen[k.block] = k.kind
		if k.read == nil && k.finish == nil {
			t.Errorf("%s: neither read nor finish reads its block", k.kind)
		}
	}
	if k := formatOf(noBlockKind); k.read == nil {
		t.Errorf("%s, the kind of a rule without a block, must be read before the rule's keys, with a nil block", noBlockKind)
	}
	for block, kind := range seen {
		if !slices.Contains(ruleKeys, block) {
			t.Errorf("%s's block %q is not a rule key", kind, block)
		}
	}
}

// TestEachKindSaysWhatItsExprAndLookbackAre pins, kind by kind, whether a
// rule takes expr, the message when it is given one it does not take,
// its default lookback and the bound on points per query.
func TestEachKindSaysWhatItsExprAndLookbackAre(t *testing.T) {
	f := func(rules, want string) *Config {
		t.Helper()
		src := "source: {url: 'http://127.0.0.1:8428'}\ngroups:\n  - name: g\n    rules:\n" + rules
		cfg, err := Parse([]byte(src), "c.yaml")
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", rules, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want an error with\n\t%s", rules, err, want)
		}
		return cfg
	}
	const needsExpr = `c.yaml:5:9: group "g": rule "r": a rule needs an expr (a MetricsQL or PromQL query)`
	f("      - {name: r}\n", needsExpr)
	f("      - {name: r, decay: {}}\n", needsExpr)
	f("      - {name: r, spikiness: {}}\n", needsExpr)
	f("      - {name: r, imbalance: {across: pod}}\n", needsExpr)
	f("      - {name: r, expr: up, correlate: {x: up, y: up}}\n",
		`c.yaml:5:19: group "g": rule "r": a correlate rule takes its queries from correlate.x and correlate.y, not expr`)
	f("      - {name: r, expr: up, knee: {concurrency: up, qps: up}}\n",
		`c.yaml:5:19: group "g": rule "r": a knee rule takes its queries from knee.concurrency and knee.qps, not expr`)
	f("      - {name: r, expr: up, imbalance: {a: up, b: up}}\n",
		`c.yaml:5:19: group "g": rule "r": an imbalance rule with a and b takes no expr (or use across: LABEL with expr)`)
	f("      - {name: r, expr: up, forecast: {expr: up}}\n",
		`c.yaml:5:19: group "g": rule "r": a forecast rule takes its query from forecast.expr, not expr: remove expr`)
	f("      - {name: fc, forecast: {expr: up}}\n      - {name: r, expr: up, scale: {forecast: fc, replicas: up, capacity_per_replica: 7}}\n",
		`c.yaml:6:19: group "g": rule "r": a scale rule takes its queries from the scale block, not expr: remove expr`)
	f("      - {name: r, lookback: 1d, forecast: {expr: up}}\n",
		`c.yaml:5:19: group "g": rule "r": a forecast rule takes its lookback from forecast.history: remove lookback`)
	f("      - {name: fc, forecast: {expr: up}}\n      - {name: r, lookback: 1d, scale: {forecast: fc, replicas: up, capacity_per_replica: 7}}\n",
		`c.yaml:6:19: group "g": rule "r": a scale rule has no lookback: remove lookback`)
	f("      - {name: r, expr: up, decay: {}, step: 1s, lookback: 30d}\n",
		`c.yaml:5:46: group "g": rule "r": lookback 30d / step 1s gives more than`)

	cfg := f("      - {name: a, expr: up}\n      - {name: d, expr: up, decay: {}}\n      - {name: i, expr: up, imbalance: {across: pod}}\n"+
		"      - {name: s, expr: up, spikiness: {}}\n      - {name: long, expr: up, step: 1s, lookback: 30d}\n", "")
	if cfg == nil {
		return
	}
	for i, want := range []struct {
		kind     Kind
		lookback time.Duration
	}{{KindAnomaly, 0}, {KindDecay, DefaultLookback}, {KindImbalance, DefaultLookback}, {KindSpikiness, DefaultLookback}, {KindAnomaly, 30 * 24 * time.Hour}} {
		r := cfg.Groups[0].Rules[i]
		if r.Kind != want.kind || r.Spec.Kind() != want.kind || r.Lookback != want.lookback {
			t.Errorf("rule %s: kind %s (spec %s), lookback %v; want %s, %v", r.Name, r.Kind, r.Spec.Kind(), r.Lookback, want.kind, want.lookback)
		}
	}
}
