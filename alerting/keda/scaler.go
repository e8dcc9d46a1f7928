package keda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/inferwatch/inferwatch/alerting/keda/externalscaler"
	"github.com/inferwatch/inferwatch/internal/metricname"
)

// The scalerMetadata keys of a trigger of type external or external-push
// (every other key, such as scalerAddress, is KEDA's and ignored here).
const (
	// MetaRule names the scale rule (required).
	MetaRule = "rule"
	// MetaTarget names the target, as ParseTarget reads it; it may be left
	// out when the rule has a single target.
	MetaTarget = "target"
	// MetaMetric is the figure KEDA scales on: desired_replicas (the
	// default), predicted_load or predicted_upper.
	MetaMetric = "metric"
	// MetaTargetValue is the HPA's target per replica: KEDA (an external
	// metric of type AverageValue) asks for ceil(metric / targetValue)
	// replicas. Default 1 for desired_replicas, which makes that the
	// rule's number; required for the predicted load, where it is the
	// load one replica sustains.
	MetaTargetValue = "targetValue"
	// MetaActivationValue: the trigger is active (KEDA scales up from
	// zero) while the metric is above it. Default 0.
	MetaActivationValue = "activationValue"
	// MetaAllowStale ("true"): serve a stale signal rather than fail.
	MetaAllowStale = "allowStale"
)

// query is what a trigger's metadata asks for.
type query struct {
	rule, target string
	metric       Metric
	targetValue  float64
	activation   float64
	allowStale   bool
}

func parseMetadata(md map[string]string) (query, error) {
	q := query{rule: strings.TrimSpace(md[MetaRule]), metric: DesiredReplicas}
	if q.rule == "" {
		return q, fmt.Errorf("scalerMetadata needs %q, the name of a scale rule", MetaRule)
	}
	t, err := ParseTarget(md[MetaTarget])
	if err != nil {
		return q, fmt.Errorf("scalerMetadata %q: %w", MetaTarget, err)
	}
	q.target = t
	if m := strings.TrimSpace(md[MetaMetric]); m != "" {
		q.metric = Metric(m)
		if !isKnown(q.metric) {
			return q, fmt.Errorf("scalerMetadata %q is %q; want one of %s", MetaMetric, m, metricNames())
		}
	}
	num := func(key string, def float64, required bool) (float64, error) {
		v := strings.TrimSpace(md[key])
		if v == "" {
			if required {
				return 0, fmt.Errorf("scalerMetadata needs %q with metric %s: the %s one replica sustains", key, q.metric, q.metric)
			}
			return def, nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("scalerMetadata %q is %q; want a number", key, v)
		}
		return f, nil
	}
	if q.targetValue, err = num(MetaTargetValue, 1, q.metric != DesiredReplicas); err != nil {
		return q, err
	}
	if q.targetValue <= 0 {
		return q, fmt.Errorf("scalerMetadata %q is %v; want a number above 0", MetaTargetValue, q.targetValue)
	}
	if q.activation, err = num(MetaActivationValue, 0, false); err != nil {
		return q, err
	}
	switch v := strings.TrimSpace(md[MetaAllowStale]); v {
	case "", "false":
	case "true":
		q.allowStale = true
	default:
		return q, fmt.Errorf("scalerMetadata %q is %q; want true or false", MetaAllowStale, v)
	}
	return q, nil
}

func isKnown(m Metric) bool {
	for _, k := range Metrics {
		if k == m {
			return true
		}
	}
	return false
}

// metricName is the name the scaler gives its metric; KEDA prefixes it
// with the trigger's index (s0-inferwatch-desired-replicas).
func (q query) metricName() string {
	return "inferwatch-" + strings.ReplaceAll(string(q.metric), "_", "-")
}

// RegisterScaler registers KEDA's external scaler service
// (externalscaler.ExternalScaler) on gs, answering from s.
func (s *Signals) RegisterScaler(gs grpc.ServiceRegistrar) {
	externalscaler.RegisterExternalScalerServer(gs, &scaler{s: s})
}

