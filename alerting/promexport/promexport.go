// Package promexport exposes what the rules produce as Prometheus gauges on
// the daemon's /metrics: the forecast of each series at its horizon with
// the bounds of its interval, the peak over the horizon, the desired and
// current replicas and tier of each scale target, and the newest anomaly
// score of each series a rule watches. A Prometheus that scrapes the daemon
// can then graph them, alert on them, and feed them to an autoscaler (the
// KEDA Prometheus trigger, or an HPA through prometheus-adapter).
//
// # Families and labels
//
// Every series carries the rule's name as rule and the labels of the series
// (or target) the rule published, forecasts and scores with the rule's own
// labels too:
//
//	inferwatch_forecast{rule, <series labels>, horizon, quantile}
//	inferwatch_forecast_peak{rule, <series labels>, horizon, quantile}
//	inferwatch_scale_desired_replicas{rule, <target labels>}
//	inferwatch_scale_current_replicas{rule, <target labels>}
//	inferwatch_scale_tier{rule, <target labels>}
//	inferwatch_scale_valid_until_seconds{rule, <target labels>}
//	inferwatch_anomaly_score{rule, <series labels>}
//
// horizon is the lead of the forecast in Prometheus duration syntax
// ("10m"). quantile is the probability the forecast puts at or below the
// value, as in a Prometheus summary: "0.5" is the point forecast (the
// forecasters aim it at the median: it is the model's forecast moved by the
// median of its recent errors), and a prediction interval at level L gives
// quantile (1−L)/2 for the lower bound and (1+L)/2 for the upper one, "0.05"
// and "0.95" at the default level 0.9. inferwatch_forecast_peak is the
// highest point forecast over each horizon the rule serves (quantile "0.5")
// and the highest upper bound (the upper quantile). The value is the forecast for
// origin+horizon, exposed now: compare it with what came by shifting the
// forecast, e.g. `inferwatch_forecast{quantile="0.5"} offset 10m`.
//
// A series label named like one of these (rule, horizon, quantile) is
// exposed as exported_<name>, as Prometheus renames target labels. A label
// name that the text format does not take ([a-zA-Z_][a-zA-Z0-9_]*) has
// every other character replaced by '_' (and '_' put before a leading
// digit); names starting with "__" (such as __name__) are reserved to
// Prometheus and dropped, and so is a label whose name, so changed, is
// already taken. Values that are not UTF-8 have their bad bytes replaced by
// U+FFFD. Each of these is counted once, when the series is created.
//
// # Bounds
//
// Each family holds at most Options.MaxSeries series; a series that would
// pass the cap is not created and is counted in
// inferwatch_export_series_dropped_total{family}, and the series of one
// forecast or one target are created together or not at all. A series not
// updated for Options.Expiry (default 15m) is removed: a series that is gone
// from the rule's results, a rule removed on reload, a rule whose
// evaluations fail. Set it to a few times the longest group interval.
package promexport

import (
	"context"
	"hash/maphash"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/common/model"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/internal/metricname"
)

// The families the exporter writes.
const (
	FamilyForecast        = "inferwatch_forecast"
	FamilyForecastPeak    = "inferwatch_forecast_peak"
	FamilyScaleDesired    = "inferwatch_scale_desired_replicas"
	FamilyScaleCurrent    = "inferwatch_scale_current_replicas"
	FamilyScaleTier       = "inferwatch_scale_tier"
	FamilyScaleValidUntil = "inferwatch_scale_valid_until_seconds"
	FamilyAnomalyScore    = "inferwatch_anomaly_score"
)

// Defaults of Options.
const (
	DefaultMaxSeries = 10000
	DefaultExpiry    = 15 * time.Minute
)

// Options configure an Exporter. Zero fields take the defaults.
type Options struct {
	// Metrics is the Set the gauges are written with (the daemon's
	// /metrics) and the one that holds the exporter's own metrics. nil:
	// unregistered; WritePrometheus still writes the gauges.
	Metrics *metrics.Set
	// MaxSeries caps the series of each family. Default 10000.
	MaxSeries int
	// Expiry is how long a series stays after its last update. Default 15m.
	Expiry time.Duration
	// Leads are the leads at which each forecast is exposed, one horizon
	// label value each; a lead the forecast does not reach, or that falls
	// between its steps, is skipped. Default: each horizon the forecast
	// rule serves (forecast.horizons).
	Leads []time.Duration
	// Now is the clock that ages series (default time.Now).
	Now func() time.Time
	// Logger receives a line when a family reaches its cap. nil: discarded.
	Logger *slog.Logger
}

