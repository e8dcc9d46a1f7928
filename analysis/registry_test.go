package analysis

import (
	"slices"
	"strings"
	"testing"
)

func TestBuild(t *testing.T) {
	f := func(spec Spec, wantErr string, wantK float64, wantMin int) {
		t.Helper()
		fac, err := Build(spec)
		if wantErr != "" {
			if err == nil || err.Error() != wantErr {
				t.Errorf("Build(%+v): error %v, want %q", spec, err, wantErr)
			}
			return
		}
		if err != nil {
			t.Errorf("Build(%+v): %v", spec, err)
			return
		}
		a, b := fac(), fac()
		s, ok := a.(*Sigma)
		if !ok {
			t.Errorf("Build(%+v) made a %T, want *Sigma", spec, a)
			return
		}
		if a == b {
			t.Errorf("Build(%+v): the factory returned the same state twice", spec)
		}
		if s.window != spec.Window || s.k != wantK || s.minPoints != wantMin {
			t.Errorf("Build(%+v): window=%d k=%g min_points=%d, want %d %g %d", spec, s.window, s.k, s.minPoints, spec.Window, wantK, wantMin)
		}
	}
	p := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const w = 3_600_000

	f(Spec{Name: "sigma", Window: w}, "", 3, 10)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "2.5", "min_points", "30")}, "", 2.5, 30)
	f(Spec{Name: "sigma", Window: 1, Params: p("k", " 4 ", "min_points", "2")}, "", 4, 2)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "1e-3")}, "", 1e-3, 10)

	f(Spec{Name: "foo", Window: w}, `unknown detector "foo" (known: auto, ewma, levelshift, robust, seasonal, sigma)`, 0, 0)
	f(Spec{Name: "", Window: w}, `unknown detector "" (known: auto, ewma, levelshift, robust, seasonal, sigma)`, 0, 0)
	f(Spec{Name: "Sigma", Window: w}, `unknown detector "Sigma" (known: auto, ewma, levelshift, robust, seasonal, sigma)`, 0, 0)
	f(Spec{Name: "sigma", Window: -5}, `detector sigma needs a window (the rule's lookback) ≥ 0, got -5ms`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("x", "1")}, `unknown parameter "x" for detector sigma (known: clip, k, min_points)`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "2", "window", "1h", "b", "1")}, `unknown parameter "b" for detector sigma (known: clip, k, min_points)`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "abc")}, `parameter k of detector sigma: "abc" is not a number`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "")}, `parameter k of detector sigma: "" is not a number`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "0")}, `parameter k of detector sigma: "0" must be a finite number > 0`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "-3")}, `parameter k of detector sigma: "-3" must be a finite number > 0`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "NaN")}, `parameter k of detector sigma: "NaN" must be a finite number > 0`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "+Inf")}, `parameter k of detector sigma: "+Inf" must be a finite number > 0`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("k", "1e999")}, `parameter k of detector sigma: "1e999" must be a finite number > 0`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("min_points", "1")}, `parameter min_points of detector sigma: "1" must be ≥ 2`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("min_points", "2.5")}, `parameter min_points of detector sigma: "2.5" is not an integer`, 0, 0)
	f(Spec{Name: "sigma", Window: w, Params: p("min_points", "99999999999999999999")}, `parameter min_points of detector sigma: "99999999999999999999" is out of range`, 0, 0)

	f(Spec{Name: "auto", Window: w, Params: p("phase", "maybe")}, `parameter phase of detector auto: "maybe" must be on or off`, 0, 0)
	f(Spec{Name: "auto", Window: w, Params: p("phase_fit", "1.5")}, `parameter phase_fit of detector auto: "1.5" must be in (0, 1]`, 0, 0)
	f(Spec{Name: "auto", Window: w, Params: p("period", "-1h")}, `parameter period of detector auto: "-1h" must be a duration > 0 such as 30m, 1h or 1d`, 0, 0)
	f(Spec{Name: "auto", Window: w, Params: p("phase_k", "0")}, `parameter phase_k of detector auto: "0" must be a finite number > 0`, 0, 0)
}

