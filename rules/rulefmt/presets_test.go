package rulefmt

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"
)

func init() {
	badFiles["preset.bad.yaml"] = []string{
		`preset.bad.yaml:5:13: group "typo": unknown preset "vlm"; did you mean "vllm"? Known presets: dcgm, sglang, tgi, triton, vllm`,
		`preset.bad.yaml:7:20: group "list": unknown preset "tritonn"; did you mean "triton"?`,
		`preset.bad.yaml:7:29: group "list": preset "dcgm" is listed twice`,
		`preset.bad.yaml:10:15: group "selector": selector "namespace=\"inference\"" is not a series selector; write label matchers in braces`,
		`preset.bad.yaml:13:15: group "selector_name": selector "{__name__=\"up\"}" must not name a metric`,
		`preset.bad.yaml:14:9: group "selector_name": by must be a list of label names`,
		`preset.bad.yaml:16:5: group "no_preset": selector applies to the rules of a preset`,
		`preset.bad.yaml:22:15: group "broken": selector "{a=\"b\"" is not a series selector`,
	}
}

// queries returns the queries of r.
func queries(r Rule) []string {
	if specOf[*Correlate](r) != nil {
		return []string{specOf[*Correlate](r).X, specOf[*Correlate](r).Y}
	}
	return []string{r.Expr}
}

func TestEveryPresetExpandsToValidQueriesWithTheSelectorEverywhere(t *testing.T) {
	const marker = `{inferwatch_test="x", job=~"a|b"}`
	for _, name := range PresetNames() {
		t.Run(name, func(t *testing.T) {
			rs, err := ExpandPresets(PresetOptions{Names: []string{name}, Selector: marker})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) < 3 {
				t.Fatalf("%d rules, want at least 3", len(rs))
			}
			for _, r := range rs {
				if !strings.HasPrefix(r.Name, name+"_") || !ruleNameRE.MatchString(r.Name) {
					t.Errorf("rule name %q does not start with %s_", r.Name, name)
				}
				if r.Labels["preset"] != name {
					t.Errorf("%s: labels %v, want preset=%s", r.Name, r.Labels, name)
				}
				// A detector rule is the default detector with its own
				// history (no lookback) and a for of minutes: see watch.
				if r.Kind == KindAnomaly {
					if r.Step != time.Minute || r.Lookback != 0 || (r.For != 2*time.Minute && r.For != 5*time.Minute) || specOf[*Detector](r).Name != DefaultDetector || len(specOf[*Detector](r).Params) != 0 {
						t.Errorf("%s: step %v, lookback %v, for %v, detector %+v", r.Name, r.Step, r.Lookback, r.For, specOf[*Detector](r))
					}
				} else if r.Step <= 0 || r.Lookback < r.Step || r.Lookback/r.Step > MaxPointsPerQuery {
					t.Errorf("%s: step %v, lookback %v", r.Name, r.Step, r.Lookback)
				}
				for _, q := range queries(r) {
					if strings.Contains(q, "$") {
						t.Errorf("%s: placeholder left in %s", r.Name, q)
					}
					e, err := metricsql.Parse(q)
					if err != nil {
						t.Fatalf("%s: %s: %v", r.Name, q, err)
					}
					selectors := 0
					metricsql.VisitAll(e, func(x metricsql.Expr) {
						me, ok := x.(*metricsql.MetricExpr)
						if !ok {
							return
						}
						selectors++
						for _, lfs := range me.LabelFilterss {
							if !slices.ContainsFunc(lfs, func(lf metricsql.LabelFilter) bool {
								return lf.Label == "inferwatch_test" && lf.Value == "x"
							}) || !slices.ContainsFunc(lfs, func(lf metricsql.LabelFilter) bool {
								return lf.Label == "job" && lf.Value == "a|b" && lf.IsRegexp
							}) {
								t.Errorf("%s: selector %s lacks the group's selector", r.Name, me.AppendString(nil))
							}
						}
					})
					if selectors == 0 {
						t.Errorf("%s: no metric selector in %s", r.Name, q)
					}
				}
			}
		})
	}
}