// Exporter keeps the newest value of every exported series. Its Send takes
// the results of one group evaluation; WritePrometheus writes them in the
// Prometheus text format. It is safe for concurrent use.
type Exporter struct {
	o    Options
	log  *slog.Logger
	mu   sync.Mutex
	fams []*family
	// byName indexes fams.
	byName map[string]*family
	// scoreKeys remembers the series text of each watched series handed
	// on, so that a cycle that hands on the same series again does not
	// translate its labels again; sum tells whether its labels are still
	// the same. An entry goes when unseen for Expiry.
	scoreKeys map[scoreID]*scoreKey
	seed      maphash.Seed

	renamed, droppedReserved, droppedCollision, repaired *metrics.Counter
}

type family struct {
	name, help string
	series     map[string]*sample // by the series' text: name{labels}
	dropped    *metrics.Counter
	capLogged  bool
}

type sample struct {
	v     float64
	seen  time.Time
	group string // of the evaluation that set it
}

// scoreID names a watched series: its rule and its labels as the rule
// writes them.
type scoreID struct{ group, rule, series string }

type scoreKey struct {
	sum  uint64 // of the labels the key was made from
	key  string
	st   labelStats
	seen time.Time
}

var helps = []struct{ name, help string }{
	{FamilyForecast, "Forecast of a series at the lead given by horizon: the point forecast at quantile 0.5, the bounds of the prediction interval at its quantiles."},
	{FamilyForecastPeak, "Highest point forecast (quantile 0.5) and highest upper bound (the upper quantile) over the horizon."},
	{FamilyScaleDesired, "Replicas a scale rule wants for a target."},
	{FamilyScaleCurrent, "Replicas a scale rule saw running for a target."},
	{FamilyScaleTier, "What decided the desired replicas: 1 saturated now, 2 latency near the SLO, 3 the forecast, 0 nothing known to act on."},
	{FamilyScaleValidUntil, "Unix time until which the desired replicas hold (the signal's time plus the forecast horizon)."},
	{FamilyAnomalyScore, "Newest anomaly score of a series (1 or more: anomalous)."},
}

