package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/VictoriaMetrics/metricsql"
)

// detectorDef is one entry of the detector table.
type detectorDef struct {
	name   string
	points int      // default window in samples; 0: the detector's own default
	params []string // the parameters it accepts, sorted
	// build validates the parameters and returns the constructor of one
	// series' detector for a window in ms (> 0 when points > 0).
	build func(window int64, p params) (func(window int64) Detector, error)
}

// detectors is the table Build and Names read. Add a detector here.
// points is the detector's window in samples when the rule gives none
// (Spec.Window == 0): points × the series' step, measured from its first
// samples (see stepWindow). 0 means the detector has its own default.
var detectors = []detectorDef{
	{name: "auto", points: DefaultAutoPoints, params: []string{"floor", "k", "min_points", "p", "period", "phase", "phase_fit", "phase_k", "phase_reach", "refractory", "tolerance"}, build: buildAuto},
	{name: "ewma", params: []string{"alpha", "halflife", "k", "min_points"}, build: buildEWMA},
	{name: "levelshift", points: DefaultPoints, params: []string{"drift", "floor", "h", "min_points"}, build: buildLevelShift},
	{name: "robust", points: DefaultPoints, params: []string{"floor", "k", "min_points"}, build: buildRobust},
	{name: "seasonal", params: []string{"floor", "k", "min_periods", "period"}, build: buildSeasonal},
	{name: "sigma", points: DefaultPoints, params: []string{"k", "min_points"}, build: buildSigma},
}

// DefaultPoints is the window, in samples, of sigma, robust and levelshift
// when a rule gives none; auto's is DefaultAutoPoints, ewma's memory is
// DefaultEWMAPoints and seasonal's DefaultSeasonalPeriods periods.
const DefaultPoints = 240

// DefaultDetector is the detector of a rule that names none.
const DefaultDetector = "auto"

func buildSigma(window int64, p params) (func(int64) Detector, error) {
	k, err := p.float("k", DefaultSigmaK)
	if err != nil {
		return nil, err
	}
	minPoints, err := p.int("min_points", DefaultSigmaMinPoints, 2)
	if err != nil {
		return nil, err
	}
	return func(w int64) Detector { return NewSigma(SigmaConfig{Window: w, K: k, MinPoints: minPoints}) }, nil
}

func buildRobust(window int64, p params) (func(int64) Detector, error) {
	k, err := p.float("k", DefaultRobustK)
	if err != nil {
		return nil, err
	}
	minPoints, err := p.int("min_points", DefaultRobustMinPoints, 2)
	if err != nil {
		return nil, err
	}
	floor, err := p.float("floor", DefaultRobustFloor)
	if err != nil {
		return nil, err
	}
	return func(w int64) Detector {
		return NewRobust(RobustConfig{Window: w, K: k, MinPoints: minPoints, Floor: floor})
	}, nil
}

func buildLevelShift(window int64, p params) (func(int64) Detector, error) {
	drift, err := p.float("drift", DefaultLevelShiftDrift)
	if err != nil {
		return nil, err
	}
	h, err := p.float("h", DefaultLevelShiftH)
	if err != nil {
		return nil, err
	}
	minPoints, err := p.int("min_points", DefaultLevelShiftMinPoints, 2)
	if err != nil {
		return nil, err
	}
	floor, err := p.float("floor", DefaultRobustFloor)
	if err != nil {
		return nil, err
	}
	return func(w int64) Detector {
		return NewLevelShift(LevelShiftConfig{Window: w, Drift: drift, H: h, MinPoints: minPoints, Floor: floor})
	}, nil
}

func buildAuto(window int64, p params) (func(int64) Detector, error) {
	k, err := p.float("k", DefaultAutoK)
	if err != nil {
		return nil, err
	}
	prob, err := p.float("p", DefaultAutoP)
	if err != nil {
		return nil, err
	}
	if prob >= 0.5 {
		return nil, fmt.Errorf("parameter p of detector auto: %q must be below 0.5", p.m["p"])
	}
	refractory, err := p.int("refractory", DefaultAutoRefractory, 0)
	if err != nil {
		return nil, err
	}
	minPoints, err := p.int("min_points", DefaultAutoMinPoints, 2)
	if err != nil {
		return nil, err
	}
	floor, err := p.float("floor", DefaultRobustFloor)
	if err != nil {
		return nil, err
	}
	c := AutoConfig{K: k, P: prob, Refractory: refractory, MinPoints: minPoints, Floor: floor}
	if refractory == 0 {
		c.Refractory = -1 // none; AutoConfig reads 0 as the default
	}
	if c.Period, err = p.duration("period"); err != nil {
		return nil, err
	}
	if c.Tolerance, err = p.duration("tolerance"); err != nil {
		return nil, err
	}
	if c.PhaseK, err = p.float("phase_k", DefaultAutoPhaseK); err != nil {
		return nil, err
	}
	if c.PhaseFit, err = p.float("phase_fit", DefaultAutoPhaseFit); err != nil {
		return nil, err
	}
	if c.PhaseFit > 1 {
		return nil, fmt.Errorf("parameter phase_fit of detector auto: %q must be at most 1", p.m["phase_fit"])
	}
	if c.PhaseReach, err = p.duration("phase_reach"); err != nil {
		return nil, err
	}
	switch on := strings.TrimSpace(p.m["phase"]); on {
	case "", "on":
	case "off":
		c.PhaseK = -1
	default:
		return nil, fmt.Errorf("parameter phase of detector auto: %q must be on or off", p.m["phase"])
	}
	return func(w int64) Detector {
		c := c
		c.Window = w
		return NewAuto(c)
	}, nil
}

