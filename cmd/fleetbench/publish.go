package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
)

// publishResult is the publishing measurement: rounds of Findings
// findings, each round's wall time until every one was acknowledged.
type publishResult struct {
	Findings int       `json:"findings_per_round"`
	Batch    int       `json:"batch"`
	Walls    []float64 `json:"wall_seconds"`
}

func (p *publishResult) rate() stat {
	xs := make([]float64, len(p.Walls))
	for i, w := range p.Walls {
		xs[i] = float64(p.Findings) / w
	}
	return statOf(xs)
}

// publishBatch is how many findings one Send carries, as one evaluation
// cycle hands its findings over.
const publishBatch = 1000

// measurePublish publishes n findings per round through an
// alerting.Publisher to natsjs and an embedded NATS server with
// JetStream's file storage in a temporary directory, and times each round
// until all are acknowledged.
func measurePublish(ctx context.Context, n, rounds int, log *logger) (*publishResult, error) {
	dir, err := os.MkdirTemp("", "fleetbench-nats-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: dir})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	set := metrics.NewSet()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	js, err := natsjs.Connect(cctx, natsjs.Options{URL: srv.ClientURL(), Metrics: set})
	cancel()
	if err != nil {
		return nil, err
	}
	defer js.Close()
	pub, err := alerting.NewPublisher(alerting.PublisherOptions{Output: js, Metrics: set})
	if err != nil {
		return nil, err
	}
	res := &publishResult{Findings: n, Batch: publishBatch}
	t0 := time.Now().Truncate(time.Minute)
	for round := 0; round < rounds; round++ {
		// Every finding of every round is new: an id of its own.
		fs := make([]alerting.Finding, 0, n)
		for i := range n {
			end := t0.Add(time.Duration(round*n+i) * time.Second)
			fs = append(fs, finding(i, end))
		}
		began := time.Now()
		for i := 0; i < n; i += publishBatch {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			err := pub.Send(rctx, alerting.Batch{Group: groupName, At: t0, Findings: fs[i:min(i+publishBatch, n)]})
			cancel()
			if err != nil {
				return res, err
			}
		}
		wall := time.Since(began)
		if p := pub.Pending(); p != 0 {
			return res, fmt.Errorf("%d findings still pending after the round", p)
		}
		res.Walls = append(res.Walls, wall.Seconds())
		log.info("published", "findings", n, "took", wall.Round(time.Millisecond), "per_second", int(float64(n)/wall.Seconds()))
	}
	return res, nil
}

func finding(i int, end time.Time) alerting.Finding {
	pod := "c" + strconv.Itoa(i/57) + "-vllm-" + strconv.Itoa(i%57)
	return alerting.Finding{
		Kind: "anomaly", Group: groupName, Rule: "auto", Detector: "auto",
		Labels:      map[string]string{"__name__": "vllm:num_requests_waiting", "model": "qwen2.5-32b-instruct", "pod": pod, "namespace": "inference"},
		Series:      `vllm:num_requests_waiting{model="qwen2.5-32b-instruct",namespace="inference",pod="` + pod + `"}`,
		WindowStart: end.Add(-90 * time.Second), WindowEnd: end, Value: 40, ValueTime: end.Add(-30 * time.Second),
		Expected: 4, Lower: 1, Upper: 7, Score: 6.5, Severity: "warning",
	}
}
