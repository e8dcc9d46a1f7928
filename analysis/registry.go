package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// detectorDef is one entry of the detector table.
type detectorDef struct {
	name   string
	params []string // the parameters it accepts, sorted
	build  func(window int64, p params) (Factory, error)
}

// detectors is the table Build and Names read. Add a detector here.
var detectors = []detectorDef{
	{name: "sigma", params: []string{"k", "min_points"}, build: buildSigma},
}

func buildSigma(window int64, p params) (Factory, error) {
	k, err := p.float("k", DefaultSigmaK)
	if err != nil {
		return nil, err
	}
	minPoints, err := p.int("min_points", DefaultSigmaMinPoints, 2)
	if err != nil {
		return nil, err
	}
	c := SigmaConfig{Window: window, K: k, MinPoints: minPoints}
	return func() Detector { return NewSigma(c) }, nil
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
func Build(spec Spec) (Factory, error) {
	i := slices.IndexFunc(detectors, func(d detectorDef) bool { return d.name == spec.Name })
	if i < 0 {
		return nil, fmt.Errorf("unknown detector %q (known: %s)", spec.Name, strings.Join(Names(), ", "))
	}
	d := detectors[i]
	if spec.Window <= 0 {
		return nil, fmt.Errorf("detector %s needs a window (the rule's lookback) > 0, got %dms", d.name, spec.Window)
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
	return d.build(spec.Window, params{detector: d.name, m: spec.Params})
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
