package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/metricname"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Querier is the store the figures come from: a Prometheus-compatible
// range query that stops when ctx is cancelled (ingest.Client).
type Querier interface {
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]ingest.Series, error)
}

// EventReader reads the events the daemon published on subjects (NATS
// wildcards allowed) since a time, oldest first (report/jsread reads a
// JetStream stream).
type EventReader interface {
	ReadEvents(ctx context.Context, subjects []string, since time.Time) ([]Received, error)
}

// Received is one event as read, with the subject it was published on.
type Received struct {
	Subject string
	Event   alerting.Event
}

// EventPublisher announces a report (alerting/natsjs.JetStream).
type EventPublisher interface {
	PublishEvent(ctx context.Context, subject string, ev alerting.Event) error
}

// ForecastQuery returns the query and step of a forecast rule, so that its
// forecasts can be checked against what came; ok is false for a rule the
// configuration does not hold.
type ForecastQuery func(group, rule string) (expr string, step time.Duration, ok bool)

// Options configure a Reporter.
type Options struct {
	// Querier is required.
	Querier Querier
	// Events reads the daemon's findings, alerts, forecasts and scale
	// signals; nil leaves those sections empty and says so.
	Events EventReader
	// Publisher announces each report on <Prefix>.reports.<name>; nil
	// announces nothing.
	Publisher EventPublisher
	// Prefix is the subject prefix (default "inferwatch"); Source the
	// CloudEvents source (default "/inferwatch").
	Prefix, Source string
	// Forecasts finds the query of a forecast rule (nil: forecasts are not
	// checked against the store).
	Forecasts ForecastQuery
	// Now is the clock (default time.Now); a report's generated_at.
	Now func() time.Time
	// Logger, nil discards; Metrics receives the reporter's counters, nil
	// keeps them unregistered.
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// Reporter makes reports.
type Reporter struct {
	o                         Options
	made, failed, publishFail *metrics.Counter
	queries, queryFailures    *metrics.Counter
	duration                  *metrics.PrometheusHistogram
}

// New checks o, fills its defaults and returns a Reporter.
func New(o Options) (*Reporter, error) {
	if o.Querier == nil {
		return nil, errors.New("report: Options.Querier is required (the store the figures come from)")
	}
	o.Prefix = cmp.Or(o.Prefix, alerting.DefaultSubjectPrefix)
	if err := alerting.ValidSubject(o.Prefix); err != nil {
		return nil, fmt.Errorf("report: subject prefix: %w", err)
	}
	o.Source = cmp.Or(o.Source, alerting.DefaultEventSource)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	return &Reporter{o: o,
		made:          o.Metrics.GetOrCreateCounter("inferwatch_reports_total"),
		failed:        o.Metrics.GetOrCreateCounter("inferwatch_report_failures_total"),
		publishFail:   o.Metrics.GetOrCreateCounter("inferwatch_report_publish_failures_total"),
		queries:       o.Metrics.GetOrCreateCounter("inferwatch_report_queries_total"),
		queryFailures: o.Metrics.GetOrCreateCounter("inferwatch_report_query_failures_total"),
		duration:      o.Metrics.GetOrCreatePrometheusHistogramExt("inferwatch_report_duration_seconds", metricname.ReportBuckets()),
	}, nil
}

// Thresholds of "what changed".
const (
	// A latency quantile (P95, P99) changed when it moved by this share
	// against the day before, and by at least minLatencyDelta.
	latencyChange   = 0.25
	minLatencyDelta = 0.05 // seconds
	// Traffic surged when it held this multiple of the same time the day
	// before for 15 minutes.
	surgeRatio = 2.0
	// A decay counts as analysis' decay rule judges it: a significant
	// trend of at least decayMinSlope per day, η at least decayMinEta.
	decayMinSlope = 0.1
	decayMinEta   = 0.15
	// Coupling: the preset's correlation rule, judged on two-hour windows
	// every half hour.
	couplingWindow = 2 * time.Hour
	couplingEvery  = 30 * time.Minute
	gpuSaturated   = 95.0
	// A forecast missed a surge when the actual stayed above its interval
	// this long.
	aboveForecast = 10 * time.Minute
	// A burn rate this high over an hour pages (the workbook's 14.4).
	fastBurn = 14.4
	// Gaps shorter than this are scrapes, not gaps.
	minGap = 10 * time.Minute
)

var quantiles = []float64{0.5, 0.95, 0.99}

// builder gathers one report.
type builder struct {
	r     *Reporter
	spec  Spec
	eng   engine
	doc   *Document
	step  time.Duration
	start time.Time
	end   time.Time
	by    string // "model, pod"
	// earliest is the start of the oldest comparison period.
	earliest time.Time
	models   map[string]*Model
	order    []string
}

// Build gathers the report of spec whose period ends at end. It fails
// only when the store cannot be queried at all; a section that cannot be
// computed says why in the document.
func (r *Reporter) Build(ctx context.Context, spec Spec, end time.Time) (*Document, error) {
	eng, ok := engines[cmp.Or(spec.Engine, rulefmt.DefaultReportEngine)]
	if !ok {
		return nil, fmt.Errorf("report %q: unknown engine %q", spec.Name, spec.Engine)
	}
	if len(spec.By) == 0 {
		return nil, fmt.Errorf("report %q: by names no label", spec.Name)
	}
	if spec.Location == nil {
		spec.Location = time.UTC
	}
	p, comps := Periods(spec.Report, end)
	b := &builder{r: r, spec: spec, eng: eng, start: p.Start, end: p.End, models: map[string]*Model{},
		by: strings.Join(spec.By, ", ")}
	b.step = 5 * time.Minute
	if p.End.Sub(p.Start) < 6*time.Hour {
		b.step = time.Minute
	}
	b.earliest = p.Start
	for _, c := range comps {
		if c.Start.Before(b.earliest) {
			b.earliest = c.Start
		}
	}
	b.doc = &Document{Schema: SchemaID, Name: spec.Name, GeneratedAt: r.o.Now().UTC().Truncate(time.Second),
		TimeZone: spec.Location.String(), Period: p, Comparisons: comps, Engine: cmp.Or(spec.Engine, "vllm"),
		Selector: spec.Selector, By: slices.Clone(spec.By), Changes: []Change{}, Models: []Model{}, SLOs: []SLOReport{},
		Anomalies: emptyEpisodes(), Alerts: emptyEpisodes(), Incidents: []Incident{}, Forecasts: []ForecastRule{}, Scale: []ScaleTarget{}, Notes: []string{}, FleetChanges: []LabelChange{}}
	if p.ClockChange != "" {
		b.note("The period is %s.", p.ClockChange)
	}
	if err := b.anchor(ctx); err != nil {
		return nil, err
	}
	for _, id := range b.order {
		m := b.models[id]
		m.Latency = []Latency{}
		m.LabelChanges = []LabelChange{}
		m.Coupling.Coupled = []CouplingWindow{}
		m.charts.latency = map[string][3][]point{}
		m.charts.sloLine = map[string]float64{}
	}
	b.latency(ctx)
	b.traffic(ctx)
	b.decay(ctx)
	b.knee(ctx)
	b.labels(ctx)
	b.coupling(ctx)
	b.slos(ctx)
	b.capacity()
	b.events(ctx)
	for _, id := range b.order {
		b.doc.Models = append(b.doc.Models, *b.models[id])
	}
	b.doc.Changes = Changes(b.doc)
	return b.doc, nil
}

func emptyEpisodes() Episodes {
	return Episodes{TotalSeconds: 0, ByKind: map[string]int{}, Top: []Episode{}}
}

func (b *builder) note(format string, args ...any) {
	b.doc.Notes = append(b.doc.Notes, fmt.Sprintf(format, args...))
}

// query runs a range query; a failure becomes a note naming what it was
// for, and nil.
func (b *builder) query(ctx context.Context, what, q string, start, end time.Time, step time.Duration) []ingest.Series {
	ss, err := b.queryErr(ctx, q, start, end, step)
	if err != nil {
		b.note("%s could not be computed: %v", what, err)
		return nil
	}
	return ss
}

func (b *builder) queryErr(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]ingest.Series, error) {
	b.r.queries.Inc()
	start = start.Truncate(step)
	ss, err := b.r.o.Querier.QueryRange(ctx, q, start, end, step)
	if err != nil {
		b.r.queryFailures.Inc()
		return nil, err
	}
	for i := range ss {
		ss[i].Clean()
	}
	return ss, nil
}