// NewGRPCServer returns a gRPC server with the external scaler registered
// and keepalive set so that a KEDA that vanished without closing its
// connection is found within a minute and its streams end. opts come after
// those and can override them.
func (s *Signals) NewGRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	base := []grpc.ServerOption{
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 20 * time.Second}),
		// KEDA's client sends no pings of its own; allow them anyway, as
		// other clients (grpcurl, tests) may.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
	gs := grpc.NewServer(append(base, opts...)...)
	s.RegisterScaler(gs)
	return gs
}

type scaler struct {
	externalscaler.UnimplementedExternalScalerServer
	s *Signals
}

// count records one call and passes its error through.
func (sc *scaler) count(method string, err error) error {
	sc.s.set.GetOrCreateCounter(metricname.Name("inferwatch_keda_requests_total", "api", "external",
		"method", method, "code", status.Code(err).String())).Inc()
	return err
}

// value returns the metric q asks for, or a gRPC status error.
func (sc *scaler) value(q query) (float64, error) {
	sig, stale, err := sc.s.get(q.rule, q.target)
	var unk *errUnknown
	switch {
	case errors.As(err, &unk):
		return 0, status.Error(codes.NotFound, err.Error())
	case err != nil:
		return 0, status.Error(codes.InvalidArgument, err.Error())
	case stale && !q.allowStale:
		sc.s.staleExternal.Inc()
		return 0, status.Errorf(codes.Unavailable, "the signal of rule %q target %s is stale: valid until %s; is the rule still evaluated? (scalerMetadata %s: \"true\" serves it)",
			q.rule, sig.Target, sig.ValidUntil.Format(time.RFC3339), MetaAllowStale)
	}
	v, err := q.metric.value(&sig)
	if err != nil {
		return 0, status.Error(codes.Unavailable, err.Error())
	}
	return v, nil
}

func (sc *scaler) active(ref *externalscaler.ScaledObjectRef) (bool, error) {
	q, err := parseMetadata(ref.GetScalerMetadata())
	if err != nil {
		return false, status.Error(codes.InvalidArgument, describe(ref)+err.Error())
	}
	v, err := sc.value(q)
	if err != nil {
		return false, err
	}
	return v > q.activation, nil
}

// IsActive reports whether the metric is above the activation value.
func (sc *scaler) IsActive(_ context.Context, ref *externalscaler.ScaledObjectRef) (*externalscaler.IsActiveResponse, error) {
	a, err := sc.active(ref)
	if err != nil {
		return nil, sc.count("IsActive", err)
	}
	sc.count("IsActive", nil)
	return &externalscaler.IsActiveResponse{Result: a}, nil
}

// StreamIsActive sends the trigger's activity when the stream opens and
// each time it changes, until the client goes away or Close is called.
// While the signal is unknown or stale nothing is sent (IsActive says
// why). It runs in the stream's own goroutine, woken by Send; Send never
// waits for it.
func (sc *scaler) StreamIsActive(ref *externalscaler.ScaledObjectRef, stream grpc.ServerStreamingServer[externalscaler.IsActiveResponse]) error {
	const method = "StreamIsActive"
	if _, err := parseMetadata(ref.GetScalerMetadata()); err != nil {
		return sc.count(method, status.Error(codes.InvalidArgument, describe(ref)+err.Error()))
	}
	select {
	case sc.s.streams <- struct{}{}:
	default:
		sc.s.streamsRefused.Inc()
		return sc.count(method, status.Errorf(codes.ResourceExhausted, "%d streams are open, the most this scaler serves; raise its stream cap", cap(sc.s.streams)))
	}
	defer func() { <-sc.s.streams }()
	ctx := stream.Context()
	tick := time.NewTicker(sc.s.o.StreamCheck)
	defer tick.Stop()
	sent, last := false, false
	for {
		changed := sc.s.changes() // before reading, so no change is missed
		if a, err := sc.active(ref); err == nil && (!sent || a != last) {
			if err := stream.Send(&externalscaler.IsActiveResponse{Result: a}); err != nil {
				return sc.count(method, status.FromContextError(err).Err())
			}
			sent, last = true, a
		}
		select {
		case <-ctx.Done():
			return sc.count(method, nil)
		case <-sc.s.closed:
			return sc.count(method, status.Error(codes.Unavailable, "inferwatch is shutting down"))
		case <-changed:
		case <-tick.C:
		}
	}
}

