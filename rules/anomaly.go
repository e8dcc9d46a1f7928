package rules

import (
	"context"
	"slices"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// anomalyRule scores every new point of every series of its query with a
// streaming detector, each series keeping its detector's state, so each
// evaluation fetches and scores only the points that are new since the
// previous one.
type anomalyRule struct {
	base
	detector string
	factory  analysis.Factory
	episodes
	next time.Time // start of the next query range; zero before the first

	// scratch, reused from one evaluation to the next
	bt  []int64
	bv  []float64
	br  []analysis.Result
	key []byte
}

func newAnomalyRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	d := r.Spec.(*rulefmt.Detector)
	f, err := analysis.Build(analysis.Spec{Name: d.Name, Window: r.Lookback.Milliseconds(), Params: d.Params})
	if err != nil {
		return nil, specError(r, g, err)
	}
	return &anomalyRule{base: newBase(g, r), detector: d.Name, factory: f}, nil
}

func (r *anomalyRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	step := r.cfg.Step
	end := r.end(at, env)
	// On the first evaluation, warm the detectors up on a lookback of
	// history before the span whose anomalies are reported.
	report := env.Backfill
	if report <= 0 {
		report = r.interval
	}
	emitFrom := end.Add(-report)
	start := r.next
	if start.IsZero() {
		start = emitFrom.Add(-r.cfg.Lookback)
	} else if oldest := end.Add(-r.cfg.Lookback - report); start.Before(oldest) {
		// After a long pause the skipped stretch is not worth fetching:
		// the detectors only look back one lookback.
		start = oldest
	}
	var res Result
	if start.After(end) {
		res.Series = len(r.series)
		return res, nil
	}
	series, err := env.Querier.QueryRange(ctx, r.cfg.Expr, start, end, step)
	if err != nil {
		return res, err
	}
	r.next = end.Add(step)

	emitFromMs := emitFrom.UnixMilli()
	for i := range series {
		s := &series[i]
		res.Dropped.Add(s.Clean())
		r.key = s.Labels.AppendString(r.key[:0])
		st := r.series[string(r.key)] // a lookup without a string
		if st == nil {
			st = r.state(string(r.key), s.Labels, r.factory)
		}
		st.lastSeen = at
		// The samples not yet scored, in order, scored in one call where the
		// detector can batch them.
		r.bt, r.bv = r.bt[:0], r.bv[:0]
		for j, t := range s.Timestamps {
			if t > st.lastT {
				r.bt, r.bv = append(r.bt, t), append(r.bv, s.Values[j])
				st.lastT = t
			}
		}
		r.br = slices.Grow(r.br[:0], len(r.bt))[:len(r.bt)]
		if bd, ok := st.det.(analysis.BatchDetector); ok {
			bd.ObserveBatch(r.bt, r.bv, r.br)
		} else {
			for j, t := range r.bt {
				r.br[j] = st.det.Observe(t, r.bv[j])
			}
		}
		res.Scored += len(r.bt)
		if env.Scores && len(r.bt) > 0 {
			sc := r.scores(st, len(r.bt))
			for j, t := range r.bt {
				addScore(&sc, t, r.bv[j], r.br[j])
			}
			res.Scores = append(res.Scores, sc)
		}
		for j, t := range r.bt {
			if f, ok := r.track(st, t, r.bv[j], r.br[j], nil, r.detector, t >= emitFromMs); ok {
				res.Findings = append(res.Findings, f)
			}
		}
	}
	r.sweep(at, r.forget())
	res.Series = len(r.series)
	return res, nil
}
