package capacity

import (
	"math"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// HPA is Kubernetes' HorizontalPodAutoscaler as its controller runs it on
// an external request-rate metric with an AverageValue target (what a
// KEDA Prometheus trigger gives it): every Sync it reads the metric, the
// mean load over the last Window (as rate(…[1m]) gives it), and asks for
// ⌈metric / (Target · capacity)⌉ replicas, unless that is within Tolerance
// of the replicas it has; a rise is limited to the larger of doubling and
// four more replicas per 15 seconds (the default scale-up policies); a
// fall goes no lower than its highest recommendation over the last
// ScaleDownWindow (the default stabilisation). The zero value of each
// field but MinReplicas, MaxReplicas and Target is Kubernetes' default.
type HPA struct {
	// MinReplicas and MaxReplicas clamp the replicas (MaxReplicas 0: no
	// maximum; MinReplicas below 1 counts as 1).
	MinReplicas, MaxReplicas int
	// Target is the share of a replica's capacity the target average
	// value is set to, in (0, 1] (0: 1).
	Target float64
	// Sync is how often the controller decides (default 15 s: the
	// controller manager's --horizontal-pod-autoscaler-sync-period).
	Sync time.Duration
	// Window is the span the metric averages the load over (default one
	// minute).
	Window time.Duration
	// Tolerance is the share by which the metric may differ from the
	// target before the replicas change (default 0.1; below 0: none).
	Tolerance float64
	// ScaleDownWindow is the stabilisation window of a fall (default 5
	// minutes; below 0: none).
	ScaleDownWindow time.Duration
}

func (h HPA) withDefaults() HPA {
	if h.Target <= 0 || h.Target > 1 {
		h.Target = 1
	}
	if h.Sync <= 0 {
		h.Sync = 15 * time.Second
	}
	if h.Window <= 0 {
		h.Window = time.Minute
	}
	switch {
	case h.Tolerance == 0:
		h.Tolerance = 0.1
	case h.Tolerance < 0:
		h.Tolerance = 0
	}
	switch {
	case h.ScaleDownWindow == 0:
		h.ScaleDownWindow = 5 * time.Minute
	case h.ScaleDownWindow < 0:
		h.ScaleDownWindow = 0
	}
	h.MinReplicas = max(h.MinReplicas, 1)
	return h
}

// Ask is a number of replicas asked for at a time.
type Ask struct {
	At time.Time
	N  int
}

// HPAState is what the controller remembers between syncs: the replicas
// it set, its recommendations within the stabilisation window, and the
// replicas it had at the start of the current scale-up period.
type HPAState struct {
	Replicas int
	recs     []reactiveRec
	ups      []reactiveRec // scale-ups within the last scale-up period: when, and by how many
}

// scaleUpPeriod is the period of the default scale-up policies: 100 % or
// 4 pods per 15 seconds, whichever is more.
const scaleUpPeriod = 15 * time.Second

// Decide is the controller's decision at now from metric, the mean load
// over its window (requests per second; NaN: not known, nothing changes).
// It is a pure function of its arguments.
func (h HPA) Decide(prev HPAState, metric, capacity float64, now time.Time) HPAState {
	h = h.withDefaults()
	cur := prev.Replicas
	if !num.Finite(metric) || !(capacity > 0) || cur <= 0 {
		// The controller does not scale a target with no replicas.
		return prev
	}
	target := h.Target * capacity
	desired := cur
	if ratio := metric / (target * float64(cur)); math.Abs(ratio-1) > h.Tolerance {
		desired = ceil(metric / target)
	}
	next := HPAState{Replicas: cur}
	// Stabilise: a fall goes no lower than the highest recommendation
	// within the window, this one included.
	down := desired
	for _, r := range prev.recs {
		if now.Sub(r.at) < h.ScaleDownWindow {
			next.recs = append(next.recs, r)
			down = max(down, r.n)
		}
	}
	next.recs = append(next.recs, reactiveRec{now, desired})
	rec := min(max(cur, desired), down)
	// Limit a rise by the default policies, counted from the replicas at
	// the start of the period.
	added := 0
	for _, u := range prev.ups {
		if now.Sub(u.at) < scaleUpPeriod {
			next.ups = append(next.ups, u)
			added += u.n
		}
	}
	start := cur - added
	rec = min(rec, max(2*start, start+4, cur))
	rec = max(rec, h.MinReplicas)
	if h.MaxReplicas > 0 {
		rec = min(rec, h.MaxReplicas)
	}
	if rec > cur {
		next.ups = append(next.ups, reactiveRec{now, rec - cur})
	}
	next.Replicas = rec
	return next
}

// Run replays the controller over l from the start of step from on, its
// target holding n replicas before: it syncs at each multiple of Sync from
// there and returns the replicas it set at each sync. The metric at a sync
// is the mean of the load over the Window before it, the load being
// constant within a step; a window that reaches before the load's start
// or holds an unknown step is not known.
func (h HPA) Run(l Load, from, n int, capacity float64) []Ask {
	h = h.withDefaults()
	start, end := l.At(from), l.At(len(l.Values))
	st := HPAState{Replicas: n}
	var asks []Ask
	for t := start; t.Before(end); t = t.Add(h.Sync) {
		st = h.Decide(st, l.Mean(t.Add(-h.Window), t), capacity, t)
		asks = append(asks, Ask{t, st.Replicas})
	}
	return asks
}

// Mean is the mean load over [from, to), the load being constant within
// a step: NaN when the span reaches outside the load or over a step whose
// load is not known.
func (l Load) Mean(from, to time.Time) float64 {
	if !to.After(from) || from.Before(l.Start) || to.After(l.At(len(l.Values))) {
		return math.NaN()
	}
	sum := 0.0
	for t := from; t.Before(to); {
		k := int(t.Sub(l.Start) / l.Step)
		next := l.At(k + 1)
		if next.After(to) {
			next = to
		}
		v := l.Values[k]
		if !num.Finite(v) {
			return math.NaN()
		}
		sum += v * next.Sub(t).Seconds()
		t = next
	}
	return sum / to.Sub(from).Seconds()
}

// ServeAsks replays asks (in time order, from the start of step from on)
// over the load from step from to its end, by a fleet of n replicas
// serving since before: an ask is paid for at once and serves startup
// later. It returns how they carried the load.
func ServeAsks(l Load, from int, asks []Ask, n int, capacity float64, startup time.Duration) Provisioning {
	var p Provisioning
	for _, d := range ServeAsksBy(l, from, asks, n, capacity, startup, 0) {
		p.Add(d)
	}
	return p
}

// ServeAsksBy is ServeAsks tallied apart for each period from the start
// of step from (the last one cut off at the load's end; period 0: one
// tally), for a bootstrap over days. The period is a multiple of the
// load's step.
func ServeAsksBy(l Load, from int, asks []Ask, n int, capacity float64, startup, period time.Duration) []Provisioning {
	f := &Fleet{Startup: startup}
	f.Start(n, l.At(from))
	per := len(l.Values)
	if period > 0 {
		per = max(int(period/l.Step), 1)
	}
	var out []Provisioning
	a := 0
	for k := from; k < len(l.Values); k++ {
		if (k-from)%per == 0 {
			out = append(out, Provisioning{})
		}
		p := &out[len(out)-1]
		at, end := l.At(k), l.At(k+1)
		for at.Before(end) {
			for a < len(asks) && !asks[a].At.After(at) {
				if asks[a].N != f.Allocated() {
					p.Changes++
					f.Set(asks[a].N, asks[a].At)
				}
				a++
			}
			next := end
			if a < len(asks) && asks[a].At.Before(end) {
				next = asks[a].At
			}
			f.Serve(l.Values[k], capacity, at, next, p)
			at = next
		}
	}
	return out
}

// StepAsks are asks made at the start of each step from step from on.
func StepAsks(l Load, from int, asks []int) []Ask {
	out := make([]Ask, len(asks))
	for j, n := range asks {
		out[j] = Ask{l.At(from + j), n}
	}
	return out
}