// instant evaluates q at t.
func (b *builder) instant(ctx context.Context, what, q string, t time.Time) []ingest.Series {
	return b.query(ctx, what, q, t, t, time.Minute)
}

// sel is metric with the report's selector and extra matchers.
func (b *builder) sel(metric string, extra ...string) string {
	return withMatchers(metric, b.spec.Selector, extra...)
}

func withMatchers(metric, selector string, extra ...string) string {
	var ms []string
	if s := strings.TrimSpace(selector); len(s) > 2 {
		ms = append(ms, s[1:len(s)-1])
	}
	ms = append(ms, extra...)
	if len(ms) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(ms, ", ") + "}"
}

// key is the model a series belongs to, by the values of By.
func (b *builder) key(ls ingest.Labels) string {
	parts := make([]string, len(b.spec.By))
	for i, l := range b.spec.By {
		parts[i] = l + "=" + strconv.Quote(ls.Get(l))
	}
	return strings.Join(parts, ",")
}

func (b *builder) model(ls ingest.Labels) *Model {
	return b.models[b.key(ls)]
}

var idRE = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// anchor finds the models from the running-requests gauge: their data
// coverage and replicas.
func (b *builder) anchor(ctx context.Context) error {
	inst := b.spec.Instance
	q := fmt.Sprintf("count by (%s, %s) (%s)", b.by, inst, b.sel(b.eng.running))
	step := time.Minute
	ss, err := b.queryErr(ctx, q, b.start, b.end, step)
	if err != nil {
		return fmt.Errorf("report %q: querying the fleet's series (%s): %w", b.spec.Name, q, err)
	}
	type acc struct {
		ts   map[int64]int
		pods map[string]int64 // last sample
	}
	accs := map[string]*acc{}
	for _, s := range ss {
		k := b.key(s.Labels)
		m, ok := b.models[k]
		if !ok {
			labels := map[string]string{}
			var names []string
			for _, l := range b.spec.By {
				labels[l] = s.Labels.Get(l)
				names = append(names, s.Labels.Get(l))
			}
			name := strings.Join(names, " / ")
			if strings.Trim(name, " /") == "" {
				name = "(no " + strings.Join(b.spec.By, ", ") + " label)"
			}
			id := "m-" + strings.Trim(idRE.ReplaceAllString(strings.ToLower(name), "-"), "-")
			for n := 2; b.idTaken(id); n++ {
				id = fmt.Sprintf("%s-%d", strings.TrimRight(id, "0123456789-"), n)
			}
			m = &Model{ID: id, Name: name, Labels: labels}
			b.models[k] = m
			b.order = append(b.order, k)
			accs[k] = &acc{ts: map[int64]int{}, pods: map[string]int64{}}
		}
		a := accs[k]
		for _, t := range s.Timestamps {
			a.ts[t]++
		}
		if n := len(s.Timestamps); n > 0 {
			a.pods[s.Labels.Get(inst)] = s.Timestamps[n-1]
		}
	}
	sort.Slice(b.order, func(i, j int) bool { return b.models[b.order[i]].Name < b.models[b.order[j]].Name })
	if len(b.order) == 0 {
		b.note("No series of %s%s in the period: the store holds no data of this fleet from %s to %s.",
			b.eng.running, b.spec.Selector, fmtTime(b.start), fmtTime(b.end))
	}
	for _, k := range b.order {
		m, a := b.models[k], accs[k]
		ts := make([]int64, 0, len(a.ts))
		for t, n := range a.ts {
			ts = append(ts, t)
			m.Replicas.Max = max(m.Replicas.Max, n)
		}
		slices.Sort(ts)
		gaps := Gaps(ts, b.start, b.end, minGap)
		m.Coverage = DataCoverage{Share: F(Coverage(gaps, b.start, b.end)), Gaps: gaps}
		if m.Coverage.Gaps == nil {
			m.Coverage.Gaps = []Span{}
		}
		if len(ts) > 0 {
			f, l := time.UnixMilli(ts[0]).UTC(), time.UnixMilli(ts[len(ts)-1]).UTC()
			m.Coverage.FirstSample, m.Coverage.LastSample = &f, &l
		}
		for _, last := range a.pods {
			if b.end.UnixMilli()-last <= minGap.Milliseconds() {
				m.Replicas.AtEnd++
			}
		}
	}
	return nil
}

