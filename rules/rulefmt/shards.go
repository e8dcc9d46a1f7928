package rulefmt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/VictoriaMetrics/metricsql"
)

// MaxShards bounds a group's shards.
const MaxShards = 256

// groupShards reads a group's shards and shard_by. A group split into
// shards needs the label its series are split by: each shard asks the
// store for its own share by that label's values, so the store reads each
// series once a cycle, not once a shard.
func (p *parser) groupShards(g *Group, f map[string]pair) {
	sk, hasShards := f["shards"]
	bk, hasBy := f["shard_by"]
	if hasShards {
		g.Shards = int(p.integer(sk, "shards", 0, 1, MaxShards))
	}
	if hasBy {
		by := p.labelList(resolve(bk.v), "shard_by")
		switch {
		case !hasShards:
			p.errorf(resolve(bk.k), "shard_by names the label a group's shards split its series by, and the group has no shards; add shards: N (2 or more)")
		case len(by) != 1 && len(by) == len(resolve(bk.v).Content):
			p.errorf(resolve(bk.v), "shard_by takes one label, got %d: the shards ask the store for that label's values and select their own with one matcher", len(by))
		case len(by) == 1:
			g.ShardBy = by
		}
	} else if hasShards && g.Shards > 1 {
		p.errorf(resolve(sk.k), "shards needs shard_by, the label the series are split by (e.g. shard_by: [pod]): each shard reads its own share from the store by that label's values")
	}
}

// checkShards checks, for a group split into shards, that each rule split
// into them keeps the shard label in the series its query returns: a
// query that sums the label away would give each shard the sum of its
// share only.
func (p *parser) checkShards(g Group) {
	if g.Shards < 2 || len(g.ShardBy) != 1 {
		return
	}
	label := g.ShardBy[0]
	for _, r := range g.Rules {
		if !Splits(g, r) {
			continue
		}
		if why := dropsLabel(r.Expr, label); why != "" {
			p.errs.Add(r.Pos, g.Name, r.Name, "the group's shards split this rule's series by %s, and its expr %s: each shard would compute it from its own share of the series; keep %s in every series the expr combines (by (%s, …)), or move the rule to a group without shards",
				label, why, label, label)
		}
	}
}

// Splits reports whether rule r of group g, when g has shards, is split
// into them: the kinds that judge each series alone (anomaly, decay,
// spikiness, and forecast without sum_by when no scale rule reads it). The
// others run whole, once, in the unit named after the group: those that
// compare or add series up (correlation, knee, imbalance, a forecast
// with sum_by) and scale rules with the forecast rules they read, whose
// outlook a scale decision takes whole.
func Splits(g Group, r Rule) bool {
	switch r.Kind {
	case KindAnomaly, KindDecay, KindSpikiness:
		return true
	case KindForecast:
		if fc, ok := r.Spec.(*Forecast); !ok || fc.BottomUp {
			return false
		}
		for _, o := range g.Rules {
			if sc, ok := o.Spec.(*Scale); ok && sc.Forecast == r.Name {
				return false
			}
		}
		return true
	}
	return false
}

// dropsLabel says how expr loses label from the series it returns (an
// aggregation that does not keep it, a function that returns one series
// or rewrites the label), or "" when every series it returns keeps it.
func dropsLabel(expr, label string) string {
	e, err := metricsql.Parse(expr)
	if err != nil {
		return "" // reported where expr is read
	}
	var why string
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		if why != "" {
			return
		}
		switch x := x.(type) {
		case *metricsql.AggrFuncExpr:
			by := x.Modifier.Args
			switch strings.ToLower(x.Modifier.Op) {
			case "by":
				if !slices.Contains(by, label) {
					why = fmt.Sprintf("aggregates with %s by (%s), without %s", x.Name, strings.Join(by, ", "), label)
				}
			case "without":
				if slices.Contains(by, label) {
					why = fmt.Sprintf("aggregates with %s without (%s)", x.Name, strings.Join(by, ", "))
				}
			default:
				why = fmt.Sprintf("aggregates all series with %s", x.Name)
			}
		case *metricsql.FuncExpr:
			switch name := strings.ToLower(x.Name); {
			case name == "absent" || name == "absent_over_time" || name == "scalar" || name == "vector":
				why = fmt.Sprintf("calls %s", x.Name)
			case strings.HasPrefix(name, "label_") && mentions(x.Args, label):
				why = fmt.Sprintf("rewrites %s with %s", label, x.Name)
			}
		case *metricsql.BinaryOpExpr:
			// A side whose series lack the label would find no match in
			// a shard: its filter by the label selects none of them.
			args := x.GroupModifier.Args
			switch strings.ToLower(x.GroupModifier.Op) {
			case "on":
				if !slices.Contains(args, label) {
					why = fmt.Sprintf("matches with on (%s), without %s", strings.Join(args, ", "), label)
				}
			case "ignoring":
				if slices.Contains(args, label) {
					why = fmt.Sprintf("matches with ignoring (%s)", strings.Join(args, ", "))
				}
			}
		}
	})
	return why
}

// mentions reports whether one of args is the string label.
func mentions(args []metricsql.Expr, label string) bool {
	for _, a := range args {
		if s, ok := a.(*metricsql.StringExpr); ok && s.S == label {
			return true
		}
	}
	return false
}
