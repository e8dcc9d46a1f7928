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
	// series' detector for a window and a step in ms (window > 0 when
	// points > 0; step 0 when the series' step is unknown).
	build func(window int64, p *params) (func(window, step int64) Detector, error)
	// need is what the detector needs of a series sampled every step ms
	// (> 0) for a window (0: its own), its parameters valid; nil: its
	// window (points steps by default) and no limits.
	need func(window, step int64, p *params) Needs
}

// detectors is the table Build and Names read. Add a detector here.
// points is the detector's window in samples when the rule gives none
// (Spec.Window == 0): points × the series' step (Spec.Step, or measured
// from its first samples, see stepWindow). 0 means the detector has its own
// default.
var detectors = []detectorDef{
	{name: "auto", params: []string{"accept", "floor", "incident", "incidents", "k", "min_points", "p", "period", "phase", "phase_fit", "phase_k", "phase_reach", "refractory", "sensitivity", "tolerance"},
		build: buildAuto, need: needAuto},
	{name: "ewma", params: []string{"alpha", "halflife", "k", "min_points"}, build: buildEWMA, need: needEWMA},
	{name: "levelshift", points: DefaultPoints, params: []string{"drift", "floor", "h", "min_points"}, build: buildLevelShift},
	{name: "robust", points: DefaultPoints, params: []string{"floor", "k", "min_points", "refit"}, build: buildRobust},
	{name: "seasonal", params: []string{"floor", "k", "min_periods", "period"}, build: buildSeasonal, need: needSeasonal},
	{name: "sigma", points: DefaultPoints, params: []string{"clip", "k", "min_points"}, build: buildSigma},
}

// DefaultPoints is the window, in samples, of sigma, robust and levelshift
// when a rule gives none; auto's is DefaultAutoPoints, ewma's memory is
// DefaultEWMAPoints and seasonal's DefaultSeasonalPeriods periods.
const DefaultPoints = 240

// DefaultDetector is the detector of a rule that names none.
const DefaultDetector = "auto"

func buildSigma(window int64, p *params) (func(int64, int64) Detector, error) {
	c := SigmaConfig{
		K:         p.float("k", DefaultSigmaK),
		MinPoints: p.int("min_points", DefaultSigmaMinPoints, 2),
		Clip:      p.float("clip", DefaultSigmaClip),
	}
	return built(p, func(w, _ int64) Detector {
		c := c
		c.Window = w
		return NewSigma(c)
	})
}

func buildRobust(window int64, p *params) (func(int64, int64) Detector, error) {
	c := RobustConfig{
		K:         p.float("k", DefaultRobustK),
		MinPoints: p.int("min_points", DefaultRobustMinPoints, 2),
		Floor:     p.float("floor", DefaultRobustFloor),
		Refit:     p.int("refit", 0, 1),
	}
	return built(p, func(w, _ int64) Detector {
		c := c
		c.Window = w
		return NewRobust(c)
	})
}

func buildLevelShift(window int64, p *params) (func(int64, int64) Detector, error) {
	c := LevelShiftConfig{
		Drift:     p.float("drift", DefaultLevelShiftDrift),
		H:         p.float("h", DefaultLevelShiftH),
		MinPoints: p.int("min_points", DefaultLevelShiftMinPoints, 2),
		Floor:     p.float("floor", DefaultRobustFloor),
	}
	return built(p, func(w, _ int64) Detector {
		c := c
		c.Window = w
		return NewLevelShift(c)
	})
}

// Sensitivities maps auto's sensitivity parameter to the width of its
// band, K: low alarms less, high more (docs/figures.md gives their false
// alarms per series-day on the shared NAB subset).
var Sensitivities = map[string]float64{"low": 4, "medium": DefaultAutoK, "high": 2.5}

// sensitivityK reads auto's sensitivity as the K it stands for (the
// default K when it is not given); it fails when k is given too.
func sensitivityK(p *params) float64 {
	raw, ok := p.m["sensitivity"]
	if !ok {
		return DefaultAutoK
	}
	if _, both := p.m["k"]; both {
		p.fail("sensitivity", "is given with k, and both set the band's width: give one")
		return DefaultAutoK
	}
	k, ok := Sensitivities[strings.TrimSpace(raw)]
	if !ok {
		p.fail("sensitivity", "must be low, medium or high")
		return DefaultAutoK
	}
	return k
}

