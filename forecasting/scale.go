package forecasting

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ScalePolicy holds the thresholds and limits of a scale decision.
type ScalePolicy struct {
	// MinReplicas and MaxReplicas clamp the desired replicas (MaxReplicas
	// 0: no maximum).
	MinReplicas, MaxReplicas int
	// ScaleDownStableIntervals is how many decisions in a row must ask for
	// fewer replicas before the signal goes down (at least 1).
	ScaleDownStableIntervals int
	// Cooldown is the least time between a change of the signal and a
	// step down.
	Cooldown time.Duration
	// GPUMemoryHigh (a fraction) and WaitingPerReplica are the tier-1
	// thresholds; P99Near the share of the SLO at which tier 2 fires.
	GPUMemoryHigh, WaitingPerReplica, P99Near float64
	// SLOP99 is the latency objective in seconds (0: no tier 2).
	SLOP99 float64
	// ScaleDownMargin is the hysteresis band of the forecast tier: the
	// signal steps down only to a number of replicas that carry the
	// forecast's upper bound and would run the predicted load (the peak of
	// the mean) at no more than (1 − ScaleDownMargin) of their capacity,
	// so a load hovering at one replica's capacity does not make the
	// signal go up and down. The band is measured on the predicted load:
	// the upper bound is headroom already, and an interval wider than the
	// band is hysteresis enough (0: DefaultScaleDownMargin; negative: no
	// band).
	ScaleDownMargin float64
	// ValidFor is how long a signal holds: its valid_until is now +
	// ValidFor.
	ValidFor time.Duration
	// Hold is how long a load observed keeps asking for its replicas: the
	// forecast tier asks for at least what ScaleInputs.HeldPeak, the
	// highest load observed over the last Hold, needs (0: none). Bursts of
	// requests come in clusters, and a burst just seen tells the next
	// minutes' load better than the forecast's interval, which is
	// calibrated on about a day of errors.
	Hold time.Duration
}

// ScaleInputs are what one decision knows about a target. A NaN means
// "not known": the decision goes on with what is known and says so.
type ScaleInputs struct {
	// Current is the number of replicas serving now (NaN: unknown).
	Current float64
	// CapacityPerReplica is the request rate one replica sustains, in
	// requests per second (NaN or ≤ 0: unknown).
	CapacityPerReplica float64
	// HasForecast tells whether a forecast is known; PredictedLoad is its
	// peak mean over the horizon and PredictedUpper the peak of its upper
	// bound, in requests per second; PeakTime when the peak is expected.
	HasForecast                   bool
	PredictedLoad, PredictedUpper float64
	PeakTime                      time.Time
	// Fallback is the forecast's fallback note, if any.
	Fallback string
	// GPUMemory is the highest GPU memory use of the target's replicas, a
	// fraction; Waiting the requests waiting over all its replicas; P99
	// the 99th percentile of latency in seconds.
	GPUMemory, Waiting, P99 float64
	// NoForecast, when there is no forecast, says why (default: "no
	// forecast yet"); Notes are said in the reason as they are.
	NoForecast string
	Notes      []string
	// HeldPeak is the highest load observed over the last
	// ScalePolicy.Hold, in requests per second, at HeldAt (NaN: none or
	// unknown; not used without a Hold).
	HeldPeak float64
	HeldAt   time.Time
}

// ScaleState is what a decision remembers for the next one.
type ScaleState struct {
	// Desired is the last desired replicas signalled (0: none yet).
	Desired int
	// Changed is when Desired last changed.
	Changed time.Time
	// Below counts the decisions in a row that asked for fewer than
	// Desired; BelowMax is the most replicas any of them asked for.
	Below, BelowMax int
}

// ScaleSignal is one decision.
type ScaleSignal struct {
	Desired, Current int
	// CurrentKnown is false when the current replicas were not known and
	// Current is the previous desired value (or the minimum) instead.
	CurrentKnown                  bool
	PredictedLoad, PredictedUpper float64
	CapacityPerReplica            float64
	// Tier is 1 (saturated now: GPU memory or waiting requests), 2 (P99
	// near the SLO), 3 (the forecast over the horizon) or 0 (nothing to
	// act on: hold).
	Tier int
	// Want is what the tiers ask for before hysteresis and clamps.
	Want       int
	Reason     string
	ValidUntil time.Time
}