func TestPresetTemplatesAreFilledExactly(t *testing.T) {
	f := func(o PresetOptions, rule, want string) {
		t.Helper()
		rs, err := ExpandPresets(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Name == rule {
				if got := strings.Join(queries(r), " | "); got != want {
					t.Errorf("%s:\n got %s\nwant %s", rule, got, want)
				}
				return
			}
		}
		t.Errorf("no rule %s in %v", rule, o.Names)
	}
	f(PresetOptions{Names: []string{"vllm"}, Selector: `{namespace="inference"}`}, "vllm_request_rate",
		`sum by (model_name, pod) (rate(vllm:request_success_total{namespace="inference"}[2m]))`)
	f(PresetOptions{Names: []string{"vllm"}, By: []string{"model", "pod"}}, "vllm_ttft_mean",
		`sum by (model, pod) (rate(vllm:time_to_first_token_seconds_sum[2m])) / sum by (model, pod) (rate(vllm:time_to_first_token_seconds_count[2m]))`)
	f(PresetOptions{Names: []string{"dcgm"}, Selector: ` { namespace != "dev" , gpu=~"0|1" } `}, "dcgm_gpu_util",
		`max by (Hostname, gpu, pod) (DCGM_FI_DEV_GPU_UTIL{namespace!="dev", gpu=~"0|1"})`)
	f(PresetOptions{Names: []string{"triton"}}, "triton_queue_latency_mean",
		`sum by (model, pod) (rate(nv_inference_queue_duration_us[2m])) / sum by (model, pod) (rate(nv_inference_request_success[2m])) / 1e6`)
	f(PresetOptions{Names: []string{"dcgm", "vllm"}, Selector: `{a="b"}`}, "vllm_gpu_saturation_latency_jitter",
		`max by (pod) (DCGM_FI_DEV_GPU_UTIL{a="b"}) | sum by (pod) (rate(vllm:time_to_first_token_seconds_sum{a="b"}[2m])) / sum by (pod) (rate(vllm:time_to_first_token_seconds_count{a="b"}[2m]))`)
}

func TestGPUCorrelationOnlyWithDCGM(t *testing.T) {
	f := func(o PresetOptions, wantOn []string) {
		t.Helper()
		rs, err := ExpandPresets(o)
		if err != nil {
			t.Fatal(err)
		}
		var cors []Rule
		for _, r := range rs {
			if specOf[*Correlate](r) != nil {
				cors = append(cors, r)
			}
		}
		if wantOn == nil {
			if len(cors) != 0 {
				t.Errorf("%v: %d correlation rules, want none", o.Names, len(cors))
			}
			return
		}
		if len(cors) != 1 {
			t.Fatalf("%v: %d correlation rules, want 1", o.Names, len(cors))
		}
		c := specOf[*Correlate](cors[0])
		if !slices.Equal(c.On, wantOn) || c.XAbove != 95 || c.YJitter <= 0 || c.MinPoints != DefaultCorrelateMinPoints {
			t.Errorf("%v: %+v", o.Names, c)
		}
	}
	f(PresetOptions{Names: []string{"vllm"}}, nil)
	f(PresetOptions{Names: []string{"dcgm"}}, nil)
	f(PresetOptions{Names: []string{"vllm", "dcgm"}}, []string{"pod"})
	f(PresetOptions{Names: []string{"dcgm", "tgi"}, By: []string{"model", "pod"}}, []string{"model", "pod"})
	f(PresetOptions{Names: []string{"sglang", "dcgm"}}, []string{"pod"})
}

func TestExpandPresetsErrors(t *testing.T) {
	f := func(o PresetOptions, want string) {
		t.Helper()
		_, err := ExpandPresets(o)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want %q", o, err, want)
		}
	}
	f(PresetOptions{}, "known presets: dcgm, sglang, tgi, triton, vllm")
	f(PresetOptions{Names: []string{"nginx"}}, `unknown preset "nginx"; known presets: dcgm, sglang, tgi, triton, vllm`)
	f(PresetOptions{Names: []string{"vllm", "vllm"}}, "listed twice")
	f(PresetOptions{Names: []string{"vllm"}, By: []string{"model-name"}}, `"model-name" is not a label name`)
	f(PresetOptions{Names: []string{"vllm"}, Selector: `{a="b" or c="d"}`}, `without "or"`)
	f(PresetOptions{Names: []string{"vllm"}, Selector: `up{a="b"}`}, "is not a series selector")
	f(PresetOptions{Names: []string{"vllm"}, Selector: `{a=~"("}`}, "is not a valid series selector")
	f(PresetOptions{Names: []string{"vllm"}, Selector: `{}`}, "one group of label matchers")
}