func (b *builder) idTaken(id string) bool {
	for _, m := range b.models {
		if m.ID == id {
			return true
		}
	}
	return false
}

// windows are the report's period and its comparisons.
func (b *builder) windows() []Period {
	return append([]Period{b.doc.Period}, b.doc.Comparisons...)
}

func secs(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) + "s" }

// latencyKinds are the histograms of the latency section.
func (b *builder) latencyKinds() []struct {
	kind, title string
	metrics     []string
} {
	return []struct {
		kind, title string
		metrics     []string
	}{
		{"ttft", "Time to first token", []string{b.eng.ttft}},
		{"itl", "Inter-token latency", b.eng.itl},
		{"e2e", "End-to-end request latency", []string{b.eng.e2e}},
	}
}

// bucketQuery sums a histogram's buckets by le and By over a range
// function, falling back to the former names of the metric.
func (b *builder) bucketQuery(names []string, fn, rng string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("sum by (le, %s) (%s(%s[%s]))", b.by, fn, b.sel(n+"_bucket"), rng)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ") or (") + ")"
}

// bucketsOf groups histogram bucket series by model and timestamp.
func (b *builder) bucketsOf(ss []ingest.Series) map[string]map[int64][]Bucket {
	out := map[string]map[int64][]Bucket{}
	for _, s := range ss {
		le, err := strconv.ParseFloat(s.Labels.Get("le"), 64)
		if err != nil {
			continue
		}
		k := b.key(s.Labels)
		if out[k] == nil {
			out[k] = map[int64][]Bucket{}
		}
		for i, t := range s.Timestamps {
			out[k][t] = append(out[k][t], Bucket{UpperBound: le, Count: s.Values[i]})
		}
	}
	return out
}

