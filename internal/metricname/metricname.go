// Package metricname holds what inferwatch's self-metrics are called and
// how they are described: Name builds a name with its labels, escaping
// label values the way the Prometheus text format reads them, so that no
// group, rule or URL can make /metrics unparseable; WritePrometheus writes
// a set with each family's help text; the *Buckets functions give the
// histograms' bucket bounds.
package metricname

import "strings"

// Name returns base{k1="v1",k2="v2",…} for the label pairs kv (names are
// the package's own; values are escaped: backslash, double quote and line
// feed, as the text format requires; every other character is kept, a tab
// or U+2028 included, which the format allows inside quotes). It panics on
// an odd number of kv, a programming error.
func Name(base string, kv ...string) string {
	if len(kv)%2 != 0 {
		panic("metricname.Name: odd number of label arguments")
	}
	if len(kv) == 0 {
		return base
	}
	var b strings.Builder
	b.WriteString(base)
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		escapeTo(&b, kv[i+1])
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func escapeTo(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
}
