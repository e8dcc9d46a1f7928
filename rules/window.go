package rules

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/num"
)

// Window rules (correlation, decay, knee, spikiness, imbalance) judge a
// whole lookback window at each evaluation rather than one sample at a
// time. They keep the window's samples per series and fetch only the points
// that are new each cycle; the statistics and the verdict are package
// analysis'.

// window holds the samples of one query over a rule's lookback.
type window struct {
	expr   string
	asked  time.Time // the newest point asked for; zero before the first fetch
	late   lateness
	series map[string]*buffered
}

type buffered struct {
	labels   ingest.Labels
	t        []int64
	v        []float64
	lastSeen time.Time
}

func newWindow(expr string) *window { return &window{expr: expr, series: map[string]*buffered{}} }

// fetched is what one fetch of a window added: its samples, those of
// them that were not there when first asked for, and the samples dropped.
type fetched struct {
	added, late int
	dropped     ingest.Dropped
}

// add counts what another fetch of the same evaluation added into res.
func (f fetched) add(res *Result) {
	res.Scored += f.added
	res.Late += f.late
	res.Dropped.Add(f.dropped)
}

// fetch adds the samples up to end not yet held; on the first call it
// fetches from first. It asks again for the points a series had not
// delivered when they were asked for (see lateness).
func (w *window) fetch(ctx context.Context, q Querier, step time.Duration, first, end, at time.Time) (fetched, error) {
	var f fetched
	start := first
	asked := int64(math.MinInt64)
	if !w.asked.IsZero() {
		asked = w.asked.UnixMilli()
		start = w.late.from(w.asked, end, step)
		if start.Before(first) {
			start = first
		}
	}
	if start.After(end) {
		return f, nil
	}
	got, err := q.QueryRange(ctx, w.expr, start, end, step)
	if err != nil {
		return f, err
	}
	w.asked = end
	w.late.begin()
	for i := range got {
		s := &got[i]
		f.dropped.Add(s.Clean())
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
			f.added++
			if t <= asked {
				f.late++
			}
		}
		if n := len(b.t); n > 0 {
			w.late.saw(b.t[n-1])
		}
	}
	w.late.settle(start, end, step)
	return f, nil
}

