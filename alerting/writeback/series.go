package writeback

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
)

// The names of the series written for Batch.Scores, as vmanomaly names its
// output, so that dashboards and alerting rules written for it carry over.
// Each is written at the time of the point it describes.
const (
	// NameScore is the anomaly score: ≥ 1 is anomalous.
	NameScore = "anomaly_score"
	// NameValue is the value the rule judged (for an anomaly rule, the
	// value its expression returned).
	NameValue = "y"
	// NameExpected is the detector's expected value.
	NameExpected = "yhat"
	// NameLower and NameUpper bound the band of normal values.
	NameLower = "yhat_lower"
	NameUpper = "yhat_upper"
)

// NameForecast is the name of the series written for Batch.Forecasts. It
// differs from the scores' names, so that a query over yhat never mixes
// forecasts into the bands the detectors judged by, and from the gauge
// inferwatch_forecast that the daemon exposes on /metrics (package
// alerting/promexport), which holds one lead's forecast at the time of each
// scrape and would otherwise share a name with series of other labels.
const NameForecast = "inferwatch_predicted"

// The labels added to every series written. A label of the source series
// with one of these names is kept as exported_<name> (exported_exported_…
// if that is taken too), as Prometheus does with scraped labels that clash.
const (
	// LabelFor is the rule's name: the counterpart of vmanomaly's `for`,
	// which names the query a model ran on.
	LabelFor = "for"
	// LabelRule is the rule's name too, as the rest of inferwatch labels it
	// (its /metrics gauges, the events on NATS).
	LabelRule = "rule"
	// LabelGroup is the rule's group.
	LabelGroup = "group"
	// LabelMetric is the source series' metric name (its __name__), when it
	// had one: an expression that aggregates or computes returns series
	// without a name.
	LabelMetric = "metric"
	// LabelKind, on forecasts only: which figure of the forecast the series
	// holds, KindMean, KindLower or KindUpper.
	LabelKind = "kind"
	// LabelHorizon, on forecasts only: the lead of the forecast in
	// Prometheus duration syntax (5m, 1h, 1d): how far ahead of the newest
	// point used (the origin) its target time lies.
	LabelHorizon = "horizon"
	// LabelAt, on forecasts only: whether a sample lies at its target time
	// (AtTarget) or at the forecast's origin (AtOrigin). Series of the two
	// never share a name, so switching does not interleave them.
	LabelAt = "at"
)

// The values of LabelKind.
const (
	KindMean  = "yhat"
	KindLower = "yhat_lower"
	KindUpper = "yhat_upper"
)

// ForecastTime says where a forecast's samples lie in time.
type ForecastTime string

const (
	// AtTarget writes each lead's figures at the time they forecast (the
	// future, when written), so a panel shows the forecast under the value
	// that came. VictoriaMetrics keeps samples up to -futureRetention
	// (default 2 days) ahead of its clock. A Prometheus released since
	// mid-2024 refuses samples more than 10 minutes ahead of its clock; an
	// older one stores them, and then refuses every sample older than an
	// hour before the newest it holds, scrapes included: never use it with
	// a Prometheus.
	AtTarget ForecastTime = "target"
	// AtOrigin writes each lead's figures at the forecast's origin; a panel
	// shows the forecast for time t of horizon h with `offset h`.
	AtOrigin ForecastTime = "origin"
)

// series is one output series: sorted labels and samples in time order.
type series struct {
	key    string // the labels in selector syntax: the series' identity
	labels ingest.Labels
	t      []int64
	v      []float64
	at     time.Time // when it was queued
}

// converter turns a Batch into series. Its fields are set by New.
type converter struct {
	scores, forecasts bool
	forecastAt        ForecastTime
	horizons          map[time.Duration]bool // nil: every lead
	rules             []string               // path.Match patterns over group/rule; nil: every rule
}

// dropCounts are samples left out of a conversion, by reason.
type dropCounts struct {
	inf     int // a value of ±Inf: neither format can hold it faithfully
	invalid int // a label name empty or a name or value not UTF-8
}

// convert returns the series b becomes under c, in the order of b. A NaN
// figure is undefined and written as no sample.
func (c *converter) convert(b alerting.Batch) ([]*series, dropCounts) {
	var out []*series
	var d dropCounts
	if c.scores {
		for i := range b.Scores {
			sc := &b.Scores[i]
			if !c.match(sc.Group, sc.Rule) {
				continue
			}
			out = c.scoreSeries(out, sc, &d)
		}
	}
	if c.forecasts {
		for i := range b.Forecasts {
			fd := &b.Forecasts[i]
			if !c.match(fd.Group, fd.Rule) {
				continue
			}
			out = c.forecastSeries(out, fd, &d)
		}
	}
	return out, d
}

