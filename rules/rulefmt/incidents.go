package rulefmt

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Incidents is the incidents: section: how the alerts of one serving unit
// form one incident, and the table of diagnosis rules that give it a first
// diagnosis (package alerting evaluates both).
type Incidents struct {
	// By are the labels that name a serving unit, in order of preference
	// (default [model, model_name]); List the labels whose values an
	// incident lists (default [pod, Hostname]).
	By, List []string
	// Gap is how long after its last anomalous point an incident stays
	// open for another alert (default 10m); MaxAge closes an incident
	// open this long and continues it (default 1d).
	Gap, MaxAge time.Duration
	// MaxOpen bounds the open incidents of a group (default 1000),
	// MaxMembers the alerts one incident lists (default 100).
	MaxOpen, MaxMembers int
	// ChangeLabels are the labels whose new value on a unit's series is a
	// label change (default DefaultChangeLabels); ChangeWithin how long
	// before an incident's start one counts (default 2h).
	ChangeLabels []string
	ChangeWithin time.Duration
	// Diagnoses are the diagnosis rules: DefaultDiagnoses, with those the
	// file names replaced or removed and its others added; nil when the
	// file has no diagnoses (the defaults apply).
	Diagnoses []DiagnosisRule
}

// Defaults of the incidents section.
const (
	DefaultIncidentGap        = 10 * time.Minute
	DefaultIncidentMaxAge     = 24 * time.Hour
	DefaultIncidentMaxOpen    = 1000
	DefaultIncidentMaxMembers = 100
	DefaultChangeWithin       = 2 * time.Hour
)

// DefaultIncidentBy and DefaultIncidentList are the defaults of
// incidents.by and incidents.list.
var (
	DefaultIncidentBy   = []string{"model", "model_name"}
	DefaultIncidentList = []string{"pod", "Hostname"}
	// DefaultChangeLabels are what a rollout changes.
	DefaultChangeLabels = []string{"version", "image", "model_version", "revision"}
)

// DiagnosisRule is one row of the diagnosis table: it applies to an
// incident when all its When conditions hold, with a confidence of the
// share of its When and Also conditions that hold.
type DiagnosisRule struct {
	Name, Title, Check string
	When, Also         []Condition
	Pos                Pos
}

// Condition is one condition of a diagnosis rule: LabelChanged asks for a
// change of one of Labels (none: any of incidents.change_labels) on the
// unit shortly before or during the incident, ForecastMissed for load
// above a forecast rule's interval around it; the others are on one
// signal: Is asks for a direction (up, down, anomalous, normal: no alert
// of it), Above and Below for a reading (the alerts' value, or their
// Detail, a figure the rule kind measured such as a correlation's x_max);
// LevelAbove and LevelBelow for the signal's level, alerts or not (the
// highest reading of the unit's series of it around the incident). A
// condition with Any holds when one of them holds.
type Condition struct {
	Signal, Is, Detail     string
	Above, Below           *float64
	LevelAbove, LevelBelow *float64
	LabelChanged           bool
	Labels                 []string
	ForecastMissed         bool
	Any                    []Condition
	Pos                    Pos
}

// Signals are what a rule's alerts can say about a serving unit, the
// names diagnosis conditions use, with what each means.
var Signals = map[string]string{
	"latency":            "a request latency: time to first token, inter-token, end to end",
	"queue":              "requests waiting or queued, or the time they wait",
	"kv_cache":           "KV-cache (token) usage",
	"request_rate":       "requests served per second",
	"throughput_decay":   "decode throughput per running request decaying against its peak (η)",
	"gpu_util":           "GPU utilisation (or SM activity)",
	"gpu_memory":         "GPU frame-buffer memory used",
	"gpu_latency_jitter": "GPU utilisation correlated with latency jitter while the GPU saturates",
}

