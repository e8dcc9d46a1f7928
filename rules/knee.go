package rules

import (
	"context"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// kneeRule finds, per pair of concurrency and QPS series, the knee of the
// QPS-against-concurrency curve over its lookback and judges the current
// concurrency against it.
type kneeRule struct {
	windowRule
	c *rulefmt.Knee
}

func newKneeRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	c := r.Spec.(*rulefmt.Knee)
	return &kneeRule{windowRule: newWindowRule(newBase(g, r), "knee", c.Concurrency, c.QPS), c: c}, nil
}

func (r *kneeRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	return r.evalWindows(ctx, at, env, r.judge)
}

func (r *kneeRule) judge(τ int64) []verdict {
	c, step := r.c, r.cfg.Step
	from := τ - r.cfg.Lookback.Milliseconds()
	recent := c.Recent
	if recent <= 0 {
		recent = 5 * step
	}
	var out []verdict
	pairUp(r.windows[0], r.windows[1], c.On, func(key ingest.Labels, cb, qb *buffered) {
		ct, cv := cb.span(from, τ)
		qt, qv := qb.span(from, τ)
		t, conc, qps := analysis.Align(ct, cv, qt, qv, step.Milliseconds())
		kv, ok := analysis.JudgeKnee(t, conc, qps, τ-recent.Milliseconds(), analysis.KneeJudgement{
			KneeConfig: analysis.KneeConfig{Method: analysis.KneeMethod(c.Method)}, Margin: c.Margin})
		if !ok {
			return
		}
		out = append(out, verdict{labels: key, Verdict: kv.Verdict, details: map[string]any{
			"knee_concurrency":    kv.Knee.Concurrency,
			"knee_qps":            kv.Knee.QPS,
			"method":              string(kv.Knee.Method),
			"strength":            kv.Knee.Strength,
			"current_concurrency": jsonNumber(kv.Current),
			"margin":              c.Margin,
			"n":                   kv.N,
		}})
	})
	return out
}