func buildEWMA(window int64, p params) (func(int64) Detector, error) {
	k, err := p.float("k", DefaultEWMAK)
	if err != nil {
		return nil, err
	}
	minPoints, err := p.int("min_points", DefaultEWMAMinPoints, 2)
	if err != nil {
		return nil, err
	}
	c := EWMAConfig{Window: window, K: k, MinPoints: minPoints}
	if _, ok := p.m["alpha"]; ok {
		if _, both := p.m["halflife"]; both {
			return nil, fmt.Errorf("detector ewma takes alpha or halflife, not both")
		}
		if c.Alpha, err = p.float("alpha", 0); err != nil {
			return nil, err
		}
		if c.Alpha > 1 {
			return nil, fmt.Errorf("parameter alpha of detector ewma: %q must be in (0, 1]", p.m["alpha"])
		}
	}
	if c.HalfLife, err = p.duration("halflife"); err != nil {
		return nil, err
	}
	return func(int64) Detector { return NewEWMA(c) }, nil
}

func buildSeasonal(window int64, p params) (func(int64) Detector, error) {
	k, err := p.float("k", DefaultSeasonalK)
	if err != nil {
		return nil, err
	}
	minPeriods, err := p.int("min_periods", DefaultSeasonalMinPeriods, 1)
	if err != nil {
		return nil, err
	}
	floor, err := p.float("floor", DefaultRobustFloor)
	if err != nil {
		return nil, err
	}
	period, err := p.duration("period")
	if err != nil {
		return nil, err
	}
	if period == 0 {
		period = DefaultSeasonalPeriod
	}
	if window != 0 && window/period < int64(minPeriods) {
		return nil, fmt.Errorf("detector seasonal compares %d past periods at least (min_periods) but the window %dms holds %d periods of %dms: lengthen the rule's lookback or shorten the period",
			minPeriods, window, window/period, period)
	}
	c := SeasonalConfig{Window: window, Period: period, K: k, MinPeriods: minPeriods, Floor: floor}
	return func(int64) Detector { return NewSeasonal(c) }, nil
}

// Names lists the known detector names, sorted.
func Names() []string {
	names := make([]string, len(detectors))
	for i, d := range detectors {
		names[i] = d.name
	}
	slices.Sort(names)
	return names
}

// Build validates spec and returns a Factory that makes the state of one
// series. Errors say what is wrong and what is accepted, but carry no
// position: the caller knows the file and line of the rule.
//
// Spec.Window == 0 means the detector's default window: for sigma, robust
// and levelshift DefaultPoints samples, for auto DefaultAutoPoints, each
// times the series' step as measured from its first samples (the first
// four intervals are held back to measure it); for ewma an alpha of
// 2/(DefaultEWMAPoints+1); for seasonal DefaultSeasonalPeriods periods.
func Build(spec Spec) (Factory, error) {
	i := slices.IndexFunc(detectors, func(d detectorDef) bool { return d.name == spec.Name })
	if i < 0 {
		return nil, fmt.Errorf("unknown detector %q (known: %s)", spec.Name, strings.Join(Names(), ", "))
	}
	d := detectors[i]
	if spec.Window < 0 {
		return nil, fmt.Errorf("detector %s needs a window (the rule's lookback) ≥ 0, got %dms", d.name, spec.Window)
	}
	keys := make([]string, 0, len(spec.Params))
	for key := range spec.Params {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if !slices.Contains(d.params, key) {
			return nil, fmt.Errorf("unknown parameter %q for detector %s (known: %s)", key, d.name, strings.Join(d.params, ", "))
		}
	}
	mk, err := d.build(spec.Window, params{detector: d.name, m: spec.Params})
	if err != nil {
		return nil, err
	}
	if spec.Window > 0 || d.points == 0 {
		w := spec.Window
		return func() Detector { return mk(w) }, nil
	}
	points := d.points
	return func() Detector { return &stepWindow{points: points, build: mk} }, nil
}

// params reads a detector's parameters as written in a rule.
type params struct {
	detector string
	m        map[string]string
}

// float returns the parameter name as a finite number > 0, or def when it is
// absent.
func (p params) float(name string, def float64) (float64, error) {
	raw, ok := p.m[name]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil && !math.IsInf(v, 0) {
		return 0, fmt.Errorf("parameter %s of detector %s: %q is not a number", name, p.detector, raw)
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("parameter %s of detector %s: %q must be a finite number > 0", name, p.detector, raw)
	}
	return v, nil
}

// int returns the parameter name as an integer ≥ low, or def when it is
// absent.
func (p params) int(name string, def, low int) (int, error) {
	raw, ok := p.m[name]
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(raw))
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("parameter %s of detector %s: %q is out of range", name, p.detector, raw)
	}
	if err != nil {
		return 0, fmt.Errorf("parameter %s of detector %s: %q is not an integer", name, p.detector, raw)
	}
	if v < low {
		return 0, fmt.Errorf("parameter %s of detector %s: %q must be ≥ %d", name, p.detector, raw, low)
	}
	return v, nil
}

// duration returns the parameter name as a duration > 0 in milliseconds,
// written in MetricsQL syntax (30s, 5m, 1h30m, 1d, 1w), or 0 when it is
// absent.
func (p params) duration(name string) (int64, error) {
	raw, ok := p.m[name]
	if !ok {
		return 0, nil
	}
	ms, err := metricsql.DurationValue(strings.TrimSpace(raw), 0)
	if err != nil || ms <= 0 {
		return 0, fmt.Errorf("parameter %s of detector %s: %q must be a duration > 0 such as 30m, 1h or 1d", name, p.detector, raw)
	}
	return ms, nil
}