// SignalNames returns the names of the signals, sorted.
func SignalNames() []string {
	names := make([]string, 0, len(Signals))
	for n := range Signals {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// PresetSignals names the signal of each preset rule. A rule of the file
// says its own with the label signal.
func PresetSignals() map[string]string {
	out := map[string]string{}
	for name, ps := range presets {
		for _, r := range ps.rules {
			out[r.name] = presetSignal(r.name)
		}
		if ps.latency != "" {
			out[name+"_gpu_saturation_latency_jitter"] = "gpu_latency_jitter"
		}
	}
	for k, v := range out {
		if v == "" {
			delete(out, k)
		}
	}
	return out
}

// presetSignal reads a preset rule's signal from its name.
func presetSignal(rule string) string {
	switch {
	case strings.HasSuffix(rule, "_decay"):
		return "throughput_decay"
	case strings.HasSuffix(rule, "_request_rate"):
		return "request_rate"
	case strings.Contains(rule, "queue") || strings.Contains(rule, "waiting") || strings.Contains(rule, "pending"):
		return "queue"
	case strings.HasSuffix(rule, "kv_cache_usage") || strings.HasSuffix(rule, "token_usage"):
		return "kv_cache"
	case strings.HasSuffix(rule, "gpu_util") || strings.HasSuffix(rule, "sm_active"):
		return "gpu_util"
	case strings.HasSuffix(rule, "fb_used"):
		return "gpu_memory"
	case strings.Contains(rule, "latency") || strings.Contains(rule, "ttft") || strings.Contains(rule, "itl") ||
		strings.Contains(rule, "duration") || strings.Contains(rule, "per_token"):
		return "latency"
	}
	return ""
}

// The directions a condition's is: can ask.
var conditionIs = []string{"up", "down", "anomalous", "normal"}

func above(x float64) *float64 { return &x }

// DefaultDiagnoses is the diagnosis table the daemon ships, in order of
// preference on a tie. KV-cache usage is a fraction (vLLM's
// kv_cache_usage_perc is 0–1), GPU utilisation a percentage.
var DefaultDiagnoses = []DiagnosisRule{
	{Name: "traffic_surge", Title: "traffic surge",
		Check: "load is above what the detector expected: check the scale signal's desired replicas and that the autoscaler follows it; scale out",
		When:  []Condition{{Any: []Condition{{Signal: "request_rate", Is: "up"}, {ForecastMissed: true}}}},
		Also:  []Condition{{Signal: "latency", Is: "up"}, {Signal: "queue", Is: "up"}, {Signal: "kv_cache", Is: "up"}}},
	{Name: "regression", Title: "throughput regression, e.g. after a rollout",
		Check: "what changed shortly before the start (a new version, image, engine flag or driver); roll back if so",
		When:  []Condition{{Any: []Condition{{Signal: "throughput_decay", Is: "anomalous"}, {LabelChanged: true}}}},
		Also:  []Condition{{Signal: "latency", Is: "up"}, {Signal: "request_rate", Is: "normal"}, {LabelChanged: true}}},
	{Name: "gpu_saturation", Title: "GPU saturation",
		Check: "batch size and model against the GPU: the GPU runs at its limit and latency follows; scale out (the scale signal's desired replicas) or lower the batch size",
		When: []Condition{{Any: []Condition{{Signal: "gpu_util", Is: "up", Above: above(90)},
			{Signal: "gpu_latency_jitter", Is: "anomalous", Detail: "x_max", Above: above(90)},
			{Signal: "gpu_util", LevelAbove: above(90)}}}},
		Also: []Condition{{Signal: "latency", Is: "up"}, {Signal: "queue", Is: "up"}, {Signal: "request_rate", Is: "normal"}}},
	{Name: "kv_cache_pressure", Title: "KV-cache pressure",
		Check: "the KV cache is nearly full and requests wait or are preempted: lower max_num_seqs or the batch size, or give the engine more GPU memory",
		When: []Condition{{Any: []Condition{{Signal: "kv_cache", Is: "up", Above: above(0.9)}, {Signal: "kv_cache", LevelAbove: above(0.9)}}},
			{Signal: "latency", Is: "up"}},
		Also: []Condition{{Signal: "queue", Is: "up"}, {Signal: "gpu_util", LevelBelow: above(90)}, {Signal: "request_rate", Is: "normal"}}},
	{Name: "host_bottleneck", Title: "scheduling or host bottleneck",
		Check: "the GPU oscillates with latency jitter below saturation while load is flat: check CPU throttling, the host's other tenants, PCIe/NVLink and the scheduler",
		When:  []Condition{{Signal: "gpu_latency_jitter", Is: "anomalous", Detail: "x_max", Below: above(90)}},
		Also:  []Condition{{Signal: "request_rate", Is: "normal"}, {Signal: "latency", Is: "up"}}},
	{Name: "engine_stall", Title: "stalled engine on the pods listed",
		Check: "latency rose while load stayed flat and no GPU, cache or throughput cause shows: check the listed pods' engine logs, restarts and node; restart or drain the pod",
		When:  []Condition{{Signal: "latency", Is: "up"}, {Signal: "request_rate", Is: "normal"}, {Signal: "throughput_decay", Is: "normal"}},
		Also:  []Condition{{Signal: "queue", Is: "up"}, {Signal: "gpu_util", LevelBelow: above(90)}, {Signal: "gpu_latency_jitter", Is: "normal"}}},
}

var incidentKeys = []string{"by", "list", "gap", "max_age", "max_open", "max_members", "change_labels", "change_within", "diagnoses"}

// incidents reads the incidents: section (absent: the defaults).
func (p *parser) incidents(kv pair, groups []Group) Incidents {
	out := Incidents{By: slices.Clone(DefaultIncidentBy), List: slices.Clone(DefaultIncidentList),
		Gap: DefaultIncidentGap, MaxAge: DefaultIncidentMaxAge, MaxOpen: DefaultIncidentMaxOpen, MaxMembers: DefaultIncidentMaxMembers,
		ChangeLabels: slices.Clone(DefaultChangeLabels), ChangeWithin: DefaultChangeWithin}
	p.checkSignalLabels(groups)
	p.changeLabels = out.ChangeLabels
	if kv.v == nil || isNull(resolve(kv.v)) {
		return out
	}
	n := resolve(kv.v)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "incidents must be a mapping, got %s", kind(n))
		return out
	}
	f := p.fields(n, "incidents", incidentKeys, nil)
	if e, ok := f["by"]; ok {
		if by := p.labelList(resolve(e.v), "incidents.by"); len(by) > 0 {
			out.By = by
		} else {
			p.errorf(resolve(e.v), "incidents.by must name at least one label, e.g. [model]")
		}
	}
	if e, ok := f["list"]; ok {
		out.List = p.labelList(resolve(e.v), "incidents.list")
	}
	e, ok := f["gap"]
	out.Gap, _ = p.positive(e, ok, "incidents.gap", DefaultIncidentGap, false)
	e, ok = f["max_age"]
	out.MaxAge, _ = p.positive(e, ok, "incidents.max_age", DefaultIncidentMaxAge, false)
	if e, ok := f["max_open"]; ok {
		out.MaxOpen = int(p.integer(e, "incidents.max_open", DefaultIncidentMaxOpen, 1, 1e6))
	}
	if e, ok := f["max_members"]; ok {
		out.MaxMembers = int(p.integer(e, "incidents.max_members", DefaultIncidentMaxMembers, 1, 1e5))
	}
	if e, ok := f["change_labels"]; ok {
		out.ChangeLabels = p.labelList(resolve(e.v), "incidents.change_labels")
		if out.ChangeLabels == nil {
			out.ChangeLabels = []string{}
		}
		p.changeLabels = out.ChangeLabels
	}
	e, ok = f["change_within"]
	out.ChangeWithin, _ = p.positive(e, ok, "incidents.change_within", DefaultChangeWithin, false)
	if out.MaxAge <= out.Gap {
		p.errorf(n, "incidents.max_age (%s) must be longer than incidents.gap (%s)", out.MaxAge, out.Gap)
	}
	if e, ok := f["diagnoses"]; ok {
		out.Diagnoses = p.diagnoses(e.v, slices.Clone(DefaultDiagnoses))
	}
	return out
}

