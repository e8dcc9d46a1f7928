package fleet

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
)

var extraSeeds = flag.Int("fleet.seeds", 0, "also run the 3σ noise check on seeds 2..N+1")

// testEnd is a fixed end time: a Sunday evening, so the week holds a weekend.
var testEnd = time.Date(2025, 6, 15, 21, 7, 30, 0, time.UTC)

var (
	cacheMu sync.Mutex
	cache   = map[int64]*generated{}
)

// generated is a fleet with its series, built once per seed per test binary.
type generated struct {
	f      *Fleet
	series []ingest.Series
}

func generate(t testing.TB, seed int64) *generated {
	t.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if g, ok := cache[seed]; ok {
		return g
	}
	f, err := New(Options{Seed: seed, End: testEnd})
	if err != nil {
		t.Fatal(err)
	}
	g := &generated{f: f, series: f.Series()}
	cache[seed] = g
	return g
}

// find returns the series of the pod with the given name and extra label.
func (g *generated) find(t *testing.T, pod, name, le string) ingest.Series {
	t.Helper()
	for _, s := range g.series {
		if s.Labels.Get("pod") == pod && s.Labels.Get("__name__") == name && s.Labels.Get("le") == le {
			return s
		}
	}
	t.Fatalf("no series %s{pod=%q,le=%q}", name, pod, le)
	return ingest.Series{}
}

func TestNewRejects(t *testing.T) {
	f := func(o Options, want string) {
		t.Helper()
		_, err := New(o)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%+v) error = %v, want it to mention %q", o, err, want)
		}
	}
	f(Options{}, "Options.End is required")
	f(Options{End: testEnd, Step: 45 * time.Second}, "Options.Step 45s is not supported")
	f(Options{End: testEnd, Step: time.Second}, "Options.Step 1s")
	f(Options{End: testEnd, Duration: 3 * 24 * time.Hour}, "Options.Duration 72h0m0s is too short")
	f(Options{End: testEnd, Duration: 7*24*time.Hour + 10*time.Second}, "not a multiple of Options.Step")
}

