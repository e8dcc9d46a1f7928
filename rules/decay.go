package rules

import (
	"context"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// decayRule judges the throughput decay of each series over its lookback:
// η = 1 − T/T_peak and its trend.
type decayRule struct {
	windowRule
	c *rulefmt.Decay
}

func newDecayRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	c := r.Spec.(*rulefmt.Decay)
	return &decayRule{windowRule: newWindowRule(newBase(g, r), "decay", r.Expr), c: c}, nil
}

func (r *decayRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	return r.evalWindows(ctx, at, env, r.judge)
}

// judge judges each series once its samples span the lookback (less two
// steps) — a trend per day read from part of a day is mostly the hour of
// the day: the first 4 to 16 hours of a backfill judged a steady model,
// whose per-request throughput rises at night, decaying — and while its
// newest sample is at most two steps old: a series that stopped is not
// decaying.
func (r *decayRule) judge(τ int64) []verdict {
	c, lookback, step := r.c, r.cfg.Lookback, r.cfg.Step
	from := τ - lookback.Milliseconds()
	cfg := analysis.DecayConfig{Peak: c.Peak, PeakQuantile: c.PeakQuantile, Reference: lookback.Milliseconds(),
		MinSlope: c.MinSlope, Confidence: c.Confidence, Current: c.Current.Milliseconds()}
	var out []verdict
	for _, b := range sortedSeries(r.windows[0]) {
		t, v := b.span(from, τ)
		if len(t) < 10 || t[len(t)-1]-t[0] < (lookback-2*step).Milliseconds() || t[len(t)-1] < τ-2*step.Milliseconds() {
			continue
		}
		d, err := analysis.ThroughputDecay(t, v, cfg)
		if err != nil {
			continue
		}
		out = append(out, verdict{labels: matchKey(b.labels, nil), Verdict: analysis.JudgeDecay(d, cfg, c.MinEta), details: map[string]any{
			"peak":                  jsonNumber(d.Peak),
			"eta_current":           jsonNumber(d.EtaCurrent),
			"eta_trend_per_day":     jsonNumber(d.Trend.Slope),
			"eta_trend_ci":          []any{jsonNumber(d.Trend.Lower), jsonNumber(d.Trend.Upper)},
			"significant":           d.Significant,
			"day_over_day":          jsonNumber(d.DayOverDay),
			"week_over_week":        jsonNumber(d.WeekOverWeek),
			"window_seconds":        lookback.Seconds(),
			"min_eta_trend_per_day": c.MinSlope,
		}})
	}
	return out
}
