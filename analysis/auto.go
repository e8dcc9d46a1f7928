package analysis

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/inferwatch/inferwatch/internal/dur"
)

// Defaults of AutoConfig. K, P and the phase test's PhaseK and PhaseFit
// were chosen on the shared NAB subset, by reasoning and checked by
// leaving each category out (see Auto); the durations were set by
// reasoning, as spans of time rather than counts of samples, so that a
// series behaves alike at a 15-second and a 5-minute step.
const (
	DefaultAutoK = 3.0
	// DefaultAutoP is the tail probability of the bins' extremes whose
	// quantiles measure the spread of each side of the median.
	DefaultAutoP = 0.009
	// DefaultAutoRefractory is how long, in ms, alarms are held after one:
	// two and a half hours, 30 steps of five minutes.
	DefaultAutoRefractory = int64(150 * time.Minute / time.Millisecond)
	DefaultAutoMinPoints  = 10
	// DefaultAutoTolerance sets Tolerance to Period/12 (two hours of a
	// day) when it is not given.
	DefaultAutoTolerance = 12
	// DefaultAutoPhaseK is the width of the phase test's band in residual
	// RMSs.
	DefaultAutoPhaseK = 3.0
	// DefaultAutoPhaseReach sets PhaseReach to Period/24 (an hour of a
	// day either side) when it is not given.
	DefaultAutoPhaseReach = 24
	// DefaultAutoPhaseFit is the largest ratio of the phase residuals' RMS
	// to the series' standard deviation at which the phase test judges:
	// the past periods must explain at least 91% of the variance.
	DefaultAutoPhaseFit = 0.3
	// DefaultAutoBin is the width, in ms, of the bins Auto summarises the
	// past in: 15 minutes (or the step, when it is coarser).
	DefaultAutoBin = int64(15 * time.Minute / time.Millisecond)
	// DefaultAutoBins is the tail test's horizon in bins when no window is
	// given: a week of 15-minute bins.
	DefaultAutoBins = 672
	// DefaultAutoPeriods is how many past periods the seen-before and
	// phase tests read when no window is given.
	DefaultAutoPeriods = 7
	// DefaultAutoSample is the most samples the thinned window of the
	// median and spread holds.
	DefaultAutoSample = 384
	// DefaultAutoIncident is the tail score from which a sample is an
	// incident: its bin is left out of the tails, the seen-before test
	// and the phase test, so that the next incident is judged against
	// normal, not against the last incident.
	DefaultAutoIncident = 1.5
	// DefaultAutoAccept is how long, in ms, an incident lasts before the
	// detector takes its level for the new normal: a day.
	DefaultAutoAccept = int64(24 * time.Hour / time.Millisecond)
	// DefaultAutoIncidents is the most incidents a week that are left out
	// of what defines normal: a series that goes that far more often does
	// so normally, and its tails learn it.
	DefaultAutoIncidents = 4
)

// MaxAutoScore is the highest score Auto reports: a departure from a
// series that never varied, which no spread can measure, scores it, and so
// does anything stranger.
const MaxAutoScore = 100

// maxAutoBins bounds the bins an Auto keeps: a longer history widens them.
const maxAutoBins = 1024

// maxAutoIncidents bounds AutoConfig.Incidents.
const maxAutoIncidents = 8

// incidentSpan is the span, in ms, over which AutoConfig.Incidents are
// counted: a week.
const incidentSpan = int64(7 * 24 * time.Hour / time.Millisecond)

// AutoConfig configures an Auto detector. Zero fields take their defaults.
type AutoConfig struct {
	// Window is the span, in ms, of the tail test's history (0: the
	// default, DefaultAutoBins bins: a week at steps up to 15 minutes).
	// A window given also bounds how far back the seen-before and phase
	// tests read: Window plus the larger of Tolerance and PhaseReach.
	Window int64
	// Step is the series' step in ms, as the rule queries it (0:
	// unknown; the bins are then DefaultAutoBin wide and the phase test
	// counts residuals by the smallest step seen). It must be ≥ 0.
	Step int64
	// K is the width of the band in tail standard deviations (default 3).
	K float64
	// P is the tail probability whose quantiles, over the bins' maxima
	// and minima, measure the spread of each side of the median (default
	// 0.009).
	P float64
	// Refractory is how long, in ms, after an alarm the scores are held
	// below the threshold (default DefaultAutoRefractory; negative: none).
	Refractory int64
	// RefractoryPoints, when > 0, holds the scores for that many samples
	// after an alarm instead: the form of earlier releases, which behaves
	// differently at different steps.
	RefractoryPoints int
	// MinPoints is how many samples the thinned window must hold before
	// the detector judges (default 10, at least 2).
	MinPoints int
	// Floor is the smallest spread relative to the median's magnitude
	// (default 0.001), as in RobustConfig.
	Floor float64
	// Period is the season, in ms, of the seen-before and phase tests
	// (default one day; negative: no such tests).
	Period int64
	// Tolerance is how far from the same phase of a past period a sample
	// may lie and still count as seen before, in ms (default Period/12).
	Tolerance int64
	// PhaseK is the width of the phase test's band in residual RMSs
	// (default 3; negative: no phase test).
	PhaseK float64
	// PhaseFit is how well the past periods must predict the series for
	// the phase test to judge (default 0.3; in (0, 1]).
	PhaseFit float64
	// PhaseReach is how far either side of the same phase of a past period
	// the phase test reads the range the series took, in ms (default
	// Period/24; negative: only the bin at the phase).
	PhaseReach int64
	// Bin is the narrowest bin, in ms (default DefaultAutoBin); the bins
	// are at least a step wide, and wider when the history would need
	// more than maxAutoBins.
	Bin int64
	// Sample is the most samples the thinned window holds (default
	// DefaultAutoSample, at least MinPoints).
	Sample int
	// Incident is the tail score from which a sample is an incident and
	// its bin is left out of what defines normal (default 1.5, at least
	// 1).
	Incident float64
	// Accept is how long, in ms, an incident on one side of the band
	// lasts before its bins count as normal again: the detector accepts
	// a lasting level shift (default one day; negative: never).
	Accept int64
	// Incidents is the most incidents a week left out of what defines
	// normal (default 4, at most 8; negative: none, and the detector
	// learns incidents as normal).
	Incidents int
}

