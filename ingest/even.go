package ingest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// EvenSeries is a series on an even step: Values[i] is the value of the
// step that starts at Start + i·Step, NaN where the step has no sample.
type EvenSeries struct {
	Start  int64 // unix milliseconds
	Step   time.Duration
	Values []float64
	// Gaps counts the steps whose value is NaN or ±Inf.
	Gaps int
	// Snapped samples were off the grid by at most MaxSnap each and were
	// taken at their nearest step (see OnGrid).
	Snapped int
	MaxSnap time.Duration
	// Resampled samples were taken into the steps by Resample; Crowded
	// steps held more than one of them.
	Resampled, Crowded int
}

// Samples are the samples of one series as a file holds them, with where
// each stands in the file for errors to name.
type Samples struct {
	Timestamps []int64   // unix milliseconds
	Values     []float64 // Values[i] is the value at Timestamps[i]
	// Raw holds each timestamp as the file writes it; nil: errors write
	// them as unix seconds.
	Raw []string
	// Lines holds each sample's line in the file; nil when the format has
	// no lines, and errors then number the samples from 1.
	Lines []int
}

// raw is timestamp i as the file writes it.
func (s *Samples) raw(i int) string {
	if s.Raw != nil {
		return s.Raw[i]
	}
	return FormatUnixMillis(s.Timestamps[i])
}

// at is a LineError of file at sample i: its line, or its number.
func (s *Samples) at(file string, i int, err error) *LineError {
	if s.Lines != nil {
		return &LineError{File: file, Line: s.Lines[i], Err: err}
	}
	return &LineError{File: file, Sample: i + 1, Err: err}
}

// maxSteps is the most steps an EvenSeries read from a file may have.
const maxSteps = 10_000_000

// SnapTolerance is the share of a step by which a sample may miss its grid
// point and still be taken at it (see OnGrid). Scrapes land a few
// milliseconds off their schedule (more under load), and a raw export such
// as VictoriaMetrics' /api/v1/export keeps those times; half a step off is
// another grid, not jitter.
const SnapTolerance = 0.25

// OnGrid lays the samples of file, in time order, on the grid of their
// most common spacing from the first sample. A sample off that grid, or
// two on one step, is a *GridError naming the sample. Samples off their
// schedule by a little each (scrape jitter) have no common spacing to the
// millisecond: then the step is their most common spacing to the whole
// second, and each sample is taken at its nearest step when within
// SnapTolerance of it, one sample a step; the result counts how many moved
// and by how much at most.
func OnGrid(file string, s *Samples) (*EvenSeries, error) {
	ts := s.Timestamps
	if len(ts) < 2 {
		return nil, fmt.Errorf("%s: %d sample; at least 2 are needed to know the step", file, len(ts))
	}
	if i := notAscending(ts); i > 0 {
		return nil, s.at(file, i, fmt.Errorf("timestamp %s is before the sample before it; the samples must be in time order", s.raw(i)))
	}
	stepMs := CommonSpacing(ts, 1)
	if stepMs <= 0 {
		return nil, fmt.Errorf("%s: the samples are not spaced in time", file)
	}
	r, err := layOnGrid(file, s, stepMs, 0)
	if err == nil {
		return r, nil
	}
	if sec := CommonSpacing(ts, 1000); sec >= 1000 {
		// Whole seconds are the step a scrape schedule keeps: say how far
		// off that grid the sample is.
		if r, err = layOnGrid(file, s, sec, SnapTolerance); err == nil {
			return r, nil
		}
	}
	return nil, err
}

// notAscending is the index of the first timestamp before the one before
// it, or 0 when there is none.
func notAscending(ts []int64) int {
	for i := 1; i < len(ts); i++ {
		if ts[i] < ts[i-1] {
			return i
		}
	}
	return 0
}