func TestParsePresetGroup(t *testing.T) {
	const src = `source: {url: http://127.0.0.1:8428}
groups:
  - name: g
    preset: [vllm, dcgm]
    selector: '{namespace="inference"}'
    by: [model, pod]
    rules:
      - name: vllm_ttft_mean
        expr: max(up)
        detector: {name: sigma, k: 5}
      - name: extra
        expr: up
  - name: only
    preset: tgi
`
	cfg, err := Parse([]byte(src), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Groups[0]
	want, err := ExpandPresets(PresetOptions{Names: []string{"vllm", "dcgm"}, Selector: `{namespace="inference"}`, By: []string{"model", "pod"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Rules) != len(want)+1 {
		t.Fatalf("%d rules, want the %d of the presets and one more", len(g.Rules), len(want))
	}
	for i, r := range g.Rules {
		switch {
		case r.Name == "vllm_ttft_mean":
			if r.Expr != "max(up)" || specOf[*Detector](r).Params["k"] != "5" || r.Pos.Line != 8 {
				t.Errorf("the user's rule did not override the preset's: %+v", r)
			}
		case r.Name == "extra":
			if i != len(g.Rules)-1 || r.Pos.Line != 11 {
				t.Errorf("extra rule at %d, %v", i, r.Pos)
			}
		default:
			if r.Name != want[i].Name || r.Expr != want[i].Expr {
				t.Errorf("rule %d: %s %q, want %s %q", i, r.Name, r.Expr, want[i].Name, want[i].Expr)
			}
			if r.Pos != (Pos{File: "c.yaml", Line: 4, Column: 5}) || r.SpecPos != r.Pos {
				t.Errorf("%s: Pos %v DetectorPos %v, want the preset key at c.yaml:4:5", r.Name, r.Pos, r.SpecPos)
			}
		}
	}
	if len(cfg.Groups[1].Rules) == 0 || !strings.HasPrefix(cfg.Groups[1].Rules[0].Name, "tgi_") {
		t.Errorf("group only: %+v", cfg.Groups[1].Rules)
	}
}

func TestPresetErrorsCarryPositions(t *testing.T) {
	const src = "source: {url: http://127.0.0.1:8428}\ngroups:\n"
	f := func(name, groups, want string) {
		t.Helper()
		_, err := Parse([]byte(src+groups), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
	f("unknown", "  - {name: g, preset: vlllm}\n", `c.yaml:3:23: group "g": unknown preset "vlllm"; did you mean "vllm"?`)
	f("not a list", "  - {name: g, preset: {a: b}}\n", `c.yaml:3:23: group "g": preset must be a preset name or a list of them`)
	f("empty list", "  - {name: g, preset: []}\n", `c.yaml:3:23: group "g": preset must be a preset name or a list of them (dcgm, sglang, tgi, triton, vllm), got an empty list`)
	f("bad selector", "  - {name: g, preset: vllm, selector: '{a=}'}\n", `c.yaml:3:39: group "g": selector "{a=}" is not a valid series selector`)
	f("bad by", "  - {name: g, preset: vllm, by: [ok, 'not ok']}\n", `c.yaml:3:38: group "g": by: "not ok" is not a label name`)
	f("by alone", "  - {name: g, by: [a], rules: [{name: r, expr: up}]}\n", `c.yaml:3:15: group "g": by applies to the rules of a preset`)
	f("user rule still checked", "  - {name: g, preset: vllm, rules: [{name: r}]}\n", `group "g": rule "r": a rule needs an expr`)
}

// TestPresetSensitivity: a group's sensitivity sets the auto detector of
// its preset's anomaly rules, and is checked: one of low, medium and high,
// and only with a preset.
func TestPresetSensitivity(t *testing.T) {
	const src = "source: {url: http://127.0.0.1:8428}\ngroups:\n"
	c, err := Parse([]byte(src+"  - {name: g, preset: vllm, sensitivity: high}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	anomaly := 0
	for _, r := range c.Groups[0].Rules {
		if d, ok := r.Spec.(*Detector); ok {
			anomaly++
			if d.Name != DefaultDetector || d.Params["sensitivity"] != "high" || len(d.Params) != 1 {
				t.Errorf("rule %s: detector %+v, want auto with sensitivity high", r.Name, d)
			}
		}
	}
	if anomaly == 0 {
		t.Fatal("the vllm preset has no anomaly rule: the case tests nothing")
	}
	f := func(name, groups, want string) {
		t.Helper()
		_, err := Parse([]byte(src+groups), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
	f("unknown", "  - {name: g, preset: vllm, sensitivity: loud}\n", `c.yaml:3:42: group "g": sensitivity must be low, medium or high, got "loud"`)
	f("no preset", "  - {name: g, sensitivity: low, rules: [{name: r, expr: up}]}\n", `c.yaml:3:15: group "g": sensitivity sets the detector of a preset's rules, and this group has no preset`)
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{`{a="b"}`, `{a!~"x|y", b="c"}`, `{a="b" or c="d"}`, `{__name__="up"}`, `{`, `{a="\u00e9\"q"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSelector(s)
		if err != nil || got == "" {
			return
		}
		// The canonical form parses to itself and fits a template.
		again, err := parseSelector(got)
		if err != nil || again != got {
			t.Fatalf("%q → %q → %q, %v", s, got, again, err)
		}
		if _, err := metricsql.Parse("rate(up" + got + "[2m])"); err != nil {
			t.Fatalf("%q → %q does not fit a query: %v", s, got, err)
		}
	})
}

func ExampleExpandPresets() {
	rs, err := ExpandPresets(PresetOptions{
		Names:    []string{"vllm", "dcgm"},
		Selector: `{namespace="inference"}`,
		By:       []string{"model", "pod"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rs {
		fmt.Printf("%s (%s)\n", r.Name, r.Kind)
	}
	fmt.Println(rs[5].Expr)
	// Output:
	// vllm_ttft_mean (anomaly)
	// vllm_itl_mean (anomaly)
	// vllm_e2e_latency_mean (anomaly)
	// vllm_requests_waiting (anomaly)
	// vllm_kv_cache_usage (anomaly)
	// vllm_request_rate (anomaly)
	// vllm_decode_throughput_decay (decay)
	// dcgm_gpu_util (anomaly)
	// dcgm_fb_used (anomaly)
	// dcgm_sm_active (anomaly)
	// vllm_gpu_saturation_latency_jitter (correlation)
	// sum by (model, pod) (rate(vllm:request_success_total{namespace="inference"}[2m]))
}
