package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

const initHelp = `Usage: inferwatch init --source.url URL [--selector SEL] [--out FILE [--force]] [flags]

Asks the Prometheus-compatible store at URL which serving engines and GPU
exporters it holds series of (vLLM, SGLang, TGI, Triton, DCGM: the metric
names the presets' queries read, old names and new), which labels tell its
models, pods and GPUs apart, and how often they are scraped (the median
time between the samples of a few series), and writes a configuration of
the matching presets, with comments that say why, which inferwatch check
accepts. It asks only what Prometheus and VictoriaMetrics both answer:
/api/v1/label/__name__/values and /api/v1/series with match[], and
instant queries.

What it chooses:
  presets   each preset with a metric in the store; one group per serving
            engine; DCGM joins the first group whose series it pairs with
            (a GPU series and a serving series with the same values of
            the group's labels), so that a rule correlates GPU
            utilisation with latency, else it has a group of its own
  by        the labels the series carry: the model label (model_name,
            model), pod, or instance where pods are not labelled; DCGM's
            Hostname, gpu and pod; left out where each preset's own fit
  interval  the scrape interval rounded up to whole minutes, at least 1m;
            a preset rule stepping by less than the scrape interval is
            written out with that step and range windows of two steps
  source    the URL without its credentials or query: credentials become
            a basic_auth block whose secret the user puts in a file

With --selector only the series it matches are asked about, and each group
gets it as its selector. The configuration goes to stdout, or to --out
FILE, which must not exist unless --force; a summary of what was found
goes to stderr.

  inferwatch init --source.url http://127.0.0.1:8428 --out inferwatch.yml
  inferwatch init --source.url http://vmselect:8481/select/0/prometheus --selector '{namespace="inference"}'

Exit status: 0 when it wrote a configuration, 1 when the store holds no
series of any preset (nothing is written), 2 on a usage error or when the
store cannot be asked.

Flags:
`

type initFlags struct {
	sourceURL string
	selector  string
	out       string
	force     bool
	lookback  durationFlag
	timeout   time.Duration
}

func cmdInit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := initFlags{lookback: durationFlag{time.Hour}}
	fs := newOfflineFlagSet("inferwatch init", initHelp)
	fs.StringVar(&f.sourceURL, "source.url", "", "base `URL` of the store's Prometheus API, e.g. http://127.0.0.1:8428 (user:password@ is sent as basic auth and not written)")
	fs.StringVar(&f.selector, "selector", "", "label matchers, e.g. '{namespace=\"inference\"}': ask only about the series they match, and write them as each group's selector")
	fs.StringVar(&f.out, "out", "", "write the configuration to `FILE` instead of stdout")
	fs.BoolVar(&f.force, "force", false, "overwrite --out FILE when it exists")
	fs.Var(&f.lookback, "lookback", "look for series with samples in this much of the recent past (e.g. 1h, 1d)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on each request to the store")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if f.sourceURL == "" {
		return usageError(stderr, fs, "--source.url URL is required")
	}
	if err := checkInitURL(f.sourceURL); err != nil {
		return usageError(stderr, fs, err.Error())
	}
	if f.lookback.d <= 0 {
		return usageError(stderr, fs, "--lookback must be longer than 0")
	}
	if f.timeout <= 0 {
		return usageError(stderr, fs, "--timeout must be longer than 0")
	}
	// ExpandPresets checks the selector as a group's selector key is checked.
	if _, err := rulefmt.ExpandPresets(rulefmt.PresetOptions{Names: rulefmt.PresetNames(), Selector: f.selector}); err != nil {
		return usageError(stderr, fs, "--selector: "+err.Error())
	}
	if f.out != "" && !f.force {
		if _, err := os.Lstat(f.out); err == nil {
			return usageError(stderr, fs, fmt.Sprintf("--out %s exists; give --force to overwrite it", f.out))
		}
	}

	client, err := ingest.NewClient(ingest.ClientOptions{URL: f.sourceURL, Timeout: f.timeout})
	if err != nil {
		return usageError(stderr, fs, err.Error())
	}
	end := time.Now()
	rep, err := discover(ctx, client, f.selector, end.Add(-f.lookback.d), end)
	if err != nil {
		fmt.Fprintf(stderr, "inferwatch init: %v\n", err)
		return 2
	}
	rep.url, rep.selector, rep.lookback = redact(f.sourceURL), strings.TrimSpace(f.selector), f.lookback.d
	where := rep.url
	if rep.selector != "" {
		where += " (the series of " + rep.selector + ")"
	}
	if len(rep.found) == 0 {
		fmt.Fprintf(stderr, "inferwatch init: %s holds no series of a preset's metrics (%s) in the last %s; nothing written\n",
			where, strings.Join(rulefmt.PresetNames(), ", "), rulefmt.FormatDuration(f.lookback.d))
		return 1
	}
	if rep.groups, err = planGroups(rep.found, rep.selector); err != nil {
		fmt.Fprintf(stderr, "inferwatch init: %v\n", err)
		return 1
	}
	text, err := renderConfig(rep, f.sourceURL)
	if err != nil {
		fmt.Fprintf(stderr, "inferwatch init: %v\n", err)
		return 1
	}
	// What init writes, check must accept: a failure here is a bug of init.
	if err := checkConfigText(text, f.out); err != nil {
		fmt.Fprintf(stderr, "inferwatch init: the configuration it made does not pass inferwatch check, which is a bug of inferwatch init:\n%v\n", err)
		return 1
	}
	writeInitSummary(stderr, rep, where)
	if f.out == "" {
		if _, err := io.WriteString(stdout, text); err != nil {
			fmt.Fprintln(stderr, "inferwatch init: writing the configuration:", err)
			return 1
		}
		return 0
	}
	if err := writeNewFile(f.out, []byte(text), f.force); err != nil {
		if errors.Is(err, os.ErrExist) {
			return usageError(stderr, fs, fmt.Sprintf("--out %s exists; give --force to overwrite it", f.out))
		}
		fmt.Fprintln(stderr, "inferwatch init:", err)
		return 1
	}
	fmt.Fprintf(stderr, "wrote %s; check it with: inferwatch check %s\n", f.out, f.out)
	return 0
}

