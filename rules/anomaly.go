package rules

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/internal/num"
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
	// warm is the history the first evaluation fetches before the points
	// it reports: the rule's lookback, or what the detector needs at the
	// rule's step.
	warm time.Duration
	// limits are what the detector cannot do at this step and window,
	// reported once, at the first evaluation.
	limits []string
	series
	// last is the newest point asked for; zero before the first
	// evaluation (resumed, when a restarted daemon restored it).
	last    time.Time
	resumed bool
	noted   bool // the limits and a short history have been reported
	// late re-asks the points a series had not delivered when asked.
	late lateness
	// newest is the newest sample judged, unix ms.
	newest int64

	// seen counts the series seen in this evaluation.
	seen int
	// fetched is the end of the last part of a first evaluation's history
	// scored before a later part failed: the next evaluation goes on after
	// it instead of fetching the history again.
	fetched time.Time

	// scratch, reused from one evaluation to the next
	scoreAt map[*seriesState]int // a series' entry in Result.Scores
	readAt  map[*seriesState]int // a series' entry in Result.Readings
	// readAll says every series' readings are handed on this evaluation;
	// readLabels are the change labels whose carriers' are, as of
	// generation readGen (a series caches its answer by it).
	readAll    bool
	readLabels []string
	readGen    uint32
	bt         []int64
	bv         []float64
	br         []analysis.Result
	key        []byte
}

func newAnomalyRule(g rulefmt.Group, r rulefmt.Rule) (Rule, error) {
	d := r.Spec.(*rulefmt.Detector)
	spec := analysis.Spec{Name: d.Name, Window: r.Lookback.Milliseconds(), Step: r.Step.Milliseconds(), Params: d.Params}
	f, err := analysis.Build(spec)
	if err != nil {
		return nil, specError(r, g, err)
	}
	needs, err := analysis.NeedsOf(spec, r.Step.Milliseconds())
	if err != nil {
		return nil, specError(r, g, err)
	}
	warm := r.Lookback
	if warm <= 0 {
		warm = time.Duration(needs.History) * time.Millisecond
	}
	return &anomalyRule{base: newBase(g, r), detector: d.Name, factory: f, warm: warm, limits: needs.Limits, newest: math.MinInt64}, nil
}

func (r *anomalyRule) judged() time.Time { return r.last }

// reads says whether st's levels are handed on this evaluation: all the
// rule's are, or st carries a change label.
func (r *anomalyRule) reads(st *seriesState) bool {
	if r.readAll {
		return true
	}
	if st.readGen != r.readGen {
		st.reads, st.readGen = false, r.readGen
		for _, l := range st.labels {
			if slices.Contains(r.readLabels, l.Name) {
				st.reads = true
				break
			}
		}
	}
	return st.reads
}
func (r *anomalyRule) resume(t time.Time) {
	if r.last.IsZero() {
		r.last, r.resumed = t, true
	}
}

// warmPart is how many points per series one request of the first
// evaluation's history asks for at first; warmBudget bounds the points of
// the later requests (over all series), so that the history of many
// series is never held at once.
const (
	warmPart   = 60
	warmBudget = 1 << 22
)

