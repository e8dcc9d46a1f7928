package rulefmt

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	"gopkg.in/yaml.v3"
)

// Presets are built-in rule templates for the metric names of an LLM
// serving engine or GPU exporter, so that a group can say `preset: vllm`
// instead of writing the queries. Every template writes each metric
// selector as name$sel, where $sel becomes the group's selector (or
// nothing), and its grouping as by ($by), where $by becomes the group's
// grouping labels (or the preset's default).
//
// Metric names were checked against the projects' own sources:
//   - vLLM: vllm/v1/metrics/loggers.py (vllm-project/vllm), labels
//     model_name and engine. vLLM renamed
//     vllm:time_per_output_token_seconds to vllm:inter_token_latency_seconds
//     and vllm:gpu_cache_usage_perc to vllm:kv_cache_usage_perc (both
//     pairs are exported side by side during the deprecation), so those
//     templates fall back to the old name with `or`.
//   - SGLang: python/sglang/srt/metrics/collector.py (sgl-project/sglang),
//     label model_name; older releases exported
//     sglang:time_per_output_token_seconds instead of
//     sglang:inter_token_latency_seconds.
//   - TGI: docs/source/reference/metrics.md (huggingface/
//     text-generation-inference); TGI serves one model and has no model label.
//   - Triton: docs/user_guide/metrics.md (triton-inference-server/server),
//     labels model and version; latencies are cumulative counters in
//     microseconds, so a mean latency in seconds is
//     rate(duration_us) / rate(nv_inference_request_success) / 1e6.
//   - DCGM exporter: etc/default-counters.csv (NVIDIA/dcgm-exporter) for
//     DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED; DCGM_FI_PROF_SM_ACTIVE
//     is a profiling field, in etc/dcp-metrics-included.csv.

// PresetOptions say which presets to expand and how.
type PresetOptions struct {
	// Names are the presets, e.g. ["vllm", "dcgm"]; see PresetNames.
	Names []string
	// Selector is a series selector of label matchers added to every
	// metric selector of the presets' queries, e.g. {namespace="inference"};
	// empty adds none.
	Selector string
	// By are the labels every query groups by; empty means each preset's
	// default (e.g. model_name and pod for vLLM).
	By []string
}

type presetRule struct {
	name     string
	expr     string // detector and decay rules
	x, y     string // correlate rules
	minDev   float64
	forDur   time.Duration
	step     time.Duration
	lookback time.Duration
	decay    *Decay
}

type preset struct {
	by    []string
	rules []presetRule
	// latency is the mean-latency query a GPU preset correlates with GPU
	// utilisation, empty for presets without one.
	latency string
}

// Defaults of preset detector rules: a minute's step and no lookback, so
// that the default detector keeps the history it needs (a week of
// 15-minute summaries) and its first evaluation fetches it.
const presetStep = time.Minute

// meanOf is the mean of a Prometheus histogram or summary over 2m.
func meanOf(metric string) string {
	return "sum by ($by) (rate(" + metric + "_sum$sel[2m])) / sum by ($by) (rate(" + metric + "_count$sel[2m]))"
}

// meanOfEither prefers the current metric name and falls back to the
// deprecated one for the series that only have that.
func meanOfEither(current, old string) string {
	return "(" + meanOf(current) + ") or (" + meanOf(old) + ")"
}

// watch is a preset detector rule: the default detector (auto) and
// nothing else set but for and minDev.
//
// The choices, which docs/configuration.md repeats:
//   - The detector is the default, as for a rule that names none: on the
//     shared NAB subset, judged as the daemon judges it (inferwatch
//     backtest nab), it scores 71.1 with 0.09 false positives a series-day
//     where sigma over an hour's window, the presets' earlier choice,
//     scores −124.8 with 3.4; and it counts its band in 15-minute bins of
//     a week, not in samples, so it behaves alike at the preset's
//     one-minute step. It keeps its own history: no lookback.
//   - for is a persistence in time: 2m (three anomalous minutes in a row)
//     for latencies, queues, cache use and rates, 5m for the GPU's
//     utilisation and memory, which batch work drives in bursts. The
//     detector already raises one alarm per incident (it holds new alarms
//     for 2h30m after one, and the lifecycle makes an anomalous stretch
//     one finding); for adds that a breach of a minute or two, a single
//     slow scrape or a burst, pages no one. It costs the incidents shorter
//     than it, and delays the others by it. NAB cannot say more: its
//     steps are five minutes, and there for equal to one step (two points
//     in a row, ten minutes) finds 16 of the 50 windows where for 0 finds
//     41; on the generated fleet (examples/fleet) for 0 also finds every
//     latency spike but adds findings on the model without incidents, at
//     scores barely above 1, none of which lasts three minutes.
//   - min_dev is set where the metric's unit gives an absolute floor a
//     person would not be paged below: two requests waiting, five points
//     of KV-cache or GPU use, 512 MiB of frame buffer. Latencies and rates
//     have none that holds across models, so they rely on the detector's
//     own floors (its resolution and a thousandth of the level).
func watch(name, expr string, forDur time.Duration, minDev float64) presetRule {
	return presetRule{name: name, expr: expr, forDur: forDur, minDev: minDev, step: presetStep}
}