// TestAutoParams: auto's period and phase test are set from a rule.
func TestAutoParams(t *testing.T) {
	build := func(params map[string]string) *Auto {
		t.Helper()
		fac, err := Build(Spec{Name: "auto", Window: 3 * 86_400_000, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		return fac().(*Auto)
	}
	if a := build(nil); !a.ph.on() || a.period != DefaultSeasonalPeriod || a.ph.k != DefaultAutoPhaseK || a.ph.fit != DefaultAutoPhaseFit {
		t.Errorf("defaults: period %d, phase test %+v", a.period, a.ph)
	}
	if a := build(map[string]string{"phase": "off"}); a.ph.on() {
		t.Error("phase: off leaves the phase test on")
	}
	a := build(map[string]string{"period": "12h", "tolerance": "30m", "phase_k": "4", "phase_fit": "0.5", "phase_reach": "15m"})
	if a.period != 43_200_000 || a.tol != 1_800_000 || a.ph.k != 4 || a.ph.fit != 0.5 || a.ph.reach != 900_000 {
		t.Errorf("period %d tolerance %d phase test %+v", a.period, a.tol, a.ph)
	}
	// A window shorter than two periods has no phase test.
	fac, err := Build(Spec{Name: "auto", Window: 3_600_000})
	if err != nil {
		t.Fatal(err)
	}
	if fac().(*Auto).ph.on() {
		t.Error("a one-hour window has a phase test")
	}
}

// TestRobustRefit: robust's refit is set from a rule, whole and ≥ 1.
func TestRobustRefit(t *testing.T) {
	for _, c := range []struct {
		refit string
		want  int
		err   string
	}{
		{"", 0, ""},
		{"1", 1, ""},
		{" 60 ", 60, ""},
		{"0", 0, `parameter refit of detector robust: "0" must be ≥ 1`},
		{"1.5", 0, `parameter refit of detector robust: "1.5" is not an integer`},
	} {
		params := map[string]string{"refit": c.refit}
		if c.refit == "" {
			params = nil
		}
		fac, err := Build(Spec{Name: "robust", Window: 3_600_000, Params: params})
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("refit %q: error %v, want %s", c.refit, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("refit %q: %v", c.refit, err)
		}
		if got := fac().(*Robust).refit; got != c.want {
			t.Errorf("refit %q: %d, want %d", c.refit, got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	names := Names()
	if !slices.Equal(names, []string{"auto", "ewma", "levelshift", "robust", "seasonal", "sigma"}) {
		t.Fatalf("Names() = %q", names)
	}
	names[0] = "changed"
	if Names()[0] != "auto" {
		t.Fatal("Names returns the table itself, not a copy")
	}
	for _, n := range Names() {
		for _, w := range []int64{0, 30 * 86_400_000} {
			if _, err := Build(Spec{Name: n, Window: w}); err != nil {
				t.Errorf("Build(%q) with window %dms and default parameters: %v", n, w, err)
			}
		}
	}
}

// TestAutoSensitivity: auto's sensitivity stands for the band's width K
// (low 4, medium 3, high 2.5), and is refused beside k or with another
// value.
func TestAutoSensitivity(t *testing.T) {
	for s, want := range map[string]float64{"low": 4, "medium": 3, "high": 2.5} {
		f, err := Build(Spec{Name: "auto", Step: 60_000, Params: map[string]string{"sensitivity": s}})
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := f().(*Auto); !ok || a.k != want {
			t.Errorf("sensitivity %s: detector %T with K %v, want auto with K %v", s, f(), a.k, want)
		}
	}
	for params, want := range map[[2]string]string{
		{"sensitivity", "loud"}: `"loud" must be low, medium or high`,
		{"k", "3"}:              `is given with k, and both set the band's width`,
	} {
		p := map[string]string{params[0]: params[1]}
		if params[0] == "k" {
			p["sensitivity"] = "low"
		}
		if _, err := Build(Spec{Name: "auto", Params: p}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("params %v: error %v, want %q", p, err, want)
		}
	}
}