// GetMetricSpec names the metric and its target value from the trigger's
// metadata alone: a ScaledObject can be created before its rule has
// published.
func (sc *scaler) GetMetricSpec(_ context.Context, ref *externalscaler.ScaledObjectRef) (*externalscaler.GetMetricSpecResponse, error) {
	q, err := parseMetadata(ref.GetScalerMetadata())
	if err != nil {
		return nil, sc.count("GetMetricSpec", status.Error(codes.InvalidArgument, describe(ref)+err.Error()))
	}
	sc.count("GetMetricSpec", nil)
	return &externalscaler.GetMetricSpecResponse{MetricSpecs: []*externalscaler.MetricSpec{{
		MetricName: q.metricName(), TargetSize: int64(math.Ceil(q.targetValue)), TargetSizeFloat: q.targetValue,
	}}}, nil
}

// GetMetrics returns the metric of the trigger's target.
func (sc *scaler) GetMetrics(_ context.Context, req *externalscaler.GetMetricsRequest) (*externalscaler.GetMetricsResponse, error) {
	ref := req.GetScaledObjectRef()
	q, err := parseMetadata(ref.GetScalerMetadata())
	if err != nil {
		return nil, sc.count("GetMetrics", status.Error(codes.InvalidArgument, describe(ref)+err.Error()))
	}
	v, err := sc.value(q)
	if err != nil {
		return nil, sc.count("GetMetrics", err)
	}
	name := req.GetMetricName()
	if name == "" {
		name = q.metricName()
	}
	sc.count("GetMetrics", nil)
	return &externalscaler.GetMetricsResponse{MetricValues: []*externalscaler.MetricValue{{
		MetricName: name, MetricValue: int64(math.Round(v)), MetricValueFloat: v,
	}}}, nil
}

// StreamMetricSpec is not served: the metric spec comes from the trigger's
// metadata and never changes while the ScaledObject does not, so there is
// nothing to push. KEDA takes Unimplemented as "use GetMetricSpec".
func (sc *scaler) StreamMetricSpec(*externalscaler.ScaledObjectRef, grpc.ServerStreamingServer[externalscaler.GetMetricSpecResponse]) error {
	return sc.count("StreamMetricSpec", status.Error(codes.Unimplemented,
		"inferwatch's metric spec comes from the trigger's metadata and does not change; use GetMetricSpec"))
}

// describe names the ScaledObject in error messages.
func describe(ref *externalscaler.ScaledObjectRef) string {
	if ref.GetName() == "" {
		return ""
	}
	return fmt.Sprintf("ScaledObject %s/%s: ", ref.GetNamespace(), ref.GetName())
}

// ServeGRPC serves the external scaler (NewGRPCServer) on ln until the
// returned function is called, which ends the streams (Close), so that
// the server stops without waiting for KEDA, and stops it within 5
// seconds.
func (s *Signals) ServeGRPC(ln net.Listener) (stop func()) {
	gs := s.NewGRPCServer()
	go func() {
		if err := gs.Serve(ln); err != nil {
			s.log.Error("KEDA external scaler listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.log.Info("serving the KEDA external scaler (gRPC externalscaler.ExternalScaler)", "addr", ln.Addr().String())
	return func() {
		s.Close()
		done := make(chan struct{})
		go func() { gs.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			gs.Stop()
		}
	}
}
