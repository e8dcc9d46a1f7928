package rulefmt

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	"gopkg.in/yaml.v3"
)

// Defaults of the analysis rules: the analyses' own (package analysis;
// TestFileDefaultsAreTheEngines in package rules keeps them equal), but
// for DefaultDecayMinSlope.
const (
	DefaultCorrelateMinAbsR   = 0.5
	DefaultCorrelateMaxP      = 0.01
	DefaultCorrelateMinPoints = 30
	DefaultDecayPeakQuantile  = 0.99
	// DefaultDecayMinSlope is a rule's: a trend that pages someone is ten
	// points of the peak a day, where the offline report's
	// (analysis.DefaultDecayMinSlope) calls one point a day significant.
	DefaultDecayMinSlope   = 0.1
	DefaultDecayMinEta     = 0.15
	DefaultDecayConfidence = 0.95
	DefaultDecayCurrent    = time.Hour
)

// number reads a scalar number in [lo, hi] (bounds inclusive unless
// openLo), reporting at the value's position.
func (p *parser) number(kv pair, name string, def, lo, hi float64, openLo bool) float64 {
	v := resolve(kv.v)
	x, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64)
	if v.Kind != yaml.ScalarNode || isNull(v) || err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		p.errorf(v, "%s must be a number, got %q", name, v.Value)
		return def
	}
	if x < lo || (openLo && x == lo) || x > hi {
		lb := "["
		if openLo {
			lb = "("
		}
		p.errorf(v, "%s must be in %s%g, %g], got %g", name, lb, lo, hi, x)
		return def
	}
	return x
}

func (p *parser) query(kv pair, name string) string {
	s, _ := p.str(kv.v, name)
	v := resolve(kv.v)
	if strings.TrimSpace(s) == "" {
		p.errorf(v, "%s must be a query, got nothing", name)
	} else if _, err := metricsql.Parse(s); err != nil {
		p.errorf(v, "%s %q is not valid MetricsQL: %v", name, s, err)
	}
	return s
}

var correlateKeys = []string{"x", "y", "y_jitter", "on", "max_lag", "min_abs_r", "max_p", "min_points", "x_above"}

func (p *parser) correlate(n *yaml.Node) *Correlate {
	c := &Correlate{MinAbsR: DefaultCorrelateMinAbsR, MaxP: DefaultCorrelateMaxP, MinPoints: DefaultCorrelateMinPoints}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "correlate must be a mapping with x and y queries, got %s", kind(n))
		return c
	}
	f := p.fields(n, "correlate", correlateKeys, nil)
	for _, k := range []string{"x", "y"} {
		kv, ok := f[k]
		if !ok {
			p.errorf(n, "correlate needs %s (a query)", k)
			continue
		}
		if k == "x" {
			c.X = p.query(kv, "correlate.x")
		} else {
			c.Y = p.query(kv, "correlate.y")
		}
	}
	if kv, ok := f["y_jitter"]; ok {
		c.YJitter, _ = p.positive(kv, true, "correlate.y_jitter", 0, true)
	}
	if kv, ok := f["max_lag"]; ok {
		c.MaxLag, _ = p.positive(kv, true, "correlate.max_lag", 0, true)
	}
	if kv, ok := f["on"]; ok {
		c.On = p.labelList(resolve(kv.v), "correlate.on")
	}
	if kv, ok := f["min_abs_r"]; ok {
		c.MinAbsR = p.number(kv, "correlate.min_abs_r", c.MinAbsR, 0, 1, true)
	}
	if kv, ok := f["max_p"]; ok {
		c.MaxP = p.number(kv, "correlate.max_p", c.MaxP, 0, 1, true)
	}
	if kv, ok := f["min_points"]; ok {
		c.MinPoints = int(p.number(kv, "correlate.min_points", float64(c.MinPoints), 3, 1e6, false))
	}
	if kv, ok := f["x_above"]; ok {
		c.XAbove = p.number(kv, "correlate.x_above", 0, math.Inf(-1), math.Inf(1), false)
	}
	return c
}