// Auto is the default detector of a new rule: a robust, two-sided tail test
// with an alarm refractory period and, for a series that repeats itself
// from one period to the next, tests against the same phase of the past
// periods. It keeps summaries of the past rather than its samples, so that
// a week of history takes the same room (under 16 KiB) at any step.
//
// The past is held as bins of 15 minutes (or of the step, if coarser): each
// bin's lowest and highest value and its mean. A sample x at t is judged
// against a horizon of a week of bins (DefaultAutoBins): m and s_eff are the
// median and the spread of Robust (1.4826·MAD, floored) of a thinned sample
// of the horizon (at most DefaultAutoSample samples spread evenly over it),
// and U and L the (1−P)-quantile of the bins' maxima and the P-quantile of
// their minima, the bin being filled included (the k-th smallest of n read
// as the k/(n+1) quantile, so that U is exceeded by P of the bins on
// average however many bins there are, once they can hold a P tail).
// Each side of the median gets its own spread, read from how far its tail
// reaches, as a normal standard deviation:
//
//	s_hi = max(s_eff, (U − m)/Φ⁻¹(1 − P/3))      used when x ≥ m
//	s_lo = max(s_eff, (m − L)/Φ⁻¹(1 − P/3))      used when x < m
//	Score = min(|x − m| / (K·s_side), MaxAutoScore)
//	Expected = m, Lower = m − K·s_lo, Upper = m + K·s_hi
//
// (a 15-minute bin of a 5-minute series holds three samples, so the bins'
// P tail is about the samples' P/3 tail: 0.3 % by default, Φ⁻¹ = 2.75).
// While the n bins are too few to hold a P tail (n+1 < 1/P, the first 27
// hours by default), U and L are their extremes, whose tail is 1/(n+1),
// and P there reads 1/(n+1): a young series' band is as wide, in its
// spread, as a week-old one's, not as narrow as its few bins' range. The
// bin being filled counts there by the share of a bin's samples it holds
// (the extreme of the first ten samples of a bin of sixty lies on
// average at the tail 1/11 of the samples, not at a full bin's 1/61): a
// young series at a 15-second step holds its first samples in one bin,
// and reading them as a full bin draws its band too narrow for heavy
// tails.
// With the defaults a sample alarms when it lies about a tenth of (U − m)
// beyond the level that the series exceeded in fewer than one in a hundred
// 15-minute bins of the week. For normal data this is about a 3.3-sigma
// test at a 5-minute step; counted in bins, not samples, it raises about as
// many alarms a day on a 15-second step as on a 5-minute one. For a skewed
// or bimodal series (a daily on/off load, a latency with a long tail) the
// band follows the side the series really reaches, so the ordinary half of
// the day does not alarm, and a spike beyond anything the week has seen
// does.
//
// A band resting on few samples is widened by how little they say. s_eff
// (not the floors below) is multiplied by youngWidth(n), n the samples
// held since the summaries were last empty (at most as many as the
// horizon spans at the step), a Student's t prediction bound's ratio to
// the normal one at the tail P/3, which is 2.47 at ten samples, 1.07 at a
// hundred and tends to 1. While the bins are too few to hold the P tail,
// U and L are carried from their tail to P/3 by the normal quantiles'
// ratio, which holds only for tails as light as the normal's: how heavy
// the tail is, few samples hardly say. So both spreads are also
// stretched by heavyTail, the reach of a tail whose weight (Student's t
// with ν from 2 to ∞) is as likely as the samples make it. From one bin
// (TestHeavyTail) it is 1.9 times the normal's for the tails and 2.5 for
// s_eff at ten samples of normal noise, 1.2 at four hundred, and 2.4 and
// 3.2 at four hundred samples of t₃ noise; it is 1 once the bins hold
// the P tail, when U and L are read without carrying. The tails' spreads are widened by the
// larger of heavyTail and youngWidth, not by both: under a power-law tail
// the ratio of quantiles already allows for how far the extreme of n
// samples falls short of the tail, and youngWidth for the normal's. On
// a burst of new series, a young series of normal noise, counts, a
// Laplace tail or lognormal noise then alarms on a smaller share of its
// samples than an old one, and of t₃ noise on 1.09 times as large a
// share at a 15-second step (against 2,000 old series), against three to
// nine times without the stretch (TestAutoYoungBurst).
//
// s_eff is also floored by the series' resolution δ (the smallest non-zero
// change between consecutive samples), as in Robust. A series that has
// never varied has no spread to measure a departure by: its band is [m, m]
// and a departure beyond the absolute floor (10⁻⁹·max(1, |m|)) scores
// MaxAutoScore.
//
// A value the series has already reached at this time of a past period is
// not news: an alarm is dropped (the score capped at 0.99) when, on one of
// the past periods the bins hold (DefaultAutoPeriods), a bin within
// Tolerance of the same phase (t − j·Period ± Tolerance) that held no
// incident reached as far on the same side (≥ x for x ≥ m, ≤ x below). This keeps a daily backup's CPU
// spike or a nightly batch from alarming every day while a first-time
// spike still alarms.
//
// A value inside the horizon's range can still be news when the series
// repeats itself: a day that stays flat where the days before rose, a
// daily jump that goes down, or does not come. While the past periods
// predict the series well, a phase test judges it too. With e the median,
// over the past periods j, of the mean of the bin at t − j·Period (at least
// two periods must have one), the phase residual of a sample is x − e.
// When the samples of the past periods with a residual are at least a
// period's worth and
//
//	RMS(x − e) < PhaseFit · SD(x)
//
// (the past periods explain at least 1 − PhaseFit² of the variance; a
// series whose same-phase values differ as much as any two of its values
// never qualifies), a sample is scored by how far it lies outside the
// range [lo_j, hi_j] of the bins within PhaseReach of the same phase of each
// past period j, the median over the periods:
//
//	d = median_j( x − hi_j if x > hi_j; x − lo_j if x < lo_j; else 0 )
//	s_ph = max(RMS(x − e), δ, Floor·|e|)
//	Score = min(|d| / (PhaseK·s_ph), MaxAutoScore)
//	Expected = e, Lower = median(lo) − PhaseK·s_ph, Upper = median(hi) + PhaseK·s_ph
//
// e and the fit are read once per bin; they read at most
// DefaultAutoPeriods past periods. The phase test reports alarms only:
// when it scores ≥ 1 and above the tail test, its result is the sample's.
// The seen-before rule applies to the tail test only.
//
// A week is not a day: a request rate whose weekends are quieter than its
// weekdays is predicted by neither the days before a Saturday nor those
// before a Monday. Two rules handle it:
//
//   - With the period a day, where the bins hold two weeks or more (at
//     steps of 30 minutes and longer), a second phase test reads the same
//     time of the past weeks (up to the weeks the bins hold, Test "week"),
//     with the same band and fit. It judges a bin when it predicts the
//     series and the past days do not, or not as well, or the series has
//     a weekly shape (below).
//   - At any step, an alarm of the test against past periods on a value
//     the series took seven periods before (a week; within the band's
//     half-width of the range of the bins within PhaseReach of it, an
//     incident's included) recurs. Such samples are counted per period;
//     once they hold a quarter of a period's samples over the periods the
//     fit reads, the series has a weekly shape, and a sample that recurs is
//     its shape: no alarm, no incident, and no residual in the fit of the
//     past days, which go on judging the weekdays they predict. A dip that
//     comes again a week later at the same time recurs once, and alarms.
//
// So a quiet weekend alarms on the first weekends a series has, and then
// no more; before these rules a series with 2% noise and weekends 40%
// lower alarmed on about two of every seven days (TestAutoWeeklyShape),
// and drops to a third on it went unreported but at its lowest noise
// (TestAutoWeeklyPhase, the weekly family).
//
// After a score ≥ 1, new alarms are held for Refractory: once the samples
// stop scoring ≥ 1, those up to Refractory after the alarm have their score
// capped at 0.99 (Lower and Upper NaN), so one incident raises one alarm,
// early; they still enter the summaries. The samples that go on scoring ≥ 1
// from the alarm on keep their scores: they are the same incident, which a
// rule's lifecycle reports once, and which its `for` can measure.
//
// Incidents are kept out of what defines normal, so that the detector does
// not learn them: the second outage is judged as the first was. A sample
// whose score (the tail test's, or the phase test's when higher) reaches
// Incident (1.5 by default) before any cap is an incident's: its bin is
// left out of the tails U and L, out of the phase test's expectations,
// ranges and fit, and out of the seen-before test; its residual is not
// counted. Incidents on one side less than two bins apart are one
// incident. Three things bound what is left out:
//
//   - At most Incidents (4) incidents a week are left out: a series that
//     goes that far more often does so normally, and the tails learn it.
//   - What recurs at the same phase is the series' season: bins that held
//     anomalies count as seen before when each of the last two periods had
//     one within Tolerance/4 of the phase reaching at least half as far
//     from m (a daily job alarms on its first two days; spikes that drift
//     past the phase, every 25 hours, stay news).
//   - An incident that lasts Accept (a day), or as long as the history
//     held before it began (a young series), is accepted: its bins count
//     as normal, the tails are read again with them, the phase test reads
//     only from its start, and the alarm ends. If the level then returns
//     inside the band it left within a week, the incident was an
//     excursion: its bins are left out again and the phase test reads its
//     old periods again.
//
// A lasting level shift is thus reported once, when it starts, and its
// alarm lasts until the shift is accepted (a day by default), or until the
// level returns. Ignored counts the samples left out and the incidents
// accepted.
//
// The past-period tests need history: the seen-before test the period less
// the tolerance, the phase test three periods (two for a first residual,
// one of residuals); until then, and at steps too coarse for the period
// (bins wider than an eighth of it), the detector is the tail test, and
// Mode says so.
//
// Auto was tried on the shared NAB subset (5-minute steps), checked by
// leaving each category out of the choice of K and P in turn; the bins, the
// horizon and the durations were set by reasoning, not tuned. The phase test
// finds three of the six changes of a daily shape in NAB's artificial series
// that the tail test misses (a flat day, a jump down, a missing jump).
//
// Room (measured after eight days, BenchmarkAutoMemory; five weeks at an
// hour): 15,958 bytes a series at a 15-second and a 1-minute step, 15,944
// at 5 minutes, 15,329 at an hour (with the test against past weeks),
// under 16 KiB: 682 bins of 10 bytes (the range as two float32, the mean as a
// 16-bit place in it), the thinned window (DefaultAutoSample samples of 10
// bytes and their timestamps) and the rest. An Auto is not safe for
// concurrent use.
type Auto struct {
	// What every sample reads, together.
	last, since   int64 // the newest sample; the first since the summaries were last empty
	hasLast       bool
	holding       bool
	stretch       bool    // the newest sample was anomalous
	accSide       int8    // the side of the incident accepted last, while its level may return (0: none)
	incident      float64 // the score from which a sample is an incident's
	m, sd         float64 // median and spread of thin, read when it changed
	k, floor      float64
	zc, zo        float64 // the normal quantile U and L are read as, the open bin empty or not (tailZ)
	minPoints     int
	until         int64 // alarms are held through this time
	holdN         int
	step, minStep int64
	hi, lo        tailQ // the tail quantiles, prepared for the bin being filled
	res           resolution
	bins          binRing
	thin          thinWindow
	ph            phaseTest
	wk            *phaseTest // the phase test against past weeks (nil: none)

	p          float64
	refractory int64
	refPoints  int
	ext        extremes

	period, tol    int64
	periods        int // past periods the tests read (0: none)
	seenOn         bool
	coarse, narrow bool // why the past-period tests are off, when they are

	// The incident under way: when its first and newest samples came and
	// its side (+1 above the median, −1 below, 0: none).
	accept           int64
	runFrom, runLast int64
	runSide          int8
	runEdge          float64 // the band's edge on its side when it started
	// The incident accepted last, while its level may still return:
	// its start and edge, and where the phase test read from before it.
	accFrom, accPhase, accWeek int64
	accEdge                    float64
	incidents                  int                     // the most incidents a week leaves out
	runs                       [maxAutoIncidents]int64 // when the latest incidents started
	runAt, nRuns               int
	// Ignored counts the samples left out of the tails as incidents,
	// and Accepted the incidents taken for a new normal.
	ignored, accepted int64
	// held counts the samples since the summaries were last empty; width
	// is youngWidth of the samples before the one judged, read again when
	// held reaches widthAt.
	held, widthAt int64
	width         float64
	// heavy is heavyTail of the samples held at heavyAt, read again
	// with the width.
	heavyAt        int64
	heavy, heavySd float64
}

