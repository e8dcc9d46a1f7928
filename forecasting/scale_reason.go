package forecasting

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/internal/num"
)

// ScaleCause is the ask that won a scale decision; its tier follows from
// it.
type ScaleCause uint8

const (
	// CauseNone: nothing to act on, the replicas counted stand (tier 0).
	CauseNone ScaleCause = iota
	// CauseGPUMemory: GPU memory use above its threshold (tier 1).
	CauseGPUMemory
	// CauseWaiting: waiting requests per replica above their threshold
	// (tier 1).
	CauseWaiting
	// CauseP99: the 99th percentile of latency near the SLO (tier 2).
	CauseP99
	// CauseForecast: the upper bound of the forecast peak (tier 3).
	CauseForecast
	// CauseHeldPeak: the highest load observed within the hold, above the
	// forecast's upper bound (tier 3).
	CauseHeldPeak
	// CauseBurst: the headroom the load's past rises ask for, above the
	// forecast's upper bound and the hold (tier 3).
	CauseBurst
)

var causeNames = [...]string{"none", "gpu_memory", "waiting", "p99", "forecast", "held_peak", "burst"}

func (c ScaleCause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// Tier is 1 (saturated now), 2 (P99 near the SLO), 3 (the forecast) or 0
// (nothing to act on).
func (c ScaleCause) Tier() int {
	switch c {
	case CauseGPUMemory, CauseWaiting:
		return 1
	case CauseP99:
		return 2
	case CauseForecast, CauseHeldPeak, CauseBurst:
		return 3
	}
	return 0
}

// ScaleChange is what a decision does to the previous decision.
type ScaleChange uint8

const (
	// ScaleStart is the first decision: there is no previous one.
	ScaleStart ScaleChange = iota + 1
	// ScaleUp and ScaleDown change the previous decision.
	ScaleUp
	ScaleDown
	// ScaleHold keeps the previous decision.
	ScaleHold
)

func (c ScaleChange) String() string {
	switch c {
	case ScaleStart:
		return "start"
	case ScaleUp:
		return "up"
	case ScaleDown:
		return "down"
	case ScaleHold:
		return "hold"
	}
	return "change(" + strconv.Itoa(int(c)) + ")"
}

// ScaleLimits is the set of what held a decision back from what its
// winning ask needs.
type ScaleLimits uint8

const (
	// LimitMaxReplicas: the ask was capped at MaxReplicas.
	LimitMaxReplicas ScaleLimits = 1 << iota
	// LimitMinReplicas: the ask was raised to MinReplicas.
	LimitMinReplicas
	// LimitBand: the hysteresis band kept more replicas than the ask.
	LimitBand
	// LimitStable: fewer decisions in a row than needed asked for fewer.
	LimitStable
	// LimitCooldown: the cooldown after the last change had not ended.
	LimitCooldown
)

var limitNames = []string{"max_replicas", "min_replicas", "band", "stable", "cooldown"}

// String names the limits joined by "+", or "none".
func (l ScaleLimits) String() string {
	var names []string
	for i, n := range limitNames {
		if l&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}

// ScaleSeen is what a decision's tiers saw, with the thresholds they hold
// it against; NaN where a figure was unknown or not used.
type ScaleSeen struct {
	// GPUMemory is the highest GPU memory use of the replicas, a fraction;
	// tier 1 acts above GPUMemoryHigh.
	GPUMemory, GPUMemoryHigh float64
	// WaitingPerReplica is the waiting requests per replica counted; tier
	// 1 acts above WaitingHigh.
	WaitingPerReplica, WaitingHigh float64
	// P99 is the 99th percentile of latency in seconds; tier 2 acts at
	// P99Near · SLOP99 and above (SLOP99 or P99Near 0: no tier 2).
	P99, SLOP99, P99Near float64
	// CapacityPerReplica is the request rate one replica sustains, in
	// requests per second.
	CapacityPerReplica float64
	// PredictedLoad is the forecast's peak mean over the horizon and
	// PredictedUpper the peak of its upper bound, in requests per second,
	// expected by PeakTime (NaN: no forecast or no capacity, so tier 3
	// could not act).
	PredictedLoad, PredictedUpper float64
	PeakTime                      time.Time
	// HeldPeak is the highest load observed over the last Hold, at HeldAt
	// (Hold 0 and HeldPeak NaN: no hold, or nothing observed).
	Hold     time.Duration
	HeldPeak float64
	// BurstLoad is the load the target's past rises ask to be ready for
	// (0: none).
	BurstLoad float64
	HeldAt    time.Time
}

// upper is the forecast's upper bound, or its mean where it has none.
func (s ScaleSeen) upper() float64 {
	if num.Finite(s.PredictedUpper) {
		return s.PredictedUpper
	}
	return s.PredictedLoad
}

// ScaleReason is why a scale decision came out as it did, as data: what
// the winning ask saw and the replicas it needs, the observed replicas,
// the previous decision, what the new decision does to it and what held
// it back. ScaleSignal.Reason writes it as a sentence.
type ScaleReason struct {
	// At is the decision's time.
	At time.Time
	// Cause is the winning ask (its Tier the tier); Needed the replicas
	// it needs, before the clamps and the hysteresis.
	Cause  ScaleCause
	Needed int
	// Observed is the replicas serving, when ObservedKnown. Counted are
	// the replicas the per-replica figures of tiers 1 and 2 count, and
	// those that stand when there is nothing to act on: the observed
	// replicas or, when they are unknown, the previous decision (without
	// one, or at 0, MinReplicas, at least 1).
	Observed      int
	ObservedKnown bool
	Counted       int
	// Previous is the previous decision (0 when Change is ScaleStart);
	// Change is what the new decision, ScaleSignal.Desired, does to it.
	Previous int
	Change   ScaleChange
	Saw      ScaleSeen
	// Limits are what held the decision back from Needed, with the
	// figures below: the clamps MinReplicas and MaxReplicas (0: no
	// maximum), and Band, the hysteresis band in force (0: none).
	Limits                   ScaleLimits
	MinReplicas, MaxReplicas int
	Band                     float64
	// StepDownTo is set when the decision asks for fewer replicas than
	// the previous decision: how many it asks to step down to, the
	// clamped ask or, if more, the fewest that carry the forecast within
	// the band (LimitBand). At or above Previous, the band keeps the
	// previous decision.
	StepDownTo int
	// InARow is how many decisions in a row have asked to step down,
	// this one included, of the Stable needed; CooldownEnds is when the
	// cooldown after the last change ends. Set when StepDownTo is below
	// Previous.
	InARow, Stable int
	CooldownEnds   time.Time
	// HasForecast tells whether a forecast was known, and NoForecast why
	// not, when the caller said; Fallback is the forecast's fallback note
	// when tier 3 acted on it; Notes are the caller's, said as they are.
	HasForecast bool
	NoForecast  string
	Fallback    string
	Notes       []string
}

// Reason writes the decision as one sentence: what the winning ask saw
// and the replicas it needs, the new decision against the previous
// decision and what held it back, and in parentheses at the end what was
// not known.
func (s ScaleSignal) Reason() string {
	w := &s.Why
	var b strings.Builder
	b.WriteString(w.need())
	b.WriteString(": ")
	b.WriteString(w.decision(s.Desired))
	if notes := w.notes(); len(notes) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(notes, "; "))
		b.WriteString(")")
	}
	b.WriteString(".")
	return b.String()
}

