// Package fleet generates, deterministically from a seed, a week of the
// metrics an LLM-serving fleet exposes — vLLM's engine metrics and DCGM's GPU
// metrics for every pod of three models — with labelled incidents injected
// at known times. It feeds inferwatch's demo and its end-to-end tests: the
// incidents are the ground truth a detector should find, the rest of the
// week is the quiet it should leave alone.
//
// Traffic follows the daily shape of a production LLM service (see
// profile.go and NOTICE), a weekday/weekend factor and smooth noise; latency,
// running and waiting requests, KV-cache usage and GPU utilisation follow
// the load through a simple queueing model. Counters are cumulative and
// monotone, histograms are Prometheus histograms (cumulative _bucket series
// with le="+Inf", _sum and _count), exactly as a scrape would store them.
package fleet

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
)

// Incident kinds.
const (
	LatencySpike        = "latency_spike"
	ThroughputDecay     = "throughput_decay"
	GPUSaturationJitter = "gpu_saturation_jitter"
	TrafficSurge        = "traffic_surge"
)

// Options configure New. The zero value of every field but End means its
// default.
type Options struct {
	Seed     int64         // default 1
	End      time.Time     // time of the last sample (truncated to Step); required
	Duration time.Duration // span of the samples; default 7×24h, at least 6 days
	Step     time.Duration // sample interval; default 30s; 15s, 20s, 30s or 60s
}

// Incident is one injected anomaly: the ground truth for a detector.
type Incident struct {
	Kind        string    `json:"kind"`
	Model       string    `json:"model"`
	Pod         string    `json:"pod,omitempty"` // empty when every pod of the model is affected
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Metrics     []string  `json:"metrics"` // metric names the incident shows in
	Description string    `json:"description"`
}

// Covers reports whether the incident affects pod of model.
func (inc Incident) Covers(model, pod string) bool {
	return inc.Model == model && (inc.Pod == "" || inc.Pod == pod)
}

// Model is one served model and the pods serving it.
type Model struct {
	Name string
	Pods []string
	// Quiet is true for the model no incident touches.
	Quiet bool
}

// Fleet is a generated fleet: its models, its incidents, and the means to
// produce its series. Series are produced on demand, pod by pod, so a fleet
// holds little memory until they are asked for.
type Fleet struct {
	Models []Model
	// Incidents are in time order. The series are generated from them:
	// treat them as read-only.
	Incidents []Incident

	seed  int64
	times []int64 // unix milliseconds of every sample, shared by all series
	step  time.Duration
	pods  []podSpec
	// factors[i] is the strength of Incidents[i] (see placeIncidents).
	factors []float64
}

// Start returns the time of the first sample and End the time of the last.
func (f *Fleet) Start() time.Time { return time.UnixMilli(f.times[0]).UTC() }

// End returns the time of the last sample.
func (f *Fleet) End() time.Time { return time.UnixMilli(f.times[len(f.times)-1]).UTC() }

// Step returns the sample interval.
func (f *Fleet) Step() time.Duration { return f.step }

// minDuration is the shortest span the incidents fit in: a first day
// without incidents, then five incidents at least a day apart.
const minDuration = 6 * 24 * time.Hour

// New generates the fleet's layout and places its incidents. It returns an
// error when the options are out of range.
func New(o Options) (*Fleet, error) {
	o.Seed = cmp.Or(o.Seed, 1)
	o.Duration = cmp.Or(o.Duration, 7*24*time.Hour)
	o.Step = cmp.Or(o.Step, 30*time.Second)
	if o.End.IsZero() {
		return nil, fmt.Errorf("fleet: Options.End is required: it is the time of the last sample, e.g. time.Now()")
	}
	switch o.Step {
	case 15 * time.Second, 20 * time.Second, 30 * time.Second, time.Minute:
	default:
		return nil, fmt.Errorf("fleet: Options.Step %v is not supported: use 15s, 20s, 30s or 60s (a divisor of a minute, like a scrape interval)", o.Step)
	}
	if o.Duration < minDuration {
		return nil, fmt.Errorf("fleet: Options.Duration %v is too short: the incidents need at least %v (a quiet first day, then five incidents a day apart)", o.Duration, minDuration)
	}
	if o.Duration%o.Step != 0 {
		return nil, fmt.Errorf("fleet: Options.Duration %v is not a multiple of Options.Step %v", o.Duration, o.Step)
	}
	end := o.End.Truncate(o.Step)
	n := int(o.Duration / o.Step)
	f := &Fleet{seed: o.Seed, step: o.Step, times: make([]int64, n)}
	stepMs := o.Step.Milliseconds()
	last := end.UnixMilli()
	for i := range f.times {
		f.times[i] = last - int64(n-1-i)*stepMs
	}
	for mi, m := range models {
		fm := Model{Name: m.name, Quiet: m.quiet}
		for p := 0; p < m.pods; p++ {
			ps := podSpec{model: mi, index: p, pod: fmt.Sprintf("%s-%d", m.podPrefix, p)}
			ps.node = len(f.pods)
			fm.Pods = append(fm.Pods, ps.pod)
			f.pods = append(f.pods, ps)
		}
		f.Models = append(f.Models, fm)
	}
	incs, factors, err := placeIncidents(o.Seed, f.Models, time.UnixMilli(f.times[0]).UTC(), end.UTC())
	if err != nil {
		return nil, err
	}
	f.Incidents, f.factors = incs, factors
	return f, nil
}

