package alerting

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Window rules (correlate, decay) judge a whole lookback window at each
// evaluation rather than one sample at a time. They keep the window's
// samples per series and fetch only the points that are new each cycle.

// window holds the samples of one query over a rule's lookback.
type window struct {
	expr   string
	next   time.Time // start of the next fetch; zero before the first
	series map[string]*buffered
}

type buffered struct {
	labels   ingest.Labels
	t        []int64
	v        []float64
	lastSeen time.Time
}

func newWindow(expr string) *window { return &window{expr: expr, series: map[string]*buffered{}} }

// fetch adds the samples of (start, end] not yet held. On the first call it
// fetches from first.
func (e *Engine) fetch(ctx context.Context, w *window, step time.Duration, first, end, at time.Time) (ingest.Dropped, error) {
	var dropped ingest.Dropped
	start := w.next
	if start.IsZero() || start.Before(first) {
		start = first
	}
	if start.After(end) {
		return dropped, nil
	}
	got, err := e.o.Querier.QueryRange(ctx, w.expr, start, end, step)
	if err != nil {
		return dropped, err
	}
	w.next = end.Add(step)
	for i := range got {
		s := &got[i]
		dropped.Add(s.Clean())
		key := s.Labels.String()
		b := w.series[key]
		if b == nil {
			b = &buffered{labels: s.Labels}
			w.series[key] = b
		}
		b.lastSeen = at
		for j, t := range s.Timestamps {
			if n := len(b.t); n > 0 && t <= b.t[n-1] {
				continue
			}
			b.t = append(b.t, t)
			b.v = append(b.v, s.Values[j])
		}
	}
	return dropped, nil
}

// trim drops samples at or before from, and series unseen for forget.
func (w *window) trim(from int64, at time.Time, forget time.Duration) {
	for k, b := range w.series {
		i := sort.Search(len(b.t), func(i int) bool { return b.t[i] > from })
		if i > 0 {
			b.t = append(b.t[:0], b.t[i:]...)
			b.v = append(b.v[:0], b.v[i:]...)
		}
		if len(b.t) == 0 || at.Sub(b.lastSeen) > forget {
			delete(w.series, k)
		}
	}
}

// span returns the samples of b in (from, to].
func (b *buffered) span(from, to int64) ([]int64, []float64) {
	i := sort.Search(len(b.t), func(i int) bool { return b.t[i] > from })
	j := sort.Search(len(b.t), func(i int) bool { return b.t[i] > to })
	return b.t[i:j], b.v[i:j]
}

// verdict is a window rule's judgement of one series (or pair) at one
// evaluation time.
type verdict struct {
	labels  ingest.Labels
	value   float64
	res     analysis.Result
	details map[string]any
}

// evalWindowRule refreshes the rule's windows and judges them at the end of
// this evaluation — and, on the first evaluation with a backfill, at every
// evaluation time the backfill covers, as if the daemon had been running.
func (e *Engine) evalWindowRule(ctx context.Context, r *rule, at time.Time) ([]Finding, error) {
	step := r.cfg.Step
	lookback := r.cfg.Lookback
	end := at.Add(-e.o.EvaluationDelay).Truncate(step)
	firstEval := r.windows[0].next.IsZero()
	replay := time.Duration(0)
	if firstEval && e.o.Backfill > 0 {
		replay = e.o.Backfill
	}
	// Correlating jitter needs a jitter window of Y before the lookback.
	extra := time.Duration(0)
	if c := r.cfg.Correlate; c != nil {
		extra = c.YJitter
	}
	first := end.Add(-replay - lookback - extra)
	var dropped ingest.Dropped
	for _, w := range r.windows {
		d, err := e.fetch(ctx, w, step, first, end, at)
		if err != nil {
			return nil, err
		}
		dropped.Add(d)
	}
	e.m.droppedNaN.Add(dropped.NaN)
	e.m.droppedInf.Add(dropped.Inf)
	e.m.droppedStale.Add(dropped.Stale)

	// Judge the window at each evaluation time: every stride through the
	// backfill, then now.
	stride := max(r.interval, step)
	var times []time.Time
	for τ := end.Add(-replay).Truncate(stride); replay > 0 && τ.Before(end); τ = τ.Add(stride) {
		times = append(times, τ)
	}
	times = append(times, end)

	var found []Finding
	for _, τ := range times {
		var vs []verdict
		switch {
		case r.cfg.Correlate != nil:
			vs = correlateAt(r.cfg.Correlate, r.windows[0], r.windows[1], τ.UnixMilli(), lookback, step)
		case r.cfg.Decay != nil:
			vs = decayAt(r.cfg.Decay, r.windows[0], τ.UnixMilli(), lookback, step)
		case r.cfg.Knee != nil:
			vs = kneeAt(r.cfg.Knee, r.windows[0], r.windows[1], τ.UnixMilli(), lookback, step)
		case r.cfg.Spikiness != nil:
			vs = spikinessAt(r.cfg.Spikiness, r.windows[0], τ.UnixMilli(), lookback)
		case r.cfg.Imbalance != nil:
			vs = imbalanceAt(r.cfg.Imbalance, r.windows, τ.UnixMilli(), lookback)
		}
		for _, v := range vs {
			key := v.labels.String()
			st := r.series[key]
			if st == nil {
				st = &seriesState{labels: v.labels, key: key}
				r.series[key] = st
			}
			st.lastSeen = at
			if f, ok := e.track(r, st, τ.UnixMilli(), v.value, v.res, v.details, true); ok {
				found = append(found, f)
			}
		}
	}
	forget := max(lookback, 10*r.interval)
	for _, w := range r.windows {
		w.trim(end.Add(-lookback-extra).UnixMilli(), at, forget)
	}
	for k, st := range r.series {
		if at.Sub(st.lastSeen) > forget {
			delete(r.series, k)
		}
	}
	return found, nil
}

