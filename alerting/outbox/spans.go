package outbox

import "sort"

// spans is a set of sequence numbers held as sorted, disjoint,
// non-adjacent half-open ranges [lo, hi).
type spans []span

type span struct{ lo, hi uint64 }

// index of the first span with hi > x.
func (s spans) search(x uint64) int {
	return sort.Search(len(s), func(i int) bool { return s[i].hi > x })
}

// contains reports whether x is in the set.
func (s spans) contains(x uint64) bool {
	i := s.search(x)
	return i < len(s) && s[i].lo <= x
}

// covered counts the members of [lo, hi) in the set.
func (s spans) covered(lo, hi uint64) uint64 {
	var n uint64
	for i := s.search(lo); i < len(s) && s[i].lo < hi; i++ {
		n += min(hi, s[i].hi) - max(lo, s[i].lo)
	}
	return n
}

// add puts [lo, hi) into the set.
func (s *spans) add(lo, hi uint64) {
	if lo >= hi {
		return
	}
	v := *s
	// Spans that overlap or touch [lo, hi) are v[i:j].
	i := sort.Search(len(v), func(k int) bool { return v[k].hi >= lo })
	j := i
	for j < len(v) && v[j].lo <= hi {
		lo, hi = min(lo, v[j].lo), max(hi, v[j].hi)
		j++
	}
	if i == j {
		v = append(v, span{})
		copy(v[i+1:], v[i:])
		v[i] = span{lo, hi}
	} else {
		v[i] = span{lo, hi}
		v = append(v[:i+1], v[j:]...)
	}
	*s = v
}

// end is the largest member plus one, or 0 for an empty set.
func (s spans) end() uint64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].hi
}
