package forecasting

import (
	"math"
	"slices"
	"sort"

	"github.com/inferwatch/inferwatch/internal/num"
)

// AccuracyWindow is the most recent forecasts an Accuracy is measured over.
const AccuracyWindow = 1000

// accuracyBlock is how many scored forecasts an Accuracy sums together: it
// keeps the sums of AccuracyWindow/accuracyBlock blocks, not each
// forecast's errors, so it measures the last AccuracyWindow −
// accuracyBlock + 1 to AccuracyWindow of them.
const accuracyBlock = 50

// Accuracy measures a series' own recent forecasts at one lead against what
// came: each forecast is remembered until the sample of its target time
// arrives, then scored — its absolute error, the naive forecast's (the
// value at its origin) on the same origin, and whether the actual fell
// inside the interval. Summary covers the last AccuracyWindow scored
// forecasts, or, once more were scored, the last 951 to 1,000 of them:
// the scores are summed in blocks of 50 and the oldest block is dropped
// as a new one starts, so a series keeps about 500 bytes of scores
// whatever its step. The zero value is ready to use; it is not safe for
// concurrent use.
type Accuracy struct {
	pending []tracked // by target time, ascending
	scored  int64     // the newest target scored
	started bool
	blocks  []scoreBlock // a ring, the newest at pos; the newest block fills
	pos     int
}

type tracked struct {
	target                    int64
	mean, lower, upper, naive float64
}

// scoreBlock sums the scores of up to accuracyBlock forecasts.
type scoreBlock struct {
	ae, nae float64 // the absolute errors and the naive forecast's
	in, n   int32   // how many fell inside the interval, of n
}

// AccuracySummary is the accuracy over the scored forecasts: their number,
// the mean absolute error, the share of actuals inside the interval and
// the naive forecast's mean absolute error; NaN when none was scored.
type AccuracySummary struct {
	N                       int
	MAE, Coverage, NaiveMAE float64
}

// Forecast remembers a forecast of the value at target (unix
// milliseconds): its mean and interval, and the naive forecast, the value
// at its origin. A forecast of a target already remembered replaces it.
func (a *Accuracy) Forecast(target int64, mean, lower, upper, naive float64) {
	p := tracked{target, mean, lower, upper, naive}
	i := sort.Search(len(a.pending), func(i int) bool { return a.pending[i].target >= target })
	if i < len(a.pending) && a.pending[i].target == target {
		a.pending[i] = p
		return
	}
	a.pending = slices.Insert(a.pending, i, p)
}

// Observe scores the forecast whose target is the sample at t, when one is
// remembered and t is newer than every target scored before (a series
// fitted afresh replays samples whose targets were scored: each counts
// once), and forgets the forecasts of targets up to t. A non-finite v
// scores nothing.
func (a *Accuracy) Observe(t int64, v float64) {
	i := sort.Search(len(a.pending), func(i int) bool { return a.pending[i].target > t })
	if i > 0 {
		if p := a.pending[i-1]; p.target == t && num.Finite(v) && (!a.started || t > a.scored) {
			a.push(math.Abs(v-p.mean), math.Abs(v-p.naive), v >= p.lower && v <= p.upper)
			a.scored, a.started = t, true
		}
		a.pending = append(a.pending[:0], a.pending[i:]...)
	}
}

func (a *Accuracy) push(ae, nae float64, in bool) {
	const blocks = AccuracyWindow / accuracyBlock
	switch {
	case len(a.blocks) == 0:
		a.blocks = make([]scoreBlock, 1, blocks)
	case a.blocks[a.pos].n == accuracyBlock && len(a.blocks) < blocks:
		a.blocks = append(a.blocks, scoreBlock{})
		a.pos++
	case a.blocks[a.pos].n == accuracyBlock:
		a.pos = (a.pos + 1) % blocks
		a.blocks[a.pos] = scoreBlock{}
	}
	b := &a.blocks[a.pos]
	b.ae += ae
	b.nae += nae
	b.n++
	if in {
		b.in++
	}
}

// Summary returns the accuracy over the scored forecasts kept.
func (a *Accuracy) Summary() AccuracySummary {
	out := AccuracySummary{MAE: math.NaN(), Coverage: math.NaN(), NaiveMAE: math.NaN()}
	var s, sn float64
	var in, n int
	for _, b := range a.blocks {
		s += b.ae
		sn += b.nae
		in += int(b.in)
		n += int(b.n)
	}
	out.N = n
	if n == 0 {
		return out
	}
	out.MAE, out.NaiveMAE, out.Coverage = s/float64(n), sn/float64(n), float64(in)/float64(n)
	return out
}
