package rules

import (
	"context"
	"sort"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// imbalanceRule judges the load imbalance index over its lookback: between
// paired series of two queries, or between the most and the least loaded
// series of each group that differ only in the Across label.
type imbalanceRule struct {
	windowRule
	c *rulefmt.Imbalance
}

func newImbalanceRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	c := r.Spec.(*rulefmt.Imbalance)
	exprs := []string{c.A, c.B}
	if c.Across != "" {
		exprs = []string{r.Expr}
	}
	return &imbalanceRule{windowRule: newWindowRule(newBase(g, r), "imbalance", exprs...), c: c}, nil
}

func (r *imbalanceRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	return r.evalWindows(ctx, at, env, r.judge)
}

func (r *imbalanceRule) judge(τ int64) []verdict {
	c := r.c
	from := τ - r.cfg.Lookback.Milliseconds()
	th := analysis.ImbalanceThresholds{Warn: c.Warn, Critical: c.Critical}
	judge := func(key ingest.Labels, a, b []float64, details map[string]any) (verdict, bool) {
		iv, ok := analysis.JudgeImbalance(a, b, th)
		if !ok {
			return verdict{}, false
		}
		details["lii"] = iv.Imbalance.LII
		details["mean_a"] = jsonNumber(iv.Imbalance.MeanA)
		details["mean_b"] = jsonNumber(iv.Imbalance.MeanB)
		details["level"] = iv.Imbalance.Level
		details["severity"] = iv.Severity
		return verdict{labels: key, Verdict: iv.Verdict, details: details}, true
	}
	var out []verdict
	if c.Across == "" {
		pairUp(r.windows[0], r.windows[1], c.On, func(key ingest.Labels, a, b *buffered) {
			_, av := a.span(from, τ)
			_, bv := b.span(from, τ)
			if v, ok := judge(key, av, bv, map[string]any{}); ok {
				out = append(out, v)
			}
		})
		return out
	}
	// Group the series by their labels other than Across.
	type member struct {
		across string
		vals   []float64
	}
	groups := map[string][]member{}
	keys := map[string]ingest.Labels{}
	for _, b := range sortedSeries(r.windows[0]) {
		var key ingest.Labels
		for _, l := range b.labels {
			if l.Name != "__name__" && l.Name != c.Across {
				key = append(key, l)
			}
		}
		_, vals := b.span(from, τ)
		k := key.String()
		keys[k] = key
		groups[k] = append(groups[k], member{across: b.labels.Get(c.Across), vals: vals})
	}
	names := make([]string, 0, len(groups))
	for k := range groups {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ms := groups[k]
		means := make([]float64, len(ms))
		for i, m := range ms {
			means[i] = analysis.Mean(m.vals)
		}
		hi, lo := analysis.MostAndLeast(means)
		if hi < 0 {
			continue
		}
		members := 0
		for _, m := range means {
			if m == m { // not NaN
				members++
			}
		}
		if v, ok := judge(keys[k], ms[hi].vals, ms[lo].vals, map[string]any{
			"across": c.Across, "most_loaded": ms[hi].across, "least_loaded": ms[lo].across, "members": members,
		}); ok {
			out = append(out, v)
		}
	}
	return out
}
