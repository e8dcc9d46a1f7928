// Package capacity replays how the replicas an autoscaler asks for carry a
// load: a fleet whose replicas are paid for at once and serve after their
// start-up, a reactive autoscaler to measure the scale signal against
// (Kubernetes' HorizontalPodAutoscaler on the request rate), perfect
// foresight as a bound, the figures that judge a policy (replica-minutes,
// under-provisioned minutes, the worst shortfall, scale changes), and the
// frontier that sets policies against each other at each other's cost and
// shortfall. Everything is a pure function of slices and times;
// `inferwatch backtest scale` runs the scale rule through rules.Replay
// and judges what it asked for here.
package capacity

import (
	"math"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// Load is a load on an even step: Values[i] is the requests per second
// over [Start + i·Step, Start + (i+1)·Step), NaN where it is not known.
type Load struct {
	Start  time.Time
	Step   time.Duration
	Values []float64
}

// At is the start of step i.
func (l Load) At(i int) time.Time { return l.Start.Add(time.Duration(i) * l.Step) }

// Peak is the highest known load from step i on (0 when none is known).
func (l Load) Peak(i int) float64 {
	peak := 0.0
	for _, v := range l.Values[i:] {
		if num.Finite(v) {
			peak = max(peak, v)
		}
	}
	return peak
}

// Needed is the replicas a load needs at capacity requests per second
// each, ⌈load / capacity⌉, at least minReplicas and at most maxReplicas
// (0: no maximum); an unknown load needs minReplicas, at least one.
func Needed(load, capacity float64, minReplicas, maxReplicas int) int {
	n := max(minReplicas, 1)
	if num.Finite(load) {
		n = max(ceil(load/capacity), minReplicas, 0)
	}
	if maxReplicas > 0 {
		n = min(n, maxReplicas)
	}
	return n
}

// Fleet is a target's replicas as an autoscaler's asks make them: a
// replica asked for is paid for at once and serves from Startup later; one
// let go stops at once, the youngest (the one still starting, if any)
// first.
type Fleet struct {
	Startup time.Duration
	// cohorts are the replicas asked for together, oldest first; those
	// serving are merged into the first.
	cohorts []cohort
	n       int
}

type cohort struct {
	start time.Time
	n     int
}

// Set asks for n replicas at now.
func (f *Fleet) Set(n int, now time.Time) {
	n = max(n, 0)
	// Merge the cohorts that serve by now: their start no longer matters.
	for len(f.cohorts) > 1 && !f.cohorts[1].start.Add(f.Startup).After(now) {
		f.cohorts[1].n += f.cohorts[0].n
		f.cohorts = f.cohorts[1:]
	}
	if n > f.n {
		f.cohorts = append(f.cohorts, cohort{now, n - f.n})
	}
	for drop := f.n - n; drop > 0; {
		last := &f.cohorts[len(f.cohorts)-1]
		k := min(drop, last.n)
		last.n -= k
		drop -= k
		if last.n == 0 {
			f.cohorts = f.cohorts[:len(f.cohorts)-1]
		}
	}
	f.n = n
}

// Start sets n replicas that have served since before now.
func (f *Fleet) Start(n int, now time.Time) {
	f.cohorts, f.n = f.cohorts[:0], 0
	f.Set(n, now.Add(-f.Startup))
}

// Allocated is the number of replicas asked for.
func (f *Fleet) Allocated() int { return f.n }

// Ready is the number of replicas serving at t.
func (f *Fleet) Ready(t time.Time) int {
	n := 0
	for _, c := range f.cohorts {
		if !c.start.Add(f.Startup).After(t) {
			n += c.n
		}
	}
	return n
}

// Provisioning tallies how a fleet carried a load.
type Provisioning struct {
	// ReplicaMinutes are the replicas asked for, times the minutes they
	// were asked for (what is paid for, starting replicas included).
	ReplicaMinutes float64
	// Minutes is the time tallied, in minutes; UnknownMinutes the part of
	// it whose load was not known (not judged for under-provisioning).
	Minutes, UnknownMinutes float64
	// UnderMinutes are the minutes during which the load was above the
	// ready replicas' capacity; WorstShortfall the most it was above, in
	// requests per second (0 when it never was).
	UnderMinutes, WorstShortfall float64
	// Changes counts the changes of the replicas asked for.
	Changes int
}

// Add adds the tally q to p: minutes and replica-minutes add up, the
// worst shortfall is the worse of the two.
func (p *Provisioning) Add(q Provisioning) {
	p.ReplicaMinutes += q.ReplicaMinutes
	p.Minutes += q.Minutes
	p.UnknownMinutes += q.UnknownMinutes
	p.UnderMinutes += q.UnderMinutes
	p.WorstShortfall = max(p.WorstShortfall, q.WorstShortfall)
	p.Changes += q.Changes
}

// Serve tallies [from, to), during which the load (requests per second,
// NaN: unknown) was constant and the fleet unchanged but for replicas
// becoming ready.
func (f *Fleet) Serve(load, capacity float64, from, to time.Time, acc *Provisioning) {
	if !to.After(from) {
		return
	}
	minutes := func(a, b time.Time) float64 { return b.Sub(a).Minutes() }
	acc.Minutes += minutes(from, to)
	acc.ReplicaMinutes += float64(f.n) * minutes(from, to)
	if !num.Finite(load) {
		acc.UnknownMinutes += minutes(from, to)
		return
	}
	// The times inside [from, to) at which a replica becomes ready cut it
	// into pieces of constant ready replicas.
	at := from
	for at.Before(to) {
		next := to
		for _, c := range f.cohorts {
			if r := c.start.Add(f.Startup); r.After(at) && r.Before(next) {
				next = r
			}
		}
		if short := load - float64(f.Ready(at))*capacity; short > 1e-9*max(load, 1) {
			acc.UnderMinutes += minutes(at, next)
			acc.WorstShortfall = max(acc.WorstShortfall, short)
		}
		at = next
	}
}

// Serve replays a policy's asks over the load: asks[j] is the replicas it
// asked for at the start of step from+j, paid for at once and serving
// startup later, by a fleet of n replicas serving since before step from.
// It returns how they carried the load of those steps.
func Serve(l Load, from int, asks []int, n int, capacity float64, startup time.Duration) Provisioning {
	return ServeAsks(l, from, StepAsks(l, from, asks), n, capacity, startup)
}

// Foresight returns what knowing the load asks for at each step from
// step from on: the replicas that carry the peak from that step until the
// replicas asked for at the next one serve (startup later, in whole
// steps), at least minReplicas and at most maxReplicas (0: no maximum); a
// stretch whose load is not known keeps the replicas asked for before. No
// step is short, at the fewest replica-minutes a decision a step can pay
// for that: a bound on what a policy can do, not a policy.
func Foresight(l Load, from int, capacity float64, startup time.Duration, minReplicas, maxReplicas int) []int {
	n := len(l.Values)
	ahead := int((startup + l.Step - 1) / l.Step)
	asks := make([]int, 0, max(n-from, 0))
	prev := 0
	for k := from; k < n; k++ {
		peak := math.NaN()
		for _, v := range l.Values[k : min(k+ahead, n-1)+1] {
			if num.Finite(v) && !(v <= peak) {
				peak = v
			}
		}
		r := prev
		if num.Finite(peak) {
			r = max(ceil(peak/capacity), minReplicas)
		}
		if maxReplicas > 0 {
			r = min(r, maxReplicas)
		}
		asks = append(asks, r)
		prev = r
	}
	return asks
}

// ceil is ⌈x⌉ as an int, tolerant of rounding just above a whole number.
func ceil(x float64) int {
	if !num.Finite(x) || x <= 0 {
		return 0
	}
	return int(math.Ceil(x - 1e-9))
}
