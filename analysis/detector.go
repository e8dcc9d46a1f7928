// Package analysis holds inferwatch's statistics: pure functions and
// streaming detectors over samples. Nothing here does I/O, reads a clock or
// keeps global state; time comes in as an argument.
package analysis

// Result is the verdict of a detector on one sample.
type Result struct {
	// Score is ≥ 1 when the sample is anomalous; larger is stranger.
	// It is 0 when the detector is not Ready or the sample is not finite.
	Score float64
	// Expected is the detector's estimate of the sample's value, and
	// [Lower, Upper] the band outside which the score reaches 1.
	// All three are NaN when the detector is not Ready.
	Expected, Lower, Upper float64
	// Ready is false while the detector has too little history to judge.
	Ready bool
	// Test is the test whose verdict this is, when the detector has
	// several (TestNone when it does not say).
	Test Test
}

// Test names the test of a detector that judged a sample, for a person
// reading a finding: what its band was measured on.
type Test uint8

// The tests detectors name.
const (
	TestNone  Test = iota
	TestTail       // auto's tail test: the median and tails of the window's bins, incidents left out
	TestPhase      // auto's phase test: the range at the same phase of the past periods
	TestWeek       // auto's phase test against past weeks: the range at the same time of the past weeks
)

// String returns the test's name as findings carry it: "tail", "phase",
// "week", or "" for TestNone.
func (t Test) String() string {
	switch t {
	case TestTail:
		return "tail"
	case TestPhase:
		return "phase"
	case TestWeek:
		return "week"
	}
	return ""
}

// Against says, for a person, what the test's band was measured on.
func (t Test) Against() string {
	switch t {
	case TestTail:
		return "the median and the tails of the bins of the window, incidents left out"
	case TestPhase:
		return "the range at the same time of the past periods"
	case TestWeek:
		return "the range at the same time of the past weeks"
	}
	return ""
}

// Anomalous reports whether the result crosses the detector's threshold.
func (r Result) Anomalous() bool { return r.Ready && r.Score >= 1 }

// Detector keeps the streaming state of one series. Observe scores the
// sample (t in unix milliseconds, ascending) against the past only, and then
// adds it to that past. Non-finite values are not added and score 0.
type Detector interface {
	Observe(t int64, v float64) Result
}

// Spec names a detector and its parameters, as written in a rule.
type Spec struct {
	Name string
	// Window is the span of history a point is scored against, in
	// milliseconds (the rule's lookback when it sets one); 0 is the
	// detector's own (see Build).
	Window int64
	// Step is the series' step in milliseconds, as the rule queries it;
	// 0 when it is not known (the detectors that need it measure it from
	// the series' first samples).
	Step int64
	// Params are the detector's own parameters as written, e.g. {"k": "3"}.
	Params map[string]string
}

// Factory makes the state of one series for a validated Spec.
type Factory func() Detector

// BatchDetector is implemented by detectors that can score a run of samples
// of one series in one call, faster than one Observe per sample (no call per
// sample, the state kept in registers and cache). ObserveBatch(t, v, out)
// is exactly
//
//	for i := range t { out[i] = d.Observe(t[i], v[i]) }
//
// t and v must have the same length and out at least that length. Observe
// may take the series' state to be cold in cache, as it is when a cycle
// reaches one series among thousands, and prepare for it (auto and
// levelshift read their window's cache lines first); ObserveBatch prepares
// once per run, so a caller scoring a run of samples of one series passes
// them together. A caller that holds a Detector uses the batch path only
// where it is implemented:
//
//	if b, ok := d.(BatchDetector); ok { b.ObserveBatch(t, v, out) }
type BatchDetector interface {
	Detector
	ObserveBatch(t []int64, v []float64, out []Result)
}

// Moder is implemented by detectors that run some of their tests only once
// they have the history (or the resolution) those need. Mode says, for a
// person, which tests could not judge a sample at t (one the detector has
// observed) and why — for example "tail only: 2h of the 22h the
// seen-before test needs" — or is "" when every test could.
type Moder interface {
	Mode(t int64) string
}
