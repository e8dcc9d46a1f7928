package analysis

import (
	"fmt"
	"math"
)

// DefaultCapacitySafety is the share of the Little's-law capacity that is
// planned on: 15 % stays free for bursts and for the error of the inputs.
const DefaultCapacitySafety = 0.85

// CapacityInput is what SLOCapacity needs. Units: requests, seconds and
// requests per second.
type CapacityInput struct {
	// Concurrency is L, the mean number of requests in flight on one
	// replica at the load of interest (for vLLM, the mean of
	// vllm:num_requests_running), in requests.
	Concurrency float64
	// Latency is W, the latency at the SLO quantile (e.g. the P99 of
	// end-to-end request latency) measured at that load, in seconds.
	// Using the tail instead of the mean makes λ = L/W a conservative
	// capacity: the rate at which the tail still meets the SLO.
	Latency float64
	// Replicas is how many replicas serve the load (default 1).
	Replicas int
	// Demand is the offered load in requests per second; 0 when unknown.
	Demand float64
	// Safety is the share of L/W planned on, in (0, 1] (default 0.85).
	Safety float64
}

// Capacity is the SLO-bound throughput of a deployment.
type Capacity struct {
	// PerReplica is λ = L / W × Safety, in requests per second.
	PerReplica float64
	// Total is PerReplica × Replicas, in requests per second.
	Total float64
	// Needed is the number of replicas Demand requires, ⌈Demand /
	// PerReplica⌉ (0 when Demand is 0), and Utilization is Demand / Total.
	Needed      int
	Utilization float64
}

// SLOCapacity applies Little's law, L = λ·W, to the load at which a replica
// still meets its latency SLO: λ = L/W is the arrival rate it sustains, and
// Safety keeps a margin. Errors name the input that is out of range.
func SLOCapacity(in CapacityInput) (Capacity, error) {
	if in.Replicas == 0 {
		in.Replicas = 1
	}
	if in.Safety == 0 {
		in.Safety = DefaultCapacitySafety
	}
	switch {
	case !(in.Concurrency > 0) || math.IsInf(in.Concurrency, 0):
		return Capacity{}, fmt.Errorf("slo capacity: concurrency L must be a finite number of requests > 0, got %v", in.Concurrency)
	case !(in.Latency > 0) || math.IsInf(in.Latency, 0):
		return Capacity{}, fmt.Errorf("slo capacity: latency W must be a finite number of seconds > 0, got %v", in.Latency)
	case in.Replicas < 0:
		return Capacity{}, fmt.Errorf("slo capacity: replicas must be ≥ 1, got %d", in.Replicas)
	case !(in.Safety > 0 && in.Safety <= 1):
		return Capacity{}, fmt.Errorf("slo capacity: safety must be in (0, 1], got %v", in.Safety)
	case !(in.Demand >= 0) || math.IsInf(in.Demand, 0):
		return Capacity{}, fmt.Errorf("slo capacity: demand must be a finite rate ≥ 0 req/s, got %v", in.Demand)
	}
	c := Capacity{PerReplica: in.Concurrency / in.Latency * in.Safety}
	c.Total = c.PerReplica * float64(in.Replicas)
	c.Utilization = in.Demand / c.Total
	if in.Demand > 0 {
		c.Needed = int(math.Ceil(in.Demand / c.PerReplica))
	}
	return c, nil
}
