package forecasting

import (
	"encoding/csv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scheduledParts returns days of 10-minute samples of two parts: a random
// walk, and a client whose scheduled jobs add 50 req/s from 09:00 to 17:00
// every day, with a little noise.
func scheduledParts(days int, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, seed))
	n := days * 144
	walk, jobs := make([]float64, n), make([]float64, n)
	level := 200.0
	for i := range n {
		level = max(level+5*rng.NormFloat64(), 0)
		walk[i] = level
		jobs[i] = 2 + rng.Float64()
		if tod := i % 144; tod >= 54 && tod < 102 {
			jobs[i] += 50
		}
	}
	return [][]float64{walk, jobs}
}

// TestSumForecastsThePartsSum: the sum's path is the sum of what each
// part's own Forecaster forecasts, origin after origin, across refits.
func TestSumForecastsThePartsSum(t *testing.T) {
	parts := scheduledParts(4, 1)
	opts := Options{Step: 10 * time.Minute, Horizon: 3}
	s, err := NewSum(opts, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref := make([]*Forecaster, 2)
	for k := range ref {
		o := opts
		o.Model, o.Candidates = ModelAuto, PartCandidates()
		if ref[k], err = New(o); err != nil {
			t.Fatal(err)
		}
	}
	first := 200
	upto := [][]float64{parts[0][:first], parts[1][:first]}
	if err := s.Fit(0, upto); err != nil {
		t.Fatal(err)
	}
	// Sum.Fit fits on all but the last min(CalibrationSize, half) samples
	// and feeds those one by one, refitting when due: so do the references.
	stepMs := opts.Step.Milliseconds()
	held := min(s.Options().CalibrationSize, first/2)
	for k := range ref {
		if err := ref[k].Fit(0, upto[k][:first-held]); err != nil {
			t.Fatal(err)
		}
		for i := first - held; i < first; i++ {
			if err := ref[k].Update(int64(i)*stepMs, upto[k][i]); err != nil {
				t.Fatal(err)
			}
			if ref[k].RefitDue() {
				ref[k].Refit()
			}
		}
	}
	refits := 0
	var fc Forecast
	for i := first; i < len(parts[0]); i++ {
		if err := s.Update(int64(i)*stepMs, []float64{parts[0][i], parts[1][i]}); err != nil {
			t.Fatal(err)
		}
		for k := range ref {
			if err := ref[k].Update(int64(i)*stepMs, parts[k][i]); err != nil {
				t.Fatal(err)
			}
		}
		if s.RefitDue() {
			refits++
			if err := s.Refit(); err != nil {
				t.Fatal(err)
			}
			for k := range ref {
				if ref[k].RefitDue() {
					ref[k].Refit()
				}
			}
		}
		want := make([]float64, opts.Horizon)
		for k := range ref {
			ref[k].ForecastInto(&fc)
			for l := range want {
				want[l] += fc.Mean[l]
			}
		}
		for l, got := range s.tr.current() {
			if !near(got, want[l], 1e-9*max(1, want[l])) {
				t.Fatalf("origin %d lead %d: sum path %g, parts' forecasts add to %g", i, l+1, got, want[l])
			}
		}
	}
	if refits < 2 {
		t.Fatalf("%d refits over %d origins; the test means to cross some", refits, len(parts[0])-first)
	}
	if got := ref[1].Model(); got != ModelSeasonalStep {
		t.Errorf("the scheduled part is forecast by %s, want %s", got, ModelSeasonalStep)
	}
	s.ForecastInto(&fc)
	if fc.Model != ModelBottomUp || fc.Fallback != "" || fc.Origin != int64(len(parts[0])-1)*stepMs {
		t.Errorf("forecast model %q fallback %q origin %d", fc.Model, fc.Fallback, fc.Origin)
	}
}

// TestBacktestSumBeatsTheSumAlone: the jobs' steps repeat daily but are
// buried in the walk's noise; bottom-up, the sum is forecast better than
// from the sum's own past, with calibrated intervals.
func TestBacktestSumBeatsTheSumAlone(t *testing.T) {
	parts := scheduledParts(7, 2)
	o := BacktestOptions{Options: Options{Step: 10 * time.Minute, Horizon: 1}, MinHistory: 144}
	bu, err := BacktestSum(parts, o)
	if err != nil {
		t.Fatal(err)
	}
	total := make([]float64, len(parts[0]))
	for i := range total {
		total[i] = parts[0][i] + parts[1][i]
	}
	alone, err := BacktestWith(total, o)
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, "bottom-up", bu)
	logResult(t, "sum alone", alone)
	if bu.Model != ModelBottomUp || bu.NaiveMAE != alone.NaiveMAE || bu.Origins != alone.Origins {
		t.Fatalf("bottom-up model %s naive %g origins %d; the sum alone: naive %g origins %d", bu.Model, bu.NaiveMAE, bu.Origins, alone.NaiveMAE, alone.Origins)
	}
	if bu.Ratio > 0.92 || bu.MAE > 0.95*alone.MAE {
		t.Errorf("bottom-up MAE %.3f (ratio %.3f), the sum alone %.3f: want ≤ 0.92 of naive and ≤ 0.95 of the sum alone", bu.MAE, bu.Ratio, alone.MAE)
	}
	if bu.Coverage < 0.85 || bu.Coverage > 0.95 {
		t.Errorf("coverage %.3f at level 0.9", bu.Coverage)
	}
}

