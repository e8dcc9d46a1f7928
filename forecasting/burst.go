package forecasting

import (
	"math"
	"slices"

	"github.com/inferwatch/inferwatch/internal/num"
)

// BurstLoad is the load a target should be ready for lead steps after
// the newest of ys (its load, oldest first, one a step), by how its load
// has moved before: an upper q-quantile bound calibrated on ys itself.
//
// The guess for the step lead ahead of each i is the mean of the ref
// samples up to ys[i], m_i, and its miss the step's load less the guess
// over √m_i: the count of a renewal process spreads with the square root
// of its mean, so the misses of a quiet hour and of a busy one read on one
// scale, and a burst ten times the load of a quiet minute does not set the
// headroom of a busy one. The bound is the newest mean plus the q-quantile
// of the misses times its square root.
//
// With season (the load one period before each sample of ys, and then
// before each of the lead steps to come: len(ys)+lead samples, NaN where
// unknown), the load a period before is a second guess, missed by
// (ys[i+lead] − season[i+lead]) / √m_i. Over the steps both guesses cover,
// the one whose bound is lower on average (at the same coverage, the
// sharper) gives the bound: traffic that repeats from one period to the
// next is better told by the load a period before, and bursts that do not
// by the recent mean. Without season, or where it covers fewer than half
// of the steps, the recent mean guesses.
//
// Windows holding a gap, and means of 0, give no miss. It returns NaN when
// no miss is known, the newest ref samples hold a gap, or ref, lead or q
// is out of range (ref and lead ≥ 1, q in (0, 1)).
func BurstLoad(ys, season []float64, ref, lead int, q float64) float64 {
	if ref < 1 || lead < 1 || !(q > 0 && q < 1) || len(ys) < ref {
		return math.NaN()
	}
	if season != nil && len(season) != len(ys)+lead {
		season = nil
	}
	// sums[i] is the sum of ys[:i]; bad[i] counts the gaps in ys[:i].
	sums, bad := make([]float64, len(ys)+1), make([]int, len(ys)+1)
	for i, y := range ys {
		g := 0
		if !num.Finite(y) {
			y, g = 0, 1
		}
		sums[i+1], bad[i+1] = sums[i]+y, bad[i]+g
	}
	mean := func(end int) (float64, bool) { // of ys[end-ref : end]
		if bad[end]-bad[end-ref] > 0 {
			return 0, false
		}
		return (sums[end] - sums[end-ref]) / float64(ref), true
	}
	now, ok := mean(len(ys))
	if !ok {
		return math.NaN()
	}
	var recent, both, seasonal []float64
	// Over the steps both guesses cover: the sums of the means, of the
	// loads a period before and of the square roots of the means.
	var sumM, sumP, sumRoot float64
	for i := ref - 1; i+lead < len(ys); i++ {
		m, ok := mean(i + 1)
		y := ys[i+lead]
		if !ok || m <= 0 || !num.Finite(y) {
			continue
		}
		root := math.Sqrt(m)
		recent = append(recent, (y-m)/root)
		if season == nil {
			continue
		}
		if p := season[i+lead]; num.Finite(p) {
			both = append(both, (y-m)/root)
			seasonal = append(seasonal, (y-p)/root)
			sumM, sumP, sumRoot = sumM+m, sumP+p, sumRoot+root
		}
	}
	if len(recent) == 0 {
		return math.NaN()
	}
	p := math.NaN()
	if season != nil {
		p = season[len(ys)-1+lead]
	}
	if 2*len(both) >= len(recent) && num.Finite(p) {
		slices.Sort(both)
		slices.Sort(seasonal)
		qm, qs := quantileSorted(both, q), quantileSorted(seasonal, q)
		if sumP+qs*sumRoot < sumM+qm*sumRoot {
			return max(p+qs*math.Sqrt(now), 0)
		}
	}
	slices.Sort(recent)
	return max(now+quantileSorted(recent, q)*math.Sqrt(now), 0)
}

// quantileSorted is the q-quantile of sorted xs, linear between order
// statistics (type 7).
func quantileSorted(xs []float64, q float64) float64 {
	h := q * float64(len(xs)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[lo] + (h-float64(lo))*(xs[lo+1]-xs[lo])
}