var _ Detector = (*Auto)(nil)

// refractoryCap is the highest score reported during the refractory period.
const refractoryCap = 0.99

// autoPlan is what an AutoConfig with its defaults filled in implies: the
// bins' width, how many to keep, and what the past-period tests can do.
type autoPlan struct {
	c                  AutoConfig
	width              int64
	ringBins, tailBins int
	periods            int  // past periods within reach
	weeks              int  // past weeks within reach, for the weekly phase test (0: none)
	seen, phase        bool // the tests that can run
	coarse, narrow     bool // why they cannot: bins too wide, window too short
}

func planAuto(c AutoConfig) autoPlan {
	c.K = cmp.Or(c.K, DefaultAutoK)
	c.P = cmp.Or(c.P, DefaultAutoP)
	c.Refractory = cmp.Or(c.Refractory, DefaultAutoRefractory)
	c.MinPoints = cmp.Or(c.MinPoints, DefaultAutoMinPoints)
	c.Floor = cmp.Or(c.Floor, DefaultRobustFloor)
	c.Period = cmp.Or(c.Period, DefaultSeasonalPeriod)
	c.Tolerance = cmp.Or(c.Tolerance, c.Period/DefaultAutoTolerance)
	c.PhaseK = cmp.Or(c.PhaseK, DefaultAutoPhaseK)
	c.PhaseFit = cmp.Or(c.PhaseFit, DefaultAutoPhaseFit)
	c.PhaseReach = cmp.Or(c.PhaseReach, c.Period/DefaultAutoPhaseReach)
	c.Bin = cmp.Or(c.Bin, DefaultAutoBin)
	c.Sample = cmp.Or(c.Sample, DefaultAutoSample)
	c.Incident = cmp.Or(c.Incident, DefaultAutoIncident)
	c.Accept = cmp.Or(c.Accept, DefaultAutoAccept)
	c.Incidents = cmp.Or(c.Incidents, DefaultAutoIncidents)
	pl := autoPlan{c: c}
	width := max(c.Bin, c.Step)
	reach := max(0, c.Tolerance, c.PhaseReach)
	// What the bins must span: the tail test's horizon and, for the
	// past-period tests, as many periods back as that allows (at least
	// DefaultAutoPeriods when no window is given) and their reach.
	var span int64
	if c.Window > 0 {
		span = satAdd(c.Window, reach)
	} else {
		span = satMul(DefaultAutoBins, width)
		if c.Period > 0 {
			span = max(span, satAdd(satMul(DefaultAutoPeriods, c.Period), reach))
		}
	}
	if bins := span/width + 2; bins > maxAutoBins {
		width = (span + maxAutoBins - 3) / (maxAutoBins - 2)
	}
	pl.width = width
	pl.ringBins = int(min(maxAutoBins, span/width+2))
	tail := c.Window
	if tail <= 0 {
		tail = satMul(DefaultAutoBins, width)
	}
	pl.tailBins = int(min(int64(pl.ringBins), max(1, (tail+width-1)/width)))
	if c.Period > 0 {
		held := int64(pl.ringBins-1) * width
		pl.periods = int(min(maxPhasePeriods, held/c.Period))
		pl.coarse = width > c.Period/8
		pl.narrow = held+c.Tolerance < c.Period
		pl.seen = !pl.coarse && !pl.narrow
		pl.phase = pl.seen && c.PhaseK > 0 && pl.periods >= 2
		if weeks := held / (7 * c.Period); pl.phase && c.Period == DefaultSeasonalPeriod && weeks >= 2 {
			pl.weeks = int(min(maxPhasePeriods, weeks))
		}
	}
	return pl
}