// checkInitURL checks --source.url as source.url is checked, except that
// it may carry credentials and a query (sent with every request, never
// written).
func checkInitURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return rulefmt.CheckSourceURL(raw)
	}
	clean := *u
	clean.User, clean.RawQuery, clean.ForceQuery = nil, "", false
	if err := rulefmt.CheckSourceURL(clean.String()); err != nil {
		return fmt.Errorf("--source.url %s: %w", redact(raw), err)
	}
	return nil
}

// discover asks the store which presets' metrics it holds between start
// and end among the series of selector, and, for each preset found, the
// series of its most common metric and how often a few of them are
// sampled.
func discover(ctx context.Context, c *ingest.Client, selector string, start, end time.Time) (*initReport, error) {
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
	rep := &initReport{}
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
func scrapeInterval(ctx context.Context, c *ingest.Client, series []ingest.Labels, end time.Time, span time.Duration) (time.Duration, int, error) {
	var picked []int
	for _, i := range []int{0, len(series) / 2, len(series) - 1} {
		if !slices.Contains(picked, i) && len(picked) < intervalSeries {
			picked = append(picked, i)
		}
	}
	window := rulefmt.FormatDuration(span.Round(time.Second))
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

// checkConfigText checks a configuration as inferwatch check does; file
// is where it will be written ("" for stdout), against which relative
// paths in it are read.
func checkConfigText(text, file string) error {
	cfg, err := rulefmt.Parse([]byte(text), file)
	if err != nil {
		return err
	}
	_, err = rules.Build(cfg.Groups)
	return err
}

// writeInitSummary tells a person what init found and chose.
func writeInitSummary(w io.Writer, r *initReport, where string) {
	fmt.Fprintf(w, "inferwatch init: in %s over the last %s:\n", where, rulefmt.FormatDuration(r.lookback))
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
		fmt.Fprintf(w, "  group %s: preset [%s], by %s, interval %s", g.name, strings.Join(names, ", "), by, rulefmt.FormatDuration(g.interval))
		if len(g.overrides) > 0 {
			fmt.Fprintf(w, ", %d preset rules written out to step by %s", len(g.overrides), rulefmt.FormatDuration(g.interval))
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

// writeNewFile writes data to path through a temporary file beside it,
// so that path never holds half a configuration. Unless force, it fails
// with an error wrapping os.ErrExist when path exists, even one created
// meanwhile.
func writeNewFile(path string, data []byte, force bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	// A hard link fails when path exists, where a rename would replace it.
	return os.Link(tmp.Name(), path)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
