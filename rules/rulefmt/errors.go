package rulefmt

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// String formats p as file:line:column, leaving out the parts that are
// unknown (a zero line or column).
func (p Pos) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(p.Line))
		if p.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Column))
		}
	}
	return b.String()
}

// Error is one problem in a configuration file: where it is, the group and
// rule it belongs to (empty outside groups and rules) and what is wrong.
type Error struct {
	Pos   Pos
	Group string
	Rule  string
	Msg   string
}

// Error formats e as `file:line:col: group "g": rule "r": msg`.
func (e *Error) Error() string {
	var b strings.Builder
	if p := e.Pos.String(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	if e.Group != "" {
		fmt.Fprintf(&b, "group %q: ", e.Group)
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, "rule %q: ", e.Rule)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a configuration, one line each. Parse
// and Load return it as their error; callers that check more (e.g. the
// parameters of detectors) append to it with Add and return Err.
type Errors []*Error

// Add appends an error at pos, in the given group and rule (either may be
// empty), with a message formatted as by fmt.Sprintf.
func (es *Errors) Add(pos Pos, group, rule, format string, args ...any) {
	*es = append(*es, &Error{Pos: pos, Group: group, Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

// Err returns nil when es is empty, or else es sorted by position (file,
// line, column; errors at one position keep their order).
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	sorted := slices.Clone(es)
	slices.SortStableFunc(sorted, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
		)
	})
	return sorted
}

// Error joins the errors, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives errors.Is and errors.As access to each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
