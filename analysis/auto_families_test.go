package analysis

import (
	"testing"

	"github.com/inferwatch/inferwatch/analysis/families"
)

// TestAutoReportsEveryRepeat: a recurring incident (a spike, an outage, a
// dip; 2 to 20 times, days apart, at 1-minute, 5-minute and 1-hour steps)
// is reported every time, and its score does not decay with the repeats:
// the last third of the repeats scores at least half as high as the first
// third on average.
func TestAutoReportsEveryRepeat(t *testing.T) {
	for _, s := range families.RecurringIncidents(families.DefaultSeed) {
		fr := runFamily(t, "auto", "", s)
		for k, r := range fr.reported {
			if !r {
				t.Errorf("%s: repeat %d of %d not reported (score %.2f)", s.Name, k+1, len(fr.reported), fr.scores[k])
			}
		}
		n := len(fr.scores)
		if n < 3 {
			continue
		}
		first, last := mean(fr.scores[:n/3]), mean(fr.scores[n-n/3:])
		if last < first/2 {
			t.Errorf("%s: the last repeats score %.2f on average, the first %.2f: %v", s.Name, last, first, fr.scores)
		}
	}
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// TestAutoReportsPointSpikes: a single sample at three times the level,
// about once a day, at 15-second and 1-minute steps with noise of 1 %,
// 3.75 % and 8 % of the level, is reported every time, with at most 0.15
// false alarms per series-day.
func TestAutoReportsPointSpikes(t *testing.T) {
	for _, s := range families.PointSpikes(families.DefaultSeed + 1) {
		fr := runFamily(t, "auto", "", s)
		for k, r := range fr.reported {
			if !r {
				t.Errorf("%s: spike %d of %d not reported (score %.2f)", s.Name, k+1, len(fr.reported), fr.scores[k])
			}
		}
		if perDay := float64(fr.falses) / s.Days(); perDay > 0.15 {
			t.Errorf("%s: %.3f false alarms per series-day, want at most 0.15", s.Name, perDay)
		}
	}
}

// TestAutoYoungSeries: in a burst of 200 new series of plain noise judged
// from their 10th sample, at most 2 raise an alarm; a young series whose
// value triples and stays there scores ≥ 1 at every sample while it stays
// (a rule with a for then fires).
func TestAutoYoungSeries(t *testing.T) {
	falses := 0
	for _, s := range families.YoungNoise(families.DefaultSeed+2, 200) {
		falses += runFamily(t, "auto", "", s).falses
	}
	if falses > 2 {
		t.Errorf("%d false alarms in 200 new series of noise, want at most 2", falses)
	}
	for _, s := range families.YoungSpikes(families.DefaultSeed+3, 50) {
		fr := runFamily(t, "auto", "", s)
		for k, r := range fr.reported {
			if !r {
				t.Errorf("%s: sample %d of the lasting spike scores %.2f", s.Name, s.Incidents[k].From, fr.scores[k])
			}
		}
	}
}

// TestAutoAcceptsALastingShift: a level that doubles or halves for good is
// reported once, when it starts; the alarm lasts until the detector takes
// the new level for normal, a day (DefaultAutoAccept) after the shift, and
// no alarm follows.
func TestAutoAcceptsALastingShift(t *testing.T) {
	for _, s := range families.LevelShifts(families.DefaultSeed + 5) {
		fr := runFamily(t, "auto", "", s)
		if !fr.reported[0] {
			t.Errorf("%s: the shift is not reported (score %.2f)", s.Name, fr.scores[0])
		}
		if fr.after != 1 {
			t.Errorf("%s: %d alarms from the shift on, want 1", s.Name, fr.after)
		}
		if fr.firing < DefaultAutoAccept || fr.firing > DefaultAutoAccept+s.Step {
			t.Errorf("%s: the alarm lasts %s, want %s (until the new level is accepted)", s.Name, fmtMs(fr.firing), fmtMs(DefaultAutoAccept))
		}
	}
}

// TestAutoShiftThatReturns: an incident that outlasts Accept is taken for
// the new level, and when the level comes back, left out again: the same
// outage two days later is reported as the first was.
func TestAutoShiftThatReturns(t *testing.T) {
	const step = 5 * 60_000
	a := NewAuto(AutoConfig{Step: step, Accept: 2 * 3_600_000})
	var starts []int
	prev := false
	for i := range 7 * 288 {
		v := 100 + float64(i%5)
		if i >= 4*288 && i < 4*288+72 || i >= 6*288 && i < 6*288+72 { // six hours at 400, twice
			v = 400 + float64(i%5)
		}
		r := a.Observe(int64(i)*step, v)
		if r.Anomalous() && !prev {
			starts = append(starts, i)
		}
		prev = r.Anomalous()
	}
	if want := []int{4 * 288, 6 * 288}; len(starts) != 2 || starts[0] != want[0] || starts[1] != want[1] {
		t.Errorf("alarms start at samples %v, want %v (each outage once)", starts, want)
	}
	if _, accepted := a.Ignored(); accepted != 2 {
		t.Errorf("%d incidents accepted, want 2", accepted)
	}
}

// TestAutoExtremeSample: one sample of 1e308 does not blind auto: the
// spikes beyond its refractory period (3 and 6 hours after) are reported
// as on the clean twin.
func TestAutoExtremeSample(t *testing.T) {
	runs := map[string]familyRun{}
	for _, s := range families.ExtremeSample(families.DefaultSeed + 4) {
		runs[s.Name] = runFamily(t, "auto", "", s)
	}
	bad, clean := runs["extreme/10s/1e308"], runs["extreme/10s/clean"]
	for k := 3; k < 5; k++ {
		if !bad.reported[k] || !clean.reported[k] {
			t.Errorf("spike %d: reported %v beside 1e308, %v on the clean series (scores %.2f, %.2f)",
				k+1, bad.reported[k], clean.reported[k], bad.scores[k], clean.scores[k])
		}
	}
}

// TestSigmaExtremeSample: one sample of 1e308 does not blind sigma for its
// window: it enters clipped, and the spikes 5, 15 and 30 minutes after it
// are reported as on the clean twin.
func TestSigmaExtremeSample(t *testing.T) {
	runs := map[string]familyRun{}
	for _, s := range families.ExtremeSample(families.DefaultSeed + 4) {
		runs[s.Name] = runFamily(t, "sigma", "", s)
	}
	bad, clean := runs["extreme/10s/1e308"], runs["extreme/10s/clean"]
	for k := range bad.reported {
		if !bad.reported[k] || !clean.reported[k] {
			t.Errorf("spike %d: reported %v beside 1e308, %v on the clean series (scores %.2f, %.2f)",
				k+1, bad.reported[k], clean.reported[k], bad.scores[k], clean.scores[k])
		}
	}
	// Unbounded, as before Clip, the extreme sample hides the spikes of
	// its window.
	unbounded := runFamily(t, "sigma", "clip=1e300", families.ExtremeSample(families.DefaultSeed + 4)[0])
	if unbounded.reported[0] {
		t.Errorf("without a bound the spike 5 minutes after 1e308 is reported (score %.2f): the case tests nothing", unbounded.scores[0])
	}
}