func TestDefaultsAndLayout(t *testing.T) {
	f, err := New(Options{End: testEnd.Add(12345 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if f.Step() != 30*time.Second {
		t.Errorf("Step = %v, want 30s", f.Step())
	}
	if !f.End().Equal(testEnd.Add(12345 * time.Millisecond).Truncate(30 * time.Second)) {
		t.Errorf("End = %v, want the option truncated to the step", f.End())
	}
	if got := f.End().Sub(f.Start()); got != 7*24*time.Hour-30*time.Second {
		t.Errorf("End-Start = %v, want 7 days less one step", got)
	}
	var pods, quiet int
	for _, m := range f.Models {
		pods += len(m.Pods)
		if m.Quiet {
			quiet++
		}
	}
	if len(f.Models) != 3 || pods != 7 || quiet != 1 {
		t.Errorf("models = %+v, want 3 models on 7 pods, one quiet", f.Models)
	}
}

func TestIncidents(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		f, err := New(Options{Seed: seed, End: testEnd})
		if err != nil {
			t.Fatal(err)
		}
		checkIncidents(t, seed, f)
	}
	// The shortest span accepted still holds every incident.
	f, err := New(Options{End: testEnd, Duration: minDuration})
	if err != nil {
		t.Fatal(err)
	}
	checkIncidents(t, 1, f)
}

// durations bounds each kind of incident's length.
var durations = map[string][2]time.Duration{
	LatencySpike:        {5 * time.Minute, 15 * time.Minute},
	ThroughputDecay:     {330 * time.Minute, 390 * time.Minute},
	GPUSaturationJitter: {50 * time.Minute, 70 * time.Minute},
	TrafficSurge:        {30 * time.Minute, 60 * time.Minute},
}

func checkIncidents(t *testing.T, seed int64, f *Fleet) {
	t.Helper()
	pods := map[string]string{} // pod → model
	quiet := map[string]bool{}
	for _, m := range f.Models {
		quiet[m.Name] = m.Quiet
		for _, p := range m.Pods {
			pods[p] = m.Name
		}
	}
	kinds := map[string]int{}
	spiked := map[string]bool{}
	first, end := f.Start().Add(-f.Step()), f.End()
	for i, inc := range f.Incidents {
		kinds[inc.Kind]++
		if quiet[inc.Model] {
			t.Errorf("seed %d: incident %d touches the quiet model %s", seed, i, inc.Model)
		}
		if _, ok := quiet[inc.Model]; !ok {
			t.Errorf("seed %d: incident %d names an unknown model %q", seed, i, inc.Model)
		}
		if inc.Pod != "" && pods[inc.Pod] != inc.Model {
			t.Errorf("seed %d: incident %d: pod %q does not serve %s", seed, i, inc.Pod, inc.Model)
		}
		if inc.Start.Before(first.Add(24*time.Hour)) || inc.Start.Before(end.Add(-6*24*time.Hour)) || inc.End.After(end) {
			t.Errorf("seed %d: incident %d [%v, %v] is outside the last 6 days after the first day of [%v, %v]", seed, i, inc.Start, inc.End, first, end)
		}
		if !inc.End.After(inc.Start) || len(inc.Metrics) == 0 || inc.Description == "" {
			t.Errorf("seed %d: incident %d is incomplete: %+v", seed, i, inc)
		}
		if i > 0 {
			if gap := inc.Start.Sub(f.Incidents[i-1].End); gap < 24*time.Hour {
				t.Errorf("seed %d: incidents %d and %d are %v apart, want at least a day", seed, i-1, i, gap)
			}
		}
		d := inc.End.Sub(inc.Start)
		lo, hi := durations[inc.Kind][0], durations[inc.Kind][1]
		if d < lo || d > hi {
			t.Errorf("seed %d: %s lasts %v, want %v to %v", seed, inc.Kind, d, lo, hi)
		}
		if inc.Kind == LatencySpike {
			spiked[inc.Model] = true
		}
	}
	if kinds[LatencySpike] < 2 || len(spiked) < 2 || kinds[ThroughputDecay] != 1 || kinds[GPUSaturationJitter] != 1 || kinds[TrafficSurge] != 1 {
		t.Errorf("seed %d: incident kinds %v, spiked models %v; want ≥2 latency spikes on different models and one of each other kind", seed, kinds, spiked)
	}
}

func TestWriteIncidentsRoundTrip(t *testing.T) {
	f, err := New(Options{End: testEnd})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteIncidents(&buf, f.Incidents); err != nil {
		t.Fatal(err)
	}
	var back []Incident
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("incidents JSON does not decode: %v\n%s", err, buf.Bytes())
	}
	if len(back) != len(f.Incidents) {
		t.Fatalf("decoded %d incidents, want %d", len(back), len(f.Incidents))
	}
	for i := range back {
		a, b := back[i], f.Incidents[i]
		if a.Kind != b.Kind || a.Model != b.Model || a.Pod != b.Pod || !a.Start.Equal(b.Start) || !a.End.Equal(b.End) || strings.Join(a.Metrics, ",") != strings.Join(b.Metrics, ",") {
			t.Errorf("incident %d: decoded %+v, want %+v", i, a, b)
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte("\n  {\n    \"kind\": ")) {
		t.Errorf("incidents JSON is not indented:\n%s", buf.Bytes())
	}
}

// digest hashes everything a fleet writes.
func digest(t *testing.T, o Options) (sum string, samples, size int) {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	cw := &countWriter{w: h}
	samples, err = f.WriteImportJSONL(cw)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteIncidents(cw, f.Incidents); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), samples, cw.n
}

type countWriter struct {
	w io.Writer
	n int
}

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return c.w.Write(p) }

