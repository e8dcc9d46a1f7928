package rules

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// correlateRule judges, for each pair of X and Y series matched by labels,
// the coupling of X with Y (or Y's jitter) over its lookback: "latency got
// noisy because the GPU saturated".
type correlateRule struct {
	windowRule
	c *rulefmt.Correlate
}

func newCorrelateRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	c := r.Spec.(*rulefmt.Correlate)
	w := newWindowRule(newBase(g, r), "correlate", c.X, c.Y)
	// Correlating jitter needs a jitter window of Y before the lookback.
	w.extra = c.YJitter
	return &correlateRule{windowRule: w, c: c}, nil
}

func (r *correlateRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	return r.evalWindows(ctx, at, env, r.judge)
}

func (r *correlateRule) judge(τ int64) []verdict {
	c, step := r.c, r.cfg.Step
	from := τ - r.cfg.Lookback.Milliseconds()
	jitter := c.YJitter.Milliseconds()
	var out []verdict
	pairUp(r.windows[0], r.windows[1], c.On, func(key ingest.Labels, xb, yb *buffered) {
		xt, xv := xb.span(from, τ)
		yt, yv := yb.span(from-jitter, τ)
		m := analysis.Correlate(xt, xv, yt, yv, analysis.CorrelateConfig{
			Step: step.Milliseconds(), From: from, YJitter: jitter,
			MaxLag: int(c.MaxLag / step), MinPairs: c.MinPoints,
		})
		v := analysis.JudgeCoupling(m, analysis.CouplingThresholds{MinAbsR: c.MinAbsR, MaxP: c.MaxP, MinN: c.MinPoints}, c.XAbove)
		bestLag := math.NaN()
		if !math.IsNaN(m.Lag.R) {
			bestLag = float64(m.Lag.Lag) * step.Seconds()
		}
		out = append(out, verdict{labels: key, Verdict: v, details: map[string]any{
			"pearson":              jsonNumber(m.Pearson.R),
			"spearman":             jsonNumber(m.Spearman.R),
			"p_value":              jsonNumber(m.Pearson.P),
			"n":                    m.Pearson.N,
			"best_lag_seconds":     jsonNumber(bestLag),
			"best_lag_correlation": jsonNumber(m.Lag.R),
			"x_max":                jsonNumber(m.XMax),
			"x":                    strings.TrimSpace(c.X),
			"y":                    strings.TrimSpace(c.Y),
			"y_jitter_seconds":     c.YJitter.Seconds(),
		}})
	})
	return out
}
