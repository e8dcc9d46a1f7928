package capacity

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Efficient returns the points of a sweep that no other beats: sorted by
// replica-minutes, each short fewer minutes than every cheaper one (of
// points equal in both figures, one).
func Efficient(points []Point) []Point {
	ps := slices.Clone(points)
	slices.SortFunc(ps, func(a, b Point) int {
		return cmp.Or(cmp.Compare(a.ReplicaMinutes, b.ReplicaMinutes), cmp.Compare(a.UnderMinutes, b.UnderMinutes))
	})
	var out []Point
	for _, p := range ps {
		if len(out) == 0 || p.UnderMinutes < out[len(out)-1].UnderMinutes {
			out = append(out, p)
		}
	}
	return out
}

// ShortAtCost is how many minutes the frontier of points is short at cost
// replica-minutes: linear between the two efficient points around cost
// (the step a sweep of an autoscaler's target leaves between them is
// bridged by mixing the two). It is false when cost is outside the
// efficient points' range: a sweep says nothing beyond its ends.
func ShortAtCost(points []Point, cost float64) (float64, bool) {
	fr := Efficient(points)
	if len(fr) == 0 || math.IsNaN(cost) || cost < fr[0].ReplicaMinutes || cost > fr[len(fr)-1].ReplicaMinutes {
		return math.NaN(), false
	}
	i, _ := slices.BinarySearchFunc(fr, cost, func(p Point, c float64) int { return cmp.Compare(p.ReplicaMinutes, c) })
	if fr[min(i, len(fr)-1)].ReplicaMinutes == cost {
		return fr[i].UnderMinutes, true
	}
	a, b := fr[i-1], fr[i]
	w := (cost - a.ReplicaMinutes) / (b.ReplicaMinutes - a.ReplicaMinutes)
	return a.UnderMinutes + w*(b.UnderMinutes-a.UnderMinutes), true
}

// RatioAtCost is p's under-provisioned minutes over those of the frontier
// of reactive at p's replica-minutes: below 1 where p is short less often
// than the reactive policy that costs the same. It is NaN when p's cost is
// outside the sweep's range, or the frontier is never short there (and p
// is: +Inf; neither: NaN).
func RatioAtCost(p Point, reactive []Point) float64 {
	short, ok := ShortAtCost(reactive, p.ReplicaMinutes)
	switch {
	case !ok:
		return math.NaN()
	case short > 0:
		return p.UnderMinutes / short
	case p.UnderMinutes > 0:
		return math.Inf(1)
	}
	return math.NaN()
}

// BootstrapRatio is an interval for RatioAtCost over whole days: days[d]
// holds day d's point of the policy judged, reactive[d] the points of each
// reactive policy of the sweep that day (in the same order every day).
// Each of b resamples draws len(days) days with replacement (from a
// generator seeded with seed), sums their points and takes the ratio; lo
// and hi are the (1−level)/2 and (1+level)/2 quantiles of the ratios that
// are finite, n how many were.
func BootstrapRatio(days []Point, reactive [][]Point, b int, seed uint64, level float64) (lo, hi float64, n int) {
	if len(days) == 0 || len(reactive) != len(days) {
		return math.NaN(), math.NaN(), 0
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	ratios := make([]float64, 0, b)
	sum := make([]Point, len(reactive[0]))
	for range b {
		var p Point
		clear(sum)
		for range days {
			d := rng.IntN(len(days))
			p.ReplicaMinutes += days[d].ReplicaMinutes
			p.UnderMinutes += days[d].UnderMinutes
			for j, r := range reactive[d] {
				sum[j].ReplicaMinutes += r.ReplicaMinutes
				sum[j].UnderMinutes += r.UnderMinutes
			}
		}
		if r := RatioAtCost(p, sum); !math.IsNaN(r) && !math.IsInf(r, 0) {
			ratios = append(ratios, r)
		}
	}
	if len(ratios) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	slices.Sort(ratios)
	return quantileSorted(ratios, (1-level)/2), quantileSorted(ratios, (1+level)/2), len(ratios)
}

// quantileSorted is the q-quantile of sorted xs, linear between order
// statistics (the default of R and NumPy).
func quantileSorted(xs []float64, q float64) float64 {
	h := q * float64(len(xs)-1)
	i := int(h)
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}

// Crossover is the start-up delay above which the policy judged is short
// less often than the reactive frontier at its cost: given the ratios at
// ascending start-ups, the point where the ratio last falls through 1,
// linear between the two start-ups around it. below is true when the
// ratio is under 1 at every start-up (the crossover lies below the
// first); ok is false when it is not under 1 at the last one, or a ratio
// is not known.
func Crossover(startups []time.Duration, ratios []float64) (at time.Duration, below, ok bool) {
	if len(startups) == 0 || len(startups) != len(ratios) {
		return 0, false, false
	}
	last := -1 // the last start-up at which the policy does not win
	for i, r := range ratios {
		if math.IsNaN(r) {
			return 0, false, false
		}
		if r >= 1 {
			last = i
		}
	}
	switch {
	case last < 0:
		return startups[0], true, true
	case last == len(ratios)-1:
		return 0, false, false
	}
	a, b := ratios[last], ratios[last+1]
	w := (a - 1) / (a - b)
	return startups[last] + time.Duration(w*float64(startups[last+1]-startups[last])), false, true
}