// satAdd and satMul are a + b and a·b for a, b ≥ 0, saturating at
// math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// NewAuto returns a detector with c's zero fields set to their defaults. It
// panics when c is invalid; Build returns errors instead.
func NewAuto(c AutoConfig) *Auto {
	pl := planAuto(c)
	c = pl.c
	switch {
	case c.Window < 0:
		panic(fmt.Sprintf("analysis.NewAuto: Window must be ≥ 0 ms, got %d", c.Window))
	case c.Step < 0:
		panic(fmt.Sprintf("analysis.NewAuto: Step must be ≥ 0 ms, got %d", c.Step))
	case !(c.K > 0) || math.IsInf(c.K, 0):
		panic(fmt.Sprintf("analysis.NewAuto: K must be a finite number > 0, got %v", c.K))
	case !(c.P > 0 && c.P < 0.5):
		panic(fmt.Sprintf("analysis.NewAuto: P must be in (0, 0.5), got %v", c.P))
	case c.MinPoints < 2:
		panic(fmt.Sprintf("analysis.NewAuto: MinPoints must be ≥ 2, got %d", c.MinPoints))
	case c.Sample < c.MinPoints || c.Sample > maxSortedWindow-1:
		panic(fmt.Sprintf("analysis.NewAuto: Sample must be in [MinPoints, %d], got %d", maxSortedWindow-1, c.Sample))
	case !(c.Floor >= 0) || math.IsInf(c.Floor, 0):
		panic(fmt.Sprintf("analysis.NewAuto: Floor must be a finite number ≥ 0, got %v", c.Floor))
	case math.IsNaN(c.PhaseK) || math.IsInf(c.PhaseK, 0):
		panic(fmt.Sprintf("analysis.NewAuto: PhaseK must be a finite number, got %v", c.PhaseK))
	case !(c.PhaseFit > 0 && c.PhaseFit <= 1):
		panic(fmt.Sprintf("analysis.NewAuto: PhaseFit must be in (0, 1], got %v", c.PhaseFit))
	case c.Tolerance < 0:
		panic(fmt.Sprintf("analysis.NewAuto: Tolerance must be ≥ 0 ms, got %d", c.Tolerance))
	case c.Bin <= 0:
		panic(fmt.Sprintf("analysis.NewAuto: Bin must be > 0 ms, got %d", c.Bin))
	case !(c.Incident >= 1) || math.IsInf(c.Incident, 0):
		panic(fmt.Sprintf("analysis.NewAuto: Incident must be a finite number ≥ 1, got %v", c.Incident))
	case c.Incidents > maxAutoIncidents:
		panic(fmt.Sprintf("analysis.NewAuto: Incidents must be at most %d, got %d", maxAutoIncidents, c.Incidents))
	}
	a := &Auto{
		k: c.K, p: c.P, floor: c.Floor, minPoints: c.MinPoints,
		refractory: c.Refractory, refPoints: max(0, c.RefractoryPoints),
		bins: newBinRing(pl.width, pl.ringBins),
		ext:  extremes{span: pl.tailBins, keep: int(math.Ceil(c.P*float64(pl.tailBins-1))) + 2},
		thin: newThinWindow(int64(pl.tailBins)*pl.width, c.Sample),
		m:    math.NaN(), heavy: 1, period: c.Period, tol: c.Tolerance, step: c.Step, minStep: math.MaxInt64,
		coarse: pl.coarse, narrow: pl.narrow, incident: c.Incident, accept: c.Accept, incidents: max(0, c.Incidents),
	}
	if pl.seen {
		a.seenOn, a.periods = true, pl.periods
	}
	if pl.phase {
		a.ph = newPhaseTest(TestPhase, c.PhaseK, c.PhaseFit, max(0, c.PhaseReach), min(pl.periods, DefaultAutoPeriods))
	}
	if pl.weeks > 0 {
		wk := newPhaseTest(TestWeek, c.PhaseK, c.PhaseFit, max(0, c.PhaseReach), pl.weeks)
		a.wk = &wk
	}
	return a
}