// Decide turns what is known about a target into a desired number of
// replicas. It is a pure function of the previous state, the inputs, the
// policy and the time.
//
//   - Tier 1 (now): GPU memory use above GPUMemoryHigh asks for
//     ⌈current · use / GPUMemoryHigh⌉ replicas, and more than
//     WaitingPerReplica waiting requests per replica for
//     ⌈waiting / WaitingPerReplica⌉, at least one more than now.
//   - Tier 2: P99 at or above P99Near · SLO asks for ⌈current · P99 /
//     (P99Near · SLO)⌉, at least one more than now.
//   - Tier 3: the upper bound of the forecast peak over the horizon asks
//     for ⌈upper / capacity per replica⌉, up or down; with a Hold, for at
//     least ⌈HeldPeak / capacity per replica⌉.
//
// The highest ask wins (the lower tier on a tie). A rise is signalled at
// once; a fall only to a number of replicas that would run the forecast
// peak within the hysteresis band (ScaleDownMargin), after
// ScaleDownStableIntervals decisions in a row ask for fewer and Cooldown
// has passed since the last change, and then to the most any of them
// asked for. The result is clamped to [MinReplicas,
// MaxReplicas]. Without a forecast or a capacity only tiers 1 and 2 can
// act, and the reason says so.
//
// The reason is one sentence: what the winning ask saw (the predicted load
// and the capacity per replica, or the saturation), how many replicas that
// needs, the decision, and what held it back (the hysteresis band, the
// stable intervals, the cooldown, max_replicas, min_replicas), with what
// was not known in parentheses at the end.
func Decide(prev ScaleState, in ScaleInputs, p ScalePolicy, now time.Time) (ScaleSignal, ScaleState) {
	margin := p.ScaleDownMargin
	switch {
	case margin == 0:
		margin = DefaultScaleDownMargin
	case margin < 0 || margin >= 1:
		margin = 0
	}
	minR := max(p.MinReplicas, 0)
	clamp := func(n int) int {
		n = max(n, minR)
		if p.MaxReplicas > 0 {
			n = min(n, p.MaxReplicas)
		}
		return n
	}
	sig := ScaleSignal{PredictedLoad: math.NaN(), PredictedUpper: math.NaN(), CapacityPerReplica: math.NaN(), ValidUntil: now.Add(p.ValidFor)}
	var notes []string
	cur := 0
	if isFinite(in.Current) && in.Current >= 0 {
		cur = int(math.Round(in.Current))
		sig.CurrentKnown = true
	} else {
		cur = prev.Desired
		if cur == 0 {
			cur = max(minR, 1)
		}
		notes = append(notes, fmt.Sprintf("current replicas unknown, taken as %d", cur))
	}
	sig.Current = cur
	base := max(cur, 1) // per-replica figures of an empty target count one replica

	var asks []scaleAsk
	// hold is the number of replicas the forecast tier asks to keep when
	// stepping down: the forecast's need with the hysteresis band.
	hold := 0
	// Tier 1: saturated now.
	if isFinite(in.GPUMemory) && p.GPUMemoryHigh > 0 && in.GPUMemory > p.GPUMemoryHigh {
		n := max(ceil(float64(base)*in.GPUMemory/p.GPUMemoryHigh), cur+1)
		asks = append(asks, scaleAsk{tier: 1, n: n,
			subject: fmt.Sprintf("GPU memory use at %s (above %s)", percent(in.GPUMemory), percent(p.GPUMemoryHigh))})
	}
	if isFinite(in.Waiting) && p.WaitingPerReplica > 0 && in.Waiting/float64(base) > p.WaitingPerReplica {
		n := max(ceil(in.Waiting/p.WaitingPerReplica), cur+1)
		asks = append(asks, scaleAsk{tier: 1, n: n, plural: true,
			subject: fmt.Sprintf("%s waiting requests per replica (above %s)", num(in.Waiting/float64(base)), num(p.WaitingPerReplica))})
	}
	// Tier 2: the tail nears the objective.
	if p.SLOP99 > 0 && p.P99Near > 0 {
		if isFinite(in.P99) && in.P99 >= p.P99Near*p.SLOP99 {
			n := max(ceil(float64(base)*in.P99/(p.P99Near*p.SLOP99)), cur+1)
			asks = append(asks, scaleAsk{tier: 2, n: n,
				subject: fmt.Sprintf("P99 of %s s at %s of the %s s SLO", num(in.P99), percent(in.P99/p.SLOP99), num(p.SLOP99))})
		} else if !isFinite(in.P99) {
			notes = append(notes, "P99 unknown")
		}
	}
	// Tier 3: the forecast.
	capOK := isFinite(in.CapacityPerReplica) && in.CapacityPerReplica > 0
	if capOK {
		sig.CapacityPerReplica = in.CapacityPerReplica
	}
	switch {
	case !in.HasForecast:
		why := in.NoForecast
		if why == "" {
			why = "no forecast yet"
		}
		notes = append(notes, why+": tiers 1 and 2 only")
	case !capOK:
		notes = append(notes, "capacity per replica unknown: tiers 1 and 2 only")
	default:
		sig.PredictedLoad, sig.PredictedUpper = in.PredictedLoad, in.PredictedUpper
		upper := in.PredictedUpper
		if !isFinite(upper) {
			upper = in.PredictedLoad
		}
		if isFinite(upper) {
			n := ceil(upper / in.CapacityPerReplica)
			hold = n
			if isFinite(in.PredictedLoad) {
				hold = max(n, ceil(in.PredictedLoad/(in.CapacityPerReplica*(1-margin))))
			}
			subject := "Forecast peak " + num(in.PredictedLoad) + " req/s"
			if upper != in.PredictedLoad {
				subject += " (upper " + num(upper) + ")"
			}
			if !in.PeakTime.IsZero() {
				subject += " by " + clock(in.PeakTime, now)
			}
			if p.Hold > 0 && isFinite(in.HeldPeak) && in.HeldPeak > upper {
				// A load seen within the hold asks for more than the
				// forecast: it speaks first.
				n = ceil(in.HeldPeak / in.CapacityPerReplica)
				hold = max(hold, n)
				subject = fmt.Sprintf("The highest load of the last %s, %s req/s at %s, above the %s%s,", duration(p.Hold), num(in.HeldPeak),
					clock(in.HeldAt, now), strings.ToLower(subject[:1]), subject[1:])
			}
			asks = append(asks, scaleAsk{tier: 3, n: n, subject: subject, each: " at " + num(in.CapacityPerReplica) + " req/s each"})
			if in.Fallback != "" {
				notes = append(notes, "fallback forecast: "+in.Fallback)
			}
		}
	}

	win := scaleAsk{n: cur, plural: true}
	win.subject = fmt.Sprintf("With nothing to act on, the current %s", replicas(cur))
	for i, a := range asks {
		if i == 0 || a.n > win.n || (a.n == win.n && a.tier < win.tier) {
			win = a
		}
	}
	sig.Tier = win.tier
	want := clamp(win.n)
	sig.Want = want
	need := win.need("needs") + win.limit(p.MaxReplicas, minR)

	ref := prev.Desired
	if ref == 0 {
		ref = clamp(cur)
	}
	next := prev
	var decision string
	switch {
	case prev.Desired == 0:
		next = ScaleState{Desired: want, Changed: now}
		decision = fmt.Sprintf("starting at %d", want)
	case want > ref:
		next = ScaleState{Desired: want, Changed: now}
		decision = fmt.Sprintf("scaling up from %d%s", ref, to(want, win.n))
	case want == ref:
		next.Below, next.BelowMax = 0, 0
		decision = fmt.Sprintf("holding %d", ref)
	case clamp(max(want, hold)) >= ref:
		// Fewer replicas would do, but not with the hysteresis band.
		next.Below, next.BelowMax = 0, 0
		band := fmt.Sprintf("%d would run above %s of %s capacity at the forecast peak", ref-1, percent(1-margin), its(ref-1))
		if win.tier == 3 {
			need = win.need("would fit") + win.limit(p.MaxReplicas, minR) + ", but " + band
		} else {
			need += ", but on the forecast " + band
		}
		decision = fmt.Sprintf("holding %d", ref)
	default: // want < ref, and the band allows it
		target := clamp(max(want, hold))
		switch {
		case target > want && win.tier == 3:
			need += fmt.Sprintf(", %d to run below %s of their capacity at the forecast peak", target, percent(1-margin))
		case target > want:
			need += fmt.Sprintf(", and the forecast peak %d to run below %s of their capacity", target, percent(1-margin))
		}
		next.Below++
		next.BelowMax = max(next.BelowMax, target)
		if prev.Below == 0 {
			next.BelowMax = target
		}
		stable := max(p.ScaleDownStableIntervals, 1)
		cooled := now.Sub(prev.Changed) >= p.Cooldown
		switch {
		case next.Below >= stable && cooled:
			down := next.BelowMax
			if down != target {
				decision = fmt.Sprintf("scaling down from %d to %d, the most the last %d evaluations asked for", ref, down, next.Below)
			} else if stable > 1 {
				decision = fmt.Sprintf("scaling down from %d after %d evaluations in a row asked for fewer", ref, next.Below)
			} else {
				decision = fmt.Sprintf("scaling down from %d", ref)
			}
			next = ScaleState{Desired: down, Changed: now}
		case next.Below >= stable:
			decision = fmt.Sprintf("holding %d until the cooldown ends at %s", ref, clock(prev.Changed.Add(p.Cooldown), now))
		case cooled:
			decision = fmt.Sprintf("holding %d until %d evaluations in a row ask for fewer (%d so far)", ref, stable, next.Below)
		default:
			decision = fmt.Sprintf("holding %d until the cooldown ends at %s and %d evaluations in a row ask for fewer (%d so far)",
				ref, clock(prev.Changed.Add(p.Cooldown), now), stable, next.Below)
		}
	}
	sig.Desired = next.Desired
	notes = append(notes, in.Notes...)
	reason := need + ": " + decision
	if len(notes) > 0 {
		reason += " (" + strings.Join(notes, "; ") + ")"
	}
	sig.Reason = reason + "."
	return sig, next
}

