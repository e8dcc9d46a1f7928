// Package families generates labelled synthetic series for judging
// anomaly detectors: recurring incidents, isolated point spikes, young
// series, an extreme sample beside spikes, lasting level shifts, and
// drops and surges on a series with a weekly shape. Every
// series comes from a seeded generator, so the same seed gives the same
// series on every machine; nothing here reads a clock or keeps state.
package families

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Family names, one per kind of behaviour a detector is judged on.
const (
	Recurring  = "recurring"  // the same incident, 2 to 20 times, days apart
	PointSpike = "pointspike" // one sample at three times the level, about daily
	Young      = "young"      // plain noise, judged from its 10th sample
	YoungSpike = "youngspike" // a young series whose value triples and stays
	Extreme    = "extreme"    // one sample of 1e308, then spikes
	LevelShift = "levelshift" // the level doubles or halves for good
	Weekly     = "weekly"     // drops and surges on a series with quiet weekends
)

// Incident is one labelled event of a series, as sample indices: it starts
// at From and its last sample is To.
type Incident struct{ From, To int }

// Series is one generated series with its labels.
type Series struct {
	Family string
	// Name says what the series is: the family, its shape, its step and
	// its noise, e.g. "recurring/plateau/1h/x9".
	Name string
	// Step is the series' step in ms; T are unix ms, V the values.
	Step int64
	T    []int64
	V    []float64
	// Incidents are the events a detector must report, in time order.
	Incidents []Incident
	// JudgeFrom is the first sample whose verdict counts (the young
	// families are judged from their 10th sample, the others from the
	// start).
	JudgeFrom int
}

// Days returns the span the series covers from JudgeFrom, in days.
func (s Series) Days() float64 {
	if len(s.T) == 0 || s.JudgeFrom >= len(s.T) {
		return 0
	}
	return float64(s.T[len(s.T)-1]-s.T[s.JudgeFrom]+s.Step) / 86_400_000
}

// DefaultSeed is the seed of the families the tests and figures read.
const DefaultSeed = 46

// start is the first timestamp of every series: 2026-01-01T00:00:00Z.
const start = int64(1_767_225_600_000)

const (
	second = int64(1000)
	minute = 60 * second
	hour   = 60 * minute
	day    = 24 * hour
)

// All returns every family generated from seed, in a fixed order.
func All(seed uint64) []Series {
	var out []Series
	out = append(out, RecurringIncidents(seed)...)
	out = append(out, PointSpikes(seed+1)...)
	out = append(out, YoungNoise(seed+2, 200)...)
	out = append(out, YoungSpikes(seed+3, 50)...)
	out = append(out, ExtremeSample(seed+4)...)
	out = append(out, LevelShifts(seed+5)...)
	out = append(out, WeeklyShape(seed+6)...)
	return out
}

// daily is a daily cycle of amplitude amp (a share of the level) peaking
// at 15:00.
func daily(t int64, amp float64) float64 {
	return 1 + amp*math.Sin(2*math.Pi*float64((t-9*hour)%day)/float64(day))
}

