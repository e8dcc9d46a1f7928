package rulefmt

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time zones do not depend on the machine's zoneinfo

	"github.com/VictoriaMetrics/metricsql"
	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/inferwatch/inferwatch/internal/dur"
)

// Report is one scheduled trend report (the reports: section): what it
// covers, when it is made, and where it is kept.
type Report struct {
	// Name names the files (<name>-<date>.html) and the subject
	// <prefix>.reports.<name>: letters, digits, _ and -.
	Name string
	// Schedule is the cron spec as written: five fields (minute hour
	// day-of-month month day-of-week) or a descriptor (@daily, @hourly,
	// @weekly, @every 6h), in TimeZone.
	Schedule string
	// Cron is Schedule parsed in Location.
	Cron cron.Schedule
	// TimeZone is an IANA name (default UTC); Location is it loaded.
	TimeZone string
	Location *time.Location
	// Engine is the serving engine whose metric names the report reads:
	// vllm (default) or sglang.
	Engine string
	// Selector holds label matchers added to every metric selector, e.g.
	// {namespace="inference"} ("": none).
	Selector string
	// By are the labels that make one model or service (default
	// [model_name], vLLM's label).
	By []string
	// Instance is the label naming one replica (default pod): replicas are
	// counted by it and GPU series are paired with latency on it.
	Instance string
	// Track are the labels whose values appearing or vanishing are
	// reported, e.g. a new pod or model version (default [pod, version]).
	Track []string
	// Groups limits the findings, alerts, forecasts and scale signals
	// reported to those of these rule groups (default: every group).
	Groups []string
	// Rules limits them to those of these rules, each a rule name or
	// group/rule (default: every rule); with Groups, both must hold.
	Rules []string
	// Period is the span a report covers, ending at its scheduled time
	// (default 1d). Whole days are calendar days in Location, so a day
	// with a daylight-saving change lasts 23 or 25 hours.
	Period time.Duration
	// Compare are how far back the comparison periods start, each as long
	// as Period (default 1d and 7d: the day before and the same day a week
	// before).
	Compare []time.Duration
	// GPUMetric is the GPU utilisation metric in percent paired with
	// latency jitter (default DCGM_FI_DEV_GPU_UTIL; "none" for none).
	GPUMetric string
	// OutputDir is where the files go (default reports/ beside the
	// configuration file); Keep how many reports are kept (default 30).
	OutputDir string
	Keep      int
	// Formats are the files written: html, json, md (default all three).
	Formats []string
	// SLOs are the names of the top-level slos reported on (default all).
	SLOs []string

	Pos Pos
}

// ServiceLevel is one service-level objective (the slos: section), in the
// conventions of Sloth and Pyrra: an SLI as a ratio of good to total
// events (or errors to total), an objective in percent, a window.
type ServiceLevel struct {
	Name        string
	Description string
	// Objective is the target share of good events in percent, e.g. 99.5.
	Objective float64
	// Window is the window the error budget is counted over (default 30d).
	Window time.Duration
	// Exactly one of Events and Latency is set.
	Events  *EventsSLI
	Latency *LatencySLI

	Pos Pos
}

// EventsSLI is an SLI of two queries, each holding the placeholder
// {{.window}} (Sloth's) where the range of its rate or increase goes.
// Exactly one of GoodQuery and ErrorQuery is set.
type EventsSLI struct {
	GoodQuery, ErrorQuery, TotalQuery string
}

// LatencySLI counts the requests faster than Threshold as good, from a
// Prometheus histogram: its bucket le="<threshold>" against its _count.
type LatencySLI struct {
	// Metric is the histogram's name without _bucket, e.g.
	// vllm:e2e_request_latency_seconds.
	Metric string
	// Threshold must be one of the histogram's bucket bounds.
	Threshold time.Duration
	// Selector holds extra label matchers ("": the report's).
	Selector string
	// By are the labels of the SLI's series (default: the report's By).
	By []string
}

// WindowPlaceholder is where the range of an SLI query goes.
const WindowPlaceholder = "{{.window}}"

// Defaults of reports and SLOs.
const (
	DefaultReportKeep     = 30
	DefaultReportPeriod   = 24 * time.Hour
	DefaultSLOWindow      = 30 * 24 * time.Hour
	DefaultReportEngine   = "vllm"
	DefaultReportInstance = "pod"
	DefaultGPUMetric      = "DCGM_FI_DEV_GPU_UTIL"
)

