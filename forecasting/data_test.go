package forecasting

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/examples/fleet"
)

// sharedData is where the project's shared data sets are, seen from this
// package's directory.
const sharedData = "../../shared/data"

// sharedFile returns the path of a shared data file, skipping the test when
// it is absent.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(sharedData, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data not present: %v (the shared data sets live in %s beside the repository)", err, sharedData)
	}
	return p
}

// readValues reads the second column of a timestamp,value CSV file (a
// ServeGen aggregate rate file, a NAB data file).
func readValues(t testing.TB, rel string) []float64 {
	t.Helper()
	f, err := os.Open(sharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("reading %s: %v", rel, err)
	}
	var out []float64
	for i, r := range recs[1:] {
		v, err := strconv.ParseFloat(r[1], 64)
		if err != nil {
			t.Fatalf("%s:%d: %v", rel, i+2, err)
		}
		out = append(out, v)
	}
	return out
}

// perMinute counts arrival offsets (seconds from the first) per minute.
func perMinute(offsets []float64) []float64 {
	var out []float64
	for _, s := range offsets {
		m := int(s / 60)
		for len(out) <= m {
			out = append(out, 0)
		}
		out[m]++
	}
	return out
}

// readAzure returns per-minute request counts of an Azure LLM trace.
func readAzure(t testing.TB, rel string) []float64 {
	t.Helper()
	f, err := os.Open(sharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	var offsets []float64
	var t0 time.Time
	for sc.Scan() {
		ts, _, _ := strings.Cut(sc.Text(), ",")
		tm, err := time.Parse("2006-01-02 15:04:05.0000000", ts)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if t0.IsZero() {
			t0 = tm
		}
		offsets = append(offsets, tm.Sub(t0).Seconds())
	}
	return perMinute(offsets)
}

// readMooncake returns per-minute request counts of the mooncake trace.
func readMooncake(t testing.TB, rel string) []float64 {
	t.Helper()
	f, err := os.Open(sharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var offsets []float64
	for sc.Scan() {
		var r struct {
			Timestamp float64 `json:"timestamp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		offsets = append(offsets, r.Timestamp/1000)
	}
	return perMinute(offsets)
}

// syntheticDaily returns per-minute Poisson counts over days whose mean
// follows shape (one value per 10 minutes, repeated with a day period),
// scaled so the average is meanPerMin. Deterministic for a seed.
func syntheticDaily(shape []float64, days int, meanPerMin float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 0))
	out := weeklyRates(shape, days, meanPerMin, 1)
	for i, lam := range out {
		out[i] = poisson(rng, lam)
	}
	return out
}

func poisson(rng *rand.Rand, lam float64) float64 {
	if lam > 50 {
		return math.Max(0, math.Round(lam+math.Sqrt(lam)*rng.NormFloat64()))
	}
	l, k, p := math.Exp(-lam), 0.0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// fleetPerMinute returns, per model of the generated fleet (a week at
// one-minute steps, seed 1), the per-minute increase of
// vllm:request_success_total summed over the model's pods: the requests
// each model served in each minute.
func fleetPerMinute(t testing.TB) map[string][]float64 {
	t.Helper()
	f, err := fleet.New(fleet.Options{Seed: 1, End: time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, s := range f.Series() {
		if s.Labels.Get("__name__") != "vllm:request_success_total" {
			continue
		}
		model := s.Labels.Get("model")
		y := out[model]
		if y == nil {
			y = make([]float64, len(s.Values)-1)
			out[model] = y
		}
		for i := 1; i < len(s.Values); i++ {
			d := s.Values[i] - s.Values[i-1]
			if d < 0 { // a counter reset: the new value is the increase
				d = s.Values[i]
			}
			y[i-1] += d
		}
	}
	if len(out) == 0 {
		t.Fatal("the fleet has no vllm:request_success_total series")
	}
	return out
}