// Len returns the number of samples in the thinned window.
func (a *Auto) Len() int { return a.thin.w.len() }

// Observe scores (t, v) and then adds it to the summaries.
func (a *Auto) Observe(t int64, v float64) Result { return a.observe(t, v) }

// ObserveBatch scores a run of samples of the series, exactly as one
// Observe per sample does (see BatchDetector).
func (a *Auto) ObserveBatch(t []int64, v []float64, out []Result) {
	v, out = v[:len(t)], out[:len(t)]
	a.thin.reserve(t)
	for i := range t {
		out[i] = a.observe(t[i], v[i])
	}
}

var _ BatchDetector = (*Auto)(nil)

func (a *Auto) observe(t int64, v float64) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (a.hasLast && t <= a.last) {
		return notReady()
	}
	if a.hasLast {
		a.minStep = min(a.minStep, t-a.last)
	}
	a.last, a.hasLast = t, true
	a.advance(a.bins.number(t))
	a.thin.evict(t, v)
	if a.thin.w.len() == 0 {
		a.since, a.held, a.widthAt, a.heavyAt, a.heavy, a.heavySd = t, 0, 0, 0, 1, 1
	}
	a.held++
	if a.thin.w.len() < a.minPoints {
		a.addResidual(t, v)
		a.keep(t, v)
		if a.holdN > 0 {
			a.holdN--
		}
		return notReady()
	}
	if a.thin.changed {
		a.m = a.thin.w.median()
		a.sd = madScale * a.thin.w.mad(a.m)
		a.thin.changed = false
	}
	m := a.m
	hi, lo := math.NaN(), math.NaN()
	open := a.bins.n > 0 && !a.bins.openInc
	if open {
		lo, hi = float64(a.bins.open[0]), float64(a.bins.open[1])
	}
	u, l := a.hi.at(hi), a.lo.at(lo)
	abs := sigmaFloor * max(1, math.Abs(m))
	// A spread read from few samples is widened by how little they say
	// (the floors are not estimates, and are not widened): those held,
	// at most as many as the horizon spans.
	if a.held >= a.widthAt {
		n := a.held - 1
		if st := cmp.Or(a.step, a.minStep); st > 0 && st < math.MaxInt64 {
			n = min(n, max(1, a.thin.w.window/st))
		}
		a.width = youngWidth(n, a.p)
		a.widthAt = a.held + max(1, a.held/50)
	}
	z := a.zc
	if open {
		z = a.zo
	}
	// The tail of the bins' extremes, the open bin counted by its share
	// of a bin's samples, while they are too few to hold the P tail; the
	// stretch read at heavyAt serves the samples that fill the open bin,
	// and counts it whole while it is empty.
	tp := 1 / float64(a.ext.n+2)
	if open && tp > a.p {
		tp = 1 / (float64(a.ext.n) + a.openShare(a.held-1) + 1)
		z = -normQuantile(tp / 3)
	}
	sHi, sLo := a.spreads(m, u, l, z)
	if a.held >= a.heavyAt {
		// How heavy the tail is, read from the samples inside the band
		// drawn so far.
		from, to := a.thin.w.bounds2(m-a.k*sLo, m+a.k*sHi)
		a.heavy, a.heavySd = heavyTail(a.thin.w.at, from, to, m, a.sd/madScale, tp, a.p, a.k)
		sHi, sLo = a.spreads(m, u, l, z)
		a.heavyAt = a.held + max(1, a.held/8)
	}
	var res Result
	if v >= m {
		res = bandScore(v, m, a.k, sHi)
	} else {
		res = bandScore(v, m, a.k, sLo)
	}
	res.Lower, res.Upper = clampInf(m-a.k*sLo), clampInf(m+a.k*sHi)
	res.Test = TestTail
	if sHi <= abs && sLo <= abs {
		// The series has only ever been m: no spread measures a departure.
		res.Lower, res.Upper = m, m
	}
	res.Score = min(res.Score, MaxAutoScore)
	// The score that decides whether the sample is an incident's, and
	// its side: the tail test's, or the phase test's when higher.
	worst, up := res.Score, v >= m
	edge := res.Upper
	if !up {
		edge = res.Lower
	}
	holding := a.holding && t <= a.until || a.holdN > 0
	if res.Score >= 1 && a.seenBefore(t, v, m, up) {
		// Not news: no incident either.
		worst = 0
		if !holding || a.stretch {
			res.Score = refractoryCap
		}
	}
	var pres Result
	// shape: the phase test against past days saw a deviation the
	// series took at the same time a week before, on a series whose
	// deviations recur weekly (a quiet weekend): its shape, not news.
	recurs, shape := false, false
	if a.ph.on() {
		recurs = a.phase().score(&a.bins, t, v, a.res.step(), a.floor, 7*a.period, &pres)
		shape = recurs && a.ph.weekly
		if shape {
			pres = Result{}
		}
		if pres.Score > worst {
			worst, up = pres.Score, v >= pres.Expected
			edge = pres.Upper
			if !up {
				edge = pres.Lower
			}
		}
	}
	// An incident's sample stays out of what defines normal.
	a.returned(t, v)
	// It stays out of the phase tests' fit too. A sample the past days
	// saw recur a week apart is counted, to tell a weekly shape from
	// incidents; one of the shape counts as normal, but not in the fit of
	// the past days, which do not predict it.
	far := a.mark(t, worst, up, edge)
	switch {
	case shape:
		a.ph.recurred(t)
		if a.wk != nil {
			a.wk.add(t, v)
		}
	case !far:
		a.addResidual(t, v)
	case recurs:
		a.ph.recurred(t)
	}
	if pres.Score > res.Score {
		res = pres
	}
	if a.holdN > 0 {
		a.holdN--
	}
	switch {
	case holding && a.stretch && res.Score >= 1:
		// The alarm's stretch goes on: one incident, which the rule's
		// lifecycle makes one finding (and its for can measure).
	case holding:
		res.Score = min(res.Score, refractoryCap)
		res.Lower, res.Upper = math.NaN(), math.NaN()
	case res.Score >= 1:
		if a.refPoints > 0 {
			a.holdN = a.refPoints
		} else if a.refractory > 0 {
			a.holding, a.until = true, satAdd(t, a.refractory)
		}
	}
	a.stretch = res.Score >= 1
	a.keep(t, v)
	return res
}

