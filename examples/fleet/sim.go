package fleet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/inferwatch/inferwatch/ingest"
)

// modelSpec describes a served model and the pods serving it.
type modelSpec struct {
	name, podPrefix string
	pods            int
	quiet           bool
	peak            float64 // requests/s per pod near the daily peak
	prompt, output  float64 // mean tokens per request
	prefill         float64 // s: time to first token on an idle pod
	tpot            float64 // s: time per output token on an idle pod
	capacity        float64 // requests/s a pod sustains at saturation
	maxSeqs         float64 // vLLM max_num_seqs
	kvTokens        float64 // KV-cache capacity in tokens
	gpu             string  // DCGM modelName
	fbUsed          float64 // MiB of GPU memory the engine holds
}

// models is the fleet, one GPU per pod. The last model is the quiet one: no
// incident touches it.
var models = []modelSpec{
	{name: "llama-3.1-70b-instruct", podPrefix: "vllm-llama-70b", pods: 3, peak: 6,
		prompt: 1100, output: 260, prefill: 0.16, tpot: 0.032, capacity: 13, maxSeqs: 256, kvTokens: 160000,
		gpu: "NVIDIA H100 80GB HBM3", fbUsed: 75210},
	{name: "qwen2.5-32b-instruct", podPrefix: "vllm-qwen-32b", pods: 2, peak: 4,
		prompt: 900, output: 220, prefill: 0.09, tpot: 0.021, capacity: 9.5, maxSeqs: 256, kvTokens: 240000,
		gpu: "NVIDIA H100 80GB HBM3", fbUsed: 74630},
	{name: "mistral-7b-instruct", podPrefix: "vllm-mistral-7b", pods: 2, quiet: true, peak: 2,
		prompt: 600, output: 180, prefill: 0.035, tpot: 0.0085, capacity: 5, maxSeqs: 256, kvTokens: 190000,
		gpu: "NVIDIA L40S", fbUsed: 41850},
}

// podSpec is one pod of the fleet.
type podSpec struct {
	model int    // index in models
	index int    // pod number within the model
	node  int    // index in the fleet, also the GPU node number
	pod   string // pod name
}

// Histogram bucket bounds of vLLM (v1 engine) for the two latency histograms.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	e2eBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60,
		120, 240, 480, 960, 1920, 7680}
)

// Model constants shared by every pod.
const (
	queueing     = 0.5  // TTFT = prefill·(1 + queueing·ρ/(1-ρ)): prefill waits behind running batches
	maxRho       = 0.95 // utilisation beyond which waiting requests queue instead
	abandonAfter = 30.0 // s: clients give up after this long in the queue
	ttftCV       = 1.0  // coefficient of variation of one request's TTFT
	e2eCV        = 0.8  // of one request's end-to-end latency (output lengths vary)
	ttftShape    = 0.55 // log-σ of the TTFT distribution behind the histogram
	e2eShape     = 0.45 // log-σ of the end-to-end latency distribution
	jitterShape  = 0.45 // log-σ of the per-step latency factor under GPU saturation
)

// wave is one sinusoid of a smooth noise process.
type wave struct{ amp, omega, phase float64 }

// waves draws n sinusoids with periods in [minP, maxP] (ms) and amplitudes
// in [minA, maxA].
func waves(rng *rand.Rand, n int, minP, maxP, minA, maxA float64) []wave {
	ws := make([]wave, n)
	for i := range ws {
		p := minP + (maxP-minP)*rng.Float64()
		ws[i] = wave{amp: minA + (maxA-minA)*rng.Float64(), omega: 2 * math.Pi / p, phase: 2 * math.Pi * rng.Float64()}
	}
	return ws
}

func sumWaves(ws []wave, t int64) float64 {
	var v float64
	for _, w := range ws {
		v += w.amp * math.Sin(w.omega*float64(t)+w.phase)
	}
	return v
}

// uniform returns a value uniform in [-1, 1): light-tailed noise with
// standard deviation 1/√3.
func uniform(rng *rand.Rand) float64 { return 2*rng.Float64() - 1 }

// count draws a request count with mean m and Poisson-like spread √m,
// bounded (uniform) so that it never strays more than √(3m) from m.
func count(rng *rand.Rand, m float64) float64 {
	if m <= 0 {
		rng.Float64()
		return 0
	}
	return math.Max(0, math.Round(m+math.Sqrt(3*m)*uniform(rng)))
}

