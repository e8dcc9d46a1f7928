package fleet_test

import (
	"fmt"
	"time"

	"github.com/inferwatch/inferwatch/examples/fleet"
)

func ExampleNew() {
	f, err := fleet.New(fleet.Options{Seed: 1, End: time.Date(2025, 6, 15, 21, 7, 30, 0, time.UTC)})
	if err != nil {
		panic(err)
	}
	for _, m := range f.Models {
		fmt.Println(m.Name, len(m.Pods), "pods, quiet:", m.Quiet)
	}
	for _, inc := range f.Incidents {
		pod := inc.Pod
		if pod == "" {
			pod = "(every pod)"
		}
		fmt.Println(inc.Start.Format("Mon 15:04"), inc.End.Sub(inc.Start), inc.Kind, inc.Model, pod)
	}
	// Output:
	// llama-3.1-70b-instruct 3 pods, quiet: false
	// qwen2.5-32b-instruct 2 pods, quiet: false
	// mistral-7b-instruct 2 pods, quiet: true
	// Tue 00:04 6h30m0s throughput_decay llama-3.1-70b-instruct (every pod)
	// Wed 12:26 31m0s traffic_surge qwen2.5-32b-instruct (every pod)
	// Thu 15:15 1h7m0s gpu_saturation_jitter llama-3.1-70b-instruct vllm-llama-70b-2
	// Fri 20:00 6m0s latency_spike llama-3.1-70b-instruct vllm-llama-70b-1
	// Sat 21:18 9m0s latency_spike qwen2.5-32b-instruct vllm-qwen-32b-0
}