// checkSignalLabels reports a rule whose signal label names no signal.
func (p *parser) checkSignalLabels(groups []Group) {
	for _, g := range groups {
		for _, r := range g.Rules {
			if s, ok := r.Labels["signal"]; ok && Signals[s] == "" {
				p.errs.Add(r.Pos, g.Name, r.Name, "label signal %q names no signal; %s", s, knownSignals(s))
			}
		}
	}
}

func knownSignals(s string) string {
	if k := suggest(s, SignalNames()); k != "" {
		return fmt.Sprintf("did you mean %q? Known signals: %s", k, strings.Join(SignalNames(), ", "))
	}
	return "known signals: " + strings.Join(SignalNames(), ", ")
}

// diagnoses reads the diagnoses list over the defaults: a rule named as
// a default replaces it (disabled: true removes it), the others follow.
func (p *parser) diagnoses(v *yaml.Node, defaults []DiagnosisRule) []DiagnosisRule {
	v = resolve(v)
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "incidents.diagnoses must be a list of diagnosis rules, got %s", kind(v))
		return defaults
	}
	out := defaults
	seen := map[string]int{}
	for _, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.MappingNode {
			p.errorf(item, "a diagnosis rule must be a mapping with name, title, check, when and also, got %s", kind(item))
			continue
		}
		f := p.fields(item, "a diagnosis rule", []string{"name", "title", "check", "when", "also", "disabled"}, nil)
		r := DiagnosisRule{Pos: p.pos(item)}
		nameKV, ok := f["name"]
		if !ok {
			p.errorf(item, "a diagnosis rule needs a name")
			continue
		}
		r.Name, _ = p.str(nameKV.v, "name")
		if !labelNameRE.MatchString(r.Name) {
			p.errorf(resolve(nameKV.v), "diagnosis name %q must be a word of letters, digits and _, e.g. gpu_saturation", r.Name)
			continue
		}
		if line, dup := seen[r.Name]; dup {
			p.errorf(resolve(nameKV.v), "diagnosis %q is given twice (first at line %d)", r.Name, line)
			continue
		}
		seen[r.Name] = resolve(nameKV.v).Line
		i := slices.IndexFunc(out, func(d DiagnosisRule) bool { return d.Name == r.Name })
		if e, ok := f["disabled"]; ok {
			if off, _ := p.boolean(e.v, "disabled"); off {
				if i < 0 {
					p.errorf(resolve(e.v), "diagnosis %q is not a default one; only defaults can be disabled (%s)", r.Name, defaultNames())
				} else {
					out = slices.Delete(slices.Clone(out), i, i+1)
				}
				continue
			}
		}
		for _, k := range []string{"title", "check"} {
			if e, ok := f[k]; ok {
				s, _ := p.str(e.v, k)
				if k == "title" {
					r.Title = s
				} else {
					r.Check = s
				}
			}
		}
		if r.Title == "" {
			r.Title = strings.ReplaceAll(r.Name, "_", " ")
		}
		e, hasWhen := f["when"]
		if !hasWhen || len(resolve(e.v).Content) == 0 {
			p.errorf(item, "diagnosis %q needs at least one condition under when", r.Name)
			continue
		}
		before := len(p.errs)
		r.When = p.conditions(e.v, "when", r.Name)
		if e, ok := f["also"]; ok {
			r.Also = p.conditions(e.v, "also", r.Name)
		}
		if len(p.errs) > before {
			continue
		}
		if i >= 0 {
			out = slices.Clone(out)
			out[i] = r
		} else {
			out = append(out, r)
		}
	}
	return out
}