func TestDeterministic(t *testing.T) {
	// A 60s step halves the bytes to hash; the generator is the same.
	o := Options{Seed: 7, End: testEnd, Step: time.Minute}
	a, samples, size := digest(t, o)
	b, _, _ := digest(t, o)
	if a != b {
		t.Errorf("same options gave different output: %s vs %s", a, b)
	}
	o.Seed = 8
	if c, _, _ := digest(t, o); c == a {
		t.Errorf("seeds 7 and 8 gave the same output %s", a)
	}
	t.Logf("7 days at 60s: %d samples, %d bytes, sha256 %s", samples, size, a)
}

func TestSeriesSemantics(t *testing.T) {
	g := generate(t, 1)
	f := g.f
	n := int(7 * 24 * time.Hour / f.Step())
	perPod := 6 + 2*(len(ttftBuckets)+3) + (len(e2eBuckets) - len(ttftBuckets)) + 2
	if len(g.series) != 7*perPod {
		t.Errorf("%d series, want %d (7 pods × %d)", len(g.series), 7*perPod, perPod)
	}
	seen := map[string]bool{}
	type histKey struct{ name, pod string }
	hists := map[histKey][]ingest.Series{}
	for _, s := range g.series {
		id := s.Labels.String()
		if seen[id] {
			t.Errorf("duplicate series %s", id)
		}
		seen[id] = true
		if len(s.Values) != n || len(s.Timestamps) != n {
			t.Fatalf("%s: %d values, %d timestamps, want %d", id, len(s.Values), len(s.Timestamps), n)
		}
		for i := 1; i < n; i++ {
			if s.Timestamps[i]-s.Timestamps[i-1] != f.Step().Milliseconds() {
				t.Fatalf("%s: timestamps %d and %d are not one step apart", id, s.Timestamps[i-1], s.Timestamps[i])
			}
		}
		name := s.Labels.Get("__name__")
		want := []string{"instance", "job", "model", "namespace", "pod"}
		if strings.HasPrefix(name, "DCGM_") {
			want = append(want, "Hostname", "gpu", "modelName")
		}
		for _, l := range want {
			if s.Labels.Get(l) == "" {
				t.Errorf("%s: label %s is missing", id, l)
			}
		}
		for i, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: sample %d is %v", id, i, v)
			}
		}
		cumulative := strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_bucket") ||
			strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count")
		if cumulative {
			for i := 1; i < n; i++ {
				if s.Values[i] < s.Values[i-1] {
					t.Fatalf("counter %s decreases at sample %d: %v → %v", id, i, s.Values[i-1], s.Values[i])
				}
			}
		}
		lo, hi, integer := 0.0, math.Inf(1), cumulative && !strings.HasSuffix(name, "_sum")
		switch name {
		case "vllm:kv_cache_usage_perc":
			hi = 1
		case "DCGM_FI_DEV_GPU_UTIL":
			hi, integer = 100, true
		case "DCGM_FI_DEV_FB_USED":
			lo, hi, integer = 30000, 81559, true
		case "vllm:num_requests_running", "vllm:num_requests_waiting":
			integer = true
		}
		for i, v := range s.Values {
			if v < lo || v > hi || (integer && v != math.Trunc(v)) {
				t.Fatalf("%s: sample %d = %v, want in [%v, %v] (integer: %v)", id, i, v, lo, hi, integer)
			}
		}
		if strings.HasPrefix(name, "vllm:time_to_first_token_seconds") || strings.HasPrefix(name, "vllm:e2e_request_latency_seconds") {
			base := name[:strings.LastIndexByte(name, '_')]
			k := histKey{base, s.Labels.Get("pod")}
			hists[k] = append(hists[k], s)
		}
	}
	if len(hists) != 14 {
		t.Errorf("%d histograms, want 14 (2 per pod)", len(hists))
	}
	for k, ss := range hists {
		var buckets []ingest.Series
		var count ingest.Series
		for _, s := range ss {
			switch {
			case s.Labels.Get("le") != "":
				buckets = append(buckets, s)
			case strings.HasSuffix(s.Labels.Get("__name__"), "_count"):
				count = s
			}
		}
		les := make([]float64, len(buckets))
		for i, b := range buckets {
			le, err := strconv.ParseFloat(b.Labels.Get("le"), 64)
			if err != nil {
				t.Fatalf("%v: le %q: %v", k, b.Labels.Get("le"), err)
			}
			les[i] = le
		}
		for i := 1; i < len(les); i++ {
			if !(les[i] > les[i-1]) {
				t.Fatalf("%v: buckets are not in ascending le: %v", k, les)
			}
		}
		if !math.IsInf(les[len(les)-1], 1) {
			t.Fatalf("%v: the last bucket is le=%v, want +Inf", k, les[len(les)-1])
		}
		for i := 0; i < n; i++ {
			for j := 1; j < len(buckets); j++ {
				if buckets[j].Values[i] < buckets[j-1].Values[i] {
					t.Fatalf("%v: at sample %d bucket le=%v holds %v < le=%v's %v", k, i, les[j], buckets[j].Values[i], les[j-1], buckets[j-1].Values[i])
				}
			}
			if inf := buckets[len(buckets)-1].Values[i]; inf != count.Values[i] {
				t.Fatalf("%v: at sample %d le=+Inf holds %v, _count %v", k, i, inf, count.Values[i])
			}
		}
	}
}