// normCDF is the standard normal distribution function.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// leString formats a bucket bound as vLLM's Python client does: 1 → "1.0".
func leString(b float64) string {
	s := strconv.FormatFloat(b, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// histogram accumulates a Prometheus histogram from per-step observations
// summarised as a count, a mean and a lognormal shape.
type histogram struct {
	bounds  []float64
	logB    []float64
	buckets [][]float64 // per bound, cumulative count at each sample
	inf     []float64
	sum     []float64
	cum     []float64 // running cumulative bucket counts
	n, s    float64   // running count and sum
	cv      float64   // coefficient of variation of one observation
	last    float64   // last reported sum
}

func newHistogram(bounds []float64, cv float64, samples int) *histogram {
	h := &histogram{bounds: bounds, cv: cv, logB: make([]float64, len(bounds)), cum: make([]float64, len(bounds)),
		buckets: make([][]float64, len(bounds)), inf: make([]float64, samples), sum: make([]float64, samples)}
	for i, b := range bounds {
		h.logB[i] = math.Log(b)
		h.buckets[i] = make([]float64, samples)
	}
	return h
}

// observe adds n observations of mean m drawn from a lognormal of log-σ
// shape, and records the counters at sample i. u in [-1, 1] (variance 1/2)
// is the sampling noise of the sum.
//
// The noise sits on the level of the _sum counter, not on its increments:
// which requests have landed by the time of the scrape. An increase over any
// window then carries the difference of two bounded draws, with the spread
// cv/√N of the mean of the window's N requests — light-tailed, as the mean
// over hundreds of requests naturally is.
func (h *histogram) observe(i int, n, m, shape, u float64) {
	if n > 0 {
		mu := math.Log(m) - shape*shape/2
		for k, lb := range h.logB {
			h.cum[k] += math.Round(n * normCDF((lb-mu)/shape))
		}
		h.n += n
		h.s += n * m
	}
	for k := range h.cum {
		h.buckets[k][i] = h.cum[k]
	}
	h.inf[i] = h.n
	// Level noise of spread cv·m·√(2n), so that the mean over four steps
	// has spread about cv/√(4n). The noise is a sine of a uniform phase
	// (arcsine-distributed, amplitude √2 spreads): the lightest of tails.
	level := h.s + 2*h.cv*m*math.Sqrt(math.Max(n, 1))*u
	h.last = math.Max(h.last, math.Round(level*1e3)/1e3)
	h.sum[i] = h.last
}

// series returns the histogram's series: buckets in ascending le, +Inf,
// _sum and _count.
func (h *histogram) series(name string, base ingest.Labels, ts []int64) []ingest.Series {
	var out []ingest.Series
	for k, b := range h.bounds {
		out = append(out, ingest.Series{Labels: withLabels(base, "__name__", name+"_bucket", "le", leString(b)), Timestamps: ts, Values: h.buckets[k]})
	}
	out = append(out,
		ingest.Series{Labels: withLabels(base, "__name__", name+"_bucket", "le", "+Inf"), Timestamps: ts, Values: h.inf},
		ingest.Series{Labels: withLabels(base, "__name__", name+"_sum"), Timestamps: ts, Values: h.sum},
		ingest.Series{Labels: withLabels(base, "__name__", name+"_count"), Timestamps: ts, Values: h.inf})
	return out
}

// withLabels returns a sorted copy of base with the name/value pairs added.
func withLabels(base ingest.Labels, kv ...string) ingest.Labels {
	ls := make(ingest.Labels, len(base), len(base)+len(kv)/2)
	copy(ls, base)
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, ingest.Label{Name: kv[i], Value: kv[i+1]})
	}
	ls.Sort()
	return ls
}

// podEffects is what the incidents on one pod do at one instant.
type podEffects struct {
	latency float64 // factor on TTFT and end-to-end latency (latency spike)
	decay   float64 // fraction of decode speed lost (throughput decay)
	jitter  bool    // GPU saturation with jittery latency
	traffic float64 // factor on arrivals (traffic surge)
}

