// Package keda serves inferwatch's scale signals to KEDA, in the two ways
// KEDA reads a number it does not compute itself: as JSON for a
// metrics-api trigger (Handler) and as an external scaler over gRPC
// (RegisterScaler; trigger types external and external-push). Both read
// the newest signal of each target that Send was given.
//
// A signal holds until its valid_until (its time plus the forecast
// horizon), and Options.Grace after it. Past that it is stale: both
// interfaces then answer with an error (HTTP 503, gRPC Unavailable) unless
// asked to serve stale signals, so that KEDA counts a failure and, after
// the ScaledObject's fallback.failureThreshold of them, scales to its
// fallback.replicas, instead of holding the deployment at a number that
// nobody is computing any more. The JSON of a stale signal still carries
// the signal, with stale: true, for the person reading it.
package keda

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/internal/metricname"
)

// Defaults of Options.
const (
	DefaultMaxTargets  = 10000
	DefaultForget      = time.Hour
	DefaultMaxStreams  = 256
	DefaultStreamCheck = 10 * time.Second
)

// maxNamed is the most known rules or targets an error names.
const maxNamed = 50

// Options configure Signals. Zero fields take the defaults.
type Options struct {
	// MaxTargets caps the targets kept, all rules together; the signal of a
	// new target past it is dropped and counted
	// (inferwatch_keda_targets_dropped_total). Default 10000.
	MaxTargets int
	// Grace is how long past its valid_until a signal is still served as
	// fresh. Default 0: a group whose interval is longer than the forecast
	// horizon wants at least the difference.
	Grace time.Duration
	// Forget is how long a target whose signal is stale is kept (and
	// reported as stale) before it is forgotten and reported as unknown.
	// Default 1h.
	Forget time.Duration
	// MaxStreams caps the StreamIsActive streams open at once; a stream
	// past it is refused with ResourceExhausted. Default 256.
	MaxStreams int
	// StreamCheck is how often an open stream looks at its signal when
	// nothing was sent: it notices a signal turning stale. Default 10s.
	StreamCheck time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger (nil: discarded) and Metrics (nil: unregistered).
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// Signals keeps the newest scale signal of every target and serves them.
// It is safe for concurrent use.
type Signals struct {
	o   Options
	log *slog.Logger
	set *metrics.Set

	mu      sync.Mutex
	rules   map[string]map[string]*alerting.ScaleData // rule → target → newest signal
	n       int
	changed chan struct{} // closed and replaced by each Send that changed something
	closed  chan struct{}
	once    sync.Once

	streams                  chan struct{} // a token per open stream
	dropped, streamsRefused  *metrics.Counter
	staleHTTP, staleExternal *metrics.Counter
}

// New fills o's defaults.
func New(o Options) (*Signals, error) {
	switch {
	case o.MaxTargets < 0:
		return nil, fmt.Errorf("keda: max targets is %d; want a positive number, or 0 for the default %d", o.MaxTargets, DefaultMaxTargets)
	case o.MaxStreams < 0:
		return nil, fmt.Errorf("keda: max streams is %d; want a positive number, or 0 for the default %d", o.MaxStreams, DefaultMaxStreams)
	case o.Grace < 0 || o.Forget < 0 || o.StreamCheck < 0:
		return nil, fmt.Errorf("keda: grace %v, forget %v and stream check %v must not be negative", o.Grace, o.Forget, o.StreamCheck)
	}
	if o.MaxTargets == 0 {
		o.MaxTargets = DefaultMaxTargets
	}
	if o.Forget == 0 {
		o.Forget = DefaultForget
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.StreamCheck == 0 {
		o.StreamCheck = DefaultStreamCheck
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	s := &Signals{o: o, log: o.Logger, set: o.Metrics, rules: map[string]map[string]*alerting.ScaleData{},
		changed: make(chan struct{}), closed: make(chan struct{}), streams: make(chan struct{}, o.MaxStreams)}
	set := o.Metrics
	s.dropped = set.NewCounter("inferwatch_keda_targets_dropped_total")
	s.streamsRefused = set.NewCounter("inferwatch_keda_streams_refused_total")
	s.staleHTTP = set.NewCounter(metricname.Name("inferwatch_keda_stale_answers_total", "api", "metrics_api"))
	s.staleExternal = set.NewCounter(metricname.Name("inferwatch_keda_stale_answers_total", "api", "external"))
	set.NewGauge("inferwatch_keda_targets", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.n)
	})
	set.NewGauge("inferwatch_keda_streams", func() float64 { return float64(len(s.streams)) })
	return s, nil
}

// Send takes the scale signals of one group evaluation, keeping the newest
// of each target. It never blocks: open streams are woken, not waited for.
func (s *Signals) Send(_ context.Context, b alerting.Batch) error {
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(now)
	changed := false
	for i := range b.Scales {
		sig := b.Scales[i]
		ts := s.rules[sig.Rule]
		if old := ts[sig.Target]; old != nil {
			if sig.Time.Before(old.Time) {
				continue // an older signal, from a replay
			}
			if old.Group != sig.Group {
				s.log.Warn("two groups publish scale signals for one rule and target; the newest is served",
					"rule", sig.Rule, "target", sig.Target, "group", sig.Group, "other_group", old.Group)
			}
			*old = sig
			changed = true
			continue
		}
		if s.n >= s.o.MaxTargets {
			s.dropped.Inc()
			continue
		}
		if ts == nil {
			ts = map[string]*alerting.ScaleData{}
			s.rules[sig.Rule] = ts
		}
		ts[sig.Target] = &sig
		s.n++
		changed = true
	}
	if changed {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return nil
}

// forgetLocked drops the targets stale for longer than Forget.
func (s *Signals) forgetLocked(now time.Time) {
	for rule, ts := range s.rules {
		for target, sig := range ts {
			if now.Sub(sig.ValidUntil) > s.o.Grace+s.o.Forget {
				delete(ts, target)
				s.n--
			}
		}
		if len(ts) == 0 {
			delete(s.rules, rule)
		}
	}
}

// Close ends the open streams. Send and the unary calls keep working.
func (s *Signals) Close() { s.once.Do(func() { close(s.closed) }) }

// stale reports whether sig is past its valid_until and the grace.
func (s *Signals) stale(sig *alerting.ScaleData, now time.Time) bool {
	return sig.ValidUntil.IsZero() || now.After(sig.ValidUntil.Add(s.o.Grace))
}

// errUnknown is a rule or target that Signals does not hold.
type errUnknown struct {
	rule, target string // target "" for an unknown rule
	known        []string
	total        int
}

func (e *errUnknown) Error() string {
	var b strings.Builder
	if e.target == "" {
		fmt.Fprintf(&b, "no scale signals for rule %q", e.rule)
	} else {
		fmt.Fprintf(&b, "rule %q has no target %s", e.rule, e.target)
	}
	what, known := "rules", quoteAll(e.known)
	if e.target != "" {
		what, known = "targets", e.known
	}
	switch {
	case e.total == 0 && e.target == "":
		b.WriteString("; no scale rule has published a signal yet")
	case e.total > len(e.known):
		fmt.Fprintf(&b, "; known %s (%d of %d): %s", what, len(known), e.total, strings.Join(known, ", "))
	default:
		fmt.Fprintf(&b, "; known %s: %s", what, strings.Join(known, ", "))
	}
	return b.String()
}

// errAmbiguous is a rule asked for without a target while it has several.
type errAmbiguous struct {
	rule  string
	known []string
	total int
}

func (e *errAmbiguous) Error() string {
	return fmt.Sprintf("rule %q has %d targets; name one of them: %s", e.rule, e.total, strings.Join(e.known, ", "))
}

// get returns a copy of the newest signal of rule's target, and whether it
// is stale. An empty target is the rule's only target.
func (s *Signals) get(rule, target string) (alerting.ScaleData, bool, error) {
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(now)
	ts := s.rules[rule]
	if len(ts) == 0 {
		known, total := firstKeys(s.rules)
		return alerting.ScaleData{}, false, &errUnknown{rule: rule, known: known, total: total}
	}
	if target == "" {
		if len(ts) > 1 {
			known, total := firstKeys(ts)
			return alerting.ScaleData{}, false, &errAmbiguous{rule: rule, known: known, total: total}
		}
		for t := range ts {
			target = t
		}
	}
	sig := ts[target]
	if sig == nil {
		known, total := firstKeys(ts)
		return alerting.ScaleData{}, false, &errUnknown{rule: rule, target: target, known: known, total: total}
	}
	return *sig, s.stale(sig, now), nil
}

// list returns copies of the signals of rule (every rule when rule is
// ""), sorted by rule and target, with whether each is stale.
func (s *Signals) list(rule string) ([]alerting.ScaleData, []bool, error) {
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(now)
	var sigs []alerting.ScaleData
	if rule != "" {
		ts := s.rules[rule]
		if len(ts) == 0 {
			known, total := firstKeys(s.rules)
			return nil, nil, &errUnknown{rule: rule, known: known, total: total}
		}
		for _, sig := range ts {
			sigs = append(sigs, *sig)
		}
	} else {
		for _, ts := range s.rules {
			for _, sig := range ts {
				sigs = append(sigs, *sig)
			}
		}
	}
	slices.SortFunc(sigs, func(a, b alerting.ScaleData) int {
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Target, b.Target)
	})
	stale := make([]bool, len(sigs))
	for i := range sigs {
		stale[i] = s.stale(&sigs[i], now)
	}
	return sigs, stale, nil
}

// changes returns a channel closed at the next Send that changes a signal.
func (s *Signals) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// firstKeys returns up to maxNamed keys of m, sorted, and how many it has.
func firstKeys[V any](m map[string]V) ([]string, int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > maxNamed {
		keys = keys[:maxNamed]
	}
	return keys, len(m)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// Metric is a figure of a scale signal that KEDA can scale on.
type Metric string

// The metrics of a signal.
const (
	// DesiredReplicas: what the scale rule decided. With a target value of
	// 1, KEDA's ceil(metric / target) is the rule's number.
	DesiredReplicas Metric = "desired_replicas"
	// PredictedLoad: the forecast peak over the horizon, in the forecast's
	// unit (requests per second); with the target value set to what one
	// replica sustains, KEDA computes the replicas from the forecast alone.
	PredictedLoad Metric = "predicted_load"
	// PredictedUpper: the upper bound of the forecast peak.
	PredictedUpper Metric = "predicted_upper"
)

// Metrics lists the metrics a trigger can name.
var Metrics = []Metric{DesiredReplicas, PredictedLoad, PredictedUpper}

// value returns m of sig, or an error naming why it is not defined.
func (m Metric) value(sig *alerting.ScaleData) (float64, error) {
	var v float64
	switch m {
	case DesiredReplicas:
		return float64(sig.DesiredReplicas), nil
	case PredictedLoad:
		v = float64(sig.PredictedLoad)
	case PredictedUpper:
		v = float64(sig.PredictedUpper)
	default:
		return 0, fmt.Errorf("unknown metric %q; want one of %s", string(m), metricNames())
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("rule %q target %s has no %s: %s", sig.Rule, sig.Target, m, orNone(sig.Reason))
	}
	return v, nil
}

func metricNames() string {
	names := make([]string, len(Metrics))
	for i, m := range Metrics {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

func orNone(reason string) string {
	if reason == "" {
		return "the signal has no forecast"
	}
	return reason
}

// targetSyntax says how a target is written.
const targetSyntax = `want the target in selector syntax, e.g. {model="qwen2.5-32b-instruct"}, or its labels as name=value pairs separated by commas, e.g. model=qwen2.5-32b-instruct,pod=p1`

// ParseTarget turns a target as a trigger's metadata names it into the
// target's identity as scale signals carry it (its labels in selector
// syntax, sorted by name, values quoted as Go quotes them). It takes that
// identity itself, {model="qwen2.5-32b-instruct"}, or the labels as
// name=value pairs separated by commas, model=qwen2.5-32b-instruct,pod=p1,
// in any order, values unquoted (a value holding a comma needs the
// selector form). "" stays "": a rule's only target.
func ParseTarget(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "{") {
		return s, nil
	}
	m := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return "", fmt.Errorf("target %q: %s", s, targetSyntax)
		}
		if _, dup := m[k]; dup {
			return "", fmt.Errorf("target %q names label %s twice", s, k)
		}
		m[k] = v
	}
	return identity(m), nil
}

// identity formats labels as a target's identity: {a="1",b="2"}.
func identity(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}