func (c *converter) scoreSeries(out []*series, sc *alerting.Scores, d *dropCounts) []*series {
	figures := [...]struct {
		name string
		v    []float64
	}{
		{NameScore, sc.Score}, {NameValue, sc.Value}, {NameExpected, sc.Expected},
		{NameLower, sc.Lower}, {NameUpper, sc.Upper},
	}
	base, err := outputLabels(sc.Labels, placeholder, sc.Group, sc.Rule)
	for _, f := range figures {
		n := min(len(sc.T), len(f.v))
		if err != nil {
			d.invalid += finite(f.v[:n])
			continue
		}
		ls := fill(base, "__name__", f.name)
		s := &series{labels: ls, key: ls.String(), t: make([]int64, 0, n), v: make([]float64, 0, n)}
		for j := range n {
			v := f.v[j]
			switch {
			case math.IsNaN(v):
				continue
			case math.IsInf(v, 0):
				d.inf++
				continue
			}
			s.t, s.v = append(s.t, sc.T[j]), append(s.v, v)
		}
		if len(s.t) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func (c *converter) forecastSeries(out []*series, fd *alerting.ForecastData, d *dropCounts) []*series {
	base, err := outputLabels(fd.Labels, NameForecast, fd.Group, fd.Rule,
		LabelKind, placeholder, LabelHorizon, placeholder, LabelAt, string(c.forecastAt))
	for _, p := range fd.Points {
		lead := p.Time.Sub(fd.Origin)
		if c.horizons != nil && !c.horizons[lead] {
			continue
		}
		ts := p.Time.UnixMilli()
		if c.forecastAt == AtOrigin {
			ts = fd.Origin.UnixMilli()
		}
		horizon := model.Duration(lead).String()
		for _, f := range [...]struct {
			kind string
			v    float64
		}{{KindMean, float64(p.Mean)}, {KindLower, float64(p.Lower)}, {KindUpper, float64(p.Upper)}} {
			switch {
			case math.IsNaN(f.v):
				continue
			case math.IsInf(f.v, 0):
				d.inf++
				continue
			case err != nil:
				d.invalid++
				continue
			}
			ls := fill(base, LabelKind, f.kind, LabelHorizon, horizon)
			out = append(out, &series{labels: ls, key: ls.String(), t: []int64{ts}, v: []float64{f.v}})
		}
	}
	return out
}

// placeholder stands for a label value that fill sets: outputLabels leaves
// out labels with empty values.
const placeholder = "_"

// fill is a copy of ls with the values of the named labels set, pairs of
// name and value in kv; ls holds each of them, so the copy stays sorted.
func fill(ls ingest.Labels, kv ...string) ingest.Labels {
	out := slices.Clone(ls)
	for i := 0; i+1 < len(kv); i += 2 {
		for j := range out {
			if out[j].Name == kv[i] {
				out[j].Value = kv[i+1]
				break
			}
		}
	}
	return out
}

// finite counts the finite values of vs.
func finite(vs []float64) int {
	n := 0
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			n++
		}
	}
	return n
}

// reservedLabels are the names outputLabels sets itself.
var reservedLabels = map[string]bool{
	"__name__": true, LabelFor: true, LabelRule: true, LabelGroup: true, LabelMetric: true,
	LabelKind: true, LabelHorizon: true, LabelAt: true,
}