// Eval fetches the points that are new since the previous evaluation —
// after a gap, everything since it, within the catch-up horizon — scores
// them, and observes what the alert lifecycle needs. The first
// evaluation (and the first after a restart) warms the detectors up on
// the history they need (the rule's lookback, when set) before the points
// it reports, fetched in consecutive parts.
func (r *anomalyRule) Eval(ctx context.Context, at time.Time, env *Env) (res Result, err error) {
	step := r.cfg.Step
	end := r.end(at, env)
	first := r.last.IsZero() || r.resumed
	from, gap := reportFrom(r.last, r.last.IsZero(), end, step, env)
	res.Unreported = gap
	asked := r.last
	start := r.last.Add(step)
	if first {
		start = from.Add(-r.warm)
	} else {
		if again := r.late.from(r.last, end, step); again.Before(from) {
			// Points some series had not delivered when they were asked
			// for: ask again, and report them as new.
			from, start = again, again
		}
		if warm := from.Add(-r.warm); start.Before(warm) {
			// Past the horizon: what lies before the detectors' warm-up
			// is not worth fetching.
			start = warm
		}
	}
	defer func() { res.Through, res.Newest, res.Lag = r.last, msTime(r.newest), r.lag }()
	if first && !r.noted {
		r.noted = true
		for _, l := range r.limits {
			res.Notes = append(res.Notes, fmt.Sprintf("detector %s at step %s: %s", r.detector, step, l))
		}
	}
	if start.After(end) {
		res.Series = len(r.series.series)
		return res, nil
	}
	fromMs := from.UnixMilli()
	oldest := int64(math.MaxInt64)
	clear(r.scoreAt)
	clear(r.readAt)
	r.readAll = false
	if f := env.Readings; f != nil {
		r.readAll = f.Reads(r.cfg.Name, r.cfg.Labels)
		if cl := f.ChangeLabels(); r.readGen == 0 || !slices.Equal(cl, r.readLabels) {
			r.readLabels, r.readGen = slices.Clone(cl), r.readGen+1
		}
	} else if r.readLabels != nil || r.readGen == 0 {
		r.readLabels, r.readGen = nil, r.readGen+1
	}
	r.seen = 0
	if first && !r.fetched.Before(start) && r.fetched.Before(end) {
		// A first evaluation that failed part of the way scored the
		// history up to fetched: go on after it.
		start = r.fetched.Add(step)
	}
	askedMs := int64(math.MinInt64)
	if !first {
		askedMs = asked.UnixMilli()
	}
	r.late.begin()
	if env.Scores != ScoresNone {
		// One entry per series: room for the series tracked, so that a
		// million of them are not copied again and again as they come.
		res.Scores = slices.Grow(res.Scores, len(r.series.series))
	}
	judge := func(got []ingest.Series) {
		for i := range got {
			if ts := got[i].Timestamps; len(ts) > 0 {
				oldest = min(oldest, ts[0])
			}
			st := r.judge(&res, &got[i], at, fromMs, askedMs, first, env.Scores)
			r.late.saw(st.lastT)
		}
	}
	if pq, ok := env.Querier.(PartQuerier); ok {
		// One call, which the querier splits itself (series shards, time
		// chunks, resumable after each chunk), judged as the parts arrive:
		// the rule holds its detectors' state and the parts in flight,
		// whatever the range.
		for p, err := range pq.QueryRangeParts(ctx, r.cfg.Expr, start, end, step) {
			if err != nil {
				return res, err
			}
			judge(p.Series)
			if !p.Done.IsZero() {
				r.late.chunkDone()
				if first {
					r.fetched = p.Done
				}
			}
		}
	} else {
		// The first evaluation fetches its history in consecutive parts,
		// sized by the series the first returned.
		part := int64(warmPart)
		for lo := start; !lo.After(end); {
			hi := end
			if first {
				if span := time.Duration(part-1) * step; lo.Add(span).Before(end) {
					hi = lo.Add(span)
				}
			}
			got, err := env.Querier.QueryRange(ctx, r.cfg.Expr, lo, hi, step)
			if err != nil {
				return res, err
			}
			judge(got)
			r.late.chunkDone()
			if first && len(got) > 0 {
				part = min(max(warmPart, warmBudget/int64(len(got))), rulefmt.MaxPointsPerQuery)
			}
			if first {
				r.fetched = hi
			}
			lo = hi.Add(step)
		}
	}
	if first {
		r.fetched = end
	}
	r.last, r.resumed = end, false
	r.late.settle(start, end, step)
	r.learn(&res)
	if first && oldest != math.MaxInt64 && r.warm > 0 {
		if short := time.UnixMilli(oldest).Sub(start); short > max(2*step, r.warm/100) && oldest < fromMs {
			held := from.Sub(time.UnixMilli(oldest))
			res.Notes = append(res.Notes, fmt.Sprintf("the store returned %s of the %s of history the detector %s asked for, from %s (is its retention shorter?): the detectors judge with what they have, and their findings' details.mode say what they could not test",
				dur.Approx(held), dur.Approx(r.warm), r.detector, time.UnixMilli(oldest).UTC().Format(time.RFC3339)))
		}
	}
	// Only a series not seen in this evaluation can have gone.
	if r.seen < len(r.series.series) {
		r.sweep(&r.series, &res, at, r.cfg.Forget(), r.detector)
	}
	res.Series = len(r.series.series)
	return res, nil
}

