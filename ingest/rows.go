package ingest

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Rows are the samples of a file holding one series, in file order (or
// sorted), each with its timestamp as written and where it stands.
type Rows struct {
	Samples
	// Nums holds each row's 1-based sample number when the format has no
	// lines (Lines nil).
	Nums []int
}

// RowsOptions say what ReadRows accepts.
type RowsOptions struct {
	// AllowDuplicates keeps rows that repeat the previous row's timestamp.
	AllowDuplicates bool
	// Sort sorts the rows by timestamp, stably (rows with equal timestamps
	// keep their order in the file), before they are checked.
	Sort bool
	// OrderHint and RepeatHint end the error of a row before the previous
	// one and of a repeated timestamp, in place of the default ("rows must
	// be in time order", "rows must not repeat a timestamp"): what the
	// reader can do about it.
	OrderHint, RepeatHint string
}

// ReadRows reads a CSV file keeping its timestamp text, or any other file
// format ReadFile reads, which must hold exactly one series. The rows must
// be in time order (or o.Sort sorts them), without repeated timestamps
// unless o.AllowDuplicates; an error names the first row that is not, by
// its line (CSV) or sample number.
func ReadRows(path string, o RowsOptions) (*Rows, error) {
	var in *Rows
	if strings.EqualFold(filepath.Ext(path), ".csv") || SniffFormat(peek(path)) == FormatCSV {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		c, err := ReadCSV(bytes.NewReader(data), path, CSVOptions{AllowDuplicates: true, AllowUnsorted: true})
		if err != nil {
			return nil, err
		}
		in = &Rows{Samples: Samples{Timestamps: c.Series.Timestamps, Values: c.Series.Values, Raw: c.RawTimestamps, Lines: c.Lines}}
	} else {
		ss, err := ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(ss) != 1 {
			return nil, fmt.Errorf("%s: holds %d series (%s); a file gives one series: select one in the query, or sum them (sum(...) in PromQL)", path, len(ss), SeriesList(ss))
		}
		s := ss[0]
		if len(s.Timestamps) == 0 {
			return nil, fmt.Errorf("%s: the series %s has no samples", path, s.Labels)
		}
		in = &Rows{Samples: Samples{Timestamps: s.Timestamps, Values: s.Values, Raw: make([]string, len(s.Timestamps))}, Nums: make([]int, len(s.Timestamps))}
		for i, t := range s.Timestamps {
			in.Raw[i] = FormatUnixMillis(t)
			in.Nums[i] = i + 1
		}
	}
	if o.Sort {
		in.sortByTime()
	}
	if err := in.checkOrder(path, o); err != nil {
		return nil, err
	}
	return in, nil
}

// sortByTime sorts the rows by timestamp, stably.
func (in *Rows) sortByTime() {
	if slices.IsSorted(in.Timestamps) {
		return
	}
	perm := make([]int, len(in.Timestamps))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(in.Timestamps[a], in.Timestamps[b]) })
	in.Timestamps = permute(in.Timestamps, perm)
	in.Values = permute(in.Values, perm)
	in.Raw = permute(in.Raw, perm)
	if in.Lines != nil {
		in.Lines = permute(in.Lines, perm)
	}
	if in.Nums != nil {
		in.Nums = permute(in.Nums, perm)
	}
}

// permute returns xs[perm[0]], xs[perm[1]], ….
func permute[T any](xs []T, perm []int) []T {
	out := make([]T, len(xs))
	for i, k := range perm {
		out[i] = xs[k]
	}
	return out
}

// checkOrder reports the first row whose timestamp is before the previous
// row's, or repeats it without o.AllowDuplicates.
func (in *Rows) checkOrder(path string, o RowsOptions) error {
	where := func(i int) string {
		if in.Lines != nil {
			return fmt.Sprintf("%s:%d", path, in.Lines[i])
		}
		return fmt.Sprintf("%s: sample %d", path, in.Nums[i])
	}
	prev := func(i int) string {
		if in.Lines != nil {
			return fmt.Sprintf("line %d's %s", in.Lines[i], in.Raw[i])
		}
		return fmt.Sprintf("sample %d's %s", in.Nums[i], in.Raw[i])
	}
	ts := in.Timestamps
	for i := 1; i < len(ts); i++ {
		switch {
		case ts[i] < ts[i-1]:
			return fmt.Errorf("%s: timestamp %s is before %s (%s)", where(i), in.Raw[i], prev(i-1), cmp.Or(o.OrderHint, "rows must be in time order"))
		case ts[i] == ts[i-1] && !o.AllowDuplicates:
			return fmt.Errorf("%s: timestamp %s repeats %s; %s", where(i), in.Raw[i], prev(i-1), cmp.Or(o.RepeatHint, "rows must not repeat a timestamp"))
		}
	}
	return nil
}