func decayRule(name, expr string) presetRule {
	return presetRule{name: name, expr: expr, step: 5 * time.Minute, lookback: 24 * time.Hour,
		decay: &Decay{PeakQuantile: DefaultDecayPeakQuantile, MinSlope: 0.1, MinEta: 0.25, Confidence: DefaultDecayConfidence}}
}

// tritonMean is the mean latency in seconds of a Triton cumulative
// microsecond counter per successful request.
func tritonMean(metric string) string {
	return "sum by ($by) (rate(" + metric + "$sel[2m])) / sum by ($by) (rate(nv_inference_request_success$sel[2m])) / 1e6"
}

var presets = map[string]preset{
	"vllm": {
		by: []string{"model_name", "pod"},
		rules: []presetRule{
			watch("vllm_ttft_mean", meanOf("vllm:time_to_first_token_seconds"), 2*time.Minute, 0),
			watch("vllm_itl_mean", meanOfEither("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"), 2*time.Minute, 0),
			watch("vllm_e2e_latency_mean", meanOf("vllm:e2e_request_latency_seconds"), 2*time.Minute, 0),
			watch("vllm_requests_waiting", "max by ($by) (vllm:num_requests_waiting$sel)", 2*time.Minute, 2),
			watch("vllm_kv_cache_usage", "(max by ($by) (vllm:kv_cache_usage_perc$sel)) or (max by ($by) (vllm:gpu_cache_usage_perc$sel))", 2*time.Minute, 0.05),
			watch("vllm_request_rate", "sum by ($by) (rate(vllm:request_success_total$sel[2m]))", 2*time.Minute, 0),
			decayRule("vllm_decode_throughput_decay", "sum by ($by) (rate(vllm:generation_tokens_total$sel[10m])) / sum by ($by) (avg_over_time(vllm:num_requests_running$sel[10m]))"),
		},
		latency: meanOf("vllm:time_to_first_token_seconds"),
	},
	"sglang": {
		by: []string{"model_name", "pod"},
		rules: []presetRule{
			watch("sglang_ttft_mean", meanOf("sglang:time_to_first_token_seconds"), 2*time.Minute, 0),
			watch("sglang_itl_mean", meanOfEither("sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"), 2*time.Minute, 0),
			watch("sglang_e2e_latency_mean", meanOf("sglang:e2e_request_latency_seconds"), 2*time.Minute, 0),
			watch("sglang_queue_reqs", "max by ($by) (sglang:num_queue_reqs$sel)", 2*time.Minute, 2),
			watch("sglang_token_usage", "max by ($by) (sglang:token_usage$sel)", 2*time.Minute, 0.05),
			watch("sglang_request_rate", "sum by ($by) (rate(sglang:num_requests_total$sel[2m]))", 2*time.Minute, 0),
			decayRule("sglang_decode_throughput_decay", "sum by ($by) (avg_over_time(sglang:gen_throughput$sel[10m])) / sum by ($by) (avg_over_time(sglang:num_running_reqs$sel[10m]))"),
		},
		latency: meanOf("sglang:time_to_first_token_seconds"),
	},
	"tgi": {
		by: []string{"pod"},
		rules: []presetRule{
			watch("tgi_request_duration_mean", meanOf("tgi_request_duration"), 2*time.Minute, 0),
			watch("tgi_queue_duration_mean", meanOf("tgi_request_queue_duration"), 2*time.Minute, 0),
			watch("tgi_time_per_token_mean", meanOf("tgi_request_mean_time_per_token_duration"), 2*time.Minute, 0),
			watch("tgi_queue_size", "max by ($by) (tgi_queue_size$sel)", 2*time.Minute, 2),
			watch("tgi_request_rate", "sum by ($by) (rate(tgi_request_success$sel[2m]))", 2*time.Minute, 0),
			decayRule("tgi_decode_throughput_decay", "sum by ($by) (rate(tgi_request_generated_tokens_sum$sel[10m])) / sum by ($by) (avg_over_time(tgi_batch_current_size$sel[10m]))"),
		},
		latency: meanOf("tgi_request_duration"),
	},
	"triton": {
		by: []string{"model", "pod"},
		rules: []presetRule{
			watch("triton_request_latency_mean", tritonMean("nv_inference_request_duration_us"), 2*time.Minute, 0),
			watch("triton_queue_latency_mean", tritonMean("nv_inference_queue_duration_us"), 2*time.Minute, 0),
			watch("triton_compute_latency_mean", tritonMean("nv_inference_compute_infer_duration_us"), 2*time.Minute, 0),
			watch("triton_pending_requests", "max by ($by) (nv_inference_pending_request_count$sel)", 2*time.Minute, 2),
			watch("triton_request_rate", "sum by ($by) (rate(nv_inference_request_success$sel[2m]))", 2*time.Minute, 0),
			watch("triton_gpu_util", "100 * max by ($by) (nv_gpu_utilization$sel)", 5*time.Minute, 5),
		},
		latency: tritonMean("nv_inference_request_duration_us"),
	},
	"dcgm": {
		by: []string{"Hostname", "gpu", "pod"},
		rules: []presetRule{
			watch("dcgm_gpu_util", "max by ($by) (DCGM_FI_DEV_GPU_UTIL$sel)", 5*time.Minute, 5),
			watch("dcgm_fb_used", "max by ($by) (DCGM_FI_DEV_FB_USED$sel)", 5*time.Minute, 512),
			watch("dcgm_sm_active", "100 * max by ($by) (DCGM_FI_PROF_SM_ACTIVE$sel)", 5*time.Minute, 5),
		},
	},
}