func (b *builder) latency(ctx context.Context) {
	wins := b.windows()
	for _, lk := range b.latencyKinds() {
		// vals[window][model][quantile]
		vals := make([]map[string][]float64, len(wins))
		seen := map[string]bool{}
		for wi, w := range wins {
			vals[wi] = map[string][]float64{}
			ss := b.instant(ctx, lk.title+" quantiles", b.bucketQuery(lk.metrics, "increase", secs(w.End.Sub(w.Start))), w.End)
			for k, byT := range b.bucketsOf(ss) {
				for _, bs := range byT {
					qs := make([]float64, len(quantiles))
					for i, q := range quantiles {
						qs[i] = HistogramQuantile(q, bs)
					}
					vals[wi][k] = qs
					if wi == 0 && finite(qs[0]) {
						seen[k] = true
					}
				}
			}
		}
		// The chart: 5-minute rates of the buckets over the period.
		ss := b.query(ctx, lk.title+" over time", b.bucketQuery(lk.metrics, "rate", "5m"), b.start, b.end, b.step)
		series := b.bucketsOf(ss)
		for _, k := range b.order {
			m := b.models[k]
			l := Latency{Kind: lk.kind, Title: lk.title, Metric: lk.metrics[0], Available: seen[k], Quantiles: []Quantile{}}
			for qi, q := range quantiles {
				qq := Quantile{Q: q, Value: F(math.NaN()), Previous: make([]F, len(wins)-1), Change: make([]F, len(wins)-1)}
				if v, ok := vals[0][k]; ok {
					qq.Value = F(v[qi])
				}
				for wi := 1; wi < len(wins); wi++ {
					prev := math.NaN()
					if v, ok := vals[wi][k]; ok {
						prev = v[qi]
					}
					qq.Previous[wi-1] = F(prev)
					qq.Change[wi-1] = F(RelChange(float64(qq.Value), prev))
				}
				l.Quantiles = append(l.Quantiles, qq)
			}
			m.Latency = append(m.Latency, l)
			var lines [3][]point
			ts := make([]int64, 0, len(series[k]))
			for t := range series[k] {
				ts = append(ts, t)
			}
			slices.Sort(ts)
			for _, t := range ts {
				for qi, q := range quantiles {
					if v := HistogramQuantile(q, series[k][t]); finite(v) {
						lines[qi] = append(lines[qi], point{t, v})
					}
				}
			}
			m.charts.latency[lk.kind] = lines
		}
	}
}

// byModel indexes series by model (the first series of each).
func (b *builder) byModel(ss []ingest.Series) map[string]ingest.Series {
	out := map[string]ingest.Series{}
	for _, s := range ss {
		k := b.key(s.Labels)
		if _, dup := out[k]; !dup {
			out[k] = s
		}
	}
	return out
}

func (b *builder) rate(ctx context.Context, what, q string) map[string]ingest.Series {
	return b.byModel(b.query(ctx, what, q, b.earliest, b.end, b.step))
}

