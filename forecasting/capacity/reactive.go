package capacity

import (
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// ReactivePolicy is the reactive autoscaler a scale signal is measured
// against: Kubernetes' HorizontalPodAutoscaler on a request-rate metric
// with a target of one replica's capacity (or a share of it). It asks for
// ⌈load / capacity⌉ replicas from the load just measured, rises at once
// and falls to the highest of its recommendations over the last
// ScaleDownWindow (the HPA's scale-down stabilisation window, 5 minutes by
// default).
type ReactivePolicy struct {
	// MinReplicas and MaxReplicas clamp the replicas (MaxReplicas 0: no
	// maximum).
	MinReplicas, MaxReplicas int
	// Target is the share of a replica's capacity the HPA's target value
	// is set to, in (0, 1] (0: 1, the whole capacity): it asks for
	// ⌈load / (Target · capacity)⌉.
	Target float64
	// ScaleDownWindow is the stabilisation window of a fall.
	ScaleDownWindow time.Duration
}

// ReactiveState is what the reactive policy remembers: the replicas it
// asked for and its recommendations within the window.
type ReactiveState struct {
	Desired int
	recs    []reactiveRec
}

type reactiveRec struct {
	at time.Time
	n  int
}

// DecideReactive is the reactive policy's decision at now from the load
// measured over the last interval (requests per second; NaN: not known,
// the replicas stay). It is a pure function of its arguments.
func DecideReactive(prev ReactiveState, load, capacity float64, p ReactivePolicy, now time.Time) ReactiveState {
	if !num.Finite(load) || !(capacity > 0) {
		return prev
	}
	if p.Target > 0 && p.Target < 1 {
		capacity *= p.Target
	}
	n := max(ceil(load/capacity), max(p.MinReplicas, 0))
	if p.MaxReplicas > 0 {
		n = min(n, p.MaxReplicas)
	}
	next := ReactiveState{Desired: prev.Desired}
	// Keep the recommendations still inside the window, and this one.
	for _, r := range prev.recs {
		if now.Sub(r.at) < p.ScaleDownWindow {
			next.recs = append(next.recs, r)
		}
	}
	next.recs = append(next.recs, reactiveRec{now, n})
	switch {
	case n >= prev.Desired:
		next.Desired = n
	default:
		down := n
		for _, r := range next.recs {
			down = max(down, r.n)
		}
		next.Desired = min(down, prev.Desired)
	}
	return next
}

// Reactive returns what the reactive policy asks for at the start of each
// step from step from (at least 1) on, from the load of the step before
// it, having asked for n replicas before.
func Reactive(l Load, from, n int, capacity float64, p ReactivePolicy) []int {
	st := ReactiveState{Desired: n}
	asks := make([]int, 0, max(len(l.Values)-from, 0))
	for k := from; k < len(l.Values); k++ {
		st = DecideReactive(st, l.Values[k-1], capacity, p, l.At(k))
		asks = append(asks, st.Desired)
	}
	return asks
}