// gpuPreset is the preset whose GPU utilisation is correlated with the
// latency of the serving presets of the same group.
const gpuPreset = "dcgm"

// PresetNames returns the names of the built-in presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ExpandPresets returns the rules of the presets in o, with the selector
// and grouping labels filled in, in the order of o.Names. When the GPU
// preset (dcgm) is combined with a serving preset, a correlation rule
// <serving>_gpu_saturation_latency_jitter is added: per series matched on
// the grouping labels the presets share, GPU utilisation against the
// jitter of the serving preset's mean latency while the GPU ran at 95 % or
// more. The returned rules have no position; the caller sets it.
func ExpandPresets(o PresetOptions) ([]Rule, error) {
	sel, err := parseSelector(o.Selector)
	if err != nil {
		return nil, err
	}
	for _, l := range o.By {
		if !labelNameRE.MatchString(l) {
			return nil, fmt.Errorf("by: %q is not a label name", l)
		}
	}
	if len(o.Names) == 0 {
		return nil, fmt.Errorf("no preset named; known presets: %s", strings.Join(PresetNames(), ", "))
	}
	seen := map[string]bool{}
	for _, n := range o.Names {
		if _, ok := presets[n]; !ok {
			return nil, unknownPreset(n)
		}
		if seen[n] {
			return nil, fmt.Errorf("preset %q is listed twice", n)
		}
		seen[n] = true
	}
	var out []Rule
	for _, n := range o.Names {
		ps := presets[n]
		by := o.By
		if len(by) == 0 {
			by = ps.by
		}
		for _, pr := range ps.rules {
			out = append(out, pr.rule(sel, by))
		}
	}
	if seen[gpuPreset] {
		gpu := presets[gpuPreset]
		for _, n := range o.Names {
			ps := presets[n]
			if ps.latency == "" {
				continue
			}
			on := o.By
			if len(on) == 0 {
				on = shared(ps.by, gpu.by)
			}
			if len(on) == 0 {
				continue // nothing pairs a serving series with a GPU series
			}
			pr := presetRule{
				name:     n + "_gpu_saturation_latency_jitter",
				x:        "max by ($by) (DCGM_FI_DEV_GPU_UTIL$sel)",
				y:        ps.latency,
				step:     time.Minute,
				lookback: 2 * time.Hour,
			}
			r := pr.rule(sel, on)
			r.Spec.(*Correlate).On = slices.Clone(on)
			out = append(out, r)
		}
	}
	return out, nil
}

