package rules

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"iter"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metricsql"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// A group with shards (rulefmt.Group.Shards) is evaluated as units: one
// unit per shard, named by UnitName, with the rules split into shards
// (rulefmt.Splits), and one unit named after the group with the rules
// that run whole, if any. Each unit is a Group of its own: it is leased,
// resumed and has its alerts kept by its name. A series belongs to the
// shard ShardOf gives the value of its shard_by label (the empty value for
// a series without it), and each shard reads only its own series from the
// store: it asks for the label's values among the series of a query and
// selects its own with one matcher, pod=~"v1|v2|…".

// shardSpec is the shard a unit evaluates.
type shardSpec struct {
	group string // the configured group's name
	label string
	index int // from 0
	count int
}

// UnitName is the name of shard index (from 0) of count of group: e.g.
// latency:shard-3-of-8 for index 2.
func UnitName(group string, index, count int) string {
	return fmt.Sprintf("%s:shard-%d-of-%d", group, index+1, count)
}

// ShardOf is the shard, from 0 to count−1, of a series whose shard label
// has this value: Lamping and Veach's jump consistent hash of the value's
// 64-bit FNV-1a hash. It is the same in every process and release; when
// count grows to count+1, a share of about 1/(count+1) of the values
// moves, each to the new shard, and the others stay where they were.
func ShardOf(value string, count int) int {
	if count <= 1 {
		return 0
	}
	h := fnv.New64a()
	io.WriteString(h, value)
	key := h.Sum64()
	b, j := int64(-1), int64(0)
	for j < int64(count) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// unit is one unit of a configured group: its rules' configuration, named
// as the unit, and its shard (nil for a group without shards and for the
// unit of the rules that run whole).
type unit struct {
	cfg   rulefmt.Group
	shard *shardSpec
}

// units splits a configured group into the units it is evaluated as.
func units(g rulefmt.Group) []unit {
	if g.Shards < 2 || len(g.ShardBy) != 1 {
		return []unit{{cfg: g}}
	}
	var whole, split []rulefmt.Rule
	for _, r := range g.Rules {
		if rulefmt.Splits(g, r) {
			split = append(split, r)
		} else {
			whole = append(whole, r)
		}
	}
	base := g
	base.Shards, base.ShardBy = 0, nil
	var out []unit
	if len(whole) > 0 {
		u := base
		u.Rules = whole
		out = append(out, unit{cfg: u})
	}
	if len(split) == 0 {
		return out
	}
	for i := range g.Shards {
		u := base
		u.Name = UnitName(g.Name, i, g.Shards)
		u.Rules = split
		out = append(out, unit{cfg: u, shard: &shardSpec{group: g.Name, label: g.ShardBy[0], index: i, count: g.Shards}})
	}
	return out
}

// unsharded is groups with their shards left out: each evaluated whole.
func unsharded(groups []rulefmt.Group) []rulefmt.Group {
	out := slices.Clone(groups)
	for i := range out {
		out[i].Shards, out[i].ShardBy = 0, nil
	}
	return out
}

// LabelValuer lists the values of a label among the series of the
// selector match over [start, end], as the store's
// /api/v1/label/<name>/values does. A Manager whose groups have shards
// needs its Querier to be one. *ingest.Client implements it.
type LabelValuer interface {
	LabelValues(ctx context.Context, name, match string, start, end time.Time) ([]string, error)
}

// maxShardQuery bounds the length of a shard's query: VictoriaMetrics
// refuses a query longer than -search.maxQueryLen, 16 KiB by default. A
// shard whose values make it longer is asked for in several queries.
const maxShardQuery = 12 << 10

// valuesBefore is how long before a range's start a shard asks for the
// label's values: a series whose rollup window reaches into the range
// from before it is selected too.
const valuesBefore = time.Hour

// shardQuerier reads one shard's series of each query: it asks the store
// for the shard label's values among the query's series over the range,
// keeps those of its shard, and queries with a matcher that selects them.
type shardQuerier struct {
	q      Querier
	values LabelValuer
	shard  *shardSpec
}

// shardPartQuerier is a shardQuerier over a PartQuerier.
type shardPartQuerier struct {
	shardQuerier
	parts PartQuerier
}

// newShardQuerier returns the querier of shard s over q, which must be a
// LabelValuer; a PartQuerier when q is one.
func newShardQuerier(q Querier, s *shardSpec) (Querier, error) {
	lv, ok := q.(LabelValuer)
	if !ok {
		return nil, fmt.Errorf("group %q has shards, and the store client %T cannot list a label's values", s.group, q)
	}
	sq := shardQuerier{q: q, values: lv, shard: s}
	if pq, ok := q.(PartQuerier); ok {
		return &shardPartQuerier{shardQuerier: sq, parts: pq}, nil
	}
	return &sq, nil
}

// queries returns the queries that together select this shard's series
// of query over [start, end]; none when the shard has no series.
func (sq *shardQuerier) queries(ctx context.Context, query string, start, end time.Time) ([]string, error) {
	sels, err := selectorsOf(query)
	if err != nil {
		return nil, err
	}
	var all []string
	for _, sel := range sels {
		vs, err := sq.values.LabelValues(ctx, sq.shard.label, sel, start.Add(-valuesBefore), end)
		if err != nil {
			return nil, fmt.Errorf("listing the values of %s for %s: %w", sq.shard.label, sq.shard, err)
		}
		all = append(all, vs...)
	}
	return ShardQueries(query, sq.shard.label, ShardValues(all, sq.shard.index, sq.shard.count), maxShardQuery)
}

// ShardValues returns the values of values that belong to shard index of
// count, sorted, with the empty value (the series without the label)
// when it belongs there.
func ShardValues(values []string, index, count int) []string {
	var out []string
	for _, v := range values {
		if v != "" && ShardOf(v, count) == index {
			out = append(out, v)
		}
	}
	if ShardOf("", count) == index {
		out = append(out, "")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// selectorsOf returns the series selectors of query, each as text.
func selectorsOf(query string) ([]string, error) {
	e, err := metricsql.Parse(query)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", query, err)
	}
	var out []string
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		if me, ok := x.(*metricsql.MetricExpr); ok && len(me.LabelFilterss) > 0 {
			out = append(out, string(me.AppendString(nil)))
		}
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("%q selects no series to split into shards", query)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ShardQueries returns query with label=~"v1|v2|…" added to each of its
// series selectors (to each or-group of one), the values quoted so that
// each matches itself only: as few queries as keep each within maxLen
// bytes (halving the values until they fit), together selecting the
// series whose label has one of values. None when values is empty. The
// empty value selects the series without the label.
func ShardQueries(query, label string, values []string, maxLen int) ([]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = regexp.QuoteMeta(v)
	}
	var out []string
	var split func(vs []string) error
	split = func(vs []string) error {
		q, err := withLabel(query, label, strings.Join(vs, "|"))
		if err != nil {
			return err
		}
		if len(q) <= maxLen {
			out = append(out, q)
			return nil
		}
		if len(vs) == 1 {
			return fmt.Errorf("the query %q with a matcher on %s for one value is %d bytes, longer than %d", query, label, len(q), maxLen)
		}
		if err := split(vs[:len(vs)/2]); err != nil {
			return err
		}
		return split(vs[len(vs)/2:])
	}
	if err := split(quoted); err != nil {
		return nil, err
	}
	return out, nil
}

// withLabel is query with label=~alternation added to every or-group of
// each of its selectors.
func withLabel(query, label, alternation string) (string, error) {
	e, err := metricsql.Parse(query)
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", query, err)
	}
	lf := metricsql.LabelFilter{Label: label, Value: alternation, IsRegexp: true}
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		me, ok := x.(*metricsql.MetricExpr)
		if !ok || len(me.LabelFilterss) == 0 {
			return
		}
		for i, g := range me.LabelFilterss {
			me.LabelFilterss[i] = append(slices.Clip(g), lf)
		}
	})
	return string(e.AppendString(nil)), nil
}

