// Package ingest reads time series from Prometheus-compatible HTTP APIs and
// from files. It knows nothing of rules or detectors: it turns bytes into
// Series and says precisely what went wrong when it cannot.
package ingest

import (
	"math"
	"sort"
	"strconv"
)

// StaleNaN is the bit pattern Prometheus uses to mark a series as stale.
const StaleNaN uint64 = 0x7ff0000000000002

// IsStaleNaN reports whether v is a Prometheus staleness marker.
func IsStaleNaN(v float64) bool { return math.Float64bits(v) == StaleNaN }

// Label is one name/value pair of a series' identity.
type Label struct {
	Name, Value string
}

// Labels identify a series. They are kept sorted by Name.
type Labels []Label

// Get returns the value of the named label, or "" when it is absent.
func (ls Labels) Get(name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// Map returns the labels as a map.
func (ls Labels) Map() map[string]string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Name] = l.Value
	}
	return m
}

// Sort orders the labels by name, as every Labels value must be.
func (ls Labels) Sort() { sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name }) }

// String formats the labels as a Prometheus series selector,
// e.g. vllm:num_requests_running{model="m1",pod="p0"}.
// The result is a stable identity for the series.
func (ls Labels) String() string { return string(ls.AppendString(nil)) }

// AppendString appends the labels to dst as String formats them, so a
// caller can look a series up by its identity without building a string
// (a map index m[string(b)] does not allocate).
func (ls Labels) AppendString(dst []byte) []byte {
	dst = append(dst, ls.Get("__name__")...)
	dst = append(dst, '{')
	first := true
	for _, l := range ls {
		if l.Name == "__name__" {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, l.Name...)
		dst = append(dst, '=')
		dst = strconv.AppendQuote(dst, l.Value)
	}
	return append(dst, '}')
}

// LabelsFromMap builds sorted Labels from a map.
func LabelsFromMap(m map[string]string) Labels {
	ls := make(Labels, 0, len(m))
	for k, v := range m {
		ls = append(ls, Label{Name: k, Value: v})
	}
	ls.Sort()
	return ls
}

// Series is one time series: its labels and its samples in time order.
// Values may hold NaN, ±Inf and stale markers exactly as the source sent
// them; Clean drops them and counts what it dropped.
type Series struct {
	Labels     Labels
	Timestamps []int64 // unix milliseconds, ascending
	Values     []float64
}

// Dropped counts the samples that Clean removed, by reason.
type Dropped struct {
	NaN, Inf, Stale int
}

// Total is the number of dropped samples.
func (d Dropped) Total() int { return d.NaN + d.Inf + d.Stale }

// Add accumulates o into d.
func (d *Dropped) Add(o Dropped) { d.NaN += o.NaN; d.Inf += o.Inf; d.Stale += o.Stale }

// Clean removes non-finite samples and stale markers in place and reports
// how many of each it removed.
func (s *Series) Clean() Dropped {
	var d Dropped
	j := 0
	for i, v := range s.Values {
		switch {
		case IsStaleNaN(v):
			d.Stale++
			continue
		case math.IsNaN(v):
			d.NaN++
			continue
		case math.IsInf(v, 0):
			d.Inf++
			continue
		}
		s.Timestamps[j] = s.Timestamps[i]
		s.Values[j] = v
		j++
	}
	s.Timestamps = s.Timestamps[:j]
	s.Values = s.Values[:j]
	return d
}