// ReportFormats are the formats a report can be written in.
var ReportFormats = []string{"html", "json", "md"}

// ReportEngines are the engines a report knows the metrics of.
var ReportEngines = []string{"vllm", "sglang"}

var (
	reportNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

var reportKeys = []string{"name", "schedule", "time_zone", "engine", "selector", "by", "instance", "track",
	"groups", "rules", "period", "compare", "gpu_metric", "output_dir", "keep", "formats", "slos"}

func (p *parser) reports(kv pair, slos []ServiceLevel) []Report {
	if kv.v == nil || isNull(resolve(kv.v)) {
		return nil
	}
	n := resolve(kv.v)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "reports must be a list of reports, got %s", kind(n))
		return nil
	}
	known := map[string]bool{}
	for _, s := range slos {
		known[s.Name] = true
	}
	names := map[string]int{}
	var out []Report
	for _, item := range n.Content {
		if !p.spend(item) {
			break
		}
		if r, ok := p.report1(resolve(item), names, known); ok {
			out = append(out, r)
		}
	}
	return out
}

func (p *parser) report1(n *yaml.Node, names map[string]int, slos map[string]bool) (Report, bool) {
	r := Report{TimeZone: "UTC", Location: time.UTC, Engine: DefaultReportEngine, Instance: DefaultReportInstance,
		Track: []string{"pod", "version"}, Period: DefaultReportPeriod, Compare: []time.Duration{24 * time.Hour, 7 * 24 * time.Hour},
		GPUMetric: DefaultGPUMetric, Keep: DefaultReportKeep, Formats: ReportFormats, Pos: p.pos(n)}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "a report must be a mapping with name, schedule and output_dir, got %s", kind(n))
		return r, false
	}
	name := peekName(n)
	where := "report"
	if name != "" {
		where = fmt.Sprintf("report %q", name)
	}
	f := p.fields(n, where, reportKeys, nil)
	r.Name = p.entryName(n, f, names, where, "report", "a report", " (it names files and a NATS subject token)")
	if e, ok := f["time_zone"]; ok {
		if s, ok := p.str(e.v, where+": time_zone"); ok {
			loc, err := time.LoadLocation(s)
			switch {
			case s == "" || strings.EqualFold(s, "local"):
				p.errorf(resolve(e.v), "%s: time_zone must name a zone such as UTC or Europe/Berlin, got %q", where, s)
			case err != nil:
				p.errorf(resolve(e.v), "%s: time_zone %q is not a known IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)", where, s)
			default:
				r.TimeZone, r.Location = s, loc
			}
		}
	}
	if e, ok := f["schedule"]; ok {
		if s, ok := p.str(e.v, where+": schedule"); ok {
			r.Schedule = s
			r.Cron = p.cronSpec(resolve(e.v), s, r.Location, where)
		}
	} else {
		p.errorf(n, "%s needs a schedule: a cron spec such as \"0 6 * * *\" or @daily", where)
	}
	if e, ok := f["engine"]; ok {
		if s, ok := p.str(e.v, where+": engine"); ok {
			if !slices.Contains(ReportEngines, s) {
				p.errorf(resolve(e.v), "%s: engine must be one of %s, got %q", where, strings.Join(ReportEngines, ", "), s)
			} else {
				r.Engine = s
			}
		}
	}
	if e, ok := f["selector"]; ok {
		if s, ok := p.str(e.v, where+": selector"); ok {
			if sel, err := parseSelector(s); err != nil {
				p.errorf(resolve(e.v), "%s: %v", where, err)
			} else {
				r.Selector = sel
			}
		}
	}
	r.By = []string{"model_name"}
	if e, ok := f["by"]; ok {
		if by := p.labelList(resolve(e.v), where+": by"); len(by) > 0 {
			r.By = by
		} else if resolve(e.v).Kind == yaml.SequenceNode {
			p.errorf(resolve(e.v), "%s: by must name at least one label", where)
		}
	}
	if e, ok := f["instance"]; ok {
		if s, ok := p.str(e.v, where+": instance"); ok {
			if !labelNameRE.MatchString(s) {
				p.errorf(resolve(e.v), "%s: instance %q is not a label name", where, s)
			} else {
				r.Instance = s
			}
		}
	}
	if e, ok := f["track"]; ok {
		r.Track = p.labelList(resolve(e.v), where+": track")
	}
	if e, ok := f["groups"]; ok {
		r.Groups = p.nameList(resolve(e.v), where+": groups")
	}
	if e, ok := f["rules"]; ok {
		r.Rules = p.nameList(resolve(e.v), where+": rules")
	}
	if e, ok := f["period"]; ok {
		r.Period, _ = p.positive(e, true, where+": period", DefaultReportPeriod, false)
		if r.Period < 5*time.Minute || r.Period > 31*24*time.Hour {
			p.errorf(resolve(e.v), "%s: period must be from 5m to 31d, got %s", where, dur.Format(r.Period))
			r.Period = DefaultReportPeriod
		}
	}
	if e, ok := f["compare"]; ok {
		v := resolve(e.v)
		if v.Kind != yaml.SequenceNode {
			p.errorf(v, "%s: compare must be a list of durations such as [1d, 7d], got %s", where, kind(v))
		} else {
			r.Compare = nil
			for _, c := range v.Content {
				if d, ok := p.positive(pair{v: c}, true, where+": compare", 0, false); ok {
					r.Compare = append(r.Compare, d)
				}
			}
		}
	}
	if e, ok := f["gpu_metric"]; ok {
		if s, ok := p.str(e.v, where+": gpu_metric"); ok {
			if s != "none" && !metricNameRE.MatchString(s) {
				p.errorf(resolve(e.v), "%s: gpu_metric %q is not a metric name (or none)", where, s)
			} else {
				r.GPUMetric = s
			}
		}
	}
	if e, ok := f["output_dir"]; ok {
		r.OutputDir, _ = p.str(e.v, where+": output_dir")
	}
	if strings.TrimSpace(r.OutputDir) == "" {
		r.OutputDir = "reports"
	}
	if e, ok := f["keep"]; ok {
		r.Keep = int(p.integer(e, where+": keep", DefaultReportKeep, 1, 100000))
	}
	if e, ok := f["formats"]; ok {
		v := resolve(e.v)
		fs := p.nameList(v, where+": formats")
		r.Formats = nil
		for i, s := range fs {
			if !slices.Contains(ReportFormats, s) {
				p.errorf(resolve(v.Content[i]), "%s: format must be one of %s, got %q", where, strings.Join(ReportFormats, ", "), s)
				continue
			}
			if !slices.Contains(r.Formats, s) {
				r.Formats = append(r.Formats, s)
			}
		}
		if len(r.Formats) == 0 && len(fs) == 0 {
			p.errorf(v, "%s: formats must name at least one of %s", where, strings.Join(ReportFormats, ", "))
		}
	}
	if e, ok := f["slos"]; ok {
		v := resolve(e.v)
		r.SLOs = p.nameList(v, where+": slos")
		for i, s := range r.SLOs {
			if !slos[s] {
				p.errorf(resolve(v.Content[i]), "%s: no slo named %q in the top-level slos", where, s)
			}
		}
	}
	return r, true
}