// spreads returns the band's spreads above and below the median m, with
// U = u and L = l read as the normal quantile z: the robust spread,
// widened by youngWidth and stretched by how heavy the tail may be, or
// the tails', widened by the larger of the two, when wider. A tail the
// extremes cannot give (NaN: no bins yet, or values past float32 in
// them) leaves the robust spread.
func (a *Auto) spreads(m, u, l, z float64) (hi, lo float64) {
	s := robustSpread(max(a.width*a.heavySd*a.sd, a.res.step()), m, a.floor)
	hi, lo = s, s
	if x := max(a.heavy, a.width) * (u - m) / z; x > s {
		hi = x
	}
	if x := max(a.heavy, a.width) * (m - l) / z; x > s {
		lo = x
	}
	return hi, lo
}

// mark flags the open bin by the score of a sample at t (above the median
// when up; edge is the band's edge on that side) and follows the incident
// it belongs to; it reports whether the sample is an incident's, left out
// of what defines normal. An incident on one side that has lasted Accept
// is taken for the new normal: its bins' flags are cleared.
func (a *Auto) mark(t int64, score float64, up bool, edge float64) bool {
	if !(score >= a.incident) {
		return false
	}
	a.bins.openOdd = true
	side := int8(-1)
	if up {
		side = 1
	}
	if a.runSide != side || t-a.runLast > 2*a.bins.width {
		// A new incident, unless the horizon holds as many as its tails
		// can leave out: a series that goes that far that often does
		// so normally.
		n := 0
		for _, from := range a.runs[:a.nRuns] {
			if t-from < incidentSpan {
				n++
			}
		}
		if n >= a.incidents {
			a.runSide = 0
			return false
		}
		a.runs[a.runAt] = t
		a.runAt = (a.runAt + 1) % len(a.runs)
		a.nRuns = min(a.nRuns+1, len(a.runs))
		a.runFrom, a.runSide, a.runEdge = t, side, edge
	}
	a.bins.openInc = true
	a.ignored++
	a.runLast = t
	// An incident is accepted once it has lasted Accept, or as long as
	// the history before it: by then the detector has seen the new level
	// as long as the old one.
	if accept := min(a.accept, a.runFrom-a.since); a.accept >= 0 && t-a.runFrom >= accept {
		a.acceptRun()
		return false
	}
	return true
}

// enterPhase reads, for bin k (just entered), what the phase tests expect
// of it.
func (a *Auto) enterPhase(r *binRing, k int64) {
	a.ph.enter(r, k, a.period, a.step, a.minStep)
	if a.wk != nil {
		a.wk.enter(r, k, 7*a.period, a.step, a.minStep)
	}
}

// addResidual counts the residual of (t, v) in the phase tests.
func (a *Auto) addResidual(t int64, v float64) {
	a.ph.add(t, v)
	if a.wk != nil {
		a.wk.add(t, v)
	}
}

// phase returns the phase test that judges the bin being filled: the one
// against past days, unless the one against past weeks predicts the series
// and the days do not, or not as well, or the series has a weekly shape
// (quiet weekends, which the days before do not predict).
func (a *Auto) phase() *phaseTest {
	if w := a.wk; w != nil && w.fits && !math.IsNaN(w.e) && (!a.ph.fits || math.IsNaN(a.ph.e) || a.ph.weekly || w.rms < a.ph.rms) {
		return w
	}
	return &a.ph
}