// judge scores the points of s not yet scored and records them, and
// returns the series' state; first says the evaluation is the first after
// a (re)start, and points at or before askedMs were asked for before (they
// came late).
func (r *anomalyRule) judge(res *Result, s *ingest.Series, at time.Time, fromMs, askedMs int64, first bool, scores ScorePoints) *seriesState {
	res.Dropped.Add(s.Clean())
	r.key = appendLabelsKey(r.key[:0], s.Labels)
	st := r.series.series[string(r.key)] // a lookup without a string
	if st == nil {
		st = r.state(string(r.key), s.Labels, r.factory)
		st.key = s.Labels.String() // the series in selector syntax, for its findings
	}
	if !st.lastSeen.Equal(at) {
		r.seen++
	}
	st.lastSeen = at
	// The samples not yet scored, in order, scored in one call where the
	// detector can batch them.
	prevT := st.lastT
	bt, bv := s.Timestamps, s.Values
	if !after(bt, st.lastT) {
		// Some were scored before (an overlapping fetch) or come out of
		// order: copy those after the newest scored.
		r.bt, r.bv = r.bt[:0], r.bv[:0]
		for j, t := range s.Timestamps {
			if t > st.lastT {
				r.bt, r.bv = append(r.bt, t), append(r.bv, s.Values[j])
				st.lastT = t
			}
		}
		bt, bv = r.bt, r.bv
	} else if len(bt) > 0 {
		st.lastT = bt[len(bt)-1]
	}
	r.br = slices.Grow(r.br[:0], len(bt))[:len(bt)]
	aside, accepted := setAside(st.det)
	if bd, ok := st.det.(analysis.BatchDetector); ok {
		bd.ObserveBatch(bt, bv, r.br)
	} else {
		for j, t := range bt {
			r.br[j] = st.det.Observe(t, bv[j])
		}
	}
	if a, acc := setAside(st.det); a > aside || acc > accepted {
		res.SetAside += int(a - aside)
		res.Accepted += int(acc - accepted)
		if res.Aside == nil {
			res.Aside = highest(st.key, bt, bv, r.br)
		}
	}
	res.Scored += len(bt)
	if n := len(bt); n > 0 {
		r.newest = max(r.newest, bt[n-1])
		for j := 0; j < n && bt[j] <= askedMs; j++ {
			res.Late++
		}
	}
	if scores != ScoresNone && len(bt) > 0 {
		// One entry per series and evaluation, however many parts its
		// points came in.
		k, ok := r.scoreAt[st]
		if !ok {
			if r.scoreAt == nil {
				r.scoreAt = map[*seriesState]int{}
			}
			k = len(res.Scores)
			r.scoreAt[st] = k
			res.Scores = append(res.Scores, r.scores(st, len(bt), scores))
		}
		from := 0
		if scores == ScoresNewest {
			// Only the newest point with a score can stay, or the newest.
			from = len(bt) - 1
			for j := from; j >= 0; j-- {
				if r.br[j].Ready {
					from = j
					break
				}
			}
		}
		for j := from; j < len(bt); j++ {
			addScore(&res.Scores[k], bt[j], bv[j], r.br[j], scores)
		}
	}
	if n := len(bt); n > 0 && bt[n-1] >= fromMs && r.reads(st) {
		// The levels of the points reported, for the incidents'
		// diagnoses: one entry per series and evaluation.
		k, ok := r.readAt[st]
		if !ok {
			if r.readAt == nil {
				r.readAt = map[*seriesState]int{}
			}
			k = len(res.Readings)
			r.readAt[st] = k
			res.Readings = append(res.Readings, r.readings(st))
		}
		for j, t := range bt {
			if t >= fromMs {
				res.Readings[k].Add(t, bv[j])
			}
		}
	}
	md, _ := st.det.(analysis.Moder)
	for j, t := range bt {
		var details map[string]any
		if t >= fromMs && anomalous(r.br[j], bv[j], r.cfg.MinDev) {
			// Which test fired and what its band was measured on, and
			// which tests could not judge yet.
			if test := r.br[j].Test; test != analysis.TestNone {
				details = map[string]any{"test": test.String(), "against": test.Against()}
			}
			if md != nil {
				if m := md.Mode(t); m != "" {
					if details == nil {
						details = map[string]any{}
					}
					details["mode"] = m
				}
			}
		}
		if first && t >= fromMs && prevT < fromMs {
			// The first point reported after a (re)start: whether the
			// series was anomalous before is not known here, so the
			// lifecycle is told this point either way — a restored alert
			// whose series has cleared resolves.
			st.open = true
		}
		prevT = t
		r.observe(res, st, t, bv[j], r.br[j], details, r.detector, t >= fromMs)
	}
	return st
}

// ignorer is a detector that counts the samples it left out of what
// defines normal and the incidents it took for a new normal (auto).
type ignorer interface {
	Ignored() (samples, accepted int64)
}

// clipper is a detector that counts the samples it clipped (sigma).
type clipper interface {
	Clipped() int64
}

// setAside returns the samples d has set aside as extreme and the
// incidents it has accepted, so far.
func setAside(d analysis.Detector) (samples, accepted int64) {
	switch d := d.(type) {
	case ignorer:
		return d.Ignored()
	case clipper:
		return d.Clipped(), 0
	}
	return 0, 0
}

// highest returns the sample of a series' batch that scored highest.
func highest(series string, ts []int64, vs []float64, rs []analysis.Result) *Aside {
	best := -1
	for j := range rs {
		if rs[j].Ready && (best < 0 || rs[j].Score > rs[best].Score) {
			best = j
		}
	}
	if best < 0 {
		return nil
	}
	return &Aside{Series: series, At: msTime(ts[best]), Value: vs[best]}
}

// appendLabelsKey appends the identity of a series to dst: each label's
// name and value, separated by bytes that UTF-8 text never holds. It is
// cheaper to build and to hash than the selector syntax, which the states
// keep for the findings.
func appendLabelsKey(dst []byte, ls ingest.Labels) []byte {
	for _, l := range ls {
		dst = append(dst, l.Name...)
		dst = append(dst, 0xfe)
		dst = append(dst, l.Value...)
		dst = append(dst, 0xff)
	}
	return dst
}

// after reports whether ts rises strictly and starts after t.
func after(ts []int64, t int64) bool {
	for _, u := range ts {
		if u <= t {
			return false
		}
		t = u
	}
	return true
}

// probe counts the samples the store holds since the newest sample the
// rule judged (at most span before the newest point it asked for) that
// are newer than what the rule judged of their series, and returns the
// newest of them.
func (r *anomalyRule) probe(ctx context.Context, env *Env, span time.Duration) (int, time.Time, error) {
	from, ok := probeFrom(r.last, r.newest, span, r.cfg.Step)
	if !ok {
		return 0, time.Time{}, nil
	}
	got, err := env.Querier.QueryRange(ctx, r.cfg.Expr, from, r.last, r.cfg.Step)
	if err != nil {
		return 0, time.Time{}, err
	}
	n, newest := 0, int64(math.MinInt64)
	var key []byte
	for _, s := range got {
		judged := r.newest
		key = appendLabelsKey(key[:0], s.Labels)
		if st := r.series.series[string(key)]; st != nil {
			judged = st.lastT
		}
		for j, t := range s.Timestamps {
			if t > judged && num.Finite(s.Values[j]) {
				n++
				newest = max(newest, t)
			}
		}
	}
	return n, msTime(newest), nil
}

// probeFrom is where a probe starts: after the newest sample judged, at
// most span before last.
func probeFrom(last time.Time, newestMs int64, span, step time.Duration) (time.Time, bool) {
	if last.IsZero() {
		return time.Time{}, false
	}
	from := last.Add(-span).Truncate(step)
	if newest := msTime(newestMs); !newest.IsZero() && newest.Add(step).After(from) {
		from = newest.Add(step)
	}
	return from, !from.After(last)
}