// nameList reads a list of non-empty strings (a single string is a list of
// one).
func (p *parser) nameList(v *yaml.Node, name string) []string {
	if v.Kind == yaml.ScalarNode && !isNull(v) {
		return []string{v.Value}
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "%s must be a list of names, got %s", name, kind(v))
		return nil
	}
	var out []string
	for _, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode || isNull(item) || strings.TrimSpace(item.Value) == "" {
			p.errorf(item, "%s: each entry must be a name, got %s", name, kind(item))
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

// entryName reads the name of a report or slo entry n (its fields f):
// letters, digits, _ and - (why says what else it is for), unique among
// names (each name's line), and present.
func (p *parser) entryName(n *yaml.Node, f map[string]pair, names map[string]int, where, kind, a, why string) string {
	var name string
	if e, ok := f["name"]; ok {
		name, _ = p.str(e.v, "name")
		v := resolve(e.v)
		switch {
		case name == "":
		case !reportNameRE.MatchString(name):
			p.errorf(v, "%s: the name must be letters, digits, _ and -%s", where, why)
		default:
			if line, dup := names[name]; dup {
				p.errorf(v, "duplicate %s name %q; the first is at line %d", kind, name, line)
			} else {
				names[name] = v.Line
			}
		}
	}
	if name == "" {
		p.errorf(n, "%s needs a name", a)
	}
	return name
}

// cronSpec parses a cron spec in loc, reporting at the field that is wrong.
func (p *parser) cronSpec(v *yaml.Node, spec string, loc *time.Location, where string) cron.Schedule {
	s := strings.TrimSpace(spec)
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		p.errorf(v, "%s: schedule must not set a time zone; use time_zone", where)
		return nil
	}
	if s == "" {
		p.errorf(v, "%s: schedule is empty; write a cron spec such as \"0 6 * * *\" or @daily", where)
		return nil
	}
	sched, err := cron.ParseStandard("CRON_TZ=" + loc.String() + " " + s)
	if err == nil {
		return sched
	}
	if strings.HasPrefix(s, "@") {
		p.errorf(v, "%s: schedule %q: %v (descriptors: @yearly, @monthly, @weekly, @daily, @hourly, @every DURATION)", where, s, err)
		return nil
	}
	fields := strings.Fields(s)
	if len(fields) != 5 {
		p.errorf(v, "%s: schedule %q has %d fields; a cron spec has 5: minute hour day-of-month month day-of-week (or a descriptor such as @daily)", where, s, len(fields))
		return nil
	}
	// Find the field at fault: each alone, with the others "*".
	names := []string{"minute", "hour", "day of month", "month", "day of week"}
	col := v.Column
	if v.Style == yaml.DoubleQuotedStyle || v.Style == yaml.SingleQuotedStyle {
		col++
	}
	off := 0
	for i, fld := range fields {
		at := strings.Index(spec[off:], fld) + off
		off = at + len(fld)
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = fld
		if _, ferr := cron.ParseStandard(strings.Join(probe, " ")); ferr != nil {
			pos := p.pos(v)
			if v.Style != yaml.LiteralStyle && v.Style != yaml.FoldedStyle && !strings.Contains(spec, "\n") {
				pos.Column = col + at
			}
			p.errs.Add(pos, p.group, p.rule, "%s: schedule %q: the %s field %q: %v", where, s, names[i], fld, ferr)
			return nil
		}
	}
	p.errorf(v, "%s: schedule %q: %v", where, s, err)
	return nil
}

