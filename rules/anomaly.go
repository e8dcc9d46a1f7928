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
	series
	// last is the newest point judged; zero before the first evaluation
	// (resumed, when a restarted daemon restored it).
	last    time.Time
	resumed bool

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

func (r *anomalyRule) judged() time.Time { return r.last }
func (r *anomalyRule) resume(t time.Time) {
	if r.last.IsZero() {
		r.last, r.resumed = t, true
	}
}

// Eval fetches the points that are new since the previous evaluation —
// after a gap, everything since it, within the catch-up horizon — scores
// them, and observes what the alert lifecycle needs. The first
// evaluation (and the first after a restart) warms the detectors up on a
// lookback of history before the points it reports.
func (r *anomalyRule) Eval(ctx context.Context, at time.Time, env *Env) (Result, error) {
	var res Result
	step := r.cfg.Step
	end := r.end(at, env)
	first := r.last.IsZero() || r.resumed
	from, gap := reportFrom(r.last, r.last.IsZero(), end, step, env)
	res.Unreported = gap
	start := r.last.Add(step)
	if first {
		start = from.Add(-r.cfg.Lookback)
	} else if warm := from.Add(-r.cfg.Lookback); start.Before(warm) {
		// Past the horizon: what lies before the detectors' lookback is
		// not worth fetching.
		start = warm
	}
	if start.After(end) {
		res.Series = len(r.series.series)
		return res, nil
	}
	got, err := env.Querier.QueryRange(ctx, r.cfg.Expr, start, end, step)
	if err != nil {
		return res, err
	}
	r.last, r.resumed = end, false

	fromMs := from.UnixMilli()
	for i := range got {
		s := &got[i]
		res.Dropped.Add(s.Clean())
		r.key = s.Labels.AppendString(r.key[:0])
		st := r.series.series[string(r.key)] // a lookup without a string
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
			if first && t >= fromMs && (j == 0 || r.bt[j-1] < fromMs) {
				// The first point reported after a (re)start: whether the
				// series was anomalous before is not known here, so the
				// lifecycle is told this point either way — a restored
				// alert whose series has cleared resolves.
				st.anomalous = true
			}
			r.observe(&res, st, t, r.bv[j], r.br[j], nil, r.detector, t >= fromMs)
		}
	}
	r.sweep(&r.series, &res, at, r.forget(), r.detector)
	res.Series = len(r.series.series)
	return res, nil
}