// subject is what the winning ask saw, the start of the sentence.
func (w *ScaleReason) subject() string {
	s := &w.Saw
	switch w.Cause {
	case CauseGPUMemory:
		return fmt.Sprintf("GPU memory use at %s (above %s)", percent(s.GPUMemory), percent(s.GPUMemoryHigh))
	case CauseWaiting:
		return fmt.Sprintf("%s waiting requests per replica (above %s)", figure(s.WaitingPerReplica), figure(s.WaitingHigh))
	case CauseP99:
		return fmt.Sprintf("P99 of %s s at %s of the %s s SLO", figure(s.P99), percent(s.P99/s.SLOP99), figure(s.SLOP99))
	case CauseForecast:
		return "Forecast peak " + w.forecast()
	case CauseBurst:
		return fmt.Sprintf("The load past bursts call for, %s req/s, above the forecast peak %s,", figure(s.BurstLoad), w.forecast())
	case CauseHeldPeak:
		return fmt.Sprintf("The highest load of the last %s, %s req/s at %s, above the forecast peak %s,", dur.Format(s.Hold), figure(s.HeldPeak),
			clock(s.HeldAt, w.At), w.forecast())
	}
	if w.ObservedKnown {
		return "With nothing to act on, the " + strconv.Itoa(w.Counted) + " observed " + plural(w.Counted, "replica stands", "replicas stand")
	}
	return "With nothing to act on, the " + strconv.Itoa(w.Counted) + " " + plural(w.Counted, "replica counted stands", "replicas counted stand")
}

// forecast is the forecast peak, its upper bound and its time.
func (w *ScaleReason) forecast() string {
	s := &w.Saw
	out := figure(s.PredictedLoad) + " req/s"
	if u := s.upper(); u != s.PredictedLoad {
		out += " (upper " + figure(u) + ")"
	}
	if !s.PeakTime.IsZero() {
		out += " by " + clock(s.PeakTime, w.At)
	}
	return out
}

// need is the first half of the sentence: the subject, the replicas it
// needs, the clamps and the hysteresis band.
func (w *ScaleReason) need() string {
	subject := w.subject()
	if w.Cause == CauseNone {
		return subject + w.clamped()
	}
	verb, each := "needs", ""
	if w.Cause == CauseWaiting {
		verb = "need"
	}
	tier3 := w.Cause.Tier() == 3
	if tier3 {
		each = " at " + figure(w.Saw.CapacityPerReplica) + " req/s each"
	}
	if w.Limits&LimitBand == 0 {
		return subject + " " + verb + " " + replicas(w.Needed) + each + w.clamped()
	}
	band := percent(1 - w.Band)
	if w.StepDownTo >= w.Previous {
		// The band keeps the previous decision.
		fewer := w.Previous - 1
		held := fmt.Sprintf("%d would run above %s of %s capacity at the forecast peak", fewer, band, plural(fewer, "its", "their"))
		if tier3 {
			return subject + " would fit " + replicas(w.Needed) + each + w.clamped() + ", but " + held
		}
		return subject + " " + verb + " " + replicas(w.Needed) + w.clamped() + ", but on the forecast " + held
	}
	if tier3 {
		return subject + " " + verb + " " + replicas(w.Needed) + each + w.clamped() +
			fmt.Sprintf(", %d to run below %s of their capacity at the forecast peak", w.StepDownTo, band)
	}
	return subject + " " + verb + " " + replicas(w.Needed) + w.clamped() +
		fmt.Sprintf(", and the forecast peak %d to run below %s of their capacity", w.StepDownTo, band)
}

// clamped says how the clamps changed what was needed.
func (w *ScaleReason) clamped() string {
	switch {
	case w.Limits&LimitMaxReplicas != 0:
		return fmt.Sprintf(", capped at max_replicas %d", w.MaxReplicas)
	case w.Limits&LimitMinReplicas != 0:
		return fmt.Sprintf(", raised to min_replicas %d", w.MinReplicas)
	}
	return ""
}

// decision is the second half of the sentence: the new decision against
// the previous decision, and what holds a step down back.
func (w *ScaleReason) decision(desired int) string {
	out := "new decision " + strconv.Itoa(desired)
	switch w.Change {
	case ScaleStart:
		return out + ", the first"
	case ScaleUp:
		return out + fmt.Sprintf(", up from the previous decision %d", w.Previous)
	case ScaleDown:
		out += fmt.Sprintf(", down from the previous decision %d", w.Previous)
		switch {
		case desired != w.StepDownTo:
			out += fmt.Sprintf(" to the most the last %d evaluations asked for", w.InARow)
		case w.Stable > 1:
			out += fmt.Sprintf(" after %d evaluations in a row asked for fewer", w.InARow)
		}
		return out
	}
	out += ", the previous decision kept"
	stable := fmt.Sprintf("%d evaluations in a row ask for fewer (%d so far)", w.Stable, w.InARow)
	switch cool := "the cooldown ends at " + clock(w.CooldownEnds, w.At); w.Limits & (LimitStable | LimitCooldown) {
	case LimitStable | LimitCooldown:
		out += " until " + cool + " and " + stable
	case LimitCooldown:
		out += " until " + cool
	case LimitStable:
		out += " until " + stable
	}
	return out
}

// notes are what the decision did not know, and the caller's notes.
func (w *ScaleReason) notes() []string {
	var notes []string
	if !w.ObservedKnown {
		counted := strconv.Itoa(w.Counted)
		if w.Change != ScaleStart && w.Previous > 0 {
			counted = "the previous decision " + counted
		}
		notes = append(notes, "observed replicas unknown, counted as "+counted)
	}
	if w.Saw.SLOP99 > 0 && w.Saw.P99Near > 0 && !num.Finite(w.Saw.P99) {
		notes = append(notes, "P99 unknown")
	}
	switch {
	case !w.HasForecast:
		why := w.NoForecast
		if why == "" {
			why = "no forecast yet"
		}
		notes = append(notes, why+": tiers 1 and 2 only")
	case !num.Finite(w.Saw.CapacityPerReplica):
		notes = append(notes, "capacity per replica unknown: tiers 1 and 2 only")
	}
	if w.Fallback != "" {
		notes = append(notes, "fallback forecast: "+w.Fallback)
	}
	return append(notes, w.Notes...)
}

func replicas(n int) string { return strconv.Itoa(n) + " " + plural(n, "replica", "replicas") }

// plural is one when n is 1, and many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// figure writes x with three significant digits at most and no exponent:
// 6.6, 11.8, 7, 0.0123, 1235.
func figure(x float64) string {
	if !num.Finite(x) {
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