var sloKeys = []string{"name", "description", "objective", "window", "sli"}

func (p *parser) slos(kv pair) []ServiceLevel {
	if kv.v == nil || isNull(resolve(kv.v)) {
		return nil
	}
	n := resolve(kv.v)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "slos must be a list of service-level objectives, got %s", kind(n))
		return nil
	}
	names := map[string]int{}
	var out []ServiceLevel
	for _, item := range n.Content {
		if !p.spend(item) {
			break
		}
		if s, ok := p.slo1(resolve(item), names); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) slo1(n *yaml.Node, names map[string]int) (ServiceLevel, bool) {
	s := ServiceLevel{Window: DefaultSLOWindow, Pos: p.pos(n)}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "an slo must be a mapping with name, objective and sli, got %s", kind(n))
		return s, false
	}
	where := "slo"
	if name := peekName(n); name != "" {
		where = fmt.Sprintf("slo %q", name)
	}
	f := p.fields(n, where, sloKeys, nil)
	s.Name = p.entryName(n, f, names, where, "slo", "an slo", "")
	if e, ok := f["description"]; ok {
		s.Description, _ = p.str(e.v, where+": description")
	}
	if e, ok := f["objective"]; ok {
		s.Objective = p.number(e, where+": objective (percent)", math.NaN(), 0, 100, true)
		if s.Objective == 100 {
			p.errorf(resolve(e.v), "%s: objective 100 leaves no error budget; use e.g. 99.9", where)
		}
	} else {
		p.errorf(n, "%s needs an objective: the target share of good events in percent, e.g. 99.5", where)
	}
	if e, ok := f["window"]; ok {
		s.Window, _ = p.positive(e, true, where+": window", DefaultSLOWindow, false)
		if s.Window < time.Hour {
			p.errorf(resolve(e.v), "%s: window must be at least 1h, got %s", where, dur.Format(s.Window))
			s.Window = DefaultSLOWindow
		}
	}
	e, ok := f["sli"]
	if !ok {
		p.errorf(n, "%s needs an sli: events {good_query or error_query, total_query} or latency {metric, threshold}", where)
		return s, true
	}
	v := resolve(e.v)
	if v.Kind != yaml.MappingNode {
		p.errorf(v, "%s: sli must be a mapping with events or latency, got %s", where, kind(v))
		return s, true
	}
	sf := p.fields(v, where+": sli", []string{"events", "latency"}, nil)
	ev, hasEv := sf["events"]
	lat, hasLat := sf["latency"]
	switch {
	case hasEv && hasLat:
		p.errorf(resolve(lat.k), "%s: sli has events and latency; an SLI is one of them", where)
	case hasEv:
		s.Events = p.eventsSLI(resolve(ev.v), where)
	case hasLat:
		s.Latency = p.latencySLI(resolve(lat.v), where)
	default:
		p.errorf(v, "%s: sli needs events or latency", where)
	}
	return s, true
}

