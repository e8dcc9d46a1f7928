package rules

import (
	"context"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// testOptions is what a test sets up a manager with: the groups as a
// configuration gives them, the store, and where findings (Output) and
// forecasts and scale signals (Events) are recorded.
type testOptions struct {
	Groups          []rulefmt.Group
	Querier         Querier
	Output          *recorder
	Events          *eventRecorder
	EventPrefix     string
	EvaluationDelay time.Duration
	Backfill        time.Duration
	Now             func() time.Time
	Metrics         *metrics.Set
	Scores          ScorePoints
	Readings        ReadingFilter
}

// newTestManager builds the groups and a manager over them whose sink hands
// findings to o.Output and forecasts and scale signals, as the events a
// subscriber receives, to o.Events.
func newTestManager(o testOptions) (*Manager, error) {
	groups, err := Build(o.Groups)
	if err != nil {
		return nil, err
	}
	if o.Output == nil {
		o.Output = &recorder{}
	}
	if o.EventPrefix == "" {
		o.EventPrefix = alerting.DefaultSubjectPrefix
	}
	return NewManager(ManagerOptions{Querier: o.Querier, Sink: &testSink{o: o, life: alerting.NewLifecycle(alerting.LifecycleOptions{})}, EvaluationDelay: o.EvaluationDelay,
		Backfill: o.Backfill, Now: o.Now, Metrics: o.Metrics, Scores: o.Scores, Readings: o.Readings}, groups)
}

// testSink runs the observations through an alert lifecycle, as the
// daemon does, and records what comes out.
type testSink struct {
	o    testOptions
	life *alerting.Lifecycle
}

func (s *testSink) Send(ctx context.Context, b alerting.Batch) error {
	s.life.Process(ctx, &b)
	s.o.Output.add(b.Findings)
	s.o.Output.mu.Lock()
	s.o.Output.alerts = append(s.o.Output.alerts, b.Alerts...)
	s.o.Output.mu.Unlock()
	s.o.Output.mu.Lock()
	s.o.Output.scores = append(s.o.Output.scores, b.Scores...)
	s.o.Output.readings = append(s.o.Output.readings, b.Readings...)
	s.o.Output.misses = append(s.o.Output.misses, b.Misses...)
	s.o.Output.mu.Unlock()
	if s.o.Events == nil {
		return nil
	}
	for _, d := range b.Forecasts {
		ev, err := alerting.NewForecastEvent(d, "")
		if err != nil {
			return err
		}
		s.o.Events.PublishEvent(ctx, alerting.ForecastSubject(s.o.EventPrefix, d.Rule), ev)
	}
	for _, d := range b.Scales {
		ev, err := alerting.NewScaleEvent(d, "")
		if err != nil {
			return err
		}
		s.o.Events.PublishEvent(ctx, alerting.ScaleSubject(s.o.EventPrefix, d.Rule), ev)
	}
	return nil
}

// recorder records findings.
type recorder struct {
	mu       sync.Mutex
	got      []alerting.Finding
	alerts   []alerting.AlertData
	scores   []alerting.Scores
	readings []alerting.Readings
	misses   []alerting.ForecastMiss
}

func (r *recorder) add(fs []alerting.Finding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fs...)
}