func (b *builder) traffic(ctx context.Context) {
	req := b.rate(ctx, "The request rate", fmt.Sprintf("sum by (%s) (rate(%s[5m]))", b.by, b.sel(b.eng.success)))
	tok := b.rate(ctx, "The generation token rate", fmt.Sprintf("sum by (%s) (rate(%s[5m]))", b.by, b.sel(b.eng.tokens)))
	wins := b.windows()
	fill := func(s ingest.Series, ok bool) Rate {
		r := Rate{Mean: F(math.NaN()), Peak: F(math.NaN()), SurgeRatio: F(math.NaN()),
			Previous: make([]F, len(wins)-1), Change: make([]F, len(wins)-1)}
		for i := range r.Previous {
			r.Previous[i], r.Change[i] = F(math.NaN()), F(math.NaN())
		}
		if !ok {
			return r
		}
		cur := Summarize(s.Timestamps, s.Values, b.start.Add(time.Millisecond), b.end)
		r.Mean, r.Peak = F(cur.Mean), F(cur.Peak)
		if cur.N > 0 {
			pt := cur.PeakTime
			r.PeakTime = &pt
		}
		for wi := 1; wi < len(wins); wi++ {
			prev := Summarize(s.Timestamps, s.Values, wins[wi].Start.Add(time.Millisecond), wins[wi].End)
			r.Previous[wi-1] = F(prev.Mean)
			r.Change[wi-1] = F(RelChange(cur.Mean, prev.Mean))
		}
		// The largest ratio to the same time the day before held for three
		// 5-minute steps (the smallest of three in a row).
		dayAgo := func(t int64) int64 { return back(time.UnixMilli(t).In(b.spec.Location), day).UnixMilli() }
		var ratios []point
		for i, t := range s.Timestamps {
			if t <= b.start.UnixMilli() || !finite(s.Values[i]) {
				continue
			}
			prev := ValueAt(s.Timestamps, s.Values, dayAgo(t), b.step.Milliseconds()/2)
			if prev > 0 {
				ratios = append(ratios, point{t, s.Values[i] / prev})
			}
		}
		best := math.NaN()
		var at int64
		const held = 3
		for i := held - 1; i < len(ratios); i++ {
			if ratios[i].T-ratios[i-held+1].T > int64(held)*b.step.Milliseconds() {
				continue // not three steps in a row
			}
			lo := math.Inf(1)
			for j := i - held + 1; j <= i; j++ {
				lo = math.Min(lo, ratios[j].V)
			}
			if !finite(best) || lo > best {
				best, at = lo, ratios[i-held+1].T
			}
		}
		if finite(best) {
			r.SurgeRatio = F(best)
			t := time.UnixMilli(at).UTC()
			r.SurgeAt = &t
		}
		return r
	}
	for _, k := range b.order {
		m := b.models[k]
		s, ok := req[k]
		m.Traffic.Requests = fill(s, ok)
		ts, tok2 := tok[k]
		m.Traffic.Tokens = fill(ts, tok2)
		m.Traffic.Tokens.SurgeRatio, m.Traffic.Tokens.SurgeAt = F(math.NaN()), nil
		if ok {
			for i, t := range s.Timestamps {
				if t > b.start.UnixMilli() {
					m.charts.requests = append(m.charts.requests, point{t, s.Values[i]})
				} else if c := b.doc.Comparisons; len(c) > 0 && c[0].Label == "day before" && t > c[0].Start.UnixMilli() {
					shifted := time.UnixMilli(t).In(b.spec.Location).AddDate(0, 0, 1).UnixMilli()
					m.charts.reqPrev = append(m.charts.reqPrev, point{shifted, s.Values[i]})
				}
			}
		}
	}
}

func (b *builder) decay(ctx context.Context) {
	q := fmt.Sprintf("sum by (%s) (rate(%s[10m])) / sum by (%s) (avg_over_time(%s[10m]))",
		b.by, b.sel(b.eng.tokens), b.by, b.sel(b.eng.running))
	from := back(b.end, 8*day)
	ss := b.byModel(b.query(ctx, "Throughput decay", q, from, b.end, b.step))
	for _, k := range b.order {
		m := b.models[k]
		d := DecayReport{Peak: F(math.NaN()), EtaCurrent: F(math.NaN()), EtaMean: F(math.NaN()), TrendPerDay: F(math.NaN()),
			TrendLower: F(math.NaN()), TrendUpper: F(math.NaN()), DayOverDay: F(math.NaN()), WeekOverWeek: F(math.NaN()), MinSlope: decayMinSlope}
		s, ok := ss[k]
		if !ok || len(s.Timestamps) < 3 {
			m.Decay = d
			continue
		}
		whole, err := analysis.ThroughputDecay(s.Timestamps, s.Values, analysis.DecayConfig{})
		if err != nil {
			m.Decay = d
			continue
		}
		d.Peak, d.DayOverDay, d.WeekOverWeek = F(whole.Peak), F(whole.DayOverDay), F(whole.WeekOverWeek)
		var pt []int64
		var pv []float64
		for i, t := range s.Timestamps {
			if t > b.start.UnixMilli() {
				pt, pv = append(pt, t), append(pv, s.Values[i])
			}
		}
		if len(pt) >= 3 && whole.Peak > 0 {
			cur, err := analysis.ThroughputDecay(pt, pv, analysis.DecayConfig{Peak: whole.Peak, MinSlope: decayMinSlope})
			if err == nil {
				d.Available = true
				d.EtaCurrent, d.EtaMean = F(cur.EtaCurrent), F(analysis.Mean(cur.Eta))
				d.TrendPerDay, d.TrendLower, d.TrendUpper = F(cur.Trend.Slope), F(cur.Trend.Lower), F(cur.Trend.Upper)
				d.Significant = cur.Significant
				for i, t := range pt {
					if finite(cur.Eta[i]) {
						m.charts.eta = append(m.charts.eta, point{t, cur.Eta[i]})
					}
				}
				day0 := float64(pt[0])
				lineAt := func(t int64) float64 {
					return cur.Trend.Intercept + cur.Trend.Slope*(float64(t)-day0)/float64(day.Milliseconds())
				}
				m.charts.trend = [2]point{{pt[0], lineAt(pt[0])}, {pt[len(pt)-1], lineAt(pt[len(pt)-1])}}
			}
		}
		m.Decay = d
	}
}