// acceptRun clears the flags of the bins of the incident under way and
// reads the tails again with them in.
func (a *Auto) acceptRun() {
	r := &a.bins
	for k := max(r.number(a.runFrom), r.newest-int64(len(r.rng))+1); k < r.newest; k++ {
		r.setIncident(r.slot(k), false)
	}
	r.openInc = false
	a.accFrom, a.accSide, a.accEdge, a.accPhase = a.runFrom, a.runSide, a.runEdge, a.ph.from
	a.ph.from = max(a.ph.from, r.number(a.runFrom))
	if a.wk != nil {
		a.accWeek = a.wk.from
		a.wk.from = max(a.wk.from, r.number(a.runFrom))
	}
	a.runSide = 0
	a.accepted++
	a.rebuildExtremes(r.newest)
	a.prepareTails()
}

// returned checks whether the level of the incident accepted last has
// returned inside the band it left, at (t, v): if so, the incident was an
// excursion, not a new normal, and its bins are left out again, so that
// its next repeat is judged against the level before it. An accepted
// level that lasts a week stays.
func (a *Auto) returned(t int64, v float64) {
	if a.accSide == 0 {
		return
	}
	if t-a.accFrom >= incidentSpan {
		a.accSide = 0
		return
	}
	if a.accSide > 0 && !(v <= a.accEdge) || a.accSide < 0 && !(v >= a.accEdge) {
		return
	}
	r := &a.bins
	for k := max(r.number(a.accFrom), r.newest-int64(len(r.rng))+1); k < r.newest; k++ {
		r.setIncident(r.slot(k), true)
	}
	r.openInc = true
	a.ph.from = a.accPhase
	if a.wk != nil {
		a.wk.from = a.accWeek
	}
	a.accSide = 0
	a.rebuildExtremes(r.newest)
	a.prepareTails()
}

// rebuildExtremes reads the extremes of the closed bins before bin k
// within the span again from the ring, incidents' bins left out.
func (a *Auto) rebuildExtremes(k int64) {
	e, r := &a.ext, &a.bins
	e.top, e.bottom, e.n = e.top[:0], e.bottom[:0], 0
	for j := k - int64(e.span) + 1; j < k; j++ {
		if _, _, ok := r.normal(j); ok {
			e.n++
			e.insert(r.rng[r.slot(j)], j)
		}
	}
}

// Ignored returns how many samples the detector has left out of what
// defines normal as incidents' (a sample of 1e308, for one), and how many
// incidents it has taken for a new normal after they lasted Accept.
func (a *Auto) Ignored() (samples, accepted int64) { return a.ignored, a.accepted }

// keep adds a judged (or warming) sample to the summaries.
func (a *Auto) keep(t int64, v float64) {
	a.res.add(v)
	a.bins.add(v)
	a.thin.add(t, v)
}

// advance moves the bins to bin k, the bin of a new sample: the newest bin
// closes and enters the extremes, the bins that leave the tail horizon
// leave them, and the slots of the bins skipped are emptied.
func (a *Auto) advance(k int64) {
	r := &a.bins
	if !r.has {
		r.newest, r.has = k, true
		a.enterPhase(r, k)
		a.prepareTails()
		return
	}
	if k <= r.newest {
		return
	}
	e := &a.ext
	if r.n > 0 && !r.openInc {
		e.n++
		e.insert(r.open, r.newest)
	}
	rebuild := false
	ring := int64(len(r.rng))
	from := max(r.newest-int64(e.span)+1, r.newest-ring+1)
	for old := from; old <= min(k-int64(e.span), r.newest); old++ {
		if _, _, ok := r.normal(old); ok {
			e.n--
			rebuild = e.remove(old) || rebuild
		}
	}
	r.close()
	if k-r.newest >= ring {
		for i := range r.rng {
			r.rng[i] = emptyBin
		}
	} else {
		for j := r.newest + 1; j <= k; j++ {
			r.rng[r.slot(j)] = emptyBin
		}
	}
	r.newest = k
	if rebuild {
		a.rebuildExtremes(k)
	}
	a.enterPhase(r, k)
	a.prepareTails()
}

// prepareTails reads, for the bin being filled, the tail quantiles U and
// L and the normal quantile they are read as.
func (a *Auto) prepareTails() {
	a.hi, a.lo = a.ext.prepare(a.p, true), a.ext.prepare(a.p, false)
	a.zc, a.zo = a.tailZ(a.ext.n, false), a.tailZ(a.ext.n, true)
}

// seenBefore reports whether a past period reached v or beyond (above
// when up, m the median) within the tolerance of t's phase, in a bin that
// held no anomaly. Bins that held anomalies count too when each of the
// last minRecurrences periods had one within half the tolerance of the
// phase, reaching half as far from m: what recurs at the same phase period
// after period is the series' season, not an incident, while incidents
// days apart, or drifting past the phase (every 25 hours), stay news.
func (a *Auto) seenBefore(t int64, v, m float64, up bool) bool {
	if !a.seenOn {
		return false
	}
	r := &a.bins
	half := m + (v-m)/2
	recur := 0
	flagged := false
	for j := 1; j <= a.periods; j++ {
		at := t - int64(j)*a.period
		counted := false
		for k := r.number(at - a.tol); k <= r.number(at+a.tol); k++ {
			lo, hi, ok := r.at(k)
			if !ok {
				continue
			}
			reach := up && hi >= v || !up && lo <= v
			if !r.oddBin(k) {
				if reach {
					return true
				}
				continue
			}
			flagged = flagged || reach
			if !counted && j <= minRecurrences && k >= r.number(at-a.tol/4) && k <= r.number(at+a.tol/4) && (up && hi >= half || !up && lo <= half) {
				counted = true
				recur++
			}
		}
	}
	return flagged && recur >= minRecurrences
}

// minRecurrences is how many of the latest periods must each have had an
// anomaly at a phase for the anomalies there to count as the series'
// season.
const minRecurrences = 2