func defaultNames() string {
	var names []string
	for _, d := range DefaultDiagnoses {
		names = append(names, d.Name)
	}
	return strings.Join(names, ", ")
}

// conditions reads a list of conditions.
func (p *parser) conditions(v *yaml.Node, where, rule string) []Condition {
	v = resolve(v)
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "%s of diagnosis %q must be a list of conditions, e.g. - {signal: latency, is: up}, got %s", where, rule, kind(v))
		return nil
	}
	var out []Condition
	for _, item := range v.Content {
		if c, ok := p.condition(resolve(item), where, rule); ok {
			out = append(out, c)
		}
	}
	return out
}

// condition reads one condition: signal with is, above, below and
// detail, or any with a list of them.
func (p *parser) condition(n *yaml.Node, where, rule string) (Condition, bool) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "a condition of diagnosis %q must be a mapping, e.g. {signal: latency, is: up}, got %s", rule, kind(n))
		return Condition{}, false
	}
	f := p.fields(n, "a condition of diagnosis "+rule, []string{"signal", "is", "above", "below", "detail", "level_above", "level_below", "label_changed", "forecast_missed", "any"}, nil)
	c := Condition{Pos: p.pos(n)}
	if e, ok := f["any"]; ok {
		if len(f) > 1 {
			p.errorf(resolve(e.k), "a condition with any holds only other conditions; move signal, is, above, below, detail and the levels into them")
			return c, false
		}
		c.Any = p.conditions(e.v, where+".any", rule)
		return c, len(c.Any) > 0
	}
	if e, ok := f["label_changed"]; ok {
		if len(f) > 1 {
			p.errorf(resolve(e.k), "a condition with label_changed asks for a label change only; give the signal's in a condition of its own")
			return c, false
		}
		return p.labelChanged(c, resolve(e.v), rule)
	}
	if e, ok := f["forecast_missed"]; ok {
		if len(f) > 1 {
			p.errorf(resolve(e.k), "a condition with forecast_missed asks for load above a forecast's interval only; give the signal's in a condition of its own")
			return c, false
		}
		c.ForecastMissed, _ = p.boolean(e.v, "forecast_missed")
		if !c.ForecastMissed {
			p.errorf(resolve(e.v), "forecast_missed: false in diagnosis %q says nothing; give true, or leave the condition out", rule)
		}
		return c, c.ForecastMissed
	}
	e, ok := f["signal"]
	if !ok {
		p.errorf(n, "a condition of diagnosis %q needs a signal (%s), label_changed or forecast_missed", rule, strings.Join(SignalNames(), ", "))
		return c, false
	}
	c.Signal, _ = p.str(e.v, "signal")
	good := true
	if Signals[c.Signal] == "" {
		p.errorf(resolve(e.v), "unknown signal %q in diagnosis %q; %s", c.Signal, rule, knownSignals(c.Signal))
		good = false
	}
	if e, ok := f["is"]; ok {
		c.Is, _ = p.str(e.v, "is")
		if !slices.Contains(conditionIs, c.Is) {
			p.errorf(resolve(e.v), "unknown condition is: %q in diagnosis %q; it must be one of %s", c.Is, rule, strings.Join(conditionIs, ", "))
			good = false
		}
	}
	if e, ok := f["detail"]; ok {
		c.Detail, _ = p.str(e.v, "detail")
	}
	for _, k := range []string{"above", "below", "level_above", "level_below"} {
		if e, ok := f[k]; ok {
			x := p.number(e, k, 0, -1e300, 1e300, false)
			switch k {
			case "above":
				c.Above = &x
			case "below":
				c.Below = &x
			case "level_above":
				c.LevelAbove = &x
			default:
				c.LevelBelow = &x
			}
		}
	}
	level := c.LevelAbove != nil || c.LevelBelow != nil
	switch {
	case !level && c.Is == "" && c.Above == nil && c.Below == nil:
		p.errorf(n, "a condition on %s in diagnosis %q says nothing: give is (%s), above, below, level_above or level_below", c.Signal, rule, strings.Join(conditionIs, ", "))
		good = false
	case level && (c.Is != "" || c.Above != nil || c.Below != nil || c.Detail != ""):
		p.errorf(n, "a condition on %s in diagnosis %q asks for a level (level_above, level_below) and of its alerts (is, above, below, detail): give them as two conditions", c.Signal, rule)
		good = false
	case c.LevelAbove != nil && c.LevelBelow != nil && *c.LevelAbove >= *c.LevelBelow:
		p.errorf(n, "a condition on %s in diagnosis %q asks for a level of at least %g and under %g: it cannot hold", c.Signal, rule, *c.LevelAbove, *c.LevelBelow)
		good = false
	case c.Is == "normal" && (c.Above != nil || c.Below != nil):
		p.errorf(n, "a condition on %s in diagnosis %q asks for no alert (is: normal) and for a reading: it cannot hold", c.Signal, rule)
		good = false
	}
	return c, good
}

// labelChanged reads label_changed: any, or a list of change labels.
func (p *parser) labelChanged(c Condition, v *yaml.Node, rule string) (Condition, bool) {
	c.LabelChanged = true
	if v.Kind == yaml.ScalarNode && v.Value == "any" {
		return c, true
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "label_changed in diagnosis %q must be any or a list of incidents.change_labels, e.g. [version], got %s", rule, kind(v))
		return c, false
	}
	good := true
	for _, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode || !slices.Contains(p.changeLabels, item.Value) {
			known := "none: incidents.change_labels is empty"
			if len(p.changeLabels) > 0 {
				known = "incidents.change_labels are " + strings.Join(p.changeLabels, ", ")
			}
			p.errorf(item, "label_changed in diagnosis %q names %q, which is not a change label; %s", rule, item.Value, known)
			good = false
			continue
		}
		c.Labels = append(c.Labels, item.Value)
	}
	if good && len(c.Labels) == 0 {
		p.errorf(v, "label_changed in diagnosis %q names no label; give any or a list, e.g. [version]", rule)
		good = false
	}
	return c, good
}