func (b *builder) knee(ctx context.Context) {
	from := back(b.end, 7*day)
	step := time.Minute
	conc := b.byModel(b.query(ctx, "The knee's concurrency", fmt.Sprintf("sum by (%s) (avg_over_time(%s[1m]))", b.by, b.sel(b.eng.running)), from, b.end, step))
	qps := b.byModel(b.query(ctx, "The knee's throughput", fmt.Sprintf("sum by (%s) (rate(%s[2m]))", b.by, b.sel(b.eng.success)), from, b.end, step))
	for _, k := range b.order {
		m := b.models[k]
		kr := KneeReport{Concurrency: F(math.NaN()), QPS: F(math.NaN()), Strength: F(math.NaN()),
			MedianConcurrency: F(math.NaN()), P95Concurrency: F(math.NaN()), ShareBeyond: F(math.NaN())}
		c, ok1 := conc[k]
		q, ok2 := qps[k]
		if !ok1 || !ok2 {
			kr.Reason = "no concurrency or request-rate series"
			m.Knee = kr
			continue
		}
		t, cv, qv := analysis.Align(c.Timestamps, c.Values, q.Timestamps, q.Values, step.Milliseconds())
		kr.Points = len(t)
		var nowC []float64
		for i, ts := range t {
			m.charts.kneeAll = append(m.charts.kneeAll, [2]float64{cv[i], qv[i]})
			if ts > b.start.UnixMilli() {
				nowC = append(nowC, cv[i])
				m.charts.kneeNow = append(m.charts.kneeNow, [2]float64{cv[i], qv[i]})
			}
		}
		kr.MedianConcurrency, kr.P95Concurrency = F(quantileOf(nowC, 0.5)), F(quantileOf(nowC, 0.95))
		if len(t) < analysis.KneeMinPoints {
			kr.Reason = fmt.Sprintf("%d points of the curve, fewer than %d", len(t), analysis.KneeMinPoints)
			m.Knee = kr
			continue
		}
		kn, err := analysis.FindKnee(cv, qv, analysis.KneeConfig{})
		switch {
		case err != nil:
			kr.Reason = "the curve does not bend within the data: " + err.Error()
		case kn.Strength < analysis.DefaultKneeMinStrength:
			kr.Reason = fmt.Sprintf("the curve is nearly straight (strength %.2f < %.2f)", kn.Strength, analysis.DefaultKneeMinStrength)
			kr.Strength = F(kn.Strength)
		default:
			kr.Found = true
			kr.Concurrency, kr.QPS, kr.Strength = F(kn.Concurrency), F(kn.QPS), F(kn.Strength)
			if len(nowC) > 0 {
				beyond := 0
				for _, x := range nowC {
					if x >= kn.Concurrency {
						beyond++
					}
				}
				kr.ShareBeyond = F(float64(beyond) / float64(len(nowC)))
			}
		}
		m.Knee = kr
	}
}