// autoConfig reads auto's parameters.
func autoConfig(p *params) AutoConfig {
	c := AutoConfig{
		K:          p.float("k", sensitivityK(p)),
		P:          p.below("p", DefaultAutoP, 0.5),
		MinPoints:  p.int("min_points", DefaultAutoMinPoints, 2),
		Floor:      p.float("floor", DefaultRobustFloor),
		Period:     p.duration("period"),
		Tolerance:  p.duration("tolerance"),
		PhaseK:     p.float("phase_k", DefaultAutoPhaseK),
		PhaseFit:   p.atMost("phase_fit", DefaultAutoPhaseFit, 1),
		PhaseReach: p.duration("phase_reach"),
		Incident:   p.float("incident", DefaultAutoIncident),
		Incidents:  p.int("incidents", DefaultAutoIncidents, 0),
		Accept:     p.duration("accept"),
	}
	if c.Incident < 1 && c.Incident != 0 {
		p.fail("incident", "must be a number ≥ 1")
	}
	switch {
	case c.Incidents > maxAutoIncidents:
		p.fail("incidents", fmt.Sprintf("must be at most %d", maxAutoIncidents))
	case c.Incidents == 0:
		if _, given := p.m["incidents"]; given {
			c.Incidents = -1 // none: incidents are learned as normal
		}
	}
	c.Refractory, c.RefractoryPoints = p.span("refractory")
	switch on := strings.TrimSpace(p.m["phase"]); on {
	case "", "on":
	case "off":
		c.PhaseK = -1
	default:
		p.fail("phase", "must be on or off")
	}
	return c
}

func buildAuto(_ int64, p *params) (func(int64, int64) Detector, error) {
	c := autoConfig(p)
	return built(p, func(w, step int64) Detector {
		c := c
		c.Window, c.Step = w, step
		return NewAuto(c)
	})
}

func needAuto(window, step int64, p *params) Needs {
	c := autoConfig(p)
	c.Window, c.Step = window, step
	pl := planAuto(c)
	n := Needs{History: int64(pl.ringBins-1) * pl.width}
	if pts := c.RefractoryPoints; pts > 0 {
		n.Limits = append(n.Limits, fmt.Sprintf("refractory %d is a count of samples, the form of earlier releases: %s at this step, and another span at another; write a duration such as refractory: %s",
			pts, fmtMs(satMul(int64(pts), step)), fmtMs(satMul(int64(pts), step))))
	}
	c = pl.c
	switch {
	case c.Period <= 0:
	case pl.coarse:
		n.Limits = append(n.Limits, fmt.Sprintf("its bins of %s (the step or 15m, whichever is coarser) are too coarse for the period %s: the seen-before and phase tests are off; use a step of at most %s",
			fmtMs(pl.width), fmtMs(c.Period), fmtMs(c.Period/8)))
	case pl.narrow:
		n.Limits = append(n.Limits, fmt.Sprintf("the window %s reaches no past period of %s: the seen-before and phase tests are off; remove lookback (the detector keeps a week) or make it at least %s",
			fmtMs(window), fmtMs(c.Period), fmtMs(c.Period-c.Tolerance)))
	case c.PhaseK > 0 && !pl.phase:
		n.Limits = append(n.Limits, fmt.Sprintf("the window %s reaches fewer than two past periods of %s: the phase test is off",
			fmtMs(window), fmtMs(c.Period)))
	}
	return n
}

func buildEWMA(window int64, p *params) (func(int64, int64) Detector, error) {
	c := EWMAConfig{
		Window:    window,
		K:         p.float("k", DefaultEWMAK),
		MinPoints: p.int("min_points", DefaultEWMAMinPoints, 2),
	}
	_, alpha := p.m["alpha"]
	if _, halflife := p.m["halflife"]; alpha && halflife && p.err == nil {
		return nil, errors.New("detector ewma takes alpha or halflife, not both")
	}
	if alpha {
		c.Alpha = p.atMost("alpha", 0, 1)
	}
	c.HalfLife = p.duration("halflife")
	return built(p, func(int64, int64) Detector { return NewEWMA(c) })
}