// New fills o's defaults and, when o.Metrics is set, registers the gauges
// with it.
func New(o Options) *Exporter {
	if o.MaxSeries <= 0 {
		o.MaxSeries = DefaultMaxSeries
	}
	if o.Expiry <= 0 {
		o.Expiry = DefaultExpiry
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	set := o.Metrics
	if set == nil {
		set = metrics.NewSet()
	}
	e := &Exporter{o: o, log: o.Logger, byName: map[string]*family{}, scoreKeys: map[scoreID]*scoreKey{}, seed: maphash.MakeSeed(),
		renamed:          set.NewCounter(metricname.Name("inferwatch_export_labels_changed_total", "action", "renamed")),
		droppedReserved:  set.NewCounter(metricname.Name("inferwatch_export_labels_changed_total", "action", "dropped_reserved")),
		droppedCollision: set.NewCounter(metricname.Name("inferwatch_export_labels_changed_total", "action", "dropped_collision")),
		repaired:         set.NewCounter(metricname.Name("inferwatch_export_labels_changed_total", "action", "value_repaired")),
	}
	for _, h := range helps {
		f := &family{name: h.name, help: h.help, series: map[string]*sample{},
			dropped: set.NewCounter(metricname.Name("inferwatch_export_series_dropped_total", "family", h.name))}
		e.fams = append(e.fams, f)
		e.byName[h.name] = f
		set.NewGauge(metricname.Name("inferwatch_export_series", "family", h.name), func() float64 {
			e.mu.Lock()
			defer e.mu.Unlock()
			return float64(len(f.series))
		})
	}
	if o.Metrics != nil {
		o.Metrics.RegisterMetricsWriter(e.WritePrometheus)
	}
	return e
}

// point is one series to set: its text and value; a NaN value removes it.
type point struct {
	key string
	v   float64
}

// labelStats counts what translating a record's labels changed.
type labelStats struct{ renamed, reserved, collision, repaired int }

// Send takes the results of one group evaluation: the newest forecast of
// each series, the newest signal of each target (a batch may hold several,
// in time order, after a backfill) and the newest finite score of each
// watched series. It never blocks on I/O and never fails.
func (e *Exporter) Send(_ context.Context, b alerting.Batch) error {
	now := e.o.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expireLocked(now)
	for i := range b.Forecasts {
		e.forecastLocked(&b.Forecasts[i], now)
	}
	// Later signals of a target supersede earlier ones.
	last := map[[2]string]int{}
	for i, s := range b.Scales {
		last[[2]string{s.Rule, s.Target}] = i
	}
	for i := range b.Scales {
		s := &b.Scales[i]
		if last[[2]string{s.Rule, s.Target}] == i {
			e.scaleLocked(s, now)
		}
	}
	for i := range b.Scores {
		e.scoreLocked(&b.Scores[i], now)
	}
	return nil
}

var (
	forecastOwn = []string{"rule", "horizon", "quantile"}
	ruleOwn     = []string{"rule"}
)

func (e *Exporter) forecastLocked(f *alerting.ForecastData, now time.Time) {
	if len(f.Points) == 0 {
		return
	}
	base, st := translate(f.Labels, forecastOwn)
	lo, hi := quantileLabels(f.Level)
	// The horizons the rule serves, each with its peaks; an outlook without
	// them serves one, its last point's lead.
	served := f.Horizons
	if len(served) == 0 {
		served = []alerting.ForecastHorizon{{HorizonSeconds: f.Points[len(f.Points)-1].Time.Sub(f.Origin).Seconds(),
			Peak: f.Peak, UpperPeak: f.UpperPeak}}
	}
	var fc, peak []point
	leads := e.o.Leads
	for _, h := range served {
		lead := time.Duration(h.HorizonSeconds * float64(time.Second))
		if len(e.o.Leads) == 0 {
			leads = append(leads, lead)
		}
		hl := durationLabel(lead)
		peak = append(peak,
			point{seriesKey(FamilyForecastPeak, base, "rule", f.Rule, "horizon", hl, "quantile", "0.5"), float64(h.Peak)},
			point{seriesKey(FamilyForecastPeak, base, "rule", f.Rule, "horizon", hl, "quantile", hi), float64(h.UpperPeak)})
	}
	for _, lead := range leads {
		p, ok := pointAt(f, lead)
		if !ok {
			continue
		}
		h := durationLabel(lead)
		fc = append(fc,
			point{seriesKey(FamilyForecast, base, "rule", f.Rule, "horizon", h, "quantile", "0.5"), float64(p.Mean)},
			point{seriesKey(FamilyForecast, base, "rule", f.Rule, "horizon", h, "quantile", lo), float64(p.Lower)},
			point{seriesKey(FamilyForecast, base, "rule", f.Rule, "horizon", h, "quantile", hi), float64(p.Upper)})
	}
	e.putLocked(e.byName[FamilyForecast], f.Group, fc, st, now)
	e.putLocked(e.byName[FamilyForecastPeak], f.Group, peak, labelStats{}, now)
}

// pointAt returns the forecast point lead after the origin.
func pointAt(f *alerting.ForecastData, lead time.Duration) (alerting.ForecastPoint, bool) {
	at := f.Origin.Add(lead)
	i := sort.Search(len(f.Points), func(i int) bool { return !f.Points[i].Time.Before(at) })
	if i == len(f.Points) || !f.Points[i].Time.Equal(at) {
		return alerting.ForecastPoint{}, false
	}
	return f.Points[i], true
}

func (e *Exporter) scaleLocked(s *alerting.ScaleData, now time.Time) {
	base, st := translate(s.Labels, ruleOwn)
	key := func(fam string) string { return seriesKey(fam, base, "rule", s.Rule) }
	current := math.NaN()
	if s.CurrentKnown {
		current = float64(s.CurrentReplicas)
	}
	var validUntil = math.NaN()
	if !s.ValidUntil.IsZero() {
		validUntil = float64(s.ValidUntil.UnixMilli()) / 1000
	}
	// The target's series are created together: the desired replicas
	// family decides whether there is room.
	if !e.putLocked(e.byName[FamilyScaleDesired], s.Group, []point{{key(FamilyScaleDesired), float64(s.DesiredReplicas)}}, st, now) {
		return
	}
	e.putLocked(e.byName[FamilyScaleTier], s.Group, []point{{key(FamilyScaleTier), float64(s.Tier)}}, labelStats{}, now)
	e.putLocked(e.byName[FamilyScaleValidUntil], s.Group, []point{{key(FamilyScaleValidUntil), validUntil}}, labelStats{}, now)
	e.putLocked(e.byName[FamilyScaleCurrent], s.Group, []point{{key(FamilyScaleCurrent), current}}, labelStats{}, now)
}

func (e *Exporter) scoreLocked(sc *alerting.Scores, now time.Time) {
	v := math.NaN()
	for i := len(sc.Score) - 1; i >= 0; i-- {
		if x := sc.Score[i]; !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = x
			break
		}
	}
	if math.IsNaN(v) {
		return // not scored yet: keep what was exposed until it expires
	}
	id := scoreID{sc.Group, sc.Rule, sc.Series}
	f := e.byName[FamilyAnomalyScore]
	ck := e.scoreKeys[id]
	if ck == nil && len(f.series) >= e.o.MaxSeries {
		// At the cap a series not exported yet is dropped: not worth
		// translating. (Another rule's series of the same text would be
		// updated; one not remembered here is counted dropped instead.)
		f.dropped.Inc()
		e.logCapLocked(f)
		return
	}
	sum := e.labelsSum(sc.Labels)
	if ck == nil || ck.sum != sum {
		base, st := translate(sc.Labels, ruleOwn)
		ck = &scoreKey{sum: sum, key: seriesKey(FamilyAnomalyScore, base, "rule", sc.Rule), st: st}
	}
	// Remembered whether or not the series fits under the cap (one that
	// came while there was room may be kept out later, after a reload).
	ck.seen = now
	e.scoreKeys[id] = ck
	e.putLocked(f, sc.Group, []point{{ck.key, v}}, ck.st, now)
}