// CommonSpacing is the most common positive spacing of ts, each spacing
// rounded to a multiple of unit milliseconds (the smaller of equally
// common ones); 0 when there is none.
func CommonSpacing(ts []int64, unit int64) int64 {
	counts := map[int64]int{}
	var best int64
	for i := 1; i < len(ts); i++ {
		d := (ts[i] - ts[i-1] + unit/2) / unit * unit
		if d <= 0 {
			continue
		}
		counts[d]++
		if c := counts[d]; c > counts[best] || c == counts[best] && d < best {
			best = d
		}
	}
	return best
}

// layOnGrid places the samples on the grid of stepMs from the first: a
// sample off its grid point by at most tolerance of a step is taken at it,
// one a step; with tolerance 0 a sample must fall on its point.
func layOnGrid(file string, s *Samples, stepMs int64, tolerance float64) (*EvenSeries, error) {
	ts := s.Timestamps
	step := time.Duration(stepMs) * time.Millisecond
	n := (ts[len(ts)-1]-ts[0]+stepMs/2)/stepMs + 1
	if err := checkSteps(file, n, step); err != nil {
		return nil, err
	}
	r := &EvenSeries{Start: ts[0], Step: step, Values: make([]float64, n)}
	for i := range r.Values {
		r.Values[i] = math.NaN()
	}
	gridError := func(i int, format string, args ...any) error {
		return s.at(file, i, &GridError{Step: step, Reason: "timestamp " + s.raw(i) + " " + fmt.Sprintf(format, args...)})
	}
	taken := make([]int32, n) // the sample at each step, +1 (0: none)
	for i, t := range ts {
		d := t - ts[0]
		k, off := d/stepMs, d%stepMs
		if 2*off > stepMs {
			k, off = k+1, off-stepMs
		}
		if off != 0 {
			abs := time.Duration(max(off, -off)) * time.Millisecond
			if tolerance == 0 {
				return nil, gridError(i, "is off the grid of the file's step %s from its first sample", step)
			}
			if float64(abs) > tolerance*float64(step) {
				return nil, gridError(i, "is off the grid of the file's step %s from its first sample by %s, more than %g of a step", step, abs, tolerance)
			}
			r.Snapped++
			r.MaxSnap = max(r.MaxSnap, abs)
		}
		if j := int(taken[k]) - 1; j >= 0 {
			return nil, gridError(i, "falls on the same step of %s as %s's %s", step, s.at(file, j, nil).location(), s.raw(j))
		}
		taken[k] = int32(i + 1)
		r.Values[k] = s.Values[i]
	}
	r.Gaps = countGaps(r.Values)
	return r, nil
}

// checkSteps refuses a grid of more than maxSteps steps between a file's
// first and last sample.
func checkSteps(file string, n int64, step time.Duration) error {
	if n > maxSteps {
		return fmt.Errorf("%s: %d steps of %s between the first and the last sample; too many", file, n, step)
	}
	return nil
}

func countGaps(vs []float64) int {
	n := 0
	for _, v := range vs {
		if !num.Finite(v) {
			n++
		}
	}
	return n
}

// FormatUnixMillis writes unix milliseconds as unix seconds, with a
// fraction only when needed (1700000000, 1700000000.25).
func FormatUnixMillis(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

// floorDiv is a/b rounded toward −∞.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Resample takes the samples of file, in any order, into steps of step
// aligned on multiples of it since the epoch, as a range query's steps
// are: a step's value is the mean of the finite samples whose times fall
// in [t, t+step), their sum when sum is set (counts: the requests of each
// sample go to the step its time falls in), and a gap (NaN) when none
// does.
func Resample(file string, s *Samples, step time.Duration, sum bool) (*EvenSeries, error) {
	stepMs := step.Milliseconds()
	if stepMs <= 0 {
		return nil, fmt.Errorf("%s: resampling to steps of %s: a step is at least 1ms", file, step)
	}
	ts := s.Timestamps
	if len(ts) == 0 {
		return nil, fmt.Errorf("%s: no sample to resample", file)
	}
	first, last := floorDiv(slices.Min(ts), stepMs), floorDiv(slices.Max(ts), stepMs)
	n := last - first + 1
	if err := checkSteps(file, n, step); err != nil {
		return nil, err
	}
	r := &EvenSeries{Start: first * stepMs, Step: step, Values: make([]float64, n), Resampled: len(ts)}
	count := make([]int32, n)
	for i, t := range ts {
		if v := s.Values[i]; num.Finite(v) {
			k := floorDiv(t, stepMs) - first
			r.Values[k] += v
			count[k]++
		}
	}
	for k, c := range count {
		switch {
		case c == 0:
			r.Values[k] = math.NaN()
			r.Gaps++
		case !sum:
			r.Values[k] /= float64(c)
		}
		if c > 1 {
			r.Crowded++
		}
	}
	return r, nil
}

// SumParts lays the parts of a sum, each read from the file of the same
// index in files, on one grid: their common step, from the earliest
// start of any to the latest end. It returns the sum, NaN where a part
// has a gap, and each part on that grid, 0 outside its own time range.
// A part whose step differs from the first's, or whose grid is off the
// first's, is a *GridError; a part read by OnGrid with samples taken at
// their nearest step may be off the first's grid by up to SnapTolerance
// of a step and is moved onto it.
func SumParts(files []string, parts []*EvenSeries) (*EvenSeries, [][]float64, error) {
	if len(parts) == 0 || len(files) != len(parts) {
		return nil, nil, fmt.Errorf("summing %d parts read from %d files: want one part a file, at least one", len(parts), len(files))
	}
	first := parts[0]
	step, stepMs := first.Step, first.Step.Milliseconds()
	starts := make([]int64, len(parts)) // each part's start on the first's grid
	start, end := first.Start, int64(math.MinInt64)
	for i, r := range parts {
		if r.Step != step {
			return nil, nil, fmt.Errorf("%s: %w", files[i], &GridError{Step: max(r.Step, step),
				Reason: fmt.Sprintf("step %s differs from the step %s of %s; the parts of a sum must share one", r.Step, step, files[0])})
		}
		// A file whose times were taken at their nearest step may start a
		// little off the others' grid, within the same tolerance.
		d := r.Start - first.Start
		off := d - floorDiv(d+stepMs/2, stepMs)*stepMs
		if off != 0 && (r.Snapped == 0 && first.Snapped == 0 || float64(max(off, -off)) > SnapTolerance*float64(stepMs)) {
			return nil, nil, fmt.Errorf("%s: %w", files[i], &GridError{Step: step,
				Reason: fmt.Sprintf("its samples are off the grid of %s (first samples %s and %s, step %s)",
					files[0], FormatUnixMillis(r.Start), FormatUnixMillis(first.Start), step)})
		}
		starts[i] = r.Start - off
		start = min(start, starts[i])
		end = max(end, starts[i]+int64(len(r.Values)-1)*stepMs)
	}
	n := (end-start)/stepMs + 1
	if err := checkSteps(files[0], n, step); err != nil {
		return nil, nil, err
	}
	total := &EvenSeries{Start: start, Step: step, Values: make([]float64, n)}
	sums := make([][]float64, len(parts))
	for i, r := range parts {
		total.Snapped += r.Snapped
		total.MaxSnap = max(total.MaxSnap, r.MaxSnap)
		total.Resampled += r.Resampled
		total.Crowded += r.Crowded
		p := make([]float64, n) // 0 outside the file's range
		copy(p[(starts[i]-start)/stepMs:], r.Values)
		for j, v := range p {
			total.Values[j] += v
		}
		sums[i] = p
	}
	for j, v := range total.Values {
		if !num.Finite(v) {
			total.Values[j] = math.NaN()
			total.Gaps++
		}
	}
	return total, sums, nil
}
