package analysis

import (
	"fmt"
	"math"
)

// Defaults of ImbalanceThresholds.
const (
	DefaultImbalanceWarn     = 0.2
	DefaultImbalanceCritical = 0.5
)

// ImbalanceThresholds map the load imbalance index to a level. Zero fields
// take their defaults.
type ImbalanceThresholds struct {
	// Warn is the LII from which the level is 1 (default 0.2: one side
	// carries 25 % more than the other); Critical the LII from which it is
	// 2 (default 0.5: one side carries twice the other).
	Warn, Critical float64
}

// Imbalance is the load imbalance between two replicas or pools.
type Imbalance struct {
	// MeanA and MeanB are the means of the finite samples of each side
	// over the window; NA and NB how many there were.
	MeanA, MeanB float64
	NA, NB       int
	// LII = |μa − μb| / max(μa, μb), in [0, 1] for non-negative loads:
	// 0 is balanced, 1 means one side idles. NaN when a side has no
	// finite sample or a mean is negative; 0 when both means are 0.
	LII float64
	// Level is 0 (balanced), 1 (LII ≥ Warn) or 2 (LII ≥ Critical); 0
	// when LII is NaN.
	Level int
}

// LoadImbalance computes the load imbalance index of two load series (for
// example the request rate or KV-cache usage of two replicas) over the same
// window: the samples passed in are the window.
func LoadImbalance(a, b []float64, th ImbalanceThresholds) (Imbalance, error) {
	if th.Warn == 0 {
		th.Warn = DefaultImbalanceWarn
	}
	if th.Critical == 0 {
		th.Critical = DefaultImbalanceCritical
	}
	if !(th.Warn > 0 && th.Warn <= th.Critical && th.Critical <= 1) {
		return Imbalance{}, fmt.Errorf("load imbalance: need 0 < warn ≤ critical ≤ 1, got warn %v, critical %v", th.Warn, th.Critical)
	}
	var im Imbalance
	im.MeanA, im.NA = meanFinite(a)
	im.MeanB, im.NB = meanFinite(b)
	im.LII = LII(im.MeanA, im.MeanB)
	switch {
	case im.LII >= th.Critical:
		im.Level = 2
	case im.LII >= th.Warn:
		im.Level = 1
	}
	return im, nil
}

// LII is |μa − μb| / max(μa, μb) for non-negative means: 0 when both are 0,
// NaN when either is negative or not finite.
func LII(muA, muB float64) float64 {
	if !(muA >= 0 && muB >= 0) || math.IsInf(muA, 0) || math.IsInf(muB, 0) {
		return math.NaN()
	}
	m := max(muA, muB)
	if m == 0 {
		return 0
	}
	return math.Abs(muA-muB) / m
}
