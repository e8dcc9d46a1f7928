package ingest

import (
	"fmt"
	"regexp"

	"github.com/VictoriaMetrics/metricsql"
)

// Selector is a Prometheus series selector such as
// vllm:num_requests_running{model="llama",pod=~"p[01]"}, or MetricsQL's
// {a="x" or b="y"}: a series matches when every matcher of one of its
// or-groups does. Regular expressions are anchored, as in Prometheus; a
// missing label has the value "".
type Selector struct {
	groups [][]Matcher
}

// Matcher is one label matcher of a Selector: name="value", name!="value",
// name=~"regexp" or name!~"regexp".
type Matcher struct {
	Name, Value      string
	Regexp, Negative bool

	re   *regexp.Regexp
	text string
}

// String is the matcher in canonical form, e.g. pod=~"vllm-.*".
func (m Matcher) String() string { return m.text }

// ParseSelector parses s, which must be a series selector: a metric name
// and/or label matchers, nothing else of a query. The metric name is a
// matcher on __name__.
func ParseSelector(s string) (*Selector, error) {
	e, err := metricsql.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a series selector: %w", s, err)
	}
	me, ok := e.(*metricsql.MetricExpr)
	if !ok {
		return nil, fmt.Errorf("%q is not a series selector: want a metric name and/or label matchers, e.g. vllm:num_requests_running{pod=\"p0\"}", s)
	}
	sel := &Selector{}
	for _, lfs := range me.LabelFilterss {
		var g []Matcher
		for _, lf := range lfs {
			m := Matcher{Name: lf.Label, Value: lf.Value, Regexp: lf.IsRegexp, Negative: lf.IsNegative, text: string(lf.AppendString(nil))}
			if m.Name == "" {
				m.Name = "__name__"
			}
			if lf.IsRegexp {
				if m.re, err = regexp.Compile("^(?:" + lf.Value + ")$"); err != nil {
					return nil, fmt.Errorf("%q: label %s: bad regular expression: %w", s, m.Name, err)
				}
			}
			g = append(g, m)
		}
		sel.groups = append(sel.groups, g)
	}
	return sel, nil
}

// Groups are the selector's or-groups of matchers.
func (sel *Selector) Groups() [][]Matcher { return sel.groups }

// Matches reports whether a series with labels ls is selected.
func (sel *Selector) Matches(ls Labels) bool {
	for _, g := range sel.groups {
		ok := true
		for _, m := range g {
			v := ls.Get(m.Name)
			eq := v == m.Value
			if m.re != nil {
				eq = m.re.MatchString(v)
			}
			if eq == m.Negative {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
