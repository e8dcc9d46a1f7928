package analysis_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/analysis"
)

// A replica holds L = 32 requests in flight while its P99 latency is
// W = 2 s: λ = 32/2 = 16 req/s, ×0.85 = 13.6 req/s planned per replica.
// Four replicas give 54.4 req/s; 60 req/s of demand needs ⌈60/13.6⌉ =
// ⌈4.41⌉ = 5 replicas and would run them at 60/54.4 = 110 %.
func ExampleSLOCapacity() {
	c, err := analysis.SLOCapacity(analysis.CapacityInput{
		Concurrency: 32,
		Latency:     2,
		Replicas:    4,
		Demand:      60,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("per replica %.1f req/s, total %.1f req/s, needed %d, utilization %.4f\n",
		c.PerReplica, c.Total, c.Needed, c.Utilization)
	// Output:
	// per replica 13.6 req/s, total 54.4 req/s, needed 5, utilization 1.1029
}

func TestSLOCapacity(t *testing.T) {
	c, err := analysis.SLOCapacity(analysis.CapacityInput{Concurrency: 10, Latency: 0.5, Safety: 1})
	if err != nil || c.PerReplica != 20 || c.Total != 20 || c.Needed != 0 || c.Utilization != 0 {
		t.Errorf("L=10 W=0.5 s safety 1: %+v, %v; want 20 req/s on one replica", c, err)
	}
	// Demand exactly at capacity needs no extra replica.
	c, err = analysis.SLOCapacity(analysis.CapacityInput{Concurrency: 8, Latency: 4, Safety: 0.5, Demand: 3})
	if err != nil || c.PerReplica != 1 || c.Needed != 3 {
		t.Errorf("8/4·0.5 = 1 req/s, demand 3: %+v, %v; want 3 replicas", c, err)
	}
	f := func(name string, in analysis.CapacityInput, want string) {
		t.Helper()
		if _, err := analysis.SLOCapacity(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, want)
		}
	}
	f("no concurrency", analysis.CapacityInput{Latency: 1}, "concurrency L")
	f("NaN latency", analysis.CapacityInput{Concurrency: 1, Latency: math.NaN()}, "latency W")
	f("infinite latency", analysis.CapacityInput{Concurrency: 1, Latency: math.Inf(1)}, "latency W")
	f("safety", analysis.CapacityInput{Concurrency: 1, Latency: 1, Safety: 1.5}, "safety")
	f("replicas", analysis.CapacityInput{Concurrency: 1, Latency: 1, Replicas: -2}, "replicas")
	f("demand", analysis.CapacityInput{Concurrency: 1, Latency: 1, Demand: -1}, "demand")
}