// peek returns the first bytes of a file, for sniffing its format (nil on
// error: reading it properly reports the error).
func peek(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// ReadEven reads one series file on an even step: laid on the grid of its
// own spacing (OnGrid), or with resample > 0 averaged into steps of
// resample (summed with sum set, for counts; Resample).
func ReadEven(file string, o RowsOptions, resample time.Duration, sum bool) (*EvenSeries, error) {
	if resample > 0 {
		// Averaging does not care about order or repeats.
		o.Sort, o.AllowDuplicates = true, true
	}
	in, err := ReadRows(file, o)
	if err != nil {
		return nil, err
	}
	if resample > 0 {
		return Resample(file, &in.Samples, resample, sum)
	}
	return OnGrid(file, &in.Samples)
}

// ReadParts reads files as the parts of a sum laid on one grid (SumParts),
// each as ReadEven reads it; check, when not nil, judges each file's
// series as read.
func ReadParts(files []string, resample time.Duration, sum bool, check func(file string, r *EvenSeries) error) (*EvenSeries, [][]float64, error) {
	rs := make([]*EvenSeries, len(files))
	for i, f := range files {
		var err error
		if rs[i], err = ReadEven(f, RowsOptions{}, resample, sum); err == nil && check != nil {
			err = check(f, rs[i])
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return SumParts(files, rs)
}

// SeriesInfo describes a series ReadOne read.
type SeriesInfo struct {
	File, Series     string
	Samples, Dropped int   // finite samples kept, samples dropped as NaN, ±Inf or stale
	MedianStep       int64 // the median spacing of the samples, ms
}

// OneOptions say which series of a file ReadOne takes.
type OneOptions struct {
	// Selector picks the series among several ("": the file must hold
	// one); SelectorName names it in errors (the flag that gave it).
	Selector, SelectorName string
	// MinSamples is the least number of finite samples accepted.
	MinSamples int
}

// ReadOne reads the file with ReadFile and returns the one series it
// holds, or the one o.Selector picks, with its non-finite samples dropped
// and in time order. Every error names the file.
func ReadOne(file string, o OneOptions) (Series, SeriesInfo, error) {
	info := SeriesInfo{File: file}
	var sel *Selector
	if o.Selector != "" {
		var err error
		if sel, err = ParseSelector(o.Selector); err != nil {
			return Series{}, info, fmt.Errorf("%s %s", o.SelectorName, err)
		}
	}
	all, err := ReadFile(file)
	if err != nil {
		return Series{}, info, err
	}
	ss := all
	if sel != nil {
		ss = nil
		for _, s := range all {
			if sel.Matches(s.Labels) {
				ss = append(ss, s)
			}
		}
	}
	switch {
	case len(all) == 0:
		return Series{}, info, fmt.Errorf("%s: holds no series", file)
	case len(ss) == 0:
		return Series{}, info, fmt.Errorf("%s: no series matches %s %s; the file holds %d series: %s",
			file, o.SelectorName, o.Selector, len(all), SeriesList(all))
	case len(ss) > 1 && sel != nil:
		return Series{}, info, fmt.Errorf("%s: %d series match %s %s, need exactly one: %s; narrow the selector",
			file, len(ss), o.SelectorName, o.Selector, SeriesList(ss))
	case len(ss) > 1:
		return Series{}, info, fmt.Errorf("%s: holds %d series, need exactly one: %s; pick one with %s SELECTOR, e.g. %s '%s'",
			file, len(ss), SeriesList(ss), o.SelectorName, o.SelectorName, ss[0].Labels)
	}
	s := ss[0]
	info.Series = s.Labels.String()
	info.Dropped = s.Clean().Total()
	s.sortByTime()
	info.Samples = len(s.Values)
	if len(s.Values) < o.MinSamples {
		return s, info, fmt.Errorf("%s: series %s has %d finite sample%s (%d dropped as NaN, Inf or stale), need at least %d",
			file, info.Series, len(s.Values), plural(len(s.Values)), info.Dropped, o.MinSamples)
	}
	info.MedianStep = medianSpacing(s.Timestamps)
	if info.MedianStep == 0 {
		return s, info, fmt.Errorf("%s: series %s has all of its %d samples at one timestamp", file, info.Series, len(s.Values))
	}
	return s, info, nil
}

// sortByTime puts the samples in time order when they are not already.
func (s *Series) sortByTime() {
	if slices.IsSorted(s.Timestamps) {
		return
	}
	idx := make([]int, len(s.Timestamps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.Timestamps[a], s.Timestamps[b]) })
	s.Timestamps, s.Values = permute(s.Timestamps, idx), permute(s.Values, idx)
}

// medianSpacing is the median of the positive differences between
// successive ascending timestamps, 0 when there is none.
func medianSpacing(ts []int64) int64 {
	d := make([]int64, 0, len(ts))
	for i := 1; i < len(ts); i++ {
		if dt := ts[i] - ts[i-1]; dt > 0 {
			d = append(d, dt)
		}
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)-1)/2]
}

// SeriesList formats up to five series identities for a message.
func SeriesList(ss []Series) string {
	const show = 5
	parts := make([]string, 0, show+1)
	for i, s := range ss {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(ss)-show))
			break
		}
		parts = append(parts, s.Labels.String())
	}
	return strings.Join(parts, ", ")
}