// needEWMA: the memory of an EWMA is about two half-lives' worth of
// samples, DefaultEWMAPoints steps by default.
func needEWMA(window, step int64, p *params) Needs {
	if window > 0 {
		return Needs{History: window}
	}
	if hl := p.duration("halflife"); hl > 0 {
		return Needs{History: satMul(4, hl)}
	}
	return Needs{History: satMul(DefaultEWMAPoints, step)}
}

func buildSeasonal(window int64, p *params) (func(int64, int64) Detector, error) {
	c := SeasonalConfig{
		Window:     window,
		K:          p.float("k", DefaultSeasonalK),
		MinPeriods: p.int("min_periods", DefaultSeasonalMinPeriods, 1),
		Floor:      p.float("floor", DefaultRobustFloor),
		Period:     p.duration("period"),
	}
	if p.err != nil {
		return nil, p.err
	}
	if c.Period == 0 {
		c.Period = DefaultSeasonalPeriod
	}
	if window != 0 && window/c.Period < int64(c.MinPeriods) {
		return nil, fmt.Errorf("detector seasonal compares %d past periods at least (min_periods) but the window %dms holds %d periods of %dms: lengthen the rule's lookback or shorten the period",
			c.MinPeriods, window, window/c.Period, c.Period)
	}
	return func(int64, int64) Detector { return NewSeasonal(c) }, nil
}

func needSeasonal(window, step int64, p *params) Needs {
	if window > 0 {
		return Needs{History: window}
	}
	period := p.duration("period")
	if period == 0 {
		period = DefaultSeasonalPeriod
	}
	return Needs{History: satMul(DefaultSeasonalPeriods, period)}
}

// built returns mk, or the first error p met.
func built(p *params, mk func(window, step int64) Detector) (func(window, step int64) Detector, error) {
	if p.err != nil {
		return nil, p.err
	}
	return mk, nil
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
// and levelshift DefaultPoints samples, each times the series' step; for
// auto its own history (see Auto); for ewma an alpha of
// 2/(DefaultEWMAPoints+1); for seasonal DefaultSeasonalPeriods periods.
// The step is Spec.Step, or, when that is 0, measured from the series'
// first samples (the first four intervals are held back to measure it).
func Build(spec Spec) (Factory, error) {
	d, p, err := lookup(spec)
	if err != nil {
		return nil, err
	}
	mk, err := d.build(spec.Window, p)
	if err != nil {
		return nil, err
	}
	w, step := spec.Window, spec.Step
	switch {
	case w > 0 || d.points == 0:
		return func() Detector { return mk(w, step) }, nil
	case step > 0:
		w = satMul(int64(d.points), step)
		return func() Detector { return mk(w, step) }, nil
	}
	points := int64(d.points)
	return func() Detector {
		return &stepWindow{build: func(s int64) Detector { return mk(satMul(points, s), s) }}
	}, nil
}

// Needs is what a detector needs of a series sampled at a step.
type Needs struct {
	// History is how much history, in ms, the detector wants to have seen
	// before its verdicts are those of its steady state: what a rule
	// fetches at its first evaluation.
	History int64
	// Limits say, for a person, what the detector cannot do at this step
	// and window, and what to change; empty when it can do everything.
	Limits []string
}

// NeedsOf returns what the detector of spec needs of a series sampled
// every step ms (> 0; Spec.Step is ignored). It validates spec as Build
// does.
func NeedsOf(spec Spec, step int64) (Needs, error) {
	if step <= 0 {
		return Needs{}, fmt.Errorf("detector %s: the step must be > 0 ms, got %d", spec.Name, step)
	}
	d, p, err := lookup(spec)
	if err != nil {
		return Needs{}, err
	}
	if _, err := d.build(spec.Window, p); err != nil {
		return Needs{}, err
	}
	if d.need != nil {
		return d.need(spec.Window, step, &params{detector: d.name, m: spec.Params}), nil
	}
	if spec.Window > 0 {
		return Needs{History: spec.Window}, nil
	}
	return Needs{History: satMul(int64(d.points), step)}, nil
}

// lookup finds spec's detector and checks its window, step and parameter
// names.
func lookup(spec Spec) (detectorDef, *params, error) {
	i := slices.IndexFunc(detectors, func(d detectorDef) bool { return d.name == spec.Name })
	if i < 0 {
		return detectorDef{}, nil, fmt.Errorf("unknown detector %q (known: %s)", spec.Name, strings.Join(Names(), ", "))
	}
	d := detectors[i]
	if spec.Window < 0 {
		return d, nil, fmt.Errorf("detector %s needs a window (the rule's lookback) ≥ 0, got %dms", d.name, spec.Window)
	}
	if spec.Step < 0 {
		return d, nil, fmt.Errorf("detector %s needs a step ≥ 0, got %dms", d.name, spec.Step)
	}
	keys := make([]string, 0, len(spec.Params))
	for key := range spec.Params {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if !slices.Contains(d.params, key) {
			return d, nil, fmt.Errorf("unknown parameter %q for detector %s (known: %s)", key, d.name, strings.Join(d.params, ", "))
		}
	}
	return d, &params{detector: d.name, m: spec.Params}, nil
}

// params reads a detector's parameters as written in a rule. A reader
// that finds a bad value returns its zero value and keeps the first such
// error in err, for the builder to return once it has read them all.
type params struct {
	detector string
	m        map[string]string
	err      error
}

// fail records that parameter name's value is bad for the reason given,
// unless an earlier parameter already was.
func (p *params) fail(name, why string) {
	if p.err == nil {
		p.err = fmt.Errorf("parameter %s of detector %s: %q %s", name, p.detector, p.m[name], why)
	}
}

// float returns the parameter name as a finite number > 0, or def when it is
// absent.
func (p *params) float(name string, def float64) float64 {
	raw, ok := p.m[name]
	if !ok {
		return def
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil && !math.IsInf(v, 0) {
		p.fail(name, "is not a number")
		return 0
	}
	if !(v > 0) || math.IsInf(v, 0) {
		p.fail(name, "must be a finite number > 0")
		return 0
	}
	return v
}

// below is float for a parameter that must also be below high.
func (p *params) below(name string, def, high float64) float64 {
	v := p.float(name, def)
	if v >= high {
		p.fail(name, fmt.Sprintf("must be below %g", high))
	}
	return v
}

// atMost is float for a parameter that must also be at most high.
func (p *params) atMost(name string, def, high float64) float64 {
	v := p.float(name, def)
	if v > high {
		p.fail(name, fmt.Sprintf("must be in (0, %g]", high))
	}
	return v
}

// int returns the parameter name as an integer ≥ low, or def when it is
// absent.
func (p *params) int(name string, def, low int) int {
	raw, ok := p.m[name]
	if !ok {
		return def
	}
	v, err := strconv.Atoi(strings.TrimSpace(raw))
	switch {
	case errors.Is(err, strconv.ErrRange):
		p.fail(name, "is out of range")
	case err != nil:
		p.fail(name, "is not an integer")
	case v < low:
		p.fail(name, fmt.Sprintf("must be ≥ %d", low))
	default:
		return v
	}
	return 0
}

// span returns the parameter name as a span of time in ms (a duration in
// MetricsQL syntax such as 2h30m) or, written as a bare integer, the
// number of samples of the form earlier releases took; 0 (or 0s) is none,
// returned as a negative duration. Absent, it is (0, 0).
func (p *params) span(name string) (ms int64, points int) {
	raw, ok := p.m[name]
	if !ok {
		return 0, 0
	}
	raw = strings.TrimSpace(raw)
	if n, err := strconv.Atoi(raw); err == nil {
		switch {
		case n < 0:
			p.fail(name, "must be a duration ≥ 0 such as 2h30m (or a count of samples ≥ 0)")
		case n == 0:
			return -1, 0
		}
		return 0, n
	}
	v, err := metricsql.DurationValue(raw, 0)
	switch {
	case err != nil || strings.ContainsAny(raw, "iI"):
		p.fail(name, "must be a duration such as 30m or 2h30m (or, as before, a count of samples such as 30)")
	case v < 0:
		p.fail(name, "must be a duration ≥ 0 such as 2h30m")
	case v == 0:
		return -1, 0
	}
	return v, 0
}

// duration returns the parameter name as a duration > 0 in milliseconds,
// written in MetricsQL syntax (30s, 5m, 1h30m, 1d, 1w), or 0 when it is
// absent.
func (p *params) duration(name string) int64 {
	raw, ok := p.m[name]
	if !ok {
		return 0
	}
	ms, err := metricsql.DurationValue(strings.TrimSpace(raw), 0)
	if err != nil || ms <= 0 {
		p.fail(name, "must be a duration > 0 such as 30m, 1h or 1d")
		return 0
	}
	return ms
}