// labelsSum is a hash of a label set, whatever the order of its map.
func (e *Exporter) labelsSum(labels map[string]string) uint64 {
	var h maphash.Hash
	h.SetSeed(e.seed)
	var sum uint64
	for k, v := range labels {
		h.Reset()
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(v)
		sum += h.Sum64()
	}
	return sum
}

// putLocked sets the points of one record in f. Existing series are
// updated; new ones are created only if all of them fit under the cap
// (else they are counted as dropped). A non-finite value removes its
// series. It reports whether every finite point is now exposed, and counts
// st when it created a series.
func (e *Exporter) putLocked(f *family, group string, ps []point, st labelStats, now time.Time) bool {
	fresh := 0
	for _, p := range ps {
		if finite(p.v) && f.series[p.key] == nil {
			fresh++
		}
	}
	if fresh > 0 && len(f.series)+fresh > e.o.MaxSeries {
		f.dropped.Add(fresh)
		e.logCapLocked(f)
		for _, p := range ps {
			if s := f.series[p.key]; s != nil && finite(p.v) {
				s.v, s.seen, s.group = p.v, now, group
			}
		}
		return false
	}
	for _, p := range ps {
		if !finite(p.v) {
			delete(f.series, p.key)
			continue
		}
		if s := f.series[p.key]; s != nil {
			s.v, s.seen, s.group = p.v, now, group
		} else {
			f.series[p.key] = &sample{v: p.v, seen: now, group: group}
		}
	}
	if fresh > 0 {
		e.renamed.Add(st.renamed)
		e.droppedReserved.Add(st.reserved)
		e.droppedCollision.Add(st.collision)
		e.repaired.Add(st.repaired)
	}
	return true
}

// logCapLocked logs, once until the family has room again, that f is
// at its cap.
func (e *Exporter) logCapLocked(f *family) {
	if !f.capLogged {
		f.capLogged = true
		e.log.Warn("an exported metric family reached its series cap; new series are dropped and counted",
			"family", f.name, "cap", e.o.MaxSeries, "series", len(f.series))
	}
}

// Forget removes the series of group at once: another process evaluates
// the group now and exports them.
func (e *Exporter) Forget(group string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range e.fams {
		for k, s := range f.series {
			if s.group == group {
				delete(f.series, k)
			}
		}
		if len(f.series) < e.o.MaxSeries {
			f.capLogged = false
		}
	}
	for id := range e.scoreKeys {
		if id.group == group {
			delete(e.scoreKeys, id)
		}
	}
}

func (e *Exporter) expireLocked(now time.Time) {
	for _, f := range e.fams {
		for k, s := range f.series {
			if now.Sub(s.seen) > e.o.Expiry {
				delete(f.series, k)
			}
		}
		if len(f.series) < e.o.MaxSeries {
			f.capLogged = false
		}
	}
	for id, ck := range e.scoreKeys {
		if now.Sub(ck.seen) > e.o.Expiry {
			delete(e.scoreKeys, id)
		}
	}
}