var decayKeys = []string{"peak", "peak_quantile", "min_slope", "min_eta", "confidence", "current"}

func (p *parser) decay(n *yaml.Node) *Decay {
	d := &Decay{PeakQuantile: DefaultDecayPeakQuantile, MinSlope: DefaultDecayMinSlope,
		MinEta: DefaultDecayMinEta, Confidence: DefaultDecayConfidence, Current: DefaultDecayCurrent}
	if isNull(n) {
		return d
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "decay must be a mapping (decay: {peak: 2400}) or empty, got %s", kind(n))
		return d
	}
	f := p.fields(n, "decay", decayKeys, nil)
	if kv, ok := f["peak"]; ok {
		d.Peak = p.number(kv, "decay.peak", 0, 0, math.Inf(1), false)
	}
	if kv, ok := f["peak_quantile"]; ok {
		d.PeakQuantile = p.number(kv, "decay.peak_quantile", d.PeakQuantile, 0, 1, true)
	}
	if kv, ok := f["min_slope"]; ok {
		d.MinSlope = p.number(kv, "decay.min_slope", d.MinSlope, 0, math.Inf(1), true)
	}
	if kv, ok := f["min_eta"]; ok {
		d.MinEta = p.number(kv, "decay.min_eta", d.MinEta, 0, 1, false)
	}
	if kv, ok := f["current"]; ok {
		d.Current, _ = p.positive(kv, true, "decay.current", DefaultDecayCurrent, false)
	}
	if kv, ok := f["confidence"]; ok {
		d.Confidence = p.number(kv, "decay.confidence", d.Confidence, 0.5, 1, true)
		if d.Confidence == 1 {
			p.errorf(resolve(kv.v), "decay.confidence must be below 1, got 1")
			d.Confidence = DefaultDecayConfidence
		}
	}
	return d
}

// Defaults of the knee, spikiness and imbalance rules: but for
// DefaultSpikinessRecent, the analyses' own.
const (
	DefaultKneeMargin        = 1.0
	DefaultSpikinessRecent   = 5 * time.Minute
	DefaultSpikinessFactor   = 1.2
	DefaultImbalanceWarn     = 0.2
	DefaultImbalanceCritical = 0.5
)

// Knee configures a knee rule: the knee of the QPS-vs-concurrency curve over
// the lookback window, per series pair matched by On, and a finding when the
// current concurrency runs past Margin × the knee.
type Knee struct {
	Concurrency, QPS string
	On               []string
	// Method is "kneedle" (default) or "cubic".
	Method string
	// Margin multiplies the knee concurrency (default 1).
	Margin float64
	// Recent is the span whose median concurrency is "current" (default:
	// five steps).
	Recent time.Duration
}

// Spikiness configures a spikiness rule over Expr: the newest samples (the
// last Recent) are compared with the P99 and P999 of the rest of the
// lookback window; over P99 is a level-1 finding, over also Factor × P999 a
// level-2 (critical) one.
type Spikiness struct {
	Recent time.Duration
	Factor float64
}

// Imbalance configures a load-imbalance rule: LII = |μa − μb| / max(μa, μb)
// over the lookback window, either between the series of two queries A and
// B matched by On, or (Across set, with Expr) between the most and the least
// loaded series that differ only in the label Across (e.g. the pods of one
// model).
type Imbalance struct {
	A, B           string
	On             []string
	Across         string
	Warn, Critical float64
}

var kneeKeys = []string{"concurrency", "qps", "on", "method", "margin", "recent"}

