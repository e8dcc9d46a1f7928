package keda

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/inferwatch/inferwatch/alerting"
	pb "github.com/inferwatch/inferwatch/alerting/keda/externalscaler"
)

// serveGRPC serves s's external scaler on a listener on 127.0.0.1 and
// returns a client connected to it over TCP, as KEDA connects.
func serveGRPC(t *testing.T, s *Signals) (pb.ExternalScalerClient, *grpc.ClientConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := s.NewGRPCServer()
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	return dial(t, ln.Addr().String())
}

func dial(t *testing.T, addr string) (pb.ExternalScalerClient, *grpc.ClientConn) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewExternalScalerClient(conn), conn
}

func ref(md map[string]string) *pb.ScaledObjectRef {
	return &pb.ScaledObjectRef{Name: "qwen", Namespace: "serving", ScalerMetadata: md}
}

// wantCode fails unless err is a status with code c and a message holding
// each of msgs.
func wantCode(t *testing.T, err error, c codes.Code, msgs ...string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != c {
		t.Fatalf("got %v, want code %v", err, c)
	}
	for _, m := range msgs {
		if !strings.Contains(st.Message(), m) {
			t.Fatalf("message %q lacks %q", st.Message(), m)
		}
	}
}

func TestGetMetricSpec(t *testing.T) {
	s, _ := newSignals(t, Options{})
	client, _ := serveGRPC(t, s)
	ctx := context.Background()
	f := func(md map[string]string, name string, target float64) {
		t.Helper()
		resp, err := client.GetMetricSpec(ctx, ref(md))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.MetricSpecs) != 1 {
			t.Fatalf("%d specs", len(resp.MetricSpecs))
		}
		ms := resp.MetricSpecs[0]
		if ms.MetricName != name || ms.TargetSizeFloat != target {
			t.Fatalf("spec %v, want %s with target %v", ms, name, target)
		}
	}
	// Before any signal: the spec comes from the metadata alone.
	f(map[string]string{"rule": "r", "scalerAddress": "inferwatch:9465"}, "inferwatch-desired-replicas", 1)
	f(map[string]string{"rule": "r", "metric": "predicted_upper", "targetValue": "6.5"}, "inferwatch-predicted-upper", 6.5)
	bad := func(md map[string]string, msg string) {
		t.Helper()
		_, err := client.GetMetricSpec(ctx, ref(md))
		wantCode(t, err, codes.InvalidArgument, "ScaledObject serving/qwen: ", msg)
	}
	bad(map[string]string{}, `needs "rule"`)
	bad(map[string]string{"rule": "r", "metric": "load"}, `"metric" is "load"; want one of desired_replicas, predicted_load, predicted_upper`)
	bad(map[string]string{"rule": "r", "metric": "predicted_load"}, `needs "targetValue" with metric predicted_load`)
	bad(map[string]string{"rule": "r", "targetValue": "0"}, "above 0")
	bad(map[string]string{"rule": "r", "targetValue": "many"}, "want a number")
	bad(map[string]string{"rule": "r", "allowStale": "yes"}, "true or false")
	bad(map[string]string{"rule": "r", "target": "model"}, "name=value pairs")
}

func TestGetMetricsAndIsActive(t *testing.T) {
	s, c := newSignals(t, Options{})
	client, _ := serveGRPC(t, s)
	ctx := context.Background()
	m := map[string]string{"model": "qwen"}
	zero := signal("r", map[string]string{"model": "idle"}, t0, 0)
	s.Send(ctx, alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0, 3), zero}})
	metric := func(md map[string]string) float64 {
		t.Helper()
		resp, err := client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(md), MetricName: "inferwatch-x"})
		if err != nil {
			t.Fatal(err)
		}
		mv := resp.MetricValues[0]
		if mv.MetricName != "inferwatch-x" {
			t.Fatalf("metric name %q, want the one asked for", mv.MetricName)
		}
		return mv.MetricValueFloat
	}
	if v := metric(map[string]string{"rule": "r", "target": "model=qwen"}); v != 3 {
		t.Fatalf("desired replicas %v, want 3", v)
	}
	if v := metric(map[string]string{"rule": "r", "target": `{model="qwen"}`, "metric": "predicted_load", "targetValue": "7"}); v != 19.5 {
		t.Fatalf("predicted load %v, want 19.5", v)
	}
	if v := metric(map[string]string{"rule": "r", "target": "model=qwen", "metric": "predicted_upper", "targetValue": "7"}); v != 21 {
		t.Fatalf("predicted upper %v, want 21", v)
	}
	active := func(md map[string]string) bool {
		t.Helper()
		resp, err := client.IsActive(ctx, ref(md))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Result
	}
	if !active(map[string]string{"rule": "r", "target": "model=qwen"}) || active(map[string]string{"rule": "r", "target": "model=idle"}) {
		t.Fatal("active while desired > 0, inactive at 0")
	}
	if active(map[string]string{"rule": "r", "target": "model=qwen", "activationValue": "3"}) {
		t.Fatal("active at the activation value")
	}
	_, err := client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(map[string]string{"rule": "r", "target": "model=nope"})})
	wantCode(t, err, codes.NotFound, `rule "r" has no target {model="nope"}; known targets: {model="idle"}, {model="qwen"}`)
	_, err = client.IsActive(ctx, ref(map[string]string{"rule": "nope"}))
	wantCode(t, err, codes.NotFound, `known rules: "r"`)
	_, err = client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(map[string]string{"rule": "r"})})
	wantCode(t, err, codes.InvalidArgument, "has 2 targets")

	c.Set(t0.Add(10*time.Minute + time.Second))
	_, err = client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(map[string]string{"rule": "r", "target": "model=qwen"})})
	wantCode(t, err, codes.Unavailable, "is stale", "allowStale")
	_, err = client.IsActive(ctx, ref(map[string]string{"rule": "r", "target": "model=qwen"}))
	wantCode(t, err, codes.Unavailable, "is stale")
	if v := metric(map[string]string{"rule": "r", "target": "model=qwen", "allowStale": "true"}); v != 3 {
		t.Fatalf("stale, allowed: %v", v)
	}
	sms, err := client.StreamMetricSpec(ctx, ref(nil))
	if err == nil {
		_, err = sms.Recv()
	}
	wantCode(t, err, codes.Unimplemented, "GetMetricSpec")
}