// outputLabels are the labels of an output series named name for a source
// series with labels src (its __name__ included), of rule in group: src's
// labels with empty values left out (an empty value is an absent label)
// and those clashing with the labels added kept as exported_<name>; then
// __name__, for and rule, group, metric (src's __name__, if any) and the
// pairs of extra. It fails when a name is empty or a name or value is not UTF-8,
// which a receiver would refuse.
func outputLabels(src map[string]string, name, group, rule string, extra ...string) (ingest.Labels, error) {
	out := make(map[string]string, len(src)+4+len(extra)/2)
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	slices.Sort(keys) // so that renaming is deterministic
	for _, k := range keys {
		v := src[k]
		switch {
		case k == "__name__" || v == "":
			continue
		case k == "" || !utf8.ValidString(k):
			return nil, fmt.Errorf("label name %q is empty or not UTF-8", k)
		case !utf8.ValidString(v):
			return nil, fmt.Errorf("label %s has a value that is not UTF-8: %q", k, v)
		}
		n := k
		for reservedLabels[n] || (n != k && taken(src, out, n)) {
			n = "exported_" + n
		}
		out[n] = v
	}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	if m := src["__name__"]; !utf8.ValidString(m) {
		return nil, fmt.Errorf("metric name %q is not UTF-8", m)
	}
	set("__name__", name)
	set(LabelFor, rule)
	set(LabelRule, rule)
	set(LabelGroup, group)
	set(LabelMetric, src["__name__"])
	for i := 0; i+1 < len(extra); i += 2 {
		set(extra[i], extra[i+1])
	}
	return ingest.LabelsFromMap(out), nil
}

func taken(src, out map[string]string, n string) bool {
	_, inSrc := src[n]
	_, inOut := out[n]
	return inSrc || inOut
}

// match reports whether the results of rule in group are written.
func (c *converter) match(group, rule string) bool {
	if c.rules == nil {
		return true
	}
	for _, p := range c.rules {
		if ok, _ := path.Match(p, group+"/"+rule); ok {
			return true
		}
	}
	return false
}

// ValidateRules checks the selectors of Options.Rules: each a rule's name,
// group/rule or group/*, with the wildcards of path.Match.
func ValidateRules(sel []string) error {
	_, err := rulePatterns(sel)
	return err
}

// MatchRule reports whether the selector sel, an entry of Options.Rules,
// selects rule in group; false when sel is not valid.
func MatchRule(sel, group, rule string) bool {
	p, err := rulePatterns([]string{sel})
	if err != nil {
		return false
	}
	c := converter{rules: p}
	return c.match(group, rule)
}

// rulePatterns turns the configured rule selectors into path.Match patterns
// over group/rule: "group/rule" as it is, a bare "rule" as "*/rule". Each
// may use the wildcards of path.Match (* ? [...]); nil for none.
func rulePatterns(sel []string) ([]string, error) {
	if len(sel) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(sel))
	var bad []string
	for _, s := range sel {
		p := s
		switch strings.Count(s, "/") {
		case 0:
			p = "*/" + s
		case 1:
		default:
			bad = append(bad, fmt.Sprintf("%q has more than one /", s))
			continue
		}
		if s == "" || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
			bad = append(bad, fmt.Sprintf("%q is not a rule, group/rule or group/*", s))
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			bad = append(bad, fmt.Sprintf("%q is not a valid pattern (%v)", s, err))
			continue
		}
		out = append(out, p)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("writeback rules: %s; write each as rule, group/rule or group/* (wildcards * ? [...])", strings.Join(bad, "; "))
	}
	return out, nil
}

// order keeps the newest timestamp queued for each series, so that every
// series is written in strictly increasing time: a remote-write receiver
// refuses a sample older than one it holds, and a repeated timestamp is a
// duplicate. Entries not used for orderTTL are forgotten.
type order struct {
	last      map[string]orderEntry
	lastSweep time.Time
}

type orderEntry struct {
	t    int64
	seen time.Time
}

const orderTTL = 3 * time.Hour

// admit removes from s the samples at or before the newest already queued
// for its series, or before one earlier in s, and returns how many repeated
// a timestamp and how many stepped back.
func (o *order) admit(s *series, now time.Time) (duplicate, outOfOrder int) {
	if o.last == nil {
		o.last = map[string]orderEntry{}
		o.lastSweep = now
	}
	e, ok := o.last[s.key]
	k := 0
	for i, t := range s.t {
		switch {
		case ok && t == e.t:
			duplicate++
			continue
		case ok && t < e.t:
			outOfOrder++
			continue
		}
		s.t[k], s.v[k] = t, s.v[i]
		k++
		e, ok = orderEntry{t: t}, true
	}
	s.t, s.v = s.t[:k], s.v[:k]
	if ok {
		e.seen = now
		o.last[s.key] = e
	}
	if now.Sub(o.lastSweep) > orderTTL/4 {
		for key, e := range o.last {
			if now.Sub(e.seen) > orderTTL {
				delete(o.last, key)
			}
		}
		o.lastSweep = now
	}
	return duplicate, outOfOrder
}