// QueryRange returns the shard's series of query.
func (sq *shardQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]ingest.Series, error) {
	qs, err := sq.queries(ctx, query, start.Add(-step), end)
	if err != nil {
		return nil, err
	}
	var out []ingest.Series
	for _, q := range qs {
		got, err := sq.q.QueryRange(ctx, q, start, end, step)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// QueryRangeParts hands the shard's series of query over in parts. When
// the shard takes more than one query, their parts come one query after
// the other, and only the last part says the range is done.
func (sq *shardPartQuerier) QueryRangeParts(ctx context.Context, query string, start, end time.Time, step time.Duration) iter.Seq2[ingest.Part, error] {
	return func(yield func(ingest.Part, error) bool) {
		qs, err := sq.queries(ctx, query, start.Add(-step), end)
		if err != nil {
			yield(ingest.Part{}, err)
			return
		}
		switch len(qs) {
		case 0:
			yield(ingest.Part{Done: end}, nil)
			return
		case 1:
			for p, err := range sq.parts.QueryRangeParts(ctx, qs[0], start, end, step) {
				if !yield(p, err) || err != nil {
					return
				}
			}
			return
		}
		for _, q := range qs {
			for p, err := range sq.parts.QueryRangeParts(ctx, q, start, end, step) {
				p.Done = time.Time{}
				if !yield(p, err) || err != nil {
					return
				}
			}
		}
		yield(ingest.Part{Done: end}, nil)
	}
}

// sameShard reports whether two groups evaluate the same shard (both nil:
// all series).
func sameShard(a, b *shardSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// String says which shard s is, for errors and logs.
func (s *shardSpec) String() string {
	return fmt.Sprintf("shard %d of %d of group %q by %s", s.index+1, s.count, s.group, s.label)
}