// newest is the newest sample the window holds, unix ms (math.MinInt64:
// none).
func (w *window) newest() int64 {
	newest := int64(math.MinInt64)
	for _, b := range w.series {
		if n := len(b.t); n > 0 {
			newest = max(newest, b.t[n-1])
		}
	}
	return newest
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
// evaluation time, with what the finding reports beyond the value and band.
type verdict struct {
	labels ingest.Labels
	analysis.Verdict
	details map[string]any
}

// judge judges a window rule's windows at τ (unix ms) over the rule's
// lookback; one verdict per series or pair that could be judged.
type judge func(τ int64) []verdict

// windowRule is the part every window kind shares: its windows, the times
// it judges them at, and the states of its series.
type windowRule struct {
	base
	detector string
	windows  []*window
	// extra is history fetched before the lookback (a jitter window).
	extra time.Duration
	series
	// last is the newest time judged; zero before the first evaluation
	// (resumed, when a restarted daemon restored it).
	last    time.Time
	resumed bool
	// newest is the newest sample the rule's windows have held.
	newest time.Time
}

func newWindowRule(b base, detector string, exprs ...string) windowRule {
	w := windowRule{base: b, detector: detector}
	for _, x := range exprs {
		w.windows = append(w.windows, newWindow(x))
	}
	return w
}

func (r *windowRule) judged() time.Time { return r.last }
func (r *windowRule) resume(t time.Time) {
	if r.last.IsZero() {
		r.last, r.resumed = t, true
	}
}

// evalWindows refreshes the rule's windows and judges them at the end of
// this evaluation, and at every evaluation time since the previous one
// that it missed (a store outage, a restart), within the catch-up horizon;
// on the first evaluation with a backfill, at every evaluation time the
// backfill covers, as if the daemon had been running.
func (r *windowRule) evalWindows(ctx context.Context, at time.Time, env *Env, judge judge) (Result, error) {
	var res Result
	step := r.cfg.Step
	lookback := r.cfg.Lookback
	end := r.end(at, env)
	stride := max(r.interval, step)
	var times []time.Time
	if r.last.IsZero() {
		times = evalTimes(end, env.Backfill, stride)
	} else {
		if !end.After(r.last) {
			res.Series, res.Through, res.Newest, res.Lag = len(r.series.series), r.last, r.newest, r.lag
			return res, nil
		}
		from, gap := reportFrom(r.last, false, end, stride, env)
		res.Unreported = gap
		τ := from.Truncate(stride)
		if τ.Before(from) {
			τ = τ.Add(stride)
		}
		for ; τ.Before(end); τ = τ.Add(stride) {
			times = append(times, τ)
		}
		times = append(times, end)
	}
	first := times[0].Add(-lookback - r.extra)
	for _, w := range r.windows {
		f, err := w.fetch(ctx, env.Querier, step, first, end, at)
		f.add(&res)
		if err != nil {
			return res, err
		}
	}
	r.learn(&res)
	resumed := r.resumed
	r.last, r.resumed = end, false
	scores := map[string]int{} // series → index in res.Scores
	judged := map[*seriesState]bool{}
	for _, τ := range times {
		ms := τ.UnixMilli()
		clear(judged)
		for _, v := range judge(ms) {
			key := v.labels.String()
			st := r.state(key, v.labels, nil)
			st.lastSeen = at
			if resumed && τ.Equal(times[0]) {
				st.open = true // as in anomalyRule.judge: tell the lifecycle after a restart
			}
			if env.Scores != ScoresNone {
				i, ok := scores[key]
				if !ok {
					i = len(res.Scores)
					scores[key] = i
					res.Scores = append(res.Scores, r.scores(st, 1, env.Scores))
				}
				addScore(&res.Scores[i], ms, v.Value, v.Result, env.Scores)
			}
			r.observe(&res, st, ms, v.Value, v.Result, v.details, r.detector, true)
			judged[st] = true
		}
		// A series that could not be judged at τ (too few samples, a
		// series that stopped) is no longer anomalous, as a series a
		// Prometheus alerting rule no longer returns.
		for _, st := range r.series.series {
			if st.open && !judged[st] {
				r.observe(&res, st, ms, math.NaN(), analysis.Result{}, nil, r.detector, true)
			}
		}
	}
	forget := r.cfg.Forget()
	newest := int64(math.MinInt64)
	for _, w := range r.windows {
		w.trim(end.Add(-lookback-r.extra).UnixMilli(), at, forget)
		newest = max(newest, w.newest())
	}
	r.sweep(&r.series, &res, at, forget, r.detector)
	res.Series = len(r.series.series)
	res.Through, res.Newest = r.last, msTime(newest)
	if res.Newest.Before(r.newest) {
		res.Newest = r.newest // the window trimmed what it judged
	}
	r.newest = res.Newest
	return res, nil
}

// evalTimes are the times an evaluation judges: every stride through the
// replayed span before end, then end.
func evalTimes(end time.Time, replay, stride time.Duration) []time.Time {
	var times []time.Time
	for τ := end.Add(-replay).Truncate(stride); replay > 0 && τ.Before(end); τ = τ.Add(stride) {
		times = append(times, τ)
	}
	return append(times, end)
}

// matchKey returns the labels of ls that match it with a series of another
// query: the on labels, or every label but the metric name.
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

// pairUp matches the series of two windows by the labels on (all labels
// but the metric name when on is empty) and calls fn for each pair, in the
// order of a's series identities.
func pairUp(a, b *window, on []string, fn func(key ingest.Labels, a, b *buffered)) {
	bs := make(map[string]*buffered, len(b.series))
	for _, s := range b.series {
		bs[matchKey(s.labels, on).String()] = s
	}
	for _, s := range sortedSeries(a) {
		key := matchKey(s.labels, on)
		if o := bs[key.String()]; o != nil {
			fn(key, s, o)
		}
	}
}

// sortedSeries lists the series of w in the order of their identities, so
// that what is judged and reported does not depend on map order.
func sortedSeries(w *window) []*buffered {
	keys := make([]string, 0, len(w.series))
	for k := range w.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*buffered, len(keys))
	for i, k := range keys {
		out[i] = w.series[k]
	}
	return out
}

// probe counts the samples the store holds since the newest sample the
// rule's windows held (at most span before the newest time it judged) that
// are newer than what its windows hold of their series, and returns the
// newest of them.
func (r *windowRule) probe(ctx context.Context, env *Env, span time.Duration) (int, time.Time, error) {
	newestMs := int64(math.MinInt64)
	if !r.newest.IsZero() {
		newestMs = r.newest.UnixMilli()
	}
	from, ok := probeFrom(r.last, newestMs, span, r.cfg.Step)
	if !ok {
		return 0, time.Time{}, nil
	}
	n, newest := 0, int64(math.MinInt64)
	for _, w := range r.windows {
		got, err := env.Querier.QueryRange(ctx, w.expr, from, r.last, r.cfg.Step)
		if err != nil {
			return 0, time.Time{}, err
		}
		for _, s := range got {
			held := newestMs
			if b := w.series[s.Labels.String()]; b != nil && len(b.t) > 0 {
				held = b.t[len(b.t)-1]
			}
			for j, t := range s.Timestamps {
				if t > held && num.Finite(s.Values[j]) {
					n++
					newest = max(newest, t)
				}
			}
		}
	}
	return n, msTime(newest), nil
}
