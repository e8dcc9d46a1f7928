package forecasting

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// seasonalSeries is a 10-minute series with a daily sine and Gaussian noise.
func seasonalSeries(days int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	y := make([]float64, days*144)
	for i := range y {
		y[i] = 200 + 80*math.Sin(2*math.Pi*float64(i)/144) + 10*rng.NormFloat64()
	}
	return y
}

func TestCausality(t *testing.T) {
	y := seasonalSeries(4, 1)
	const cut = 400
	z := append([]float64(nil), y...)
	for i := cut + 1; i < len(z); i++ {
		z[i] = 5 * z[i] // the future changes completely
	}
	for _, model := range []string{ModelAuto, ModelHWMulDamped, ModelRobust, ModelSeasonalNaive, ModelMean} {
		a, err := Backtest(y, 10*time.Minute, model, 6, 0.9, 150)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Backtest(z, 10*time.Minute, model, 6, 0.9, 150)
		if err != nil {
			t.Fatal(err)
		}
		compared := 0
		for i, r := range a.Rows {
			if r.Origin > cut {
				break
			}
			s := b.Rows[i]
			if r.Yhat != s.Yhat || r.Lower != s.Lower || r.Upper != s.Upper {
				t.Fatalf("%s: forecast from origin %d lead %d changed with data after %d: %v vs %v", model, r.Origin, r.Lead, cut, r, s)
			}
			compared++
		}
		if compared < 6*(cut-150) {
			t.Fatalf("%s: compared %d rows only", model, compared)
		}
	}
}