func (p *parser) eventsSLI(n *yaml.Node, where string) *EventsSLI {
	out := &EventsSLI{}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: sli.events must be a mapping with good_query (or error_query) and total_query, got %s", where, kind(n))
		return out
	}
	f := p.fields(n, where+": sli.events", []string{"good_query", "error_query", "total_query"}, nil)
	good, hasGood := f["good_query"]
	bad, hasBad := f["error_query"]
	switch {
	case hasGood && hasBad:
		p.errorf(resolve(bad.k), "%s: sli.events takes good_query or error_query, not both", where)
	case hasGood:
		out.GoodQuery = p.sliQuery(good, where+": sli.events.good_query")
	case hasBad:
		out.ErrorQuery = p.sliQuery(bad, where+": sli.events.error_query")
	default:
		p.errorf(n, "%s: sli.events needs good_query or error_query", where)
	}
	if e, ok := f["total_query"]; ok {
		out.TotalQuery = p.sliQuery(e, where+": sli.events.total_query")
	} else {
		p.errorf(n, "%s: sli.events needs total_query", where)
	}
	return out
}

// sliQuery reads a query that must hold {{.window}} and be valid MetricsQL
// once it is replaced.
func (p *parser) sliQuery(kv pair, name string) string {
	s, _ := p.str(kv.v, name)
	v := resolve(kv.v)
	switch {
	case strings.TrimSpace(s) == "":
		p.errorf(v, "%s must be a query, got nothing", name)
	case !strings.Contains(s, WindowPlaceholder):
		p.errorf(v, "%s must hold %s where the range goes, e.g. rate(x_total[%s])", name, WindowPlaceholder, WindowPlaceholder)
	default:
		if _, err := metricsql.Parse(strings.ReplaceAll(s, WindowPlaceholder, "5m")); err != nil {
			p.errorf(v, "%s %q is not valid MetricsQL: %v", name, s, err)
		}
	}
	return s
}

func (p *parser) latencySLI(n *yaml.Node, where string) *LatencySLI {
	out := &LatencySLI{}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: sli.latency must be a mapping with metric and threshold, got %s", where, kind(n))
		return out
	}
	f := p.fields(n, where+": sli.latency", []string{"metric", "threshold", "selector", "by"}, nil)
	if e, ok := f["metric"]; ok {
		if s, ok := p.str(e.v, where+": sli.latency.metric"); ok {
			s = strings.TrimSuffix(s, "_bucket")
			if !metricNameRE.MatchString(s) {
				p.errorf(resolve(e.v), "%s: sli.latency.metric %q is not a metric name (a histogram's, e.g. vllm:e2e_request_latency_seconds)", where, s)
			} else {
				out.Metric = s
			}
		}
	} else {
		p.errorf(n, "%s: sli.latency needs metric (a histogram's name)", where)
	}
	if e, ok := f["threshold"]; ok {
		out.Threshold, _ = p.positive(e, true, where+": sli.latency.threshold", 0, false)
	} else {
		p.errorf(n, "%s: sli.latency needs threshold (one of the histogram's bucket bounds, e.g. 2.5s)", where)
	}
	if e, ok := f["selector"]; ok {
		if s, ok := p.str(e.v, where+": sli.latency.selector"); ok {
			if sel, err := parseSelector(s); err != nil {
				p.errorf(resolve(e.v), "%s: %v", where, err)
			} else {
				out.Selector = sel
			}
		}
	}
	if e, ok := f["by"]; ok {
		out.By = p.labelList(resolve(e.v), where+": sli.latency.by")
	}
	return out
}