// matchKey returns the labels of s that match it with a series of the
// other query: the On labels, or every label but the metric name.
func matchKey(ls ingest.Labels, on []string) ingest.Labels {
	var out ingest.Labels
	if len(on) == 0 {
		for _, l := range ls {
			if l.Name != "__name__" {
				out = append(out, l)
			}
		}
		return out
	}
	for _, name := range on {
		if v := ls.Get(name); v != "" {
			out = append(out, ingest.Label{Name: name, Value: v})
		}
	}
	out.Sort()
	return out
}

// correlateAt judges, for each pair of X and Y series matched by labels,
// the coupling of X with Y (or Y's jitter) over (τ − lookback, τ].
func correlateAt(c *rulefmt.Correlate, xw, yw *window, τ int64, lookback, step time.Duration) []verdict {
	from := τ - lookback.Milliseconds()
	jitter := c.YJitter.Milliseconds()
	ys := map[string]*buffered{}
	yKeys := map[string]ingest.Labels{}
	for _, b := range yw.series {
		k := matchKey(b.labels, c.On)
		ys[k.String()] = b
		yKeys[k.String()] = k
	}
	var out []verdict
	for _, xb := range xw.series {
		key := matchKey(xb.labels, c.On)
		yb := ys[key.String()]
		if yb == nil {
			continue
		}
		xt, xv := xb.span(from, τ)
		yt, yv := yb.span(from-jitter, τ)
		if jitter > 0 {
			yv = analysis.RollingStd(yt, yv, jitter, 5)
			i := sort.Search(len(yt), func(i int) bool { return yt[i] > from })
			yt, yv = yt[i:], yv[i:]
		}
		t, x, y := analysis.Align(xt, xv, yt, yv, step.Milliseconds())
		v := verdict{labels: key, value: math.NaN(), res: analysis.Result{Expected: 0, Lower: -c.MinAbsR, Upper: c.MinAbsR}}
		if len(t) < c.MinPoints {
			out = append(out, v)
			continue
		}
		pc := analysis.Pearson(x, y)
		sc := analysis.Spearman(x, y)
		maxLag := int(c.MaxLag / step)
		lag := analysis.CrossCorrelation(t, x, t, y, step.Milliseconds(), maxLag, c.MinPoints)
		judged := analysis.Judge(pc, analysis.CouplingThresholds{MinAbsR: c.MinAbsR, MaxP: c.MaxP, MinN: c.MinPoints})
		xMax := math.Inf(-1)
		for _, xx := range x {
			xMax = max(xMax, xx)
		}
		coupled := judged.Coupled && (c.XAbove == 0 || xMax >= c.XAbove)
		score := math.Abs(pc.R) / c.MinAbsR
		if math.IsNaN(score) {
			score = 0
		}
		if !coupled {
			score = min(score, 0.999)
		}
		v.value = pc.R
		v.res.Score, v.res.Ready = score, true
		v.details = map[string]any{
			"pearson":              num(pc.R),
			"spearman":             num(sc.R),
			"p_value":              num(pc.P),
			"n":                    pc.N,
			"best_lag_seconds":     float64(lag.Lag) * step.Seconds(),
			"best_lag_correlation": num(lag.R),
			"x_max":                num(xMax),
			"x":                    strings.TrimSpace(c.X),
			"y":                    strings.TrimSpace(c.Y),
			"y_jitter_seconds":     c.YJitter.Seconds(),
		}
		out = append(out, v)
	}
	return out
}