// WritePrometheus writes every live series in the Prometheus text format,
// family by family, series sorted, each family with its # HELP and # TYPE
// lines when the metrics package exposes metadata
// (metrics.ExposeMetadata).
func (e *Exporter) WritePrometheus(w io.Writer) {
	type line struct {
		key string
		v   float64
	}
	now := e.o.Now()
	e.mu.Lock()
	e.expireLocked(now)
	lines := make([][]line, len(e.fams))
	for i, f := range e.fams {
		ls := make([]line, 0, len(f.series))
		for k, s := range f.series {
			ls = append(ls, line{k, s.v})
		}
		lines[i] = ls
	}
	e.mu.Unlock()
	// Metadata follows the metrics package's switch, as the rest of the
	// Set does, but with the families' help texts.
	var probe strings.Builder
	metrics.WriteMetadataIfNeeded(&probe, "probe", "gauge")
	meta := probe.Len() > 0
	var buf []byte
	for i, f := range e.fams {
		ls := lines[i]
		if len(ls) == 0 {
			continue
		}
		slices.SortFunc(ls, func(a, b line) int { return strings.Compare(a.key, b.key) })
		buf = buf[:0]
		if meta {
			buf = append(buf, "# HELP "+f.name+" "+f.help+"\n# TYPE "+f.name+" gauge\n"...)
		}
		for _, l := range ls {
			buf = append(buf, l.key...)
			buf = append(buf, ' ')
			buf = strconv.AppendFloat(buf, l.v, 'g', -1, 64)
			buf = append(buf, '\n')
		}
		w.Write(buf)
	}
}

// translate turns a record's labels into valid, sorted label pairs for the
// text format, renaming those named like one of own to exported_<name>. It
// says what it had to change.
func translate(labels map[string]string, own []string) ([]string, labelStats) {
	var st labelStats
	keys := make([]string, 0, len(labels))
	for k, v := range labels {
		if v != "" { // an empty value is an absent label in Prometheus
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	taken := make(map[string]bool, len(keys)+len(own))
	for _, k := range own {
		taken[k] = true
	}
	type pair struct{ k, v string }
	ps := make([]pair, 0, len(keys))
	// Labels whose names are valid as they are come first: a name made by
	// renaming never takes the place of one that needed no change.
	var later []string
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, "__"):
			st.reserved++
		case taken[k] || SanitizeLabelName(k) != k:
			later = append(later, k)
		default:
			taken[k] = true
			ps = append(ps, pair{k, labels[k]})
		}
	}
	for _, k := range later {
		name := SanitizeLabelName(k)
		if strings.HasPrefix(name, "__") {
			st.reserved++
			continue
		}
		if slices.Contains(own, name) {
			name = "exported_" + name
		}
		if taken[name] {
			st.collision++
			continue
		}
		st.renamed++
		taken[name] = true
		ps = append(ps, pair{name, labels[k]})
	}
	for i := range ps {
		if !utf8.ValidString(ps[i].v) {
			ps[i].v = strings.ToValidUTF8(ps[i].v, "\uFFFD")
			st.repaired++
		}
	}
	kv := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		kv = append(kv, p.k, p.v)
	}
	return kv, st
}

// seriesKey builds name{labels} from the translated series labels base and
// the exporter's own pairs, sorted by name.
func seriesKey(name string, base []string, own ...string) string {
	type pair struct{ k, v string }
	ps := make([]pair, 0, (len(base)+len(own))/2)
	for i := 0; i < len(base); i += 2 {
		ps = append(ps, pair{base[i], base[i+1]})
	}
	for i := 0; i < len(own); i += 2 {
		ps = append(ps, pair{own[i], own[i+1]})
	}
	slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	kv := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		kv = append(kv, p.k, p.v)
	}
	return metricname.Name(name, kv...)
}

// SanitizeLabelName returns name as a label name the Prometheus text format
// takes, [a-zA-Z_][a-zA-Z0-9_]*: every other character becomes '_', and a
// leading digit gets a '_' before it. The empty name becomes "_".
func SanitizeLabelName(name string) string {
	ok := name != ""
	for i := 0; i < len(name) && ok; i++ {
		ok = validLabelByte(name[i], i == 0)
	}
	if ok {
		return name
	}
	var b strings.Builder
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		b.WriteByte('_')
	}
	for _, r := range name {
		if r < utf8.RuneSelf && validLabelByte(byte(r), false) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func validLabelByte(c byte, first bool) bool {
	switch {
	case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}

// quantileLabels returns the quantile label values of the bounds of an
// interval at level: (1−level)/2 and (1+level)/2, rounded to six decimals
// so 0.9 gives "0.05" and "0.95". An invalid level (not in (0, 1)) gives
// "lower" and "upper".
func quantileLabels(level float64) (string, string) {
	if !(level > 0 && level < 1) {
		return "lower", "upper"
	}
	f := func(q float64) string { return strconv.FormatFloat(math.Round(q*1e6)/1e6, 'g', -1, 64) }
	return f((1 - level) / 2), f((1 + level) / 2)
}

// durationLabel formats d as Prometheus writes durations ("10m", "1h30m").
func durationLabel(d time.Duration) string { return model.Duration(d).String() }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
