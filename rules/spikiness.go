package rules

import (
	"context"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// spikinessRule compares, per series, the samples of the last Recent with
// the P99 and P999 of the rest of its lookback.
type spikinessRule struct {
	windowRule
	c *rulefmt.Spikiness
}

func newSpikinessRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	c := r.Spec.(*rulefmt.Spikiness)
	return &spikinessRule{windowRule: newWindowRule(newBase(g, r), "spikiness", r.Expr), c: c}, nil
}

func (r *spikinessRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	return r.evalWindows(ctx, at, env, r.judge)
}

func (r *spikinessRule) judge(τ int64) []verdict {
	from, cut := τ-r.cfg.Lookback.Milliseconds(), τ-r.c.Recent.Milliseconds()
	var out []verdict
	for _, b := range sortedSeries(r.windows[0]) {
		_, base := b.span(from, cut)
		_, recent := b.span(cut, τ)
		sv, ok := analysis.JudgeSpikiness(base, recent, r.c.Factor)
		if !ok {
			continue
		}
		out = append(out, verdict{labels: matchKey(b.labels, nil), Verdict: sv.Verdict, details: map[string]any{
			"p99":           jsonNumber(sv.Baseline.P99),
			"p999":          jsonNumber(sv.Baseline.P999),
			"level2_above":  jsonNumber(sv.Level2Above),
			"level":         sv.Level,
			"share_level1":  jsonNumber(sv.Spikes.Share1),
			"share_level2":  jsonNumber(sv.Spikes.Share2),
			"recent_points": sv.Spikes.N,
			"severity":      sv.Severity,
		}})
	}
	return out
}
