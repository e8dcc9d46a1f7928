// Package discover asks a Prometheus-compatible store which serving
// engines and GPU exporters it holds series of, which labels tell their
// models, pods and GPUs apart and how often they are scraped, and writes
// a configuration of the matching presets. Everything but the questions
// (Find) is a pure function of the answers.
package discover

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metricsql"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Store is what Find asks a store: the metric names and the series that
// match a selector, and raw samples. *ingest.Client answers all three.
type Store interface {
	LabelValues(ctx context.Context, name, match string, start, end time.Time) ([]string, error)
	Series(ctx context.Context, match string, start, end time.Time) ([]ingest.Labels, error)
	Query(ctx context.Context, query string, ts time.Time) ([]ingest.Series, error)
}

// Question is what Find asks about.
type Question struct {
	// URL names the store in the summary and the configuration's
	// comments: with its credentials redacted.
	URL string
	// Selector limits the question to the series it matches ("" for all);
	// each group of the configuration gets it as its selector.
	Selector   string
	Start, End time.Time
}

// Find asks the store which presets' metrics it holds between q.Start
// and q.End among the series of q.Selector, and, for each preset found,
// the series of its most common metric and how often a few of them are
// sampled; then it plans the groups of the configuration (none when it
// found nothing).
func Find(ctx context.Context, c Store, q Question) (*Report, error) {
	rep, err := find(ctx, c, strings.TrimSpace(q.Selector), q.Start, q.End)
	if err != nil {
		return nil, err
	}
	rep.url, rep.selector, rep.lookback = q.URL, strings.TrimSpace(q.Selector), q.End.Sub(q.Start)
	if len(rep.found) > 0 {
		if rep.groups, err = planGroups(rep.found, rep.selector); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// Empty reports whether the store holds no series of any preset.
func (r *Report) Empty() bool { return len(r.found) == 0 }

// Where names the store and the selector asked about, for people.
func (r *Report) Where() string {
	if r.selector == "" {
		return r.url
	}
	return r.url + " (the series of " + r.selector + ")"
}

func find(ctx context.Context, c Store, selector string, start, end time.Time) (*Report, error) {
	catalog, err := presetCatalog()
	if err != nil {
		return nil, err
	}
	// The serving engines first, then the GPU exporter.
	slices.SortStableFunc(catalog, func(a, b presetSpec) int {
		return boolRank(a.name == gpuPreset) - boolRank(b.name == gpuPreset)
	})
	var all []string
	for _, ps := range catalog {
		for _, m := range ps.metrics {
			if !slices.Contains(all, m) {
				all = append(all, m)
			}
		}
	}
	extra, err := selectorMatchers(selector)
	if err != nil {
		return nil, err
	}
	names, err := c.LabelValues(ctx, "__name__", matchNames(all, extra), start, end)
	if err != nil {
		return nil, fmt.Errorf("asking which metrics the store holds: %w", err)
	}
	held := map[string]bool{}
	for _, n := range names {
		held[n] = true
	}
	rep := &Report{}
	for i := range catalog {
		ps := &catalog[i]
		f := &presetFound{spec: ps}
		for _, m := range ps.metrics {
			if held[m] {
				f.metrics = append(f.metrics, m)
			}
		}
		if len(f.metrics) == 0 {
			continue
		}
		series, err := c.Series(ctx, matchNames(f.metrics, extra), start, end)
		if err != nil {
			return nil, fmt.Errorf("asking for the series of the %s preset's metrics: %w", ps.name, err)
		}
		f.anchor, f.series = anchorSeries(f.metrics, series)
		if len(f.series) == 0 {
			continue
		}
		f.interval, f.intervals, err = scrapeInterval(ctx, c, f.series, end, end.Sub(start))
		if err != nil {
			return nil, fmt.Errorf("reading samples of %s to measure the scrape interval: %w", f.anchor, err)
		}
		f.by = chooseBy(ps.by, f.series)
		rep.found = append(rep.found, f)
	}
	return rep, nil
}

// selectorMatchers are the label matchers of selector, each as written in
// a series selector, e.g. namespace="inference".
func selectorMatchers(selector string) ([]string, error) {
	if strings.TrimSpace(selector) == "" {
		return nil, nil
	}
	sel, err := ingest.ParseSelector(selector)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range sel.Groups()[0] {
		out = append(out, m.String())
	}
	return out, nil
}

// matchNames is a series selector for the metrics names with the label
// matchers extra.
func matchNames(names, extra []string) string {
	alts := make([]string, len(names))
	for i, n := range names {
		alts[i] = regexp.QuoteMeta(n)
	}
	return "{" + strings.Join(append([]string{"__name__=~" + strconv.Quote(strings.Join(alts, "|"))}, extra...), ", ") + "}"
}

// anchorSeries picks, of the metrics names, the one with the most series
// (the first in the preset's order among equals, a gauge before a
// histogram's _sum and _count), and returns it and its series, sorted.
func anchorSeries(names []string, series []ingest.Labels) (string, []ingest.Labels) {
	byName := map[string][]ingest.Labels{}
	for _, ls := range series {
		n := ls.Get("__name__")
		byName[n] = append(byName[n], ls)
	}
	summary := func(n string) bool { return strings.HasSuffix(n, "_sum") || strings.HasSuffix(n, "_count") }
	best := ""
	for _, n := range names {
		switch {
		case len(byName[n]) == 0:
		case best == "", len(byName[n]) > len(byName[best]),
			len(byName[n]) == len(byName[best]) && summary(best) && !summary(n):
			best = n
		}
	}
	out := byName[best]
	slices.SortFunc(out, func(a, b ingest.Labels) int { return strings.Compare(a.String(), b.String()) })
	return best, out
}

// intervalSeries is how many series the scrape interval is measured on.
const intervalSeries = 3

// scrapeInterval reads the raw samples of up to three of series (the
// first, the middle and the last) over the span before end, with instant
// queries of a range (name{labels}[span]), and returns the median time
// between them and how many intervals it was taken from.
func scrapeInterval(ctx context.Context, c Store, series []ingest.Labels, end time.Time, span time.Duration) (time.Duration, int, error) {
	var picked []int
	for _, i := range []int{0, len(series) / 2, len(series) - 1} {
		if !slices.Contains(picked, i) && len(picked) < intervalSeries {
			picked = append(picked, i)
		}
	}
	window := dur.Format(span.Round(time.Second))
	var samples []ingest.Series
	for _, i := range picked {
		ss, err := c.Query(ctx, series[i].String()+"["+window+"]", end)
		if err != nil {
			return 0, 0, err
		}
		samples = append(samples, ss...)
	}
	d, n := ingest.SampleInterval(samples)
	return d, n, nil
}

// WriteSummary tells a person what Find found and chose.
func (r *Report) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "inferwatch init: in %s over the last %s:\n", r.Where(), dur.Format(r.lookback))
	for _, f := range r.found {
		fmt.Fprintf(w, "  found %s\n", foundSentence(f))
	}
	for _, g := range r.groups {
		names := make([]string, len(g.presets))
		for i, f := range g.presets {
			names[i] = f.spec.name
		}
		by := "each preset's own labels"
		if g.by != nil {
			by = "[" + strings.Join(g.by, ", ") + "]"
		}
		fmt.Fprintf(w, "  group %s: preset [%s], by %s, interval %s", g.name, strings.Join(names, ", "), by, dur.Format(g.interval))
		if len(g.overrides) > 0 {
			fmt.Fprintf(w, ", %d preset rules written out to step by %s", len(g.overrides), dur.Format(g.interval))
		}
		fmt.Fprintln(w)
		for _, why := range g.why {
			for _, line := range wrap(why, 72) {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		if len(g.noData) > 0 {
			for _, line := range wrap(fmt.Sprintf("No series yet for %s: the store lacks %s metrics.", joinAnd(g.noData), plural(len(g.noData), "its", "their")), 72) {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
}

// What inferwatch init decides from what the store holds, as pure
// functions of it: which presets, grouped how, by which labels, stepping
// how often, and the configuration that says so.

// presetSpec is what a preset reads, taken from its own queries (see
// presetCatalog), so that it cannot drift from them.
type presetSpec struct {
	name    string
	metrics []string       // every metric name its queries read, in their order
	by      []string       // the labels its queries group by when by is not set
	rules   []rulefmt.Rule // its rules, expanded without selector and by
}

// gpuPreset is rulefmt's GPU preset: the one whose GPU utilisation a
// group correlates with the latency of the serving presets beside it.
const gpuPreset = "dcgm"

// presetTitles are the names of what each preset watches, for people.
var presetTitles = map[string]string{
	"vllm": "vLLM", "sglang": "SGLang", "tgi": "TGI", "triton": "Triton", "dcgm": "DCGM",
}

func presetTitle(name string) string {
	if t, ok := presetTitles[name]; ok {
		return t
	}
	return name
}

// presetCatalog expands every built-in preset on its own and reads, from
// its queries, the metric names it needs and the labels it groups by.
func presetCatalog() ([]presetSpec, error) {
	var out []presetSpec
	for _, name := range rulefmt.PresetNames() {
		rs, err := rulefmt.ExpandPresets(rulefmt.PresetOptions{Names: []string{name}})
		if err != nil {
			return nil, err
		}
		ps := presetSpec{name: name, rules: rs}
		for _, r := range rs {
			for _, q := range ruleQueries(r) {
				e, err := metricsql.Parse(q)
				if err != nil {
					return nil, fmt.Errorf("preset %s: rule %s: %w", name, r.Name, err)
				}
				for _, m := range exprMetrics(e) {
					if !slices.Contains(ps.metrics, m) {
						ps.metrics = append(ps.metrics, m)
					}
				}
				if ps.by == nil {
					ps.by = exprBy(e)
				}
			}
		}
		out = append(out, ps)
	}
	return out, nil
}

// ruleQueries are the queries of a preset rule: its expr, or a
// correlation's x and y.
func ruleQueries(r rulefmt.Rule) []string {
	if c, ok := r.Spec.(*rulefmt.Correlate); ok {
		return []string{c.X, c.Y}
	}
	return []string{r.Expr}
}

// exprMetrics are the metric names e selects, in order of appearance.
func exprMetrics(e metricsql.Expr) []string {
	var names []string
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		me, ok := x.(*metricsql.MetricExpr)
		if !ok {
			return
		}
		for _, lfs := range me.LabelFilterss {
			for _, lf := range lfs {
				if lf.Label == "__name__" && !lf.IsRegexp && !lf.IsNegative && !slices.Contains(names, lf.Value) {
					names = append(names, lf.Value)
				}
			}
		}
	})
	return names
}

// exprBy is the by labels of the first aggregation of e that has them.
func exprBy(e metricsql.Expr) []string {
	var by []string
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		if a, ok := x.(*metricsql.AggrFuncExpr); ok && by == nil && a.Modifier.Op == "by" && len(a.Modifier.Args) > 0 {
			by = slices.Clone(a.Modifier.Args)
		}
	})
	return by
}

// holdsData reports whether query e can return series when the store has
// exactly the metrics of present: "or" needs one side, every other binary
// operator both, a function or aggregation what it reads.
func holdsData(e metricsql.Expr, present map[string]bool) bool {
	switch x := e.(type) {
	case *metricsql.BinaryOpExpr:
		l, r := holdsData(x.Left, present), holdsData(x.Right, present)
		if strings.EqualFold(x.Op, "or") {
			return l || r
		}
		return l && r
	case *metricsql.NumberExpr, *metricsql.StringExpr, *metricsql.DurationExpr:
		return true
	}
	names := exprMetrics(e)
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if present[n] {
			return true
		}
	}
	return false
}