func unknownPreset(n string) error {
	if s := suggest(n, PresetNames()); s != "" {
		return fmt.Errorf("unknown preset %q; did you mean %q? Known presets: %s", n, s, strings.Join(PresetNames(), ", "))
	}
	return fmt.Errorf("unknown preset %q; known presets: %s", n, strings.Join(PresetNames(), ", "))
}

// shared returns the labels of a that are also in b, in a's order.
func shared(a, b []string) []string {
	var out []string
	for _, l := range a {
		if slices.Contains(b, l) {
			out = append(out, l)
		}
	}
	return out
}

// fill replaces the template's placeholders: $sel by the selector
// (including its braces, or nothing) and $by by the grouping labels.
func fill(tmpl, sel string, by []string) string {
	return strings.NewReplacer("$sel", sel, "$by", strings.Join(by, ", ")).Replace(tmpl)
}

func (pr presetRule) rule(sel string, by []string) Rule {
	r := Rule{
		Name:     pr.name,
		Step:     pr.step,
		Lookback: pr.lookback,
		For:      pr.forDur,
		MinDev:   pr.minDev,
		Labels:   map[string]string{"preset": strings.SplitN(pr.name, "_", 2)[0]},
	}
	switch {
	case pr.x != "":
		r.Kind, r.Spec = KindCorrelation, &Correlate{
			X: fill(pr.x, sel, by), Y: fill(pr.y, sel, by),
			YJitter: 15 * time.Minute, MaxLag: 5 * time.Minute, XAbove: 95,
			MinAbsR: DefaultCorrelateMinAbsR, MaxP: DefaultCorrelateMaxP, MinPoints: DefaultCorrelateMinPoints,
		}
	case pr.decay != nil:
		d := *pr.decay
		r.Expr, r.Kind, r.Spec = fill(pr.expr, sel, by), KindDecay, &d
	default:
		r.Expr = fill(pr.expr, sel, by)
		r.Kind, r.Spec = KindAnomaly, &Detector{Name: DefaultDetector}
	}
	r.ResolveAfterAbsent = r.AbsentAfter()
	r.ForgetAfter = r.Forget()
	return r
}

// parseSelector checks that s is a series selector of label matchers
// without a metric name, such as {namespace="inference", pod=~"vllm-.*"},
// and returns it in canonical form ("" for an empty s).
func parseSelector(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	const hint = `; write label matchers in braces, e.g. {namespace="inference"}`
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return "", fmt.Errorf("selector %q is not a series selector%s", s, hint)
	}
	bad := func(why string) error {
		return fmt.Errorf("selector %q is not a valid series selector: %s%s", s, why, hint)
	}
	e, err := metricsql.Parse(s)
	if err != nil {
		return "", bad(err.Error())
	}
	me, ok := e.(*metricsql.MetricExpr)
	if !ok {
		return "", bad(`want a metric name and/or label matchers, e.g. vllm:num_requests_running{pod="p0"}`)
	}
	for _, group := range me.LabelFilterss {
		for _, lf := range group {
			if !lf.IsRegexp {
				continue
			}
			// Anchored, as the store matches it.
			if _, err := regexp.Compile("^(?:" + lf.Value + ")$"); err != nil {
				return "", bad(fmt.Sprintf("%q: label %s: bad regular expression: %v", s, cmp.Or(lf.Label, "__name__"), err))
			}
		}
	}
	if len(me.LabelFilterss) != 1 || len(me.LabelFilterss[0]) == 0 {
		return "", fmt.Errorf("selector %q must be one group of label matchers, without \"or\"%s", s, hint)
	}
	parts := make([]string, 0, len(me.LabelFilterss[0]))
	for _, lf := range me.LabelFilterss[0] {
		if lf.Label == "" || lf.Label == "__name__" {
			return "", fmt.Errorf("selector %q must not name a metric: the preset's queries name their own metrics%s", s, hint)
		}
		parts = append(parts, string(lf.AppendString(nil)))
	}
	return "{" + strings.Join(parts, ", ") + "}", nil
}

