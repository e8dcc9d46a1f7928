package rules

import (
	"math"
	"strconv"
	"strings"

	"github.com/VictoriaMetrics/metricsql"
	"gopkg.in/yaml.v3"
)

// Defaults of the analysis rules.
const (
	DefaultCorrelateMinAbsR   = 0.5
	DefaultCorrelateMaxP      = 0.01
	DefaultCorrelateMinPoints = 30
	DefaultDecayPeakQuantile  = 0.99
	DefaultDecayMinSlope      = 0.1
	DefaultDecayMinEta        = 0.15
	DefaultDecayConfidence    = 0.95
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
		v := resolve(kv.v)
		if v.Kind != yaml.SequenceNode {
			p.errorf(v, "correlate.on must be a list of label names, got %s", kind(v))
		} else {
			for _, item := range v.Content {
				item = resolve(item)
				if item.Kind != yaml.ScalarNode || !labelNameRE.MatchString(item.Value) {
					p.errorf(item, "correlate.on: %q is not a label name", item.Value)
					continue
				}
				c.On = append(c.On, item.Value)
			}
		}
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

var decayKeys = []string{"peak", "peak_quantile", "min_slope", "min_eta", "confidence"}

func (p *parser) decay(n *yaml.Node) *Decay {
	d := &Decay{PeakQuantile: DefaultDecayPeakQuantile, MinSlope: DefaultDecayMinSlope,
		MinEta: DefaultDecayMinEta, Confidence: DefaultDecayConfidence}
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
	if kv, ok := f["confidence"]; ok {
		d.Confidence = p.number(kv, "decay.confidence", d.Confidence, 0.5, 1, true)
		if d.Confidence == 1 {
			p.errorf(resolve(kv.v), "decay.confidence must be below 1, got 1")
			d.Confidence = DefaultDecayConfidence
		}
	}
	return d
}