// labels finds the values of tracked labels that appeared or vanished.
func (b *builder) labels(ctx context.Context) {
	prevStart := back(b.start, day)
	for _, l := range b.spec.Track {
		if slices.Contains(b.spec.By, l) {
			continue
		}
		q := fmt.Sprintf("count by (%s, %s) (%s)", b.by, l, b.sel(b.eng.running))
		ss := b.query(ctx, "Label "+l, q, prevStart, b.end, b.step)
		for _, s := range ss {
			v := s.Labels.Get(l)
			m := b.model(s.Labels)
			if v == "" || m == nil || len(s.Timestamps) == 0 {
				continue
			}
			first, last := s.Timestamps[0], s.Timestamps[len(s.Timestamps)-1]
			switch {
			case first > b.start.UnixMilli():
				m.LabelChanges = append(m.LabelChanges, LabelChange{Label: l, Value: v, Change: "appeared", At: time.UnixMilli(first).UTC()})
			case last <= b.start.UnixMilli():
				m.LabelChanges = append(m.LabelChanges, LabelChange{Label: l, Value: v, Change: "vanished", At: time.UnixMilli(last).UTC()})
			}
		}
	}
	// Models that appeared or vanished against the day before.
	q := fmt.Sprintf("count by (%s) (%s)", b.by, b.sel(b.eng.running))
	for _, s := range b.query(ctx, "The models of the day before", q, prevStart, b.end, b.step) {
		if len(s.Timestamps) == 0 {
			continue
		}
		first, last := s.Timestamps[0], s.Timestamps[len(s.Timestamps)-1]
		var parts []string
		for _, l := range b.spec.By {
			parts = append(parts, l+"="+strconv.Quote(s.Labels.Get(l)))
		}
		name := strings.Join(parts, ", ")
		switch {
		case first > b.start.UnixMilli():
			b.doc.FleetChanges = append(b.doc.FleetChanges, LabelChange{Label: b.by, Value: name, Change: "appeared", At: time.UnixMilli(first).UTC()})
		case last <= b.start.UnixMilli():
			b.doc.FleetChanges = append(b.doc.FleetChanges, LabelChange{Label: b.by, Value: name, Change: "vanished", At: time.UnixMilli(last).UTC()})
		}
	}
	for _, m := range b.models {
		sort.Slice(m.LabelChanges, func(i, j int) bool { return m.LabelChanges[i].At.Before(m.LabelChanges[j].At) })
	}
}

// coupling correlates each replica's GPU utilisation with the jitter of
// its time to first token on two-hour windows every half hour.
func (b *builder) coupling(ctx context.Context) {
	inst := b.spec.Instance
	if b.spec.GPUMetric == "none" || b.spec.GPUMetric == "" {
		for _, m := range b.models {
			m.Coupling.Reason = "no GPU metric configured (gpu_metric: none)"
		}
		return
	}
	from := b.start.Add(-couplingWindow - 15*time.Minute)
	step := time.Minute
	gpu := b.query(ctx, "GPU utilisation", fmt.Sprintf("max by (%s) (%s)", inst, b.sel(b.spec.GPUMetric)), from, b.end, step)
	lat := b.query(ctx, "Mean time to first token per replica", fmt.Sprintf("sum by (%s, %s) (rate(%s[2m])) / sum by (%s, %s) (rate(%s[2m]))",
		b.by, inst, b.sel(b.eng.ttft+"_sum"), b.by, inst, b.sel(b.eng.ttft+"_count")), from, b.end, step)
	gpuBy := map[string]ingest.Series{}
	for _, s := range gpu {
		gpuBy[s.Labels.Get(inst)] = s
	}
	for _, m := range b.models {
		if len(gpu) == 0 {
			m.Coupling.Reason = "no " + b.spec.GPUMetric + " series"
		}
	}
	for _, y := range lat {
		m := b.model(y.Labels)
		pod := y.Labels.Get(inst)
		x, ok := gpuBy[pod]
		if m == nil || !ok || pod == "" {
			continue
		}
		m.Coupling.Available = true
		m.Coupling.Reason = ""
		m.Coupling.Pairs++
		var cur *CouplingWindow // the stretch the next coupled window may extend
		for wEnd := b.start.Add(couplingWindow); !wEnd.After(b.end); wEnd = wEnd.Add(couplingEvery) {
			wFrom := wEnd.Add(-couplingWindow)
			xt, xv := cut(x, wFrom, wEnd)
			yt, yv := cut(y, wFrom.Add(-15*time.Minute), wEnd)
			if len(xt) < analysis.DefaultCouplingMinN || len(yt) < analysis.DefaultCouplingMinN {
				continue
			}
			m.Coupling.Windows++
			c := analysis.Correlate(xt, xv, yt, yv, analysis.CorrelateConfig{Step: step.Milliseconds(), From: wFrom.UnixMilli(),
				YJitter: (15 * time.Minute).Milliseconds(), MaxLag: 5})
			if v := analysis.JudgeCoupling(c, analysis.CouplingThresholds{}, gpuSaturated); v.Score < 1 {
				continue
			}
			// Overlapping windows make one stretch.
			if cur != nil && !wFrom.After(cur.End) {
				cur.End = wEnd.UTC()
				if math.Abs(c.Pearson.R) > math.Abs(float64(cur.Pearson)) {
					cur.Pearson, cur.PValue, cur.N = F(c.Pearson.R), F(c.Pearson.P), c.Pearson.N
					cur.LagSeconds = F(float64(c.Lag.Lag) * step.Seconds())
				}
				cur.GPUMax = F(math.Max(float64(cur.GPUMax), c.XMax))
				continue
			}
			m.Coupling.Coupled = append(m.Coupling.Coupled, CouplingWindow{Instance: pod, Start: wFrom.UTC(), End: wEnd.UTC(),
				Pearson: F(c.Pearson.R), PValue: F(c.Pearson.P), N: c.Pearson.N, LagSeconds: F(float64(c.Lag.Lag) * step.Seconds()), GPUMax: F(c.XMax)})
			cur = &m.Coupling.Coupled[len(m.Coupling.Coupled)-1]
		}
	}
	for _, m := range b.models {
		sort.Slice(m.Coupling.Coupled, func(i, j int) bool {
			ci, cj := m.Coupling.Coupled[i], m.Coupling.Coupled[j]
			return ci.Start.Before(cj.Start) || ci.Start.Equal(cj.Start) && ci.Instance < cj.Instance
		})
		if !m.Coupling.Available && m.Coupling.Reason == "" {
			m.Coupling.Reason = "no replica has both GPU utilisation and time-to-first-token series"
		}
	}
}