// groupPresets reads a group's preset, selector and by keys (preset is
// kv; selector and by may be absent) and returns the rules they expand to,
// every one positioned at the preset key, or nil after reporting errors.
func (p *parser) groupPresets(kv pair, selector, by *pair) []Rule {
	var o PresetOptions
	ok := true
	v := resolve(kv.v)
	var nameNodes []*yaml.Node
	switch {
	case v.Kind == yaml.ScalarNode && !isNull(v):
		nameNodes = []*yaml.Node{v}
	case v.Kind == yaml.SequenceNode && len(v.Content) > 0:
		for _, c := range v.Content {
			nameNodes = append(nameNodes, resolve(c))
		}
	default:
		got := kind(v)
		if v.Kind == yaml.SequenceNode {
			got = "an empty list"
		}
		p.errorf(v, "preset must be a preset name or a list of them (%s), got %s", strings.Join(PresetNames(), ", "), got)
		return nil
	}
	seen := map[string]int{}
	for _, n := range nameNodes {
		name := strings.TrimSpace(n.Value)
		switch {
		case n.Kind != yaml.ScalarNode || isNull(n):
			p.errorf(n, "preset must be a preset name (%s), got %s", strings.Join(PresetNames(), ", "), kind(n))
			ok = false
		case presets[name].rules == nil:
			p.errorf(n, "%v", unknownPreset(name))
			ok = false
		case seen[name] > 0:
			p.errorf(n, "preset %q is listed twice (first at line %d)", name, seen[name])
			ok = false
		default:
			seen[name] = n.Line
			o.Names = append(o.Names, name)
		}
	}
	if selector != nil {
		sv := resolve(selector.v)
		if s, sok := p.str(sv, "selector"); sok {
			if _, err := parseSelector(s); err != nil {
				p.errorf(sv, "%v", err)
				ok = false
			}
			o.Selector = s
		} else {
			ok = false
		}
	}
	if by != nil {
		bv := resolve(by.v)
		if bv.Kind != yaml.SequenceNode {
			p.errorf(bv, "by must be a list of label names, e.g. by: [model_name, pod], got %s", kind(bv))
			ok = false
		} else {
			for _, item := range bv.Content {
				item = resolve(item)
				if item.Kind != yaml.ScalarNode || !labelNameRE.MatchString(item.Value) {
					p.errorf(item, "by: %q is not a label name", item.Value)
					ok = false
					continue
				}
				o.By = append(o.By, item.Value)
			}
		}
	}
	if !ok {
		return nil
	}
	rs, err := ExpandPresets(o)
	if err != nil {
		p.errorf(v, "%v", err)
		return nil
	}
	pos := p.pos(resolve(kv.k))
	for i := range rs {
		rs[i].Pos, rs[i].SpecPos = pos, pos
	}
	return rs
}

// mergePresetRules returns the preset rules with each one a user rule of
// the same name overrides replaced by it, followed by the other user rules.
func mergePresetRules(preset, user []Rule) []Rule {
	byName := make(map[string]int, len(user))
	for i, r := range user {
		byName[r.Name] = i
	}
	used := make([]bool, len(user))
	out := make([]Rule, 0, len(preset)+len(user))
	for _, r := range preset {
		if i, ok := byName[r.Name]; ok {
			out = append(out, user[i])
			used[i] = true
			continue
		}
		out = append(out, r)
	}
	for i, r := range user {
		if !used[i] {
			out = append(out, r)
		}
	}
	return out
}

// presetKeys reads the preset keys of a group's fields: it returns the
// rules of its preset (nil when it has none or they are wrong) and
// whether the group names a preset at all. Selector and by without a
// preset are errors: they only shape preset queries.
func (p *parser) presetKeys(f map[string]pair) ([]Rule, bool) {
	kv, has := f["preset"]
	if !has {
		for _, k := range []string{"selector", "by"} {
			if e, ok := f[k]; ok {
				p.errorf(resolve(e.k), "%s applies to the rules of a preset; add preset: (%s) or remove %s", k, strings.Join(PresetNames(), ", "), k)
			}
		}
		return nil, false
	}
	var sel, by *pair
	if e, ok := f["selector"]; ok {
		sel = &e
	}
	if e, ok := f["by"]; ok {
		by = &e
	}
	return p.groupPresets(kv, sel, by), true
}