func (p *parser) knee(n *yaml.Node) *Knee {
	k := &Knee{Method: "kneedle", Margin: DefaultKneeMargin}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "knee must be a mapping with concurrency and qps queries, got %s", kind(n))
		return k
	}
	f := p.fields(n, "knee", kneeKeys, nil)
	for _, key := range []string{"concurrency", "qps"} {
		kv, ok := f[key]
		if !ok {
			p.errorf(n, "knee needs %s (a query)", key)
			continue
		}
		q := p.query(kv, "knee."+key)
		if key == "concurrency" {
			k.Concurrency = q
		} else {
			k.QPS = q
		}
	}
	if kv, ok := f["on"]; ok {
		k.On = p.labelList(resolve(kv.v), "knee.on")
	}
	if kv, ok := f["method"]; ok {
		m, _ := p.str(kv.v, "knee.method")
		if m != "kneedle" && m != "cubic" {
			p.errorf(resolve(kv.v), "knee.method must be kneedle or cubic, got %q", m)
		} else {
			k.Method = m
		}
	}
	if kv, ok := f["margin"]; ok {
		k.Margin = p.number(kv, "knee.margin", k.Margin, 0, 100, true)
	}
	if kv, ok := f["recent"]; ok {
		k.Recent, _ = p.positive(kv, true, "knee.recent", 0, false)
	}
	return k
}

var spikinessKeys = []string{"recent", "factor"}

func (p *parser) spikiness(n *yaml.Node) *Spikiness {
	s := &Spikiness{Recent: DefaultSpikinessRecent, Factor: DefaultSpikinessFactor}
	if isNull(n) {
		return s
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "spikiness must be a mapping (spikiness: {recent: 5m}) or empty, got %s", kind(n))
		return s
	}
	f := p.fields(n, "spikiness", spikinessKeys, nil)
	if kv, ok := f["recent"]; ok {
		s.Recent, _ = p.positive(kv, true, "spikiness.recent", DefaultSpikinessRecent, false)
	}
	if kv, ok := f["factor"]; ok {
		s.Factor = p.number(kv, "spikiness.factor", s.Factor, 1, 100, false)
	}
	return s
}

var imbalanceKeys = []string{"a", "b", "on", "across", "warn", "critical"}

func (p *parser) imbalance(n *yaml.Node) *Imbalance {
	m := &Imbalance{Warn: DefaultImbalanceWarn, Critical: DefaultImbalanceCritical}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "imbalance must be a mapping with a and b queries, or across: LABEL with the rule's expr, got %s", kind(n))
		return m
	}
	f := p.fields(n, "imbalance", imbalanceKeys, nil)
	if kv, ok := f["a"]; ok {
		m.A = p.query(kv, "imbalance.a")
	}
	if kv, ok := f["b"]; ok {
		m.B = p.query(kv, "imbalance.b")
	}
	if kv, ok := f["on"]; ok {
		m.On = p.labelList(resolve(kv.v), "imbalance.on")
	}
	if kv, ok := f["across"]; ok {
		m.Across, _ = p.str(kv.v, "imbalance.across")
		if !labelNameRE.MatchString(m.Across) {
			p.errorf(resolve(kv.v), "imbalance.across must be a label name, got %q", m.Across)
		}
	}
	switch {
	case m.Across != "" && (m.A != "" || m.B != ""):
		p.errorf(n, "imbalance takes either a and b, or across (with the rule's expr), not both")
	case m.Across == "" && (m.A == "" || m.B == ""):
		p.errorf(n, "imbalance needs a and b (two queries), or across: LABEL (with the rule's expr)")
	}
	if kv, ok := f["warn"]; ok {
		m.Warn = p.number(kv, "imbalance.warn", m.Warn, 0, 1, true)
	}
	if kv, ok := f["critical"]; ok {
		m.Critical = p.number(kv, "imbalance.critical", m.Critical, 0, 1, true)
	}
	if m.Critical < m.Warn {
		p.errorf(n, "imbalance.critical %g must not be below imbalance.warn %g", m.Critical, m.Warn)
	}
	return m
}