// TestCandidatesOrder: of two candidates that forecast a flat series
// equally well, auto keeps the earlier.
func TestCandidatesOrder(t *testing.T) {
	flat := make([]float64, 400)
	for i := range flat {
		flat[i] = 3
	}
	for _, c := range [][]string{{ModelNaive, ModelSeasonalStep}, {ModelSeasonalStep, ModelNaive}} {
		f, err := New(Options{Step: 10 * time.Minute, Horizon: 1, Candidates: c})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Fit(0, flat); err != nil {
			t.Fatal(err)
		}
		if f.Model() != c[0] {
			t.Errorf("candidates %v: chose %s", c, f.Model())
		}
	}
}

func TestSumErrors(t *testing.T) {
	opts := Options{Step: time.Minute}
	f := func(err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
	_, err := NewSum(opts, 0)
	f(err, "need at least 1 part, got 0")
	_, err = New(Options{Step: time.Minute, Candidates: []string{"naive", "nosuch"}})
	f(err, `candidates: unknown forecasting model "nosuch"`)
	_, err = New(Options{Step: time.Minute, Candidates: []string{"auto"}})
	f(err, "auto cannot be one of auto's candidates")
	s, err := NewSum(opts, 2)
	if err != nil {
		t.Fatal(err)
	}
	f(s.Update(0, []float64{1, 2}), "Fit was never called")
	f(s.Fit(0, [][]float64{{1, 2}}), "a sum of 2 parts: got data for 1")
	f(s.Fit(0, [][]float64{{1, 2}, {1}}), "part 1 has 1 samples, part 0 has 2")
	f(s.Fit(0, [][]float64{{1, 2}, {math.NaN(), math.NaN()}}), "none of the 2 samples of part 1 is finite")
	if err := s.Fit(0, [][]float64{{1, 2}, {3, 4}}); err != nil {
		t.Fatal(err)
	}
	f(s.Update(60_000, []float64{1}), "a sum of 2 parts: got 1 samples")
	f(s.Update(60_000, []float64{1, 2}), "part 0: updating forecaster: sample at 60000 ms is not after the last one")
	_, err = BacktestSum([][]float64{{1, 2, 3}, {1, 2}}, BacktestOptions{Options: opts})
	f(err, "part 1 has 2 samples, part 0 has 3")
}

// readServegenParts reads the per-client rates of a ServeGen service, laid
// on the aggregate's 2,016 ten-minute steps (0 where a client has no row).
func readServegenParts(t *testing.T, service string) [][]float64 {
	t.Helper()
	dir := sharedFile(t, "servegen/language/"+service)
	files, err := filepath.Glob(filepath.Join(dir, "chunk-*-trace.csv"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no client files in %s: %v", dir, err)
	}
	var parts [][]float64
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r := csv.NewReader(f)
		r.FieldsPerRecord = -1
		recs, err := r.ReadAll()
		f.Close()
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		p := make([]float64, 2016)
		for i, rec := range recs {
			ts, err1 := strconv.Atoi(rec[0])
			v, err2 := strconv.ParseFloat(rec[1], 64)
			if err1 != nil || err2 != nil || ts%600 != 0 || ts/600 >= len(p) {
				t.Fatalf("%s:%d: %q", name, i+1, rec)
			}
			p[ts/600] = v
		}
		parts = append(parts, p)
	}
	return parts
}

// TestCandidatesJudgedOnAPeriod: a candidate is offered once it can be
// validated on a period of origins; before that the first stands alone.
func TestCandidatesJudgedOnAPeriod(t *testing.T) {
	// A job that runs 20 minutes of every hour: seasonal_step forecasts it
	// exactly once it has an hour and a step of history.
	y := make([]float64, 130)
	for i := range y {
		if i%60 < 20 {
			y[i] = 30
		}
	}
	for _, c := range []struct {
		n    int
		want string
	}{{100, ModelNaive}, {130, ModelSeasonalStep}} {
		f, err := New(Options{Step: time.Minute, Horizon: 1, Period: 60, Candidates: PartCandidates()})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Fit(0, y[:c.n]); err != nil {
			t.Fatal(err)
		}
		// 100 points leave seasonal_step (need 61) 39 origins to be judged
		// on, under the hour; 130 leave 69.
		if f.Model() != c.want || f.Forecast().Fallback != "" {
			t.Errorf("%d points: chose %s (fallback %q), want %s", c.n, f.Model(), f.Forecast().Fallback, c.want)
		}
	}
}

// TestPartCandidatesCannotBeChangedFromOutside: the candidates are not a
// shared mutable slice.
func TestPartCandidatesCannotBeChangedFromOutside(t *testing.T) {
	c := PartCandidates()
	c[0] = "nosuch"
	if got := PartCandidates(); got[0] != ModelNaive || got[1] != ModelSeasonalStep {
		t.Fatalf("PartCandidates() = %v after a caller changed its copy", got)
	}
}