// point is one evaluation of a range query: a time and a value.
type point struct {
	t int64
	v float64
}

// meanTTFT evaluates, at every whole minute, what the daemon's query
//
//	rate(vllm:time_to_first_token_seconds_sum[2m]) / rate(vllm:time_to_first_token_seconds_count[2m])
//
// returns at a 1m step: the increase of the sum over the last 2 minutes
// divided by the increase of the count (the rates' common factor cancels).
func meanTTFT(sum, count ingest.Series, step time.Duration) []point {
	back := int(2 * time.Minute / step)
	var out []point
	for i := back; i < len(sum.Values); i++ {
		t := sum.Timestamps[i]
		if t%60000 != 0 {
			continue
		}
		v := math.NaN()
		if dc := count.Values[i] - count.Values[i-back]; dc > 0 {
			v = (sum.Values[i] - sum.Values[i-back]) / dc
		}
		out = append(out, point{t, v})
	}
	return out
}

// episode is a run of at least two consecutive anomalous points.
type episode struct {
	start, fire int64   // first anomalous point; the second, when it fires
	peak        float64 // largest |z| in the run
}

// sigmaEpisodes runs a brute-force trailing 3σ detector: each point is
// scored against the finite points in [t-1h, t) (at least 10; sample
// standard deviation), and two consecutive points with |z| ≥ 3 fire, as
// analysis.Sigma scores them.
// It also returns each point's |z| (NaN when not scored).
func sigmaEpisodes(ps []point) ([]episode, []float64) {
	const window, k, minPoints = int64(time.Hour / time.Millisecond), 3.0, 10
	zs := make([]float64, len(ps))
	var eps []episode
	run := 0
	for i, p := range ps {
		zs[i] = math.NaN()
		var n, sum, sq float64
		for j := i - 1; j >= 0 && ps[j].t >= p.t-window; j-- {
			if v := ps[j].v; !math.IsNaN(v) {
				n++
				sum += v
			}
		}
		anomalous := false
		if n >= minPoints && !math.IsNaN(p.v) {
			mean := sum / n
			for j := i - 1; j >= 0 && ps[j].t >= p.t-window; j-- {
				if v := ps[j].v; !math.IsNaN(v) {
					sq += (v - mean) * (v - mean)
				}
			}
			if sd := math.Sqrt(sq / (n - 1)); sd > 0 {
				zs[i] = math.Abs(p.v-mean) / sd
				anomalous = zs[i] >= k
			}
		}
		if !anomalous {
			run = 0
			continue
		}
		run++
		switch {
		case run == 2:
			eps = append(eps, episode{start: ps[i-1].t, fire: p.t, peak: math.Max(zs[i-1], zs[i])})
		case run > 2:
			eps[len(eps)-1].peak = math.Max(eps[len(eps)-1].peak, zs[i])
		}
	}
	return eps, zs
}