// decayAt judges the throughput decay of each series over (τ − lookback, τ],
// once its samples span the lookback (less two steps) — a trend per day read
// from part of a day is mostly the hour of the day: the first 4 to 16 hours
// of a backfill judged a steady model, whose per-request throughput rises
// at night, decaying — and while its newest sample is at most two steps
// old: a series that stopped is not decaying.
func decayAt(c *rulefmt.Decay, w *window, τ int64, lookback, step time.Duration) []verdict {
	from := τ - lookback.Milliseconds()
	var out []verdict
	for _, b := range w.series {
		t, v := b.span(from, τ)
		labels := matchKey(b.labels, nil)
		vd := verdict{labels: labels, value: math.NaN(), res: analysis.Result{Expected: 0, Lower: math.NaN(), Upper: c.MinEta}}
		if len(t) < 10 || t[len(t)-1]-t[0] < (lookback-2*step).Milliseconds() || t[len(t)-1] < τ-2*step.Milliseconds() {
			out = append(out, vd)
			continue
		}
		d, err := analysis.ThroughputDecay(t, v, analysis.DecayConfig{
			Peak: c.Peak, PeakQuantile: c.PeakQuantile, Reference: lookback.Milliseconds(),
			MinSlope: c.MinSlope, Confidence: c.Confidence,
		})
		if err != nil {
			out = append(out, vd)
			continue
		}
		eta := recentMedian(d.Eta, max(3, len(d.Eta)/20))
		score := min(d.Trend.Slope/c.MinSlope, eta/c.MinEta)
		if math.IsNaN(score) || score < 0 {
			score = 0
		}
		if !d.Significant || eta < c.MinEta {
			score = min(score, 0.999)
		}
		vd.value = eta
		vd.res.Score, vd.res.Ready = score, true
		vd.details = map[string]any{
			"peak":                  num(d.Peak),
			"eta_current":           num(eta),
			"eta_trend_per_day":     num(d.Trend.Slope),
			"eta_trend_ci":          []any{num(d.Trend.Lower), num(d.Trend.Upper)},
			"significant":           d.Significant,
			"day_over_day":          num(d.DayOverDay),
			"week_over_week":        num(d.WeekOverWeek),
			"window_seconds":        lookback.Seconds(),
			"min_eta_trend_per_day": c.MinSlope,
		}
		out = append(out, vd)
	}
	return out
}

// recentMedian is the median of the last n finite values of xs.
func recentMedian(xs []float64, n int) float64 {
	var tail []float64
	for i := len(xs) - 1; i >= 0 && len(tail) < n; i-- {
		if !math.IsNaN(xs[i]) && !math.IsInf(xs[i], 0) {
			tail = append(tail, xs[i])
		}
	}
	return median(tail)
}

// num makes a float safe for JSON: nil for NaN and ±Inf.
func num(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

// isWindowKind reports whether rules of this kind judge a whole window.
func isWindowKind(kind string) bool {
	switch kind {
	case "correlation", "decay", "knee", "spikiness", "imbalance":
		return true
	}
	return false
}

func windowExprs(r rulefmt.Rule) ([]string, error) {
	switch {
	case r.Correlate != nil:
		return []string{r.Correlate.X, r.Correlate.Y}, nil
	case r.Decay != nil, r.Spikiness != nil:
		return []string{r.Expr}, nil
	case r.Knee != nil:
		return []string{r.Knee.Concurrency, r.Knee.QPS}, nil
	case r.Imbalance != nil:
		if r.Imbalance.Across != "" {
			return []string{r.Expr}, nil
		}
		return []string{r.Imbalance.A, r.Imbalance.B}, nil
	}
	return nil, fmt.Errorf("rule %q is not a window rule", r.Name)
}