// scaleAsk is what one tier asks for: n replicas, because of subject
// (the start of the reason's sentence); each qualifies the count
// (" at 7 req/s each"); plural says the subject takes "need".
type scaleAsk struct {
	tier          int
	n             int
	subject, each string
	plural        bool
}

// need is the ask as the start of a sentence: the subject, the verb and
// the replicas.
func (a scaleAsk) need(verb string) string {
	if a.tier == 0 {
		if a.n == 1 {
			return a.subject + " stands"
		}
		return a.subject + " stand"
	}
	if a.plural && verb == "needs" {
		verb = "need"
	}
	return a.subject + " " + verb + " " + replicas(a.n) + a.each
}

// limit says how the clamps changed the ask.
func (a scaleAsk) limit(maxR, minR int) string {
	switch {
	case maxR > 0 && a.n > maxR:
		return fmt.Sprintf(", capped at max_replicas %d", maxR)
	case a.n < minR:
		return fmt.Sprintf(", raised to min_replicas %d", minR)
	}
	return ""
}

func to(want, asked int) string {
	if want == asked {
		return ""
	}
	return fmt.Sprintf(" to %d", want)
}

func replicas(n int) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}

func its(n int) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

// num writes x with three significant digits at most and no exponent:
// 6.6, 11.8, 7, 0.0123, 1235.
func num(x float64) string {
	if !isFinite(x) {
		return "unknown"
	}
	d := 0
	if a := math.Abs(x); a > 0 && a < 100 {
		d = min(2-int(math.Floor(math.Log10(a))), 9)
	}
	s := strconv.FormatFloat(x, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// duration writes d as the configuration does: 30m, 1h, 1h30m or 2d.
func duration(d time.Duration) string {
	if day := 24 * time.Hour; d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func percent(f float64) string { return fmt.Sprintf("%.0f %%", 100*f) }

// clock writes t as hh:mm UTC, or hh:mm:ss when t is not on the minute (a
// forecast stepped by seconds), with the date when it is not now's.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	layout := "15:04"
	if t.Second() != 0 {
		layout = "15:04:05"
	}
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		layout = "Jan 2 " + layout
	}
	return t.Format(layout + " UTC")
}

// PeakWithin returns the peak of the mean over leads 1..leads (the first
// lead where it is largest) and the peak of the upper bound, as Peak,
// PeakLead and UpperPeak are over the whole horizon. leads is clamped to
// [1, horizon]; an empty forecast gives NaN and lead 0.
func (fc *Forecast) PeakWithin(leads int) (peak float64, lead int, upper float64) {
	n := min(max(leads, 1), len(fc.Mean), len(fc.Upper))
	if n == 0 {
		return math.NaN(), 0, math.NaN()
	}
	peak, upper = math.Inf(-1), math.Inf(-1)
	for i := range n {
		if fc.Mean[i] > peak {
			peak, lead = fc.Mean[i], i+1
		}
		upper = max(upper, fc.Upper[i])
	}
	return peak, lead, upper
}

// DefaultScaleDownMargin is the default hysteresis band of ScalePolicy.
const DefaultScaleDownMargin = 0.15

// ceil is ⌈x⌉ as an int, tolerant of rounding just above a whole number.
func ceil(x float64) int {
	if !isFinite(x) || x <= 0 {
		return 0
	}
	return int(math.Ceil(x - 1e-9))
}

// ReactivePolicy is the reactive autoscaler a scale signal is measured
// against: Kubernetes' HorizontalPodAutoscaler on a request-rate metric
// with a target of one replica's capacity (or a share of it). It asks for
// ⌈load / capacity⌉ replicas from the load just measured, rises at once and falls to the
// highest of its recommendations over the last ScaleDownWindow (the HPA's
// scale-down stabilisation window, 5 minutes by default).
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
	if !isFinite(load) || !(capacity > 0) {
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
	if !isFinite(load) {
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