// rulesWithoutData are the names of the rules of rs whose queries return
// nothing when the store holds only the metrics of present.
func rulesWithoutData(rs []rulefmt.Rule, present map[string]bool) []string {
	var out []string
	for _, r := range rs {
		for _, q := range ruleQueries(r) {
			e, err := metricsql.Parse(q)
			if err == nil && !holdsData(e, present) {
				out = append(out, r.Name)
				break
			}
		}
	}
	return out
}

// presetFound is what the store holds of one preset.
type presetFound struct {
	spec    *presetSpec
	metrics []string // the preset's metrics the store holds, in the preset's order
	// anchor is the metric of metrics with the most series, and series
	// its series: what the labels and the scrape interval are read from.
	anchor string
	series []ingest.Labels
	// interval is the median time between samples of a few series of
	// anchor (0: unknown), measured over intervals gaps.
	interval  time.Duration
	intervals int
	by        []string // the labels chosen for it (chooseBy)
}

// modelLabels are the labels that name the served model: vLLM's and
// SGLang's own, and the one scrape configurations and Triton use.
var modelLabels = []string{"model_name", "model"}

// labelFallbacks are the labels that stand in for a grouping label the
// series lack: the scrape target for the pod, or for the GPU's host.
var labelFallbacks = map[string]string{"pod": "instance", "Hostname": "instance"}