func TestStreamIsActive(t *testing.T) {
	s, _ := newSignals(t, Options{})
	client, _ := serveGRPC(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := map[string]string{"model": "qwen"}
	md := map[string]string{"rule": "r", "target": "model=qwen"}
	stream, err := client.StreamIsActive(ctx, ref(md))
	if err != nil {
		t.Fatal(err)
	}
	recv := func(want bool) {
		t.Helper()
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Result != want {
			t.Fatalf("stream sent %v, want %v", resp.Result, want)
		}
	}
	// Nothing is sent while the target is unknown; its first signal is.
	s.Send(ctx, alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0, 0)}})
	recv(false)
	// A change of replicas that keeps it inactive, or active, sends
	// nothing: the next message is the next change of activity.
	s.Send(ctx, alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0.Add(time.Minute), 0)}})
	s.Send(ctx, alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0.Add(2*time.Minute), 2)}})
	recv(true)
	s.Send(ctx, alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0.Add(3*time.Minute), 5)}})
	s.Send(ctx, alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0.Add(4*time.Minute), 0)}})
	recv(false)
	// Close ends the stream.
	s.Close()
	_, err = stream.Recv()
	wantCode(t, err, codes.Unavailable, "shutting down")
	waitStreams(t, s, 0)
}

// waitStreams waits until s has n open streams: the server notices a
// client that went away asynchronously.
func waitStreams(t *testing.T, s *Signals, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(s.streams) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want %d", len(s.streams), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStreamsBoundedAndCleanedUp(t *testing.T) {
	s, _ := newSignals(t, Options{MaxStreams: 2})
	client, conn := serveGRPC(t, s)
	m := map[string]string{"model": "qwen"}
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0, 1)}})
	md := map[string]string{"rule": "r", "target": "model=qwen"}
	open := func(c pb.ExternalScalerClient, ctx context.Context) pb.ExternalScaler_StreamIsActiveClient {
		t.Helper()
		st, err := c.StreamIsActive(ctx, ref(md))
		if err != nil {
			t.Fatal(err)
		}
		if r, err := st.Recv(); err != nil || !r.Result {
			t.Fatalf("first message %v, %v", r, err)
		}
		return st
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	open(client, ctx1)
	// The second client goes away by closing its connection.
	client2, conn2 := dial(t, conn.Target())
	open(client2, context.Background())
	waitStreams(t, s, 2)
	st, err := client.StreamIsActive(context.Background(), ref(md))
	if err == nil {
		_, err = st.Recv()
	}
	wantCode(t, err, codes.ResourceExhausted, "2 streams are open")

	cancel1()
	conn2.Close()
	waitStreams(t, s, 0)
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	open(client, ctx3)
	waitStreams(t, s, 1)
}

func TestSendDoesNotWaitForStreams(t *testing.T) {
	s, _ := newSignals(t, Options{})
	client, _ := serveGRPC(t, s)
	m := map[string]string{"model": "qwen"}
	md := map[string]string{"rule": "r", "target": "model=qwen"}
	s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0, 1)}})
	// Streams whose client never reads: their messages pile up in gRPC's
	// flow-control window and then block the streams' own goroutines.
	for range 4 {
		if _, err := client.StreamIsActive(context.Background(), ref(md)); err != nil {
			t.Fatal(err)
		}
	}
	waitStreams(t, s, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20000 {
			s.Send(context.Background(), alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0.Add(time.Duration(i)*time.Second), i%2)}})
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("Send blocked behind streams whose clients do not read")
	}
}

// TestServeGRPC serves the scaler on a listener until stop, which ends
// an open stream instead of waiting for it.
func TestServeGRPC(t *testing.T) {
	s, _ := newSignals(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := s.ServeGRPC(ln)
	client, _ := dial(t, ln.Addr().String())
	ctx := context.Background()
	m := map[string]string{"model": "qwen"}
	s.Send(ctx, alerting.Batch{Scales: []alerting.ScaleData{signal("r", m, t0, 2)}})
	md := map[string]string{"rule": "r", "target": "model=qwen"}
	if resp, err := client.IsActive(ctx, ref(md)); err != nil || !resp.Result {
		t.Fatalf("IsActive: %v, %v; want active", resp, err)
	}
	stream, err := client.StreamIsActive(ctx, ref(md))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := stream.Recv(); err != nil || !resp.Result {
		t.Fatalf("the stream's first message: %v, %v; want active", resp, err)
	}
	stop()
	if _, err := stream.Recv(); err == nil {
		t.Fatal("the stream is open after stop")
	}
	if _, err := client.IsActive(ctx, ref(md)); err == nil {
		t.Fatal("IsActive answered after stop")
	}
}