// effects returns the incidents' effects at unix millisecond t on a pod
// affected by the incidents idx. A step's increments belong to (t-step, t],
// so an incident acts on the samples with Start < t ≤ End.
func (f *Fleet) effects(idx []int, t int64) podEffects {
	e := podEffects{latency: 1, traffic: 1}
	for _, i := range idx {
		inc := f.Incidents[i]
		s, end := inc.Start.UnixMilli(), inc.End.UnixMilli()
		in := t > s && t <= end
		switch inc.Kind {
		case LatencySpike:
			if in {
				e.latency *= f.factors[i]
			}
		case ThroughputDecay:
			if t > s {
				e.decay = f.factors[i] * smoothstep(float64(t-s)/float64(end-s))
			}
		case GPUSaturationJitter:
			e.jitter = e.jitter || in
		case TrafficSurge:
			if in {
				// Three-minute smooth ramps at both ends, inside the window.
				const r = 3 * 60e3
				up := smoothstep(float64(t-s) / r)
				down := smoothstep(float64(end-t) / r)
				e.traffic *= 1 + (f.factors[i]-1)*up*down
			}
		}
	}
	return e
}

// podSeries simulates pod pi over the whole span and returns its series.
func (f *Fleet) podSeries(pi int) []ingest.Series {
	p := f.pods[pi]
	m := models[p.model]
	n := len(f.times)
	dt := f.step.Seconds()

	// Independent streams: the model's traffic noise, the pod's smooth
	// noise, its per-step noise, and the incident jitter. Drawing a fixed
	// number of values per step keeps the noise the same with or without
	// incidents.
	modelRng := rand.New(rand.NewPCG(uint64(f.seed), uint64(100+p.model)))
	podRng := rand.New(rand.NewPCG(uint64(f.seed), uint64(1000+p.node)))
	stepRng := rand.New(rand.NewPCG(uint64(f.seed), uint64(2000+p.node)))
	jitRng := rand.New(rand.NewPCG(uint64(f.seed), uint64(3000+p.node)))

	const hour = 3.6e6
	modelTraffic := waves(modelRng, 3, 3*hour, 12*hour, 0.01, 0.025)
	podTraffic := waves(podRng, 3, 2*hour, 8*hour, 0.005, 0.015)
	ttftDrift := waves(podRng, 3, 3*hour, 8*hour, 0.005, 0.01)
	e2eDrift := waves(podRng, 3, 3*hour, 8*hour, 0.005, 0.01)
	fbDrift := waves(podRng, 2, 6*hour, 30*hour, 40, 160)
	fbBase := m.fbUsed + float64(podRng.IntN(400))

	var idx []int
	for i, inc := range f.Incidents {
		if inc.Covers(m.name, p.pod) {
			idx = append(idx, i)
		}
	}

	shape := newDayShape()
	meanRate := m.peak / 1.2
	tokensPerReq := m.prompt + m.output/2

	running := make([]float64, n)
	waiting := make([]float64, n)
	kv := make([]float64, n)
	genTok := make([]float64, n)
	promptTok := make([]float64, n)
	success := make([]float64, n)
	gpuUtil := make([]float64, n)
	fbUsed := make([]float64, n)
	ttft := newHistogram(ttftBuckets, ttftCV, n)
	e2e := newHistogram(e2eBuckets, e2eCV, n)

	var queue, gen, prompt, done float64
	for i, t := range f.times {
		eff := f.effects(idx, t)
		lambda := meanRate * shape.at(t) * weekFactor(t) *
			math.Exp(sumWaves(modelTraffic, t)+sumWaves(podTraffic, t)) * eff.traffic

		// A fluid queue in front of the engine: what the pod cannot serve
		// this step waits, and clients abandon after abandonAfter.
		capacity := m.capacity * (1 - 0.5*eff.decay)
		demand := lambda*dt + queue
		served := math.Min(demand, capacity*maxRho*dt)
		queue = math.Min(demand-served, capacity*abandonAfter)
		rate := served / dt
		rho := rate / capacity
		queueWait := queue / capacity

		// Per-step noise, always drawn in the same order.
		nReq := count(stepRng, served)
		uTTFT, uE2E := math.Sin(2*math.Pi*stepRng.Float64()), math.Sin(2*math.Pi*stepRng.Float64())
		uRun, uKV, uGPU, uFB := uniform(stepRng), uniform(stepRng), uniform(stepRng), uniform(stepRng)
		uGen, uPrompt, uPin := uniform(stepRng), uniform(stepRng), stepRng.Float64()
		jTTFT, jE2E := jitRng.NormFloat64(), jitRng.NormFloat64()

		// Mean latencies of the requests finishing in this step; their
		// sampling noise is added by the histograms.
		inEngineTTFT := m.prefill * (1 + queueing*rho/(1-rho)) * (1 + sumWaves(ttftDrift, t))
		tpot := m.tpot * (1 + 0.6*rho) / (1 - eff.decay)
		decode := m.output * tpot * (1 + sumWaves(e2eDrift, t))
		meanTTFT := (inEngineTTFT + queueWait) * eff.latency
		meanE2E := (inEngineTTFT + queueWait + decode) * eff.latency
		ttftS, e2eS := ttftShape, e2eShape
		if eff.jitter {
			meanTTFT *= 1.15 * math.Exp(jitterShape*jTTFT-jitterShape*jitterShape/2)
			meanE2E *= 1.1 * math.Exp(jitterShape*jE2E-jitterShape*jitterShape/2)
			ttftS, e2eS = 0.9, 0.7
		}
		ttft.observe(i, nReq, meanTTFT, ttftS, uTTFT)
		e2e.observe(i, nReq, meanE2E, e2eS, uE2E)

		// Little's law for the requests in the engine; what the KV cache or
		// max_num_seqs cannot hold waits.
		inEngine := rate * (inEngineTTFT + decode) * eff.latency
		inEngine = math.Max(0, inEngine+math.Sqrt(3*inEngine)*uRun)
		limit := math.Min(m.maxSeqs, math.Floor(0.98*m.kvTokens/tokensPerReq))
		run := math.Min(math.Round(inEngine), limit)
		running[i] = run
		waiting[i] = math.Round(queue + math.Max(0, inEngine-limit) + rate*(inEngineTTFT-m.prefill)*0.3)
		kv[i] = math.Round(math.Min(1, math.Max(0, run*tokensPerReq/m.kvTokens*(1+0.02*uKV)))*1e4) / 1e4

		done += nReq
		gen += math.Round(nReq * m.output * (1 + 0.04*uGen))
		prompt += math.Round(nReq * m.prompt * (1 + 0.04*uPrompt))
		success[i], genTok[i], promptTok[i] = done, gen, prompt

		util := 100*(1-math.Exp(-2.6*math.Min(1, rho/(1-0.5*eff.decay)))) + 3*uGPU
		if eff.jitter {
			util = 97 + 3*uPin
		}
		gpuUtil[i] = math.Round(math.Min(100, math.Max(0, util)))
		fbUsed[i] = math.Round(fbBase + sumWaves(fbDrift, t) + 8*uFB)
	}

	vllm := ingest.LabelsFromMap(map[string]string{
		"job": "vllm", "model": m.name, "pod": p.pod, "namespace": "inference",
		"instance": fmt.Sprintf("10.42.%d.%d:8000", p.node, 17+p.index),
	})
	dcgm := ingest.LabelsFromMap(map[string]string{
		"job": "dcgm", "model": m.name, "pod": p.pod, "namespace": "inference",
		"instance": fmt.Sprintf("10.0.1.%d:9400", 10+p.node), "gpu": "0",
		"Hostname": fmt.Sprintf("gpu-node-%02d", p.node), "modelName": m.gpu,
	})
	ts := f.times
	one := func(base ingest.Labels, name string, v []float64) ingest.Series {
		return ingest.Series{Labels: withLabels(base, "__name__", name), Timestamps: ts, Values: v}
	}
	out := []ingest.Series{
		one(vllm, "vllm:num_requests_running", running),
		one(vllm, "vllm:num_requests_waiting", waiting),
		one(vllm, "vllm:kv_cache_usage_perc", kv),
		one(vllm, "vllm:generation_tokens_total", genTok),
		one(vllm, "vllm:prompt_tokens_total", promptTok),
		one(vllm, "vllm:request_success_total", success),
	}
	out = append(out, ttft.series("vllm:time_to_first_token_seconds", vllm, ts)...)
	out = append(out, e2e.series("vllm:e2e_request_latency_seconds", vllm, ts)...)
	out = append(out,
		one(dcgm, "DCGM_FI_DEV_GPU_UTIL", gpuUtil),
		one(dcgm, "DCGM_FI_DEV_FB_USED", fbUsed))
	return out
}
