package ingest

import (
	"math"
	"slices"
)

// The raw samples of a series, as /api/v1/export returns them, become the
// points /api/v1/query_range returns for the series selector at start,
// start+step, …, end: what VictoriaMetrics' default_rollup computes (its
// app/vmselect/promql, v1.151) with its default flags, for a range whose
// start and end are multiples of the step and whose end is older than its
// -search.latencyOffset (30s):
//
//   - it reads the samples from start-step-5m (the silence interval of
//     default_rollup) to end;
//   - for a range of more than one point it estimates the series' scrape
//     interval as the 0.6 quantile of its last 20 intervals and widens the
//     window to that interval plus a share of it (getMaxPrevInterval);
//     a one-point range has a window of one step;
//   - the point at t is the last sample in (t−window, t], if any, and is
//     dropped when that sample is NaN (a staleness marker), as query_range
//     drops NaN points.
//
// -search.maxStalenessInterval, -search.minStalenessInterval,
// -search.maxLookback and -search.setLookbackToStep change this; the export
// path assumes they are not set.

// vmSilenceInterval is default_rollup's look-behind before the first point.
const vmSilenceInterval = 5 * 60 * 1000

// exportFrom is where a fetch of raw samples for the points [start, end]
// must begin (unix ms, inclusive): where VictoriaMetrics begins, one step
// and its silence interval before start; for one point, one step before
// it (the window of a one-point range). With short, a range of more points
// than the estimate of a scrape interval reads begins a shorter look-behind
// before it (see shortLookBehind), which gridder.points checks is enough.
func exportFrom(start, end, step int64, short bool) int64 {
	switch {
	case start == end:
		return end - step + 1
	case short && (end-start)/step+1 > vmIntervals:
		return start - shortLookBehind(step)
	}
	return start - step - vmSilenceInterval
}

// vmIntervals is how many of a series' last intervals VictoriaMetrics
// estimates its scrape interval from.
const vmIntervals = 20

// shortLookBehind is the look-behind of a fetch that skips the silence
// interval: two steps and 30 s, the widest window of a series scraped at
// most every step (at most 1.5 times its scrape interval, and 24 s below
// 16 s).
func shortLookBehind(step int64) int64 { return 2*step + 30_000 }

// gridder maps raw samples onto the points of one range, reusing its
// buffers from one series to the next. With from set (the raw samples
// begin there, a short look-behind before start), it notes in unsure a
// series whose points could differ from those of samples fetched from
// where VictoriaMetrics begins: one with too few samples for its scrape
// interval to be estimated from them alone, or a window reaching before
// from.
type gridder struct {
	start, end, step int64
	from             int64 // 0: the samples begin where VictoriaMetrics' do
	unsure           bool
	// samples and made count the samples after start-step and the
	// points made of them, over the series of a response.
	samples, made int
	ts            []int64
	vs            []float64
	iv            []float64
}

// points returns the query_range points of a series whose raw samples are
// ts, vs (ascending). The result is valid until the next call.
func (g *gridder) points(ts []int64, vs []float64) ([]int64, []float64) {
	g.ts, g.vs = g.ts[:0], g.vs[:0]
	if len(ts) == 0 {
		return g.ts, g.vs
	}
	window := g.step
	if g.start < g.end {
		window = max(window, vmMaxPrevInterval(g.scrapeInterval(ts)))
	}
	if g.from != 0 && (len(ts) <= vmIntervals || g.start-window < g.from) {
		g.unsure = true
	}
	for k := len(ts) - 1; k >= 0 && ts[k] > g.start-g.step; k-- {
		g.samples++
	}
	defer func() { g.made += len(g.ts) }()
	i, j := 0, 0
	for t := g.start; t <= g.end; t += g.step {
		for i < len(ts) && ts[i] <= t-window {
			i++
		}
		j = max(j, i)
		for j < len(ts) && ts[j] <= t {
			j++
		}
		if j > i {
			if v := vs[j-1]; !math.IsNaN(v) {
				g.ts, g.vs = append(g.ts, t), append(g.vs, v)
			}
		}
	}
	return g.ts, g.vs
}

// scrapeInterval is VictoriaMetrics' getScrapeInterval: the 0.6 quantile,
// interpolated, of the last 20 intervals between samples; the step when
// there are fewer than two samples or the quantile is not positive.
func (g *gridder) scrapeInterval(ts []int64) int64 {
	if len(ts) < 2 {
		return g.step
	}
	ts = ts[max(0, len(ts)-vmIntervals-1):]
	g.iv = g.iv[:0]
	for k := 1; k < len(ts); k++ {
		g.iv = append(g.iv, float64(ts[k]-ts[k-1]))
	}
	slices.Sort(g.iv)
	rank := 0.6 * float64(len(g.iv)-1)
	lo := math.Floor(rank)
	hi := math.Min(float64(len(g.iv)-1), lo+1)
	w := rank - lo
	si := int64(g.iv[int(lo)]*(1-w) + g.iv[int(hi)]*w)
	if si <= 0 {
		return g.step
	}
	return si
}

// vmMaxPrevInterval is VictoriaMetrics' getMaxPrevInterval.
func vmMaxPrevInterval(si int64) int64 {
	switch {
	case si <= 2000:
		return si + 4*si
	case si <= 4000:
		return si + 2*si
	case si <= 8000:
		return si + si
	case si <= 16000:
		return si + si/2
	case si <= 32000:
		return si + si/4
	}
	return si + si/8
}