// placeIncidents chooses, from the seed, what each incident hits, how long
// it lasts and when it starts: inside the last 6 days, never in the first
// day, ending at least an hour before the end, at least a day apart.
// It also returns each incident's strength: the latency factor of a spike,
// the decay fraction, the traffic factor of a surge.
func placeIncidents(seed int64, ms []Model, first, end time.Time) ([]Incident, []float64, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x1c1de475))
	var loud []int
	for i, m := range ms {
		if !m.Quiet {
			loud = append(loud, i)
		}
	}
	minutes := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Minute }
	pick := func(mi int) string { return ms[mi].Pods[rng.IntN(len(ms[mi].Pods))] }
	var incs []Incident
	var durs []time.Duration
	var factors []float64
	add := func(inc Incident, d time.Duration, factor float64) {
		incs = append(incs, inc)
		durs = append(durs, d)
		factors = append(factors, factor)
	}

	// Two latency spikes, on two different models.
	for _, mi := range loud[:2] {
		k := 8 + 7*rng.Float64()
		add(Incident{
			Kind: LatencySpike, Model: ms[mi].Name, Pod: pick(mi),
			Metrics: []string{"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds",
				"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"},
			Description: fmt.Sprintf("TTFT and end-to-end latency ×%.1f on one pod (a stalled engine); running requests pile up", k),
		}, minutes(5, 15), k)
	}
	{
		mi := loud[rng.IntN(len(loud))]
		d := 0.30 + 0.10*rng.Float64()
		add(Incident{
			Kind: ThroughputDecay, Model: ms[mi].Name,
			Metrics: []string{"vllm:generation_tokens_total", "vllm:num_requests_running", "vllm:e2e_request_latency_seconds",
				"vllm:time_to_first_token_seconds", "vllm:kv_cache_usage_perc"},
			Description: fmt.Sprintf("after a rollout, generation tokens/s per running request decays by %.0f%% over the window and stays down; latency and running requests rise", 100*d),
		}, minutes(330, 390), d)
	}
	{
		mi := loud[rng.IntN(len(loud))]
		add(Incident{
			Kind: GPUSaturationJitter, Model: ms[mi].Name, Pod: pick(mi),
			Metrics:     []string{"DCGM_FI_DEV_GPU_UTIL", "vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"},
			Description: "GPU utilisation pinned at 97-100% while latency turns jittery (large variance, mean slightly up)",
		}, minutes(50, 70), 0)
	}
	{
		mi := loud[rng.IntN(len(loud))]
		k := 2.5 + 0.5*rng.Float64()
		add(Incident{
			Kind: TrafficSurge, Model: ms[mi].Name,
			Metrics: []string{"vllm:request_success_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
				"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
				"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds", "DCGM_FI_DEV_GPU_UTIL"},
			Description: fmt.Sprintf("traffic ×%.2f on every pod of the model; running and waiting requests and latency rise", k),
		}, minutes(30, 45), k)
	}
	rng.Shuffle(len(incs), func(i, j int) {
		incs[i], incs[j] = incs[j], incs[i]
		durs[i], durs[j] = durs[j], durs[i]
		factors[i], factors[j] = factors[j], factors[i]
	})

	// Spread the slack between the incidents at random, in whole minutes.
	lo := first.Add(24 * time.Hour)
	if l := end.Add(-6 * 24 * time.Hour); l.After(lo) {
		lo = l
	}
	hi := end.Add(-time.Hour)
	const gap = 24 * time.Hour
	busy := time.Duration(len(incs)-1) * gap
	for _, d := range durs {
		busy += d
	}
	t := lo.Truncate(time.Minute).Add(time.Minute)
	slack := int((hi.Sub(t) - busy) / time.Minute)
	// Where the span allows, start from the next midnight (UTC) with a
	// slack that does not depend on the time of day of end, so that each
	// incident falls at the same time of day in every fleet of a seed: a
	// traffic surge at the daily peak and one in the quiet hours are not
	// the same incident.
	if day := 24 * time.Hour; end.Sub(lo) >= day+time.Hour {
		if fixed := int((end.Sub(lo) - day - time.Hour - busy) / time.Minute); fixed >= 0 {
			t, slack = lo.Truncate(day).Add(day), fixed
		}
	}
	if slack < 0 {
		return nil, nil, fmt.Errorf("fleet: the span from %v to %v cannot hold the incidents: lengthen Options.Duration", first, end)
	}
	w := make([]float64, len(incs)+1)
	var sum float64
	for i := range w {
		w[i] = rng.ExpFloat64()
		sum += w[i]
	}
	for i := range incs {
		// The floors of the shares sum to at most slack.
		t = t.Add(time.Duration(float64(slack)*w[i]/sum) * time.Minute)
		incs[i].Start, incs[i].End = t, t.Add(durs[i])
		t = incs[i].End.Add(gap)
	}
	return incs, factors, nil
}

// WriteIncidents writes incs as indented JSON.
func WriteIncidents(w io.Writer, incs []Incident) error {
	b, err := json.MarshalIndent(incs, "", "  ")
	if err != nil {
		return fmt.Errorf("fleet: encoding incidents: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("fleet: writing incidents: %w", err)
	}
	return nil
}

// Series returns every series of the fleet, pod by pod. All series share
// one Timestamps slice: do not modify it.
func (f *Fleet) Series() []ingest.Series {
	var out []ingest.Series
	for i := range f.pods {
		out = append(out, f.podSeries(i)...)
	}
	return out
}

// WriteImportJSONL writes every series of the fleet in the VictoriaMetrics
// /api/v1/import JSON-lines format, one pod at a time, and returns how many
// samples it wrote.
func (f *Fleet) WriteImportJSONL(w io.Writer) (samples int, err error) {
	for i := range f.pods {
		ss := f.podSeries(i)
		if err := ingest.WriteImportJSONL(w, ss...); err != nil {
			return samples, fmt.Errorf("fleet: writing the series of pod %s: %w", f.pods[i].pod, err)
		}
		for _, s := range ss {
			samples += len(s.Values)
		}
	}
	return samples, nil
}