// RecurringIncidents returns, at 1-minute, 5-minute and 1-hour steps,
// series with a daily cycle and noise and the same incident 2, 5, 9 or 20
// times, 1.5 to 3 days apart, the first after four days: a spike (5× the
// level for 10 minutes, or one step when the step is coarser), a plateau
// (an outage: about 2,000 on a series about 15, for 5 to 20 hours) or a
// dip (a tenth of the level for 1 to 4 hours).
func RecurringIncidents(seed uint64) []Series {
	rng := rand.New(rand.NewPCG(seed, 0x46))
	var out []Series
	for _, step := range []int64{minute, 5 * minute, hour} {
		for _, kind := range []string{"spike", "plateau", "dip"} {
			for _, repeats := range []int{2, 5, 9, 20} {
				level, noise := 800.0, 0.04
				if kind == "plateau" {
					level, noise = 15, 0.5
				}
				// The incidents' start and length, then the series'
				// span: a day after the last.
				type inc struct{ at, span int64 }
				var incs []inc
				at := 4*day + rng.Int64N(day)
				for range repeats {
					var span int64
					switch kind {
					case "spike":
						span = max(10*minute, step)
					case "plateau":
						span = 5*hour + rng.Int64N(15*hour)
					case "dip":
						span = hour + rng.Int64N(3*hour)
					}
					at = at / step * step
					incs = append(incs, inc{at, span})
					at += span + 36*hour + rng.Int64N(36*hour)
				}
				end := incs[len(incs)-1].at + incs[len(incs)-1].span + day
				s := Series{Family: Recurring, Name: fmt.Sprintf("recurring/%s/%s/x%d", kind, fmtStep(step), repeats), Step: step}
				for t := int64(0); t < end; t += step {
					v := level * daily(t, 0.3) * (1 + noise*rng.NormFloat64())
					if kind == "plateau" {
						// An hourly count of errors: about 15, noise 8.
						v = level + 8*rng.NormFloat64()
					}
					for _, c := range incs {
						if t >= c.at && t < c.at+c.span {
							switch kind {
							case "spike":
								v = 5 * level * daily(t, 0.3) * (1 + noise*rng.NormFloat64())
							case "plateau":
								v = 2000 * (1 + 0.05*rng.NormFloat64())
							case "dip":
								v = 0.1 * level * daily(t, 0.3) * (1 + noise*rng.NormFloat64())
							}
						}
					}
					s.T = append(s.T, start+t)
					s.V = append(s.V, max(0, v))
				}
				for _, c := range incs {
					from := int(c.at / step)
					to := int((c.at + c.span - 1) / step)
					s.Incidents = append(s.Incidents, Incident{from, min(to, len(s.T)-1)})
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// PointSpikes returns, at 15-second and 1-minute steps and noise of 1 %,
// 3.75 % and 8 % of the level, two weeks of a series about 800 with a
// daily cycle (±20 %) and a single sample at three times the level every
// 24 to 26 hours, the first after two days.
func PointSpikes(seed uint64) []Series {
	rng := rand.New(rand.NewPCG(seed, 0x46))
	var out []Series
	for _, step := range []int64{15 * second, minute} {
		for _, noise := range []float64{0.01, 0.0375, 0.08} {
			s := Series{Family: PointSpike, Name: fmt.Sprintf("pointspike/%s/noise%.4g", fmtStep(step), noise*100), Step: step}
			spikes := map[int64]bool{}
			for at := 2*day + rng.Int64N(day); at < 14*day; at += 24*hour + rng.Int64N(2*hour) {
				spikes[at/step*step] = true
			}
			for t := int64(0); t < 14*day; t += step {
				v := 800 * daily(t, 0.2) * (1 + noise*rng.NormFloat64())
				if spikes[t] {
					v = 3 * 800 * daily(t, 0.2)
					s.Incidents = append(s.Incidents, Incident{len(s.T), len(s.T)})
				}
				s.T = append(s.T, start+t)
				s.V = append(s.V, v)
			}
			out = append(out, s)
		}
	}
	return out
}

// YoungNoise returns n series of plain noise (level 100, noise 5) that
// start at once, 30 samples each at 15 seconds and at 1 minute (n/2 of
// each), judged from their 10th sample: a burst of new pods.
func YoungNoise(seed uint64, n int) []Series {
	rng := rand.New(rand.NewPCG(seed, 0x46))
	out := make([]Series, 0, n)
	for i := range n {
		step := 15 * second
		if i%2 == 1 {
			step = minute
		}
		s := Series{Family: Young, Name: fmt.Sprintf("young/%s/%d", fmtStep(step), i), Step: step, JudgeFrom: 9}
		for j := range 30 {
			s.T = append(s.T, start+int64(j)*step)
			s.V = append(s.V, 100+5*rng.NormFloat64())
		}
		out = append(out, s)
	}
	return out
}

// Noise shapes of NoiseSource.
const (
	Gaussian    = "gaussian"    // 100 + 5·N(0, 1)
	HeavyTailed = "heavytailed" // 100 + 5·t₃: Student's t with 3 degrees of freedom
	Counts      = "counts"      // a Poisson count of mean 4: integers, many ties
	Laplace     = "laplace"     // 100 + 5·L: Laplace (double exponential) of standard deviation 1
	LogNormal   = "lognormal"   // 100 + 5·e^N(0, 1): skewed, a long tail above
)

// NoiseShapes are the shapes NoiseSource draws, in a fixed order.
var NoiseShapes = []string{Gaussian, HeavyTailed, Counts, Laplace, LogNormal}

// NoiseSource returns a draw of plain noise of the given shape from rng,
// one sample a call; it panics on an unknown shape.
func NoiseSource(shape string, rng *rand.Rand) func() float64 {
	switch shape {
	case Gaussian:
		return func() float64 { return 100 + 5*rng.NormFloat64() }
	case HeavyTailed:
		return func() float64 {
			var chi2 float64
			for range 3 {
				z := rng.NormFloat64()
				chi2 += z * z
			}
			return 100 + 5*rng.NormFloat64()/math.Sqrt(chi2/3)
		}
	case Counts:
		return func() float64 {
			// Knuth's product of uniforms: the count of draws before it
			// falls below e⁻⁴.
			limit, k, p := math.Exp(-4), 0.0, 1.0
			for {
				p *= rng.Float64()
				if p <= limit {
					return k
				}
				k++
			}
		}
	case Laplace:
		return func() float64 {
			x := rng.ExpFloat64() / math.Sqrt2
			if rng.IntN(2) == 0 {
				x = -x
			}
			return 100 + 5*x
		}
	case LogNormal:
		return func() float64 { return 100 + 5*math.Exp(rng.NormFloat64()) }
	}
	panic(fmt.Sprintf("families.NoiseSource: unknown shape %q", shape))
}

// YoungSpikes returns n young series of plain noise (level 100, noise 5,
// 1-minute steps) whose value triples at the 16th sample and stays there
// for ten samples: every one of those ten is the incident.
func YoungSpikes(seed uint64, n int) []Series {
	rng := rand.New(rand.NewPCG(seed, 0x46))
	out := make([]Series, 0, n)
	for i := range n {
		s := Series{Family: YoungSpike, Name: fmt.Sprintf("youngspike/1m/%d", i), Step: minute, JudgeFrom: 9}
		for j := range 30 {
			v := 100 + 5*rng.NormFloat64()
			if j >= 15 && j < 25 {
				v = 300 + 5*rng.NormFloat64()
			}
			s.T = append(s.T, start+int64(j)*minute)
			s.V = append(s.V, v)
		}
		for j := 15; j < 25; j++ {
			s.Incidents = append(s.Incidents, Incident{j, j})
		}
		out = append(out, s)
	}
	return out
}

// ExtremeSample returns two series at 10-second steps (level 100, noise
// 5, two days): one with a sample of 1e308 after a day and single-sample
// spikes to 300 at 5, 15 and 30 minutes and 3 and 6 hours after it, and
// its twin without the extreme sample. The spikes are the incidents of
// both; the extreme sample is not labelled.
func ExtremeSample(seed uint64) []Series {
	var out []Series
	for _, extreme := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(seed, 0x46))
		name := "extreme/10s/clean"
		if extreme {
			name = "extreme/10s/1e308"
		}
		s := Series{Family: Extreme, Name: name, Step: 10 * second}
		at := day
		for t := int64(0); t < 2*day; t += 10 * second {
			v := 100 + 5*rng.NormFloat64()
			switch t {
			case at:
				if extreme {
					v = 1e308
				}
			case at + 5*minute, at + 15*minute, at + 30*minute, at + 3*hour, at + 6*hour:
				v = 300
				s.Incidents = append(s.Incidents, Incident{len(s.T), len(s.T)})
			}
			s.T = append(s.T, start+t)
			s.V = append(s.V, v)
		}
		out = append(out, s)
	}
	return out
}

// LevelShifts returns, at 1-minute and 5-minute steps, series with a daily
// cycle (±20 %) and noise (3 %) whose level doubles or halves after four
// days and stays so for six more: the shift's first sample is the
// incident.
func LevelShifts(seed uint64) []Series {
	rng := rand.New(rand.NewPCG(seed, 0x46))
	var out []Series
	for _, step := range []int64{minute, 5 * minute} {
		for _, factor := range []float64{2, 0.5} {
			s := Series{Family: LevelShift, Name: fmt.Sprintf("levelshift/%s/x%g", fmtStep(step), factor), Step: step}
			at := (4*day + rng.Int64N(day)) / step * step
			for t := int64(0); t < 10*day; t += step {
				level := 500.0
				if t >= at {
					level *= factor
				}
				if t == at {
					s.Incidents = append(s.Incidents, Incident{len(s.T), len(s.T)})
				}
				s.T = append(s.T, start+t)
				s.V = append(s.V, level*daily(t, 0.2)*(1+0.03*rng.NormFloat64()))
			}
			out = append(out, s)
		}
	}
	return out
}

func fmtStep(step int64) string {
	switch {
	case step%hour == 0:
		return fmt.Sprintf("%dh", step/hour)
	case step%minute == 0:
		return fmt.Sprintf("%dm", step/minute)
	}
	return fmt.Sprintf("%ds", step/second)
}

// WeeklyShape returns, at 5-minute, 30-minute and 1-hour steps and noise
// of 2 %, 5 % and 10 % of the level, ten weeks of a request rate about 1,000 with a
// daily cycle (±50 %) and weekends 40 % lower, and six incidents from the
// fifth week on, 5 to 8 days apart: the rate drops to a third, or surges to
// twice its level, for two hours. Most of them stay inside the range of
// values the week holds, and only the same time of past weeks tells them
// from a quiet weekend or a busy afternoon.
func WeeklyShape(seed uint64) []Series {
	rng := rand.New(rand.NewPCG(seed, 0x46))
	var out []Series
	for _, step := range []int64{5 * minute, 30 * minute, hour} {
		for _, kind := range []string{"drop", "surge"} {
			for _, noise := range []float64{0.02, 0.05, 0.1} {
				factor := 1 / 3.0
				if kind == "surge" {
					factor = 2
				}
				var incs []int64
				at := 28*day + rng.Int64N(day)
				for range 6 {
					incs = append(incs, at/step*step)
					at += 5*day + rng.Int64N(3*day)
				}
				s := Series{Family: Weekly, Name: fmt.Sprintf("weekly/%s/%s/noise%g", kind, fmtStep(step), 100*noise), Step: step}
				for t := int64(0); t < 70*day; t += step {
					v := 1000 * daily(t, 0.5) * (1 + noise*rng.NormFloat64())
					if (t/day)%7 >= 5 {
						v *= 0.6
					}
					for _, c := range incs {
						if t >= c && t < c+2*hour {
							v *= factor
						}
					}
					s.T = append(s.T, start+t)
					s.V = append(s.V, v)
				}
				for _, c := range incs {
					s.Incidents = append(s.Incidents, Incident{int(c / step), int((c + 2*hour - 1) / step)})
				}
				out = append(out, s)
			}
		}
	}
	return out
}