// Mode says which of the tests could not judge a sample at t, with the
// history held since the summaries were last empty, and why, or is "" when
// all of them could (the phase test judges only series its past periods
// predict well: that is not a mode). For example "tail only: 2h of the 22h
// the seen-before test needs".
func (a *Auto) Mode(t int64) string {
	switch {
	case a.period <= 0:
		return ""
	case a.coarse:
		return fmt.Sprintf("tail only: bins of %s are too coarse for the period %s (at most %s)",
			fmtMs(a.bins.width), fmtMs(a.period), fmtMs(a.period/8))
	case a.narrow:
		return fmt.Sprintf("tail only: the window reaches no past period of %s", fmtMs(a.period))
	}
	held := max(0, t-a.since)
	seenNeed := a.period - a.tol
	if held < seenNeed {
		if a.ph.on() {
			return fmt.Sprintf("tail only: %s of the %s the seen-before test needs and the %s the phase test needs",
				fmtMs(held), fmtMs(seenNeed), fmtMs(3*a.period))
		}
		return fmt.Sprintf("tail only: %s of the %s the seen-before test needs", fmtMs(held), fmtMs(seenNeed))
	}
	if a.ph.on() && held < 3*a.period {
		return fmt.Sprintf("tail and seen-before: %s of the %s the phase test needs", fmtMs(held), fmtMs(3*a.period))
	}
	return ""
}

// fmtMs writes a span of ms as a short duration: 7d2h, 45h, 2h30m, 15m,
// 30s (rounded to the second; to the minute from an hour, to the hour
// from two days).
func fmtMs(ms int64) string { return dur.Approx(time.Duration(ms) * time.Millisecond) }

// tailZ is the normal quantile the tails U and L are read as, with closed
// bins in the extremes and the open bin among them when open: Φ⁻¹(1 −
// P/3), or, while the bins are fewer than the P tail needs (fewer than
// 1/P − 1), Φ⁻¹(1 − 1/(3(n+1))). Their extreme, which U and L then are,
// is the n/(n+1) quantile of n bins, not the 1 − P one: read as the
// latter, a young series' band would be as narrow as its few bins' range.
// While the bins are that few, observe counts the open bin by its share
// of a bin's samples s (openShare) instead, Φ⁻¹(1 − 1/(3(n_closed + s +
// 1))): the extreme of a bin's first samples is not a full bin's.
func (a *Auto) tailZ(closed int, open bool) float64 {
	n := closed
	if open {
		n++
	}
	if tp := 1 / float64(n+1); tp > a.p {
		return -normQuantile(tp / 3)
	}
	return -normQuantile(a.p / 3)
}

// openShare is the share of a bin's samples the open bin holds, at most
// one, with held samples since the summaries were last empty: the open
// bin's samples over those a closed bin since then holds on average
// (before one has closed, the bin's width over the step).
func (a *Auto) openShare(held int64) float64 {
	r := &a.bins
	var c float64
	if closed := r.newest - r.number(a.since); closed > 0 {
		c = float64(held-int64(r.n)) / float64(closed)
	} else if st := cmp.Or(a.step, a.minStep); st > 0 && st < math.MaxInt64 {
		c = float64(r.width) / float64(st)
	}
	if !(c > 0) {
		return 1
	}
	return min(1, float64(r.n)/c)
}

// madEfficiency is the asymptotic efficiency of the median absolute
// deviation as an estimate of a normal standard deviation: it is as
// precise as a standard deviation of 0.3675·n samples.
const madEfficiency = 0.3675

// youngWidth is how much wider a band resting on n samples is drawn than
// its estimates say: the ratio of a prediction bound for a new sample,
// with the median and spread estimated from the n samples, to the same
// bound with both known. The sides' spreads are read at the tail α = P/3,
// so, with ν = max(2, madEfficiency·(n − 1)) the degrees of freedom of the
// spread and π/(2n) the variance of the median in squared spreads,
//
//	youngWidth = t_ν(1 − α) / Φ⁻¹(1 − α) · √(1 + π/(2n))
//
// (Student's t quantile). With the defaults it is 2.47 at n = 10, 1.07 at
// 100, 1.007 at 1,000, and tends to 1: a new series'
// band is as wide, in false alarms, as an old one's, not narrower for
// resting on ten samples.
func youngWidth(n int64, p float64) float64 {
	if n < 1 {
		n = 1
	}
	alpha := p / 3
	nu := max(2, madEfficiency*float64(n-1))
	return studentQuantile(alpha, nu) / -normQuantile(alpha) * math.Sqrt(1+math.Pi/(2*float64(n)))
}

// studentQuantile returns the t with P(T > t) = p for Student's t with
// ν ≥ 2 degrees of freedom, p in (0, 0.5), by Hill's approximation
// (Algorithm 396, Comm. ACM 13(10), 1970): within 6·10⁻⁴ of it relatively
// at ν = 2 and within 10⁻⁴ from ν = 3.
func studentQuantile(p, nu float64) float64 {
	p2 := 2 * p
	a := 1 / (nu - 0.5)
	b := 48 / (a * a)
	c := ((20700*a/b-98)*a-16)*a + 96.36
	d := ((94.5/(b+c)-3)/b + 1) * math.Sqrt(a*math.Pi/2) * nu
	y := math.Pow(d*p2, 2/nu)
	if y > 0.05+a {
		x := -normQuantile(p)
		y = x * x
		if nu < 5 {
			c += 0.3 * (nu - 4.5) * (x + 0.6)
		}
		c = (((0.05*d*x-5)*x-7)*x-2)*x + b + c
		y = (((((0.4*y+6.3)*y+36)*y+94.5)/c-y-3)/b + 1) * x
		y = math.Expm1(a * y * y)
	} else {
		y = ((1/(((nu+6)/(nu*y)-0.089*d-0.822)*(nu+2)*3)+0.5/(nu+4))*y-1)*(nu+1)/(nu+2) + 1/y
	}
	return math.Sqrt(nu * y)
}

// normQuantile returns Φ⁻¹(p), the p-quantile of the standard normal.
func normQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }
