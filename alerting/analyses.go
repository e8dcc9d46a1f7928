package alerting

import (
	"math"
	"sort"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// The knee, spikiness and imbalance rules: window rules like correlate and
// decay (see window.go), each judging its lookback window at an evaluation
// time τ and returning one verdict per series or pair.

// minKneeStrength is the least Kneedle strength (height of the knee above
// the chord of the unit-scaled curve) taken as a real knee: below it the
// curve is nearly straight and its "knee" is noise.
const minKneeStrength = 0.1

// pairUp matches the series of two windows by the labels on (all labels
// but the metric name when on is empty) and calls fn for each pair.
func pairUp(a, b *window, on []string, fn func(key ingest.Labels, a, b *buffered)) {
	bs := map[string]*buffered{}
	for _, s := range b.series {
		bs[matchKey(s.labels, on).String()] = s
	}
	for _, s := range a.series {
		key := matchKey(s.labels, on)
		if o := bs[key.String()]; o != nil {
			fn(key, s, o)
		}
	}
}

// kneeAt finds, per pair of concurrency and QPS series, the knee of the
// QPS-vs-concurrency curve over (τ − lookback, τ] and judges the current
// concurrency against it.
func kneeAt(c *rulefmt.Knee, cw, qw *window, τ int64, lookback, step time.Duration) []verdict {
	from := τ - lookback.Milliseconds()
	recent := c.Recent
	if recent <= 0 {
		recent = 5 * step
	}
	var out []verdict
	pairUp(cw, qw, c.On, func(key ingest.Labels, cb, qb *buffered) {
		v := verdict{labels: key, value: math.NaN(), res: analysis.Result{Expected: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}}
		defer func() { out = append(out, v) }()
		ct, cv := cb.span(from, τ)
		qt, qv := qb.span(from, τ)
		t, conc, qps := analysis.Align(ct, cv, qt, qv, step.Milliseconds())
		if len(t) < 10 {
			return
		}
		k, err := analysis.FindKnee(conc, qps, analysis.KneeConfig{Method: analysis.KneeMethod(c.Method)})
		if err != nil || !k.Inside || (k.Method == analysis.KneeKneedle && k.Strength < minKneeStrength) || !(k.Concurrency > 0) {
			return
		}
		i := sort.Search(len(t), func(i int) bool { return t[i] > τ-recent.Milliseconds() })
		current := median(conc[i:])
		limit := k.Concurrency * c.Margin
		v.value = current
		v.res = analysis.Result{Score: current / limit, Expected: k.Concurrency, Lower: math.NaN(), Upper: limit, Ready: true}
		if math.IsNaN(v.res.Score) {
			v.res.Score = 0
		}
		v.details = map[string]any{
			"knee_concurrency":    k.Concurrency,
			"knee_qps":            k.QPS,
			"method":              string(k.Method),
			"strength":            k.Strength,
			"current_concurrency": num(current),
			"margin":              c.Margin,
			"n":                   len(t),
		}
	})
	return out
}

// spikinessAt compares, per series, the samples of the last Recent with the
// P99 and P999 of the rest of the window.
func spikinessAt(c *rulefmt.Spikiness, w *window, τ int64, lookback time.Duration) []verdict {
	from, cut := τ-lookback.Milliseconds(), τ-c.Recent.Milliseconds()
	var out []verdict
	for _, b := range w.series {
		v := verdict{labels: matchKey(b.labels, nil), value: math.NaN(), res: analysis.Result{Expected: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}}
		_, base := b.span(from, cut)
		_, recent := b.span(cut, τ)
		if len(base) < 100 || len(recent) == 0 {
			out = append(out, v)
			continue
		}
		bl := analysis.BaselineOf(base)
		bl.Factor = c.Factor
		sp := analysis.Spikes(recent, bl)
		peak := math.Inf(-1)
		for _, x := range recent {
			if !math.IsNaN(x) {
				peak = max(peak, x)
			}
		}
		level2 := c.Factor * bl.P999
		severity := "warning"
		score := peak / bl.P99
		if sp.Level2 > 0 {
			severity = "critical"
			score = max(score, peak/level2)
		}
		if math.IsNaN(score) || math.IsInf(score, 0) || score < 0 {
			score = 0
		}
		v.value = peak
		v.res = analysis.Result{Score: score, Expected: bl.P99, Lower: math.NaN(), Upper: bl.P99, Ready: true}
		v.details = map[string]any{
			"p99":           num(bl.P99),
			"p999":          num(bl.P999),
			"level2_above":  num(level2),
			"level":         levelOf(sp),
			"share_level1":  num(sp.Share1),
			"share_level2":  num(sp.Share2),
			"recent_points": sp.N,
			"severity":      severity,
		}
		out = append(out, v)
	}
	return out
}

func levelOf(s analysis.Spikiness) int {
	switch {
	case s.Level2 > 0:
		return 2
	case s.Level1 > 0:
		return 1
	}
	return 0
}

// imbalanceAt judges the load imbalance index over (τ − lookback, τ]:
// between paired series of two queries, or between the most and the least
// loaded series of each group that differ only in the Across label.
func imbalanceAt(c *rulefmt.Imbalance, ws []*window, τ int64, lookback time.Duration) []verdict {
	from := τ - lookback.Milliseconds()
	th := analysis.ImbalanceThresholds{Warn: c.Warn, Critical: c.Critical}
	judge := func(key ingest.Labels, a, b []float64, details map[string]any) verdict {
		v := verdict{labels: key, value: math.NaN(), res: analysis.Result{Expected: 0, Lower: math.NaN(), Upper: c.Warn}}
		im, err := analysis.LoadImbalance(a, b, th)
		if err != nil || math.IsNaN(im.LII) {
			return v
		}
		severity := "warning"
		if im.Level >= 2 {
			severity = "critical"
		}
		v.value = im.LII
		v.res.Score, v.res.Ready = im.LII/c.Warn, true
		details["lii"] = im.LII
		details["mean_a"] = num(im.MeanA)
		details["mean_b"] = num(im.MeanB)
		details["level"] = im.Level
		details["severity"] = severity
		v.details = details
		return v
	}
	var out []verdict
	if c.Across == "" {
		pairUp(ws[0], ws[1], c.On, func(key ingest.Labels, a, b *buffered) {
			_, av := a.span(from, τ)
			_, bv := b.span(from, τ)
			out = append(out, judge(key, av, bv, map[string]any{}))
		})
		return out
	}
	// Group the series by their labels other than Across.
	type member struct {
		across string
		vals   []float64
		mean   float64
	}
	groups := map[string][]member{}
	keys := map[string]ingest.Labels{}
	for _, b := range ws[0].series {
		var key ingest.Labels
		for _, l := range b.labels {
			if l.Name != "__name__" && l.Name != c.Across {
				key = append(key, l)
			}
		}
		_, vals := b.span(from, τ)
		m := mean(vals)
		if math.IsNaN(m) {
			continue
		}
		k := key.String()
		keys[k] = key
		groups[k] = append(groups[k], member{across: b.labels.Get(c.Across), vals: vals, mean: m})
	}
	for k, ms := range groups {
		if len(ms) < 2 {
			continue
		}
		sort.Slice(ms, func(i, j int) bool { return ms[i].mean > ms[j].mean })
		hi, lo := ms[0], ms[len(ms)-1]
		out = append(out, judge(keys[k], hi.vals, lo.vals, map[string]any{
			"across": c.Across, "most_loaded": hi.across, "least_loaded": lo.across, "members": len(ms),
		}))
	}
	return out
}

func median(xs []float64) float64 {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(xs []float64) float64 {
	sum, n := 0.0, 0
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
