package forecasting

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/inferwatch/inferwatch/internal/num"
)

// maxCombo is the most candidates auto averages.
const maxCombo = 3

// combo forecasts the equal-weight mean of its members' forecasts (each
// clipped at zero first when clip is set, as their trackers clip them).
// Auto builds one from the candidates that validated best: averaging
// forecasts whose errors are not perfectly correlated cancels part of
// them, the lesson of the M3 and M4 forecasting competitions.
type combo struct {
	members []model
	clip    bool
	buf     []float64
	label   string // name's result, built once: every forecast reports it
}

func (m *combo) name() string {
	if m.label == "" {
		names := make([]string, len(m.members))
		for i, c := range m.members {
			names[i] = c.name()
		}
		m.label = "combo(" + strings.Join(names, "+") + ")"
	}
	return m.label
}

func (m *combo) need() int {
	n := 0
	for _, c := range m.members {
		n = max(n, c.need())
	}
	return n
}

func (m *combo) fit(y []float64) error {
	for _, c := range m.members {
		if err := c.fit(y); err != nil {
			return err
		}
	}
	return nil
}

func (m *combo) update(y float64) {
	for _, c := range m.members {
		c.update(y)
	}
}

func (m *combo) predict(out []float64) {
	m.buf = resize(m.buf, len(out))
	clear(out)
	for _, c := range m.members {
		c.predict(m.buf)
		for i, v := range m.buf {
			if m.clip {
				v = clip0(v)
			}
			out[i] += v / float64(len(m.members))
		}
	}
}

// validation is what one candidate's tracker recorded while replaying the
// last samples of the history: the forecasts from each origin, the first
// made at origin start (an index into the history).
type validation struct {
	tr    *tracker
	start int
	rows  [][]float64
}

// maeAt is the mean absolute error at lead h of the forecasts (row(o)
// gives the forecasts from origin o) over the origins from..len(y)−1−h
// whose target is finite; +Inf when there is none.
func maeAt(y []float64, h, from int, row func(o int) []float64) float64 {
	var sum float64
	var n int
	for o := from; o+h < len(y); o++ {
		if v := y[o+h]; num.Finite(v) {
			sum += math.Abs(v - row(o)[h-1])
			n++
		}
	}
	if n == 0 {
		return math.Inf(1)
	}
	return sum / float64(n)
}

// combineTrackers returns a tracker for the combination of the members'
// models, in the state the members' trackers reached at the end of y, its
// calibration windows filled with the errors the combination would have
// made on the origins all members validated (from origin from on).
func combineTrackers(members []*validation, y []float64, from, h int, calib calibration, clip bool) *tracker {
	models := make([]model, len(members))
	for i, v := range members {
		models[i] = v.tr.m
	}
	k := newTrackerState(&combo{members: models, clip: clip}, h, calib, clip)
	mean := make([]float64, h)
	row := func(o int) []float64 {
		clear(mean)
		for _, v := range members {
			for i, p := range v.rows[o-v.start] {
				mean[i] += p / float64(len(members))
			}
		}
		return mean
	}
	// Errors in the order a tracker meets them: by target, then by lead
	// (its origins are indices into y).
	n := len(y)
	k.reserve(n - 1 - from)
	for t := from + 1; t < n; t++ {
		if !num.Finite(y[t]) {
			continue
		}
		for i, l := range k.knots {
			if o := t - l; o >= from {
				k.score(i, o, y[t]-row(o)[l-1])
			}
		}
	}
	k.origin = n - 1
	for o := max(n-h, from); o < n; o++ {
		k.store(o, row(o))
	}
	copy(k.cur, row(n-1))
	return k
}

// choose returns the tracker of the validated candidate, or of the
// combination of the two or three best, with the lowest mean absolute
// error at lead (at most the horizon h) over the origins all candidates
// share (from on); the first candidate when none could be scored.
//
// Judged on fewer than thin origins, a winner that is not a guard (the last
// value or exponential smoothing) must beat the better guard by more than
// the standard error of their paired differences in absolute error, or the
// guard is taken: on a series' first day, a seasonal model fitted on one
// period can suit a few hours by chance.
func choose(vals []*validation, y []float64, from, h, lead int, calib calibration, thin int, clip bool) *tracker {
	maes := make([]float64, len(vals))
	order := make([]int, len(vals))
	for i, v := range vals {
		maes[i] = maeAt(y, lead, from, func(o int) []float64 { return v.rows[o-v.start] })
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(maes[a], maes[b]) })
	best, bestMAE := order[0], maes[order[0]]
	if math.IsInf(bestMAE, 1) {
		return vals[0].tr
	}
	// at is the equal-weight mean of set's forecasts from origin o at lead.
	at := func(set []*validation) func(o int) float64 {
		return func(o int) float64 {
			var m float64
			for _, v := range set {
				m += v.rows[o-v.start][lead-1] / float64(len(set))
			}
			return m
		}
	}
	var bestSet []*validation
	for k := 2; k <= min(maxCombo, len(vals)); k++ {
		set := make([]*validation, k)
		for i := range k {
			set[i] = vals[order[i]]
		}
		mean, of := make([]float64, lead), at(set)
		mae := maeAt(y, lead, from, func(o int) []float64 {
			mean[lead-1] = of(o)
			return mean
		})
		if mae < bestMAE {
			bestSet, bestMAE = set, mae
		}
	}
	if g := bestGuard(vals, maes); g >= 0 && (bestSet != nil || !isGuard(vals[best])) {
		win := bestSet
		if win == nil {
			win = []*validation{vals[best]}
		}
		if !clearlyBetter(y, lead, from, thin, at(win), at([]*validation{vals[g]})) {
			return vals[g].tr
		}
	}
	if bestSet == nil {
		return vals[best].tr
	}
	// Members in the candidates' order, so a combination has one name.
	slices.SortFunc(bestSet, func(a, b *validation) int {
		return cmp.Compare(slices.Index(vals, a), slices.Index(vals, b))
	})
	return combineTrackers(bestSet, y, from, h, calib, clip)
}

// isGuard tells whether a validated candidate is one of auto's guards.
func isGuard(v *validation) bool { return slices.Contains(guardModels, v.tr.m.name()) }

// bestGuard returns the index of the guard with the lowest MAE among vals,
// −1 when there is none.
func bestGuard(vals []*validation, maes []float64) int {
	g := -1
	for i, v := range vals {
		if isGuard(v) && (g < 0 || maes[i] < maes[g]) {
			g = i
		}
	}
	return g
}

// clearlyBetter reports whether the forecasts win(o) beat guard(o) at lead
// h over the origins from on: true when they are judged on thin origins or
// more, else only when the mean of the paired differences of their absolute
// errors (the guard's less the winner's) exceeds its standard error.
func clearlyBetter(y []float64, h, from, thin int, win, guard func(o int) float64) bool {
	var n int
	for o := from; o+h < len(y); o++ {
		if num.Finite(y[o+h]) {
			n++
		}
	}
	if n >= thin {
		return true
	}
	if n < 2 {
		return false
	}
	var sum, sq float64
	for o := from; o+h < len(y); o++ {
		if t := y[o+h]; num.Finite(t) {
			d := math.Abs(t-guard(o)) - math.Abs(t-win(o))
			sum += d
			sq += d * d
		}
	}
	mean := sum / float64(n)
	variance := (sq - float64(n)*mean*mean) / float64(n-1)
	return mean > math.Sqrt(max(variance, 0)/float64(n))
}