// cut returns the samples of s in (from, to].
func cut(s ingest.Series, from, to time.Time) ([]int64, []float64) {
	lo := sort.Search(len(s.Timestamps), func(i int) bool { return s.Timestamps[i] > from.UnixMilli() })
	hi := sort.Search(len(s.Timestamps), func(i int) bool { return s.Timestamps[i] > to.UnixMilli() })
	return s.Timestamps[lo:hi], s.Values[lo:hi]
}

// capacity measures headroom against the knee: the knee's throughput is
// the most the model served before more concurrency stopped paying, and
// the period's peak is judged against it; the period's P99 end-to-end
// latency is judged against the latency SLO on it, when there is one.
func (b *builder) capacity() {
	sloT, sloName := math.NaN(), ""
	for _, s := range b.spec.SLOs {
		if s.Latency != nil && s.Latency.Metric == b.eng.e2e {
			sloT, sloName = s.Latency.Threshold.Seconds(), s.Name
			break
		}
	}
	for _, k := range b.order {
		m := b.models[k]
		c := CapacityReport{KneeRPS: F(math.NaN()), PerReplica: F(math.NaN()), PeakDemand: m.Traffic.Requests.Peak,
			Utilization: F(math.NaN()), Headroom: F(math.NaN()), P99: F(math.NaN()), SLOThreshold: F(sloT), SLO: sloName}
		for _, l := range m.Latency {
			if l.Kind == "e2e" && l.Available {
				c.P99 = l.Quantiles[2].Value
			}
		}
		if finite(sloT) && finite(float64(c.P99)) {
			within := float64(c.P99) <= sloT
			c.WithinSLO = &within
		}
		replicas := m.Replicas.AtEnd
		switch {
		case !m.Knee.Found:
			c.Reason = "no knee was found, so the most the model serves is unknown"
		case replicas == 0:
			c.Reason = "no replica reported at the end of the period"
		default:
			c.Available = true
			c.KneeRPS = m.Knee.QPS
			c.PerReplica = F(float64(m.Knee.QPS) / float64(replicas))
			if peak := float64(c.PeakDemand); finite(peak) && float64(m.Knee.QPS) > 0 {
				u := peak / float64(m.Knee.QPS)
				c.Utilization, c.Headroom = F(u), F(1-u)
				c.Needed = int(math.Ceil(peak / float64(c.PerReplica)))
			}
		}
		m.Capacity = c
	}
}

// clock formats t in the report's zone for sentences.
func (b *builder) clock(t time.Time) string { return fmtClock(t, b.start, b.spec.Location) }

func fmtClock(t, ref time.Time, loc *time.Location) string {
	lt := t.In(loc)
	if lt.Format("2006-01-02") == ref.In(loc).Format("2006-01-02") {
		return lt.Format("15:04")
	}
	return lt.Format("Mon 2 Jan 15:04")
}

func fmtTime(t time.Time) string { return t.Format("2006-01-02 15:04 MST") }