func TestZeroAndNegative(t *testing.T) {
	f := func(name string, y []float64) {
		t.Helper()
		for _, model := range []string{ModelAuto, ModelHWAddDamped, ModelHWLog, ModelRobust, ModelDrift} {
			r, err := Backtest(y, 10*time.Minute, model, 3, 0.9, 300)
			if err != nil {
				t.Fatalf("%s %s: %v", name, model, err)
			}
			for _, row := range r.Rows {
				if !(row.Yhat >= 0 && row.Lower >= 0 && row.Upper >= row.Lower) || math.IsInf(row.Upper, 0) {
					t.Fatalf("%s %s: row %+v has a negative, inverted or non-finite forecast", name, model, row)
				}
			}
			if math.IsNaN(r.MAE) || math.IsNaN(r.SMAPE) || r.Origins == 0 {
				t.Fatalf("%s %s: summary %+v", name, model, r)
			}
		}
	}
	zeros := make([]float64, 600)
	f("all zero", zeros)
	// A rate with outages: long zero windows in a seasonal series.
	y := seasonalSeries(5, 2)
	for i := 350; i < 420; i++ {
		y[i] = 0
	}
	for i := 600; i < 610; i++ {
		y[i] = 0
	}
	f("outages", y)
	// Falling towards zero: drift and trend would go below it.
	fall := make([]float64, 600)
	for i := range fall {
		fall[i] = math.Max(0, 300-float64(i))
	}
	f("falling", fall)
	// Negative values are kept when allowed.
	fc, err := New(Options{Step: time.Minute, Model: ModelNaive, AllowNegative: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.Fit(0, []float64{-1, -2, -3}); err != nil {
		t.Fatal(err)
	}
	if got := fc.Forecast(); got.Mean[0] != -3 {
		t.Fatalf("with AllowNegative the naive forecast is %g, want −3", got.Mean[0])
	}
}

func TestIntervalCalibration(t *testing.T) {
	// Gaussian noise around a level: the empirical intervals should cover
	// about level of the actuals, at every lead.
	rng := rand.New(rand.NewPCG(11, 12))
	y := make([]float64, 2500)
	for i := range y {
		y[i] = 100 + 10*rng.NormFloat64()
	}
	for _, c := range []struct {
		model string
		level float64
	}{{ModelMean, 0.9}, {ModelAuto, 0.9}, {ModelAuto, 0.8}, {ModelSES, 0.95}} {
		r, err := BacktestWith(y, BacktestOptions{
			Options:    Options{Step: 10 * time.Minute, Model: c.model, Horizon: 3, Level: c.level, Period: 100},
			MinHistory: 500,
		})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Coverage-c.level) > 0.03 {
			t.Errorf("%s at %g: coverage at the horizon %.3f", c.model, c.level, r.Coverage)
		}
		in := 0
		for _, row := range r.Rows {
			if row.Actual >= row.Lower && row.Actual <= row.Upper {
				in++
			}
		}
		if cov := float64(in) / float64(len(r.Rows)); math.Abs(cov-c.level) > 0.03 {
			t.Errorf("%s at %g: coverage over all leads %.3f", c.model, c.level, cov)
		}
		if above := r.AboveUpper; math.Abs(above-(1-c.level)/2) > 0.025 {
			t.Errorf("%s at %g: above upper %.3f", c.model, c.level, above)
		}
	}
}

func TestShortHistoryFallback(t *testing.T) {
	f, err := New(Options{Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fit(0, []float64{3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	fc := f.Forecast()
	if fc.Model != ModelNaive || fc.Need != 1470 || !strings.Contains(fc.Fallback, "auto needs 1470 points of history (24h30m0s at 1m0s steps), have 3: using naive") {
		t.Fatalf("forecast %+v: want a naive fallback saying 1470 points are needed", fc)
	}
	if fc.Mean[9] != 5 || fc.Empirical[0] || !(fc.Lower[0] < 5 && fc.Upper[0] > 5) || fc.Upper[9] <= fc.Upper[0] {
		t.Fatalf("fallback forecast %+v: want the last value and a σ√h interval widening with the lead", fc)
	}
	// A fixed model says what it needs.
	g, _ := New(Options{Step: 10 * time.Minute, Model: ModelHWAdditive})
	if err := g.Fit(0, make([]float64, 100)); err != nil {
		t.Fatal(err)
	}
	if fc := g.Forecast(); fc.Need != 288 || !strings.HasPrefix(fc.Fallback, "hw_additive needs 288 points") {
		t.Fatalf("fallback %q need %d", fc.Fallback, fc.Need)
	}
	// Enough history: no fallback.
	h, _ := New(Options{Step: 10 * time.Minute})
	if err := h.Fit(0, seasonalSeries(3, 4)); err != nil {
		t.Fatal(err)
	}
	if fc := h.Forecast(); fc.Fallback != "" || fc.Need != 0 {
		t.Fatalf("three days of 10-minute data: fallback %q", fc.Fallback)
	}
	if err := h.Fit(0, []float64{math.NaN(), math.Inf(1)}); err == nil || !strings.Contains(err.Error(), "none of 2 samples is finite") {
		t.Fatalf("fit on no finite sample: %v", err)
	}
}

// A horizon longer than the history can score is judged at the longest lead it can, with empirical bounds where it has errors.
func TestShortHistoryLongHorizon(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	y := make([]float64, 66)
	for i := range y {
		y[i] = 3 + r.NormFloat64()
	}
	f, err := New(Options{Step: 10 * time.Second, Horizon: 60})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fit(0, y); err != nil {
		t.Fatal(err)
	}
	fc := f.Forecast()
	if fc.Model != ModelMean || !strings.HasSuffix(fc.Fallback, "have 66: using mean") {
		t.Fatalf("model %s, fallback %q: want the mean, chosen on 66 points", fc.Model, fc.Fallback)
	}
	if !fc.Empirical[18] || fc.Empirical[59] {
		t.Fatalf("empirical bounds at leads 19 and 60: %v, %v; want the first only", fc.Empirical[18], fc.Empirical[59])
	}
	// Noise of σ 1: the 0.9 interval's half-width is about 1.64 at every
	// lead, where a last value's band at lead 19 would be 1.64·√2·√19.
	if w := fc.Upper[18] - fc.Mean[18]; w < 1.2 || w > 2.2 {
		t.Fatalf("upper bound at lead 19 %.2f above the mean %.2f; want about 1.64", fc.Upper[18], fc.Mean[18])
	}
}

func TestUpdateGaps(t *testing.T) {
	const step = int64(60_000)
	f, err := New(Options{Step: time.Minute, Model: ModelNaive, Horizon: 2, MaxGap: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Update(0, 1); err == nil {
		t.Fatal("update before fit accepted")
	}
	if err := f.Fit(1000*step, []float64{1, math.NaN(), 3}); err != nil {
		t.Fatal(err)
	}
	if fc := f.Forecast(); fc.Gaps != 1 || fc.Origin != 1002*step {
		t.Fatalf("after fit: gaps %d origin %d", fc.Gaps, fc.Origin)
	}
	if err := f.Update(1002*step, 4); err == nil || !strings.Contains(err.Error(), "not after the last one") {
		t.Fatalf("repeated time: %v", err)
	}
	// Two steps missing, then a NaN: three gaps filled with the forecast.
	if err := f.Update(1005*step, 6); err != nil {
		t.Fatal(err)
	}
	if err := f.Update(1006*step, math.NaN()); err != nil {
		t.Fatal(err)
	}
	fc := f.Forecast()
	if fc.Gaps != 4 || fc.Mean[0] != 6 || fc.Origin != 1006*step {
		t.Fatalf("after gaps: %+v", fc)
	}
	if err := f.Update(1011*step, 1); !errors.Is(err, ErrGap) {
		t.Fatalf("a gap of 4 steps with MaxGap 3: %v", err)
	}
	if fc := f.Forecast(); fc.Origin != 1006*step {
		t.Fatalf("a refused update moved the origin to %d", fc.Origin)
	}
}

func TestPeakAndRefit(t *testing.T) {
	f, err := New(Options{Step: 10 * time.Minute, Model: ModelDrift, Horizon: 4, RefitEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fit(0, []float64{10, 11, 12, 13}); err != nil {
		t.Fatal(err)
	}
	fc := f.Forecast()
	if fc.Peak != 17 || fc.PeakLead != 4 || fc.UpperPeak != fc.Upper[3] {
		t.Fatalf("peak %g at %d, upper peak %g (upper %v)", fc.Peak, fc.PeakLead, fc.UpperPeak, fc.Upper)
	}
	for i := range 2 {
		if f.RefitDue() {
			t.Fatalf("refit due after %d updates", i)
		}
		if err := f.Update(int64(4+i)*600_000, 14+float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if !f.RefitDue() {
		t.Fatal("refit not due after RefitEvery updates")
	}
	if err := f.Refit(); err != nil || f.RefitDue() {
		t.Fatalf("refit: %v, still due %v", err, f.RefitDue())
	}
}

// TestFitAfterGap: after a gap longer than MaxGap, FitAfterGap leaves the
// forecaster as a new one fitted on the samples it held after from (the
// float32s the history keeps, the newest as it came), the missing steps
// and the new sample; with nothing held after from, on the new sample
// alone.
func TestFitAfterGap(t *testing.T) {
	const step = int64(60_000)
	opts := Options{Step: time.Minute, Horizon: 5, Period: 60, MaxGap: 10}
	y := syntheticDaily([]float64{100, 160, 100, 40}, 1, 30, 3)[:400]
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fit(0, y[:300]); err != nil {
		t.Fatal(err)
	}
	for i := 300; i < 400; i++ {
		if i == 350 {
			continue // a gap it fills
		}
		if err := f.Update(int64(i)*step, y[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.FitAfterGap(0, 399*step, 1); err == nil {
		t.Fatal("a sample not after the last one was accepted")
	}
	const at, v = 420 * step, 37.5
	if err := f.Update(at, v); !errors.Is(err, ErrGap) {
		t.Fatalf("a gap of 20 steps with MaxGap 10: %v", err)
	}
	from := 99*step + 1 // the samples from minute 100 on
	if err := f.FitAfterGap(from, at, v); err != nil {
		t.Fatal(err)
	}
	data := make([]float64, 321)
	for i := range data {
		data[i] = math.NaN()
	}
	for i := 100; i < 400; i++ {
		if i != 350 {
			data[i-100] = float64(sample(y[i]))
		}
	}
	data[299] = y[399] // the newest held, as it came
	data[320] = v
	want, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := want.Fit(100*step, data); err != nil {
		t.Fatal(err)
	}
	if got, w := f.Forecast(), want.Forecast(); !reflect.DeepEqual(got, w) || got.Origin != at || got.Gaps != 21 {
		t.Fatalf("after the gap: %+v, want %+v (origin %d, 21 gaps)", got, w, at)
	}

	// Nothing held after from: the new sample alone.
	if err := f.Update(500*step, 2); !errors.Is(err, ErrGap) {
		t.Fatalf("a gap of 79 steps: %v", err)
	}
	if err := f.FitAfterGap(450*step, 500*step, 2); err != nil {
		t.Fatal(err)
	}
	if fc := f.Forecast(); fc.Origin != 500*step || fc.Gaps != 0 || fc.Mean[0] != 2 {
		t.Fatalf("fitted on the new sample alone: %+v", fc)
	}
}