// chooseBy picks the labels to group the series of a preset by, starting
// from the preset's own (defaults): every model label the series carry
// (model_name and model: vLLM's own and the one a scrape adds), then each
// other label of defaults the series carry; one they lack is replaced by
// its fallback (instance for pod or Hostname) only when the labels chosen
// so far do not already tell the series apart. A label no series carries
// is left out.
func chooseBy(defaults []string, series []ingest.Labels) []string {
	carried := func(l string) bool {
		return slices.ContainsFunc(series, func(ls ingest.Labels) bool { return ls.Get(l) != "" })
	}
	var by []string
	add := func(l string) {
		if !slices.Contains(by, l) && carried(l) {
			by = append(by, l)
		}
	}
	for _, l := range defaults {
		switch {
		case slices.Contains(modelLabels, l):
			add(l)
			for _, alt := range modelLabels {
				add(alt)
			}
		case carried(l):
			add(l)
		case labelFallbacks[l] != "" && !tellsApart(by, series):
			add(labelFallbacks[l])
		}
	}
	return by
}

// tellsApart reports whether no two of series have the same values of
// the labels by (false for no labels and more than one series).
func tellsApart(by []string, series []ingest.Labels) bool {
	seen := map[string]bool{}
	for _, ls := range series {
		k := labelKey(ls, by)
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

func labelKey(ls ingest.Labels, by []string) string {
	var b strings.Builder
	for _, l := range by {
		b.WriteString(strconv.Quote(ls.Get(l)))
	}
	return b.String()
}

// labelValues are the values of label l among series, sorted.
func labelValues(series []ingest.Labels, l string) []string {
	set := map[string]bool{}
	for _, ls := range series {
		if v := ls.Get(l); v != "" {
			set[v] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// pairable reports whether a series of a and one of b have the same
// values of the labels by (a label absent from both counts as the same,
// as when the daemon pairs them), with by not empty and not every one of
// the values empty.
func pairable(a, b []ingest.Labels, by []string) bool {
	if len(by) == 0 {
		return false
	}
	keys := map[string]bool{}
	for _, ls := range a {
		keys[labelKey(ls, by)] = true
	}
	empty := labelKey(nil, by)
	for _, ls := range b {
		if k := labelKey(ls, by); k != empty && keys[k] {
			return true
		}
	}
	return false
}

// groupPlan is one group of the configuration.
type groupPlan struct {
	name    string
	presets []*presetFound
	// by is the group's by; nil leaves it out, so that each preset groups
	// by its own labels.
	by []string
	// why says how the presets were put together and grouped, for the
	// configuration's comments and the summary.
	why []string
	// interval is the group's interval; scrape the longest scrape interval
	// of its presets (0: unknown).
	interval, scrape time.Duration
	// overrides are the preset rules written out with a longer step.
	overrides []rulefmt.Rule
	// noData are the rules whose metrics the store lacks.
	noData []string
}

// planGroups puts one serving preset in each group, and the GPU preset in
// the first group it can share: one where the GPU series pair with the
// serving series (see pairGPU); else in a group of its own. Each group
// steps as stepFor says.
func planGroups(found []*presetFound, selector string) ([]*groupPlan, error) {
	var gpu *presetFound
	var groups []*groupPlan
	for _, f := range found {
		if f.spec.name == gpuPreset {
			gpu = f
			continue
		}
		g := &groupPlan{name: f.spec.name, presets: []*presetFound{f}, by: f.by}
		g.why = append(g.why, byReason(f))
		groups = append(groups, g)
	}
	if gpu != nil {
		joined := false
		for _, g := range groups {
			if by, why, ok := pairGPU(g.presets[0], gpu); ok {
				g.presets = append(g.presets, gpu)
				g.name += "-" + gpu.spec.name
				g.by = by
				g.why = append(g.why, why)
				joined = true
				break
			}
		}
		if !joined {
			g := &groupPlan{name: gpu.spec.name, presets: []*presetFound{gpu}, by: gpu.by}
			g.why = append(g.why, byReason(gpu))
			if len(groups) > 0 {
				g.why = append(g.why, fmt.Sprintf("The %s series share no grouping label values with the %s series, so the GPUs are a group of their own and no rule correlates them with latency.",
					presetTitle(gpu.spec.name), presetTitle(groups[0].presets[0].spec.name)))
			}
			groups = append(groups, g)
		}
	}
	for _, g := range groups {
		names := make([]string, len(g.presets))
		present := map[string]bool{}
		for i, f := range g.presets {
			names[i] = f.spec.name
			g.scrape = max(g.scrape, f.interval)
			for _, m := range f.metrics {
				present[m] = true
			}
		}
		rs, err := rulefmt.ExpandPresets(rulefmt.PresetOptions{Names: names, Selector: selector, By: g.by})
		if err != nil {
			return nil, err
		}
		g.interval = groupInterval(g.scrape)
		g.noData = rulesWithoutData(rs, present)
		for _, r := range rs {
			if r.Step < g.interval {
				g.overrides = append(g.overrides, withStep(r, g.interval))
			}
		}
	}
	return groups, nil
}

// byReason says why f's series are grouped by f.by.
func byReason(f *presetFound) string {
	t := presetTitle(f.spec.name)
	switch {
	case slices.Equal(f.by, f.spec.by):
		return fmt.Sprintf("The %s series carry the preset's own labels, %s.", t, joinAnd(f.by))
	case len(f.by) == 0:
		return fmt.Sprintf("The %s series carry none of the preset's labels (%s).", t, joinAnd(f.spec.by))
	}
	return fmt.Sprintf("The %s series carry %s; the preset's own labels are %s.", t, joinAnd(f.by), joinAnd(f.spec.by))
}

// pairGPU says whether the GPU preset can share the group of the serving
// preset s, with which by, and why. The group's by applies to both
// presets, and the correlation rule the group gets pairs a GPU series
// with a serving series on it, so:
//   - when both presets' series carry their own labels, by is left out:
//     each groups by its own, and the correlation pairs them on the
//     labels both presets group by (pod), which must share values;
//   - else by is the serving preset's labels, when the GPU series carry
//     every one of them with values in common with the serving series;
//   - else they cannot share a group.
func pairGPU(s, gpu *presetFound) ([]string, string, bool) {
	st, gt := presetTitle(s.spec.name), presetTitle(gpu.spec.name)
	shared := slices.DeleteFunc(slices.Clone(s.spec.by), func(l string) bool { return !slices.Contains(gpu.spec.by, l) })
	if slices.Equal(s.by, s.spec.by) && slices.Equal(gpu.by, gpu.spec.by) && pairable(s.series, gpu.series, shared) {
		return nil, fmt.Sprintf("%s and %s keep their own labels (by is left out), and the %s series share %s values with the %s series, so %s_gpu_saturation_latency_jitter pairs each GPU with its %s's latency.",
			st, gt, gt, strings.Join(shared, ", "), st, s.spec.name, strings.Join(shared, ", ")), true
	}
	if pairable(s.series, gpu.series, s.by) {
		each := fmt.Sprintf("each %s has one GPU here, so the %s rules watch every GPU", strings.Join(s.by, " and "), gt)
		if !tellsApart(s.by, gpu.series) {
			each = fmt.Sprintf("the %s rules watch the highest value over the GPUs of each %s", gt, strings.Join(s.by, " and "))
		}
		return s.by, fmt.Sprintf("The %s series carry the same %s values as the %s series, so both presets group by them and %s_gpu_saturation_latency_jitter pairs GPU utilisation with latency on them; %s.",
			gt, joinAnd(s.by), st, s.spec.name, each), true
	}
	return nil, "", false
}

// groupInterval is the interval of a group whose series are scraped
// every scrape (0: unknown): a whole number of minutes, at least 1m and
// at least scrape.
func groupInterval(scrape time.Duration) time.Duration {
	if scrape <= time.Minute {
		return time.Minute
	}
	return (scrape + time.Minute - 1) / time.Minute * time.Minute
}

// rangeWindow matches the window of a range selector, e.g. [2m].
var rangeWindow = regexp.MustCompile(`\[([0-9]+[smhdwy])\]`)

// withStep is preset rule r stepping by step, with every range window of
// its queries at least two steps wide, so that a window holds two samples
// and rate() has a slope to take.
func withStep(r rulefmt.Rule, step time.Duration) rulefmt.Rule {
	widen := func(q string) string {
		return rangeWindow.ReplaceAllStringFunc(q, func(m string) string {
			ms, err := metricsql.DurationValue(m[1:len(m)-1], 0)
			if err != nil || time.Duration(ms)*time.Millisecond >= 2*step {
				return m
			}
			return "[" + dur.Format(2*step) + "]"
		})
	}
	r.Step = step
	r.ResolveAfterAbsent, r.ForgetAfter = 0, 0
	switch s := r.Spec.(type) {
	case *rulefmt.Correlate:
		c := *s
		c.X, c.Y = widen(c.X), widen(c.Y)
		r.Spec = &c
	default:
		r.Expr = widen(r.Expr)
	}
	return r
}

// sourceSection is the source section for the store at raw, which may
// carry credentials and query parameters: neither is written (source.url
// may hold neither), the credentials become a basic_auth block whose
// secret the user puts in a file.
func sourceSection(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	clean := *u
	clean.User, clean.RawQuery, clean.ForceQuery, clean.Fragment = nil, "", false, ""
	b.WriteString("source:\n")
	fmt.Fprintf(&b, "  url: %s\n", yamlString(strings.TrimRight(clean.String(), "/")))
	if u.RawQuery != "" {
		names := slices.Sorted(maps.Keys(u.Query()))
		b.WriteString("  # The URL given to inferwatch init had the query parameters " + strings.Join(names, ", ") + ";\n")
		b.WriteString("  # source.url cannot carry them, and they are not written here.\n")
	}
	if u.User != nil {
		b.WriteString("  # The URL given to inferwatch init carried credentials. They are not\n")
		b.WriteString("  # written here: put the secret in the file below (mode 0600), or change\n")
		b.WriteString("  # the path. A relative path is read beside this file.\n")
		b.WriteString("  basic_auth:\n")
		if _, ok := u.User.Password(); ok {
			fmt.Fprintf(&b, "    username: %s\n", yamlString(u.User.Username()))
			b.WriteString("    password_file: source-password\n")
		} else {
			// A user name without a password may be a token.
			b.WriteString("    username_file: source-username\n")
		}
	}
	return b.String(), nil
}

// yamlWord matches the strings YAML reads as plain strings without quotes.
var yamlWord = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_:/.\-]*$`)

// yamlString writes s as a YAML scalar: plain when that reads back as the
// same string, else single-quoted.
func yamlString(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~":
		return "'" + s + "'"
	}
	if yamlWord.MatchString(s) || isPlainURL(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// isPlainURL reports whether s is an http(s) URL YAML reads back as
// written without quotes.
func isPlainURL(s string) bool {
	return (strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")) && !strings.ContainsAny(s, " #'\"{}[],&*!|>%@`")
}

// yamlList writes ss as a YAML flow sequence.
func yamlList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = yamlString(s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// Report is what Find found in a store and the groups it chose.
type Report struct {
	url      string // redacted
	selector string
	lookback time.Duration
	found    []*presetFound
	groups   []*groupPlan
}

// Config is the configuration r chose, commented, reading from the store
// at rawURL; credentials in rawURL become a basic_auth block whose
// password the user puts in a file, and are never written.
func (r *Report) Config(rawURL string) (string, error) {
	var b strings.Builder
	b.WriteString("# inferwatch configuration written by inferwatch init from what the store\n")
	head := fmt.Sprintf("%s held over the %s before it ran", r.url, dur.Format(r.lookback))
	if r.selector != "" {
		head += fmt.Sprintf(" (the series of %s)", r.selector)
	}
	for _, line := range wrap(head+":", 76) {
		b.WriteString("# " + line + "\n")
	}
	b.WriteString("#\n")
	for _, f := range r.found {
		for _, line := range wrap(foundSentence(f)+".", 74) {
			b.WriteString("#   " + line + "\n")
		}
	}
	b.WriteString("#\n# Check it with inferwatch check, run it with inferwatch run --config.\n\n")
	src, err := sourceSection(rawURL)
	if err != nil {
		return "", err
	}
	b.WriteString(src)
	b.WriteString("\nnats:\n")
	b.WriteString("  # Empty: the daemon starts an embedded NATS server with JetStream\n")
	b.WriteString("  # (nats.embedded.listen, 127.0.0.1:14222); set your server's URL to\n")
	b.WriteString("  # publish there.\n")
	b.WriteString("  url: \"\"\n\ngroups:\n")
	for i, g := range r.groups {
		if i > 0 {
			b.WriteString("\n")
		}
		writeGroup(&b, g, r.selector)
	}
	return b.String(), nil
}

func writeGroup(b *strings.Builder, g *groupPlan, selector string) {
	comment := func(indent, text string) {
		for _, line := range wrap(text, 76-len(indent)) {
			b.WriteString(indent + "# " + line + "\n")
		}
	}
	fmt.Fprintf(b, "  - name: %s\n", yamlString(g.name))
	comment("    ", stepReason(g))
	fmt.Fprintf(b, "    interval: %s\n", dur.Format(g.interval))
	names := make([]string, len(g.presets))
	for i, f := range g.presets {
		names[i] = f.spec.name
	}
	if len(names) == 1 {
		fmt.Fprintf(b, "    preset: %s\n", names[0])
	} else {
		fmt.Fprintf(b, "    preset: %s\n", yamlList(names))
	}
	if selector != "" {
		comment("    ", "Only the series of this selector (given with --selector).")
		fmt.Fprintf(b, "    selector: %s\n", yamlString(selector))
	}
	comment("    ", strings.Join(g.why, " "))
	if g.by != nil {
		fmt.Fprintf(b, "    by: %s\n", yamlList(g.by))
	}
	if len(g.noData) > 0 {
		comment("    ", fmt.Sprintf("%s %s metrics the store does not hold (yet): %s nothing until it does.",
			joinAnd(g.noData), plural(len(g.noData), "reads", "read"), plural(len(g.noData), "it finds", "they find")))
	}
	if len(g.overrides) == 0 {
		return
	}
	comment("    ", fmt.Sprintf("The preset rules that step by less than the scrape interval, written out to step by %s, with range windows of at least two steps.",
		dur.Format(g.interval)))
	b.WriteString("    rules:\n")
	for _, r := range g.overrides {
		writeRule(b, r)
	}
}

// stepReason says how a group steps and why.
func stepReason(g *groupPlan) string {
	switch {
	case g.scrape == 0:
		return "Evaluated every minute; the scrape interval could not be measured (no series had two samples), so each rule keeps the preset's step (1m; 5m for decay rules)."
	case len(g.overrides) == 0:
		return fmt.Sprintf("Evaluated every %s. The series are scraped every %s, so the presets' steps (1m; 5m for decay rules) are no shorter than the scrape interval and stay as they are.",
			fmtEvery(g.interval), dur.Format(g.scrape))
	}
	return fmt.Sprintf("Evaluated every %s: the scrape interval, %s, rounded up to whole minutes. No rule steps by less (see rules).",
		dur.Format(g.interval), dur.Format(g.scrape))
}

func fmtEvery(d time.Duration) string {
	if d == time.Minute {
		return "minute"
	}
	return dur.Format(d)
}

// writeRule writes preset rule r out in full.
func writeRule(b *strings.Builder, r rulefmt.Rule) {
	fmt.Fprintf(b, "      - name: %s\n", yamlString(r.Name))
	if r.Expr != "" {
		fmt.Fprintf(b, "        expr: %s\n", yamlString(r.Expr))
	}
	fmt.Fprintf(b, "        step: %s\n", dur.Format(r.Step))
	if r.Lookback > 0 {
		fmt.Fprintf(b, "        lookback: %s\n", dur.Format(r.Lookback))
	}
	if r.For > 0 {
		fmt.Fprintf(b, "        for: %s\n", dur.Format(r.For))
	}
	if r.MinDev != 0 {
		fmt.Fprintf(b, "        min_dev: %s\n", strconv.FormatFloat(r.MinDev, 'g', -1, 64))
	}
	switch s := r.Spec.(type) {
	case *rulefmt.Correlate:
		b.WriteString("        correlate:\n")
		fmt.Fprintf(b, "          x: %s\n", yamlString(s.X))
		fmt.Fprintf(b, "          y: %s\n", yamlString(s.Y))
		if s.YJitter > 0 {
			fmt.Fprintf(b, "          y_jitter: %s\n", dur.Format(s.YJitter))
		}
		if len(s.On) > 0 {
			fmt.Fprintf(b, "          on: %s\n", yamlList(s.On))
		}
		if s.MaxLag > 0 {
			fmt.Fprintf(b, "          max_lag: %s\n", dur.Format(s.MaxLag))
		}
		fmt.Fprintf(b, "          min_abs_r: %s\n", strconv.FormatFloat(s.MinAbsR, 'g', -1, 64))
		fmt.Fprintf(b, "          max_p: %s\n", strconv.FormatFloat(s.MaxP, 'g', -1, 64))
		fmt.Fprintf(b, "          min_points: %d\n", s.MinPoints)
		if s.XAbove > 0 {
			fmt.Fprintf(b, "          x_above: %s\n", strconv.FormatFloat(s.XAbove, 'g', -1, 64))
		}
	case *rulefmt.Decay:
		b.WriteString("        decay:\n")
		fmt.Fprintf(b, "          peak_quantile: %s\n", strconv.FormatFloat(s.PeakQuantile, 'g', -1, 64))
		fmt.Fprintf(b, "          min_slope: %s\n", strconv.FormatFloat(s.MinSlope, 'g', -1, 64))
		fmt.Fprintf(b, "          min_eta: %s\n", strconv.FormatFloat(s.MinEta, 'g', -1, 64))
		fmt.Fprintf(b, "          confidence: %s\n", strconv.FormatFloat(s.Confidence, 'g', -1, 64))
	}
	if len(r.Labels) > 0 {
		b.WriteString("        labels:\n")
		for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
			fmt.Fprintf(b, "          %s: %s\n", k, yamlString(r.Labels[k]))
		}
	}
}

// foundSentence says what the store holds of f, e.g. "vLLM: 9 of the
// preset's 14 metrics; 7 series of vllm:num_requests_running across 3 model
// values and 7 pod values; scraped every 30s".
func foundSentence(f *presetFound) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of the %s preset's %d metrics; %d series of %s", presetTitle(f.spec.name),
		len(f.metrics), f.spec.name, len(f.spec.metrics), len(f.series), f.anchor)
	var parts []string
	for _, l := range f.by {
		n := len(labelValues(f.series, l))
		parts = append(parts, fmt.Sprintf("%d %s %s", n, l, plural(n, "value", "values")))
	}
	if len(parts) > 0 {
		b.WriteString(" across " + joinAnd(parts))
	}
	if f.interval > 0 {
		fmt.Fprintf(&b, "; scraped every %s", fmtInterval(f.interval))
	} else {
		b.WriteString("; scrape interval unknown (no series had two samples)")
	}
	return b.String()
}

// fmtInterval writes a scrape interval to the second, or to the
// millisecond under a second.
func fmtInterval(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return dur.Format(d.Round(time.Second))
}

func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
