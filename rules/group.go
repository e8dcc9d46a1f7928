package rules

import (
	"errors"
	"hash/fnv"
	"io"
	"reflect"
	"time"

	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Group is a group of rules evaluated together on one interval, in
// dependency order (a scale rule after the forecast rule it reads).
type Group struct {
	cfg    rulefmt.Group
	offset time.Duration
	rules  []Rule
	// shard is the shard of a configured group's series the group
	// evaluates, nil when it evaluates all of them.
	shard *shardSpec
}

// Name is the group's name: the configured group's, or for one shard of a
// group with shards its UnitName.
func (g *Group) Name() string { return g.cfg.Name }

// Shard says which shard of which configured group g evaluates: ok is
// false when g evaluates all of its group's series.
func (g *Group) Shard() (group, label string, index, count int, ok bool) {
	if g.shard == nil {
		return g.cfg.Name, "", 0, 0, false
	}
	return g.shard.group, g.shard.label, g.shard.index, g.shard.count, true
}

// Interval is the group's evaluation interval.
func (g *Group) Interval() time.Duration { return g.cfg.Interval }

// Rules are the group's rules in the order they are evaluated.
func (g *Group) Rules() []Rule { return g.rules }

// Build makes the rules of the configuration's groups. It checks what only
// evaluation can check — detector names and parameters, forecast models —
// and reports every problem with its position, as rulefmt.Errors. The
// daemon and inferwatch check both call it once; a Manager takes what it
// returns and checks nothing again. A group with shards becomes several
// groups: one per shard, named by UnitName, and one named after it with
// the rules that run whole (see rulefmt.Splits).
func Build(groups []rulefmt.Group) ([]*Group, error) {
	var errs rulefmt.Errors
	out := make([]*Group, 0, len(groups))
	names := map[string]string{} // the configured group of each name
	for _, cg := range groups {
		for _, u := range units(cg) {
			if other, dup := names[u.cfg.Name]; dup && other != cg.Name {
				errs.Add(cg.Pos, cg.Name, "", "the name %q is taken by group %q and by group %q, a group with shards naming each <group>:shard-<i>-of-<n>; rename one",
					u.cfg.Name, other, cg.Name)
				continue
			}
			names[u.cfg.Name] = cg.Name
			g, es := buildGroup(u.cfg)
			if u.shard == nil || u.shard.index == 0 { // the other shards' are the same
				for _, e := range es {
					e.Group = cg.Name
					errs = append(errs, e)
				}
			}
			g.shard = u.shard
			out = append(out, g)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// buildGroup makes the rules of one group, every problem in errs.
func buildGroup(gc rulefmt.Group) (*Group, rulefmt.Errors) {
	var errs rulefmt.Errors
	g := &Group{cfg: gc, offset: groupOffset(gc.Name, gc.Interval)}
	byName := map[string]Rule{}
	built := make([]Rule, 0, len(gc.Rules))
	for _, rc := range gc.Rules {
		mk := constructors[rc.Kind]
		if mk == nil {
			errs.Add(rc.Pos, gc.Name, rc.Name, "rule kind %q has no evaluation", rc.Kind)
			continue
		}
		r, err := mk(gc, rc)
		if err != nil {
			var es rulefmt.Errors
			if errors.As(err, &es) {
				errs = append(errs, es...)
			} else {
				errs.Add(rc.Pos, gc.Name, rc.Name, "%v", err)
			}
			continue
		}
		byName[rc.Name] = r
		built = append(built, r)
	}
	// A forecast rule's series keep what the scale rules reading it reach
	// back to, when that is more than its history.
	for _, r := range built {
		if sr, ok := r.(*scaleRule); ok {
			if fr, ok := byName[sr.c.Forecast].(*forecastRule); ok {
				fr.keep(sr.reach())
			}
		}
	}
	g.rules = evalOrder(built, byName)
	return g, errs
}

// dependent is a rule that reads the result of another rule of its group
// in the same cycle (a scale rule its forecast rule's outlook).
type dependent interface {
	dependsOn() string
}

// evalOrder orders the rules so that each comes after the rule it depends
// on, keeping the file's order otherwise. rulefmt has checked that a scale
// rule names a forecast rule of its group, so there is no cycle.
func evalOrder(rs []Rule, byName map[string]Rule) []Rule {
	out := make([]Rule, 0, len(rs))
	placed := map[Rule]bool{}
	var place func(r Rule)
	place = func(r Rule) {
		if placed[r] {
			return
		}
		placed[r] = true
		if d, ok := r.(dependent); ok {
			if dep := byName[d.dependsOn()]; dep != nil {
				place(dep)
			}
		}
		out = append(out, r)
	}
	for _, r := range rs {
		if _, ok := r.(dependent); !ok {
			place(r)
		}
	}
	for _, r := range rs {
		place(r)
	}
	return out
}

// sameRule reports whether two configurations of a rule evaluate the same
// thing, positions aside: on a reload such a rule keeps its state.
func sameRule(a, b rulefmt.Rule) bool {
	a.Pos, a.SpecPos, b.Pos, b.SpecPos = rulefmt.Pos{}, rulefmt.Pos{}, rulefmt.Pos{}, rulefmt.Pos{}
	return reflect.DeepEqual(a, b)
}

// sameKeep reports whether two rules keep as much history a series: two
// forecast rules of one configuration differ there when the scale rules
// reading them reach back differently.
func sameKeep(a, b Rule) bool {
	fa, ok := a.(*forecastRule)
	fb, ok2 := b.(*forecastRule)
	return !ok || !ok2 || fa.opts.MaxHistory == fb.opts.MaxHistory
}

// groupOffset spreads groups over their interval so they do not all
// evaluate at the same instant; it is stable for a group name.
func groupOffset(name string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	io.WriteString(h, name)
	return time.Duration(h.Sum64() % uint64(interval))
}

// nextTick returns the first evaluation time of a group strictly after t:
// the instants k·interval + offset since the Unix epoch.
func nextTick(t time.Time, interval, offset time.Duration) time.Time {
	n := t.UnixNano() - int64(offset)
	k := n / int64(interval)
	if n < 0 && n%int64(interval) != 0 {
		k--
	}
	return time.Unix(0, (k+1)*int64(interval)+int64(offset))
}