// during returns the incident of the pod whose window [Start, End+2m] (the
// 2m rate window lags) holds t, or -1.
func during(incs []Incident, model, pod string, t int64) int {
	for i, inc := range incs {
		if inc.Covers(model, pod) && t >= inc.Start.UnixMilli() && t <= inc.End.Add(2*time.Minute).UnixMilli() {
			return i
		}
	}
	return -1
}

// TestSigmaDetectorFindsSpikesOnly proves the noise discipline without a
// database: the daemon's first detector (trailing 3σ over 1h on per-pod
// mean TTFT, two consecutive points) fires on every latency spike, never on
// the quiet model, and nowhere else outside the incidents.
func TestSigmaDetectorFindsSpikesOnly(t *testing.T) {
	seeds := []int64{1}
	for s := int64(2); s <= int64(1+*extraSeeds); s++ {
		seeds = append(seeds, s)
	}
	total := 0
	for _, seed := range seeds {
		g := generate(t, seed)
		if seed != 1 {
			cacheMu.Lock()
			delete(cache, seed) // keep memory flat over many seeds
			cacheMu.Unlock()
		}
		f := g.f
		found := make([]bool, len(f.Incidents))
		var quietMax, loudMax float64
		outside := 0
		for _, m := range f.Models {
			for _, pod := range m.Pods {
				ps := meanTTFT(g.find(t, pod, "vllm:time_to_first_token_seconds_sum", ""),
					g.find(t, pod, "vllm:time_to_first_token_seconds_count", ""), f.Step())
				eps, zs := sigmaEpisodes(ps)
				for i, z := range zs {
					if math.IsNaN(z) || during(f.Incidents, m.Name, pod, ps[i].t) >= 0 {
						continue
					}
					if m.Quiet {
						quietMax = math.Max(quietMax, z)
					} else {
						loudMax = math.Max(loudMax, z)
					}
				}
				for _, ep := range eps {
					i := during(f.Incidents, m.Name, pod, ep.start)
					switch {
					case m.Quiet:
						t.Errorf("seed %d: the detector fired on the quiet pod %s at %v (|z| up to %.1f)", seed, pod, time.UnixMilli(ep.start).UTC(), ep.peak)
					case i >= 0:
						found[i] = true
					default:
						outside++
						t.Logf("seed %d: false alarm on %s at %v (|z| up to %.1f)", seed, pod, time.UnixMilli(ep.start).UTC(), ep.peak)
					}
				}
			}
		}
		for i, inc := range f.Incidents {
			if inc.Kind == LatencySpike && !found[i] {
				t.Errorf("seed %d: the latency spike on %s at %v went undetected", seed, inc.Pod, inc.Start)
			}
		}
		var caught []string
		for i, inc := range f.Incidents {
			if found[i] {
				caught = append(caught, inc.Kind)
			}
		}
		t.Logf("seed %d: episodes outside incidents on loud pods: %d; max |z| outside incidents: quiet pods %.2f, loud pods %.2f; incidents with an episode: %v",
			seed, outside, quietMax, loudMax, caught)
		total += outside
	}
	if total > 0 {
		t.Errorf("%d episodes outside incidents on the loud pods over %d seeds, want 0: they would be the daemon's false alarms", total, len(seeds))
	}
}

// BenchmarkWriteImportJSONL measures generating and writing a default fleet:
// 7 days at 30s.
func BenchmarkWriteImportJSONL(b *testing.B) {
	var size, samples int
	for b.Loop() {
		f, err := New(Options{End: testEnd})
		if err != nil {
			b.Fatal(err)
		}
		cw := &countWriter{w: io.Discard}
		if samples, err = f.WriteImportJSONL(cw); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64(size)/1e6, "MB/op")
	b.ReportMetric(float64(samples), "samples/op")
}

// BenchmarkSeries measures generating a default fleet's series in memory.
func BenchmarkSeries(b *testing.B) {
	f, err := New(Options{End: testEnd})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if ss := f.Series(); len(ss) == 0 {
			b.Fatal("no series")
		}
	}
}
