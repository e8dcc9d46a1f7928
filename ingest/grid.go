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
// must begin (unix ms, inclusive).
func exportFrom(start, end, step int64) int64 {
	if start == end {
		return end - step + 1
	}
	return start - step - vmSilenceInterval
}

// gridder maps raw samples onto the points of one range, reusing its
// buffers from one series to the next.
type gridder struct {
	start, end, step int64
	ts               []int64
	vs               []float64
	iv               []float64
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
	ts = ts[max(0, len(ts)-21):]
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
