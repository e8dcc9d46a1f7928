package analysis

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/analysis/families"
)

var (
	familiesDetector = flag.String("families.detector", "auto", "the detector TestFamilies judges")
	familiesParams   = flag.String("families.params", "", "the detector's parameters, key=value,key=value")
)

// familiesSpec is the spec TestFamilies judges with at a step.
func familiesSpec(t *testing.T, name, params string, step int64) Spec {
	t.Helper()
	spec := Spec{Name: name, Step: step, Params: map[string]string{}}
	for _, kv := range strings.Split(params, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("-families.params: %q is not key=value", kv)
		}
		spec.Params[k] = v
	}
	return spec
}

// familyRun is what a detector made of one generated series: for each
// incident whether a sample in it scored ≥ 1 and its highest score, the
// alarms (runs of scores ≥ 1) that started outside every incident, and for
// a level shift the alarms from its start on and how long the first
// lasted.
type familyRun struct {
	s        families.Series
	reported []bool
	scores   []float64
	falses   int
	after    int   // alarms from the level shift's start on
	firing   int64 // ms the level shift's first alarm lasted
}

// runFamily scores s with a new detector of spec, one sample at a time.
func runFamily(t *testing.T, name, params string, s families.Series) familyRun {
	t.Helper()
	f, err := Build(familiesSpec(t, name, params, s.Step))
	if err != nil {
		t.Fatal(err)
	}
	d := f()
	fr := familyRun{s: s, reported: make([]bool, len(s.Incidents)), scores: make([]float64, len(s.Incidents))}
	// An incident's samples, and the hour after its end (a return to
	// the level is part of it), are not judged as false alarms.
	inside := make([]bool, len(s.T))
	for _, c := range s.Incidents {
		for i := c.From; i < len(s.T) && s.T[i] <= s.T[c.To]+3_600_000; i++ {
			inside[i] = true
		}
	}
	shift := s.Family == families.LevelShift
	prev, firingFrom := false, int64(-1)
	for i := range s.T {
		r := d.Observe(s.T[i], s.V[i])
		alarm := r.Anomalous()
		if i >= s.JudgeFrom {
			for k, c := range s.Incidents {
				if i >= c.From && i <= c.To {
					fr.scores[k] = max(fr.scores[k], r.Score)
					fr.reported[k] = fr.reported[k] || alarm
				}
			}
			switch {
			case shift && i >= s.Incidents[0].From:
				if alarm && !prev {
					fr.after++
					if fr.after == 1 {
						firingFrom = s.T[i]
					}
				}
				if !alarm && prev && fr.after == 1 && firingFrom >= 0 {
					fr.firing, firingFrom = s.T[i]-firingFrom, -1
				}
			case alarm && !prev && !inside[i]:
				fr.falses++
			}
		}
		prev = alarm
	}
	if firingFrom >= 0 {
		fr.firing = s.T[len(s.T)-1] - firingFrom
	}
	return fr
}

// TestFamilies judges the default detector (or -families.detector) on the
// generated families and prints, with -v, per series: the incidents
// reported, the score of each, and the false alarms per series-day.
func TestFamilies(t *testing.T) {
	if testing.Short() {
		t.Skip("scores two million samples")
	}
	runs := familiesRuns(t, *familiesDetector, *familiesParams)
	var b strings.Builder
	for _, fr := range runs {
		if fr.s.Family == families.Young || fr.s.Family == families.YoungSpike {
			continue
		}
		b.WriteString(familyLine(fr))
	}
	b.WriteString(youngLines(runs))
	b.WriteString(familySummary(runs))
	t.Logf("detector %s, families of seed %d:\n%s", *familiesDetector, families.DefaultSeed, b.String())
}

func familiesRuns(t *testing.T, name, params string) []familyRun {
	t.Helper()
	var runs []familyRun
	for _, s := range families.All(families.DefaultSeed) {
		runs = append(runs, runFamily(t, name, params, s))
	}
	return runs
}

// familyLine writes one series' result: reported/incidents, the scores of
// the incidents in order, false alarms per series-day.
func familyLine(fr familyRun) string {
	n := 0
	for _, r := range fr.reported {
		if r {
			n++
		}
	}
	scores := make([]string, len(fr.scores))
	for i, s := range fr.scores {
		scores[i] = fmt.Sprintf("%.2f", s)
	}
	line := fmt.Sprintf("%-30s %2d/%-2d reported  FP/day %.3f  scores %s", fr.s.Name, n, len(fr.reported),
		float64(fr.falses)/fr.s.Days(), strings.Join(scores, " "))
	if fr.s.Family == families.LevelShift {
		line += fmt.Sprintf("  alarms from the shift on %d, the first firing %s", fr.after, fmtMs(fr.firing))
	}
	return line + "\n"
}

// youngLines sums the young families: false alarms over the burst of new
// series, and how many of the lasting spikes' samples scored ≥ 1.
func youngLines(runs []familyRun) string {
	var series, falses, spikes, samples, caught int
	for _, fr := range runs {
		switch fr.s.Family {
		case families.Young:
			series++
			falses += fr.falses
		case families.YoungSpike:
			spikes++
			for _, r := range fr.reported {
				samples++
				if r {
					caught++
				}
			}
		}
	}
	return fmt.Sprintf("young: %d false alarms in %d new series of noise (samples 10 to 30)\n"+
		"youngspike: %d of %d samples of %d lasting spikes scored ≥ 1\n", falses, series, caught, samples, spikes)
}

// familyTotals counts, over the runs of a family, the incidents reported
// and held.
func familyTotals(runs []familyRun, family string) (reported, incidents int, scores []float64) {
	for _, fr := range runs {
		if fr.s.Family != family {
			continue
		}
		for k, r := range fr.reported {
			incidents++
			if r {
				reported++
			}
			scores = append(scores, fr.scores[k])
		}
	}
	slices.Sort(scores)
	return reported, incidents, scores
}

var _ = math.NaN

// familySummary writes, per family, the incidents reported of those held
// and the false alarms per series-day.
func familySummary(runs []familyRun) string {
	var b strings.Builder
	type tot struct {
		rep, inc, falses int
		days             float64
	}
	order := []string{}
	sums := map[string]*tot{}
	for _, fr := range runs {
		key := fr.s.Family
		if key == families.Recurring {
			key = strings.Join(strings.Split(fr.s.Name, "/")[:3], "/")
		}
		if sums[key] == nil {
			sums[key] = &tot{}
			order = append(order, key)
		}
		x := sums[key]
		for _, r := range fr.reported {
			x.inc++
			if r {
				x.rep++
			}
		}
		x.falses += fr.falses
		x.days += fr.s.Days()
	}
	for _, k := range order {
		x := sums[k]
		fmt.Fprintf(&b, "%-24s %4d/%-4d reported  false alarms %3d  per series-day %.3f\n", k, x.rep, x.inc, x.falses, float64(x.falses)/x.days)
	}
	return b.String()
}
