package forecasting

import (
	"math"
	"testing"
	"time"
)

// weekPerMinute is seven days of per-minute Poisson counts with a daily
// shape (a sine, so the benchmark needs no shared data).
func weekPerMinute() []float64 {
	shape := make([]float64, 144)
	for i := range shape {
		shape[i] = 100 + 60*math.Sin(2*math.Pi*float64(i)/144)
	}
	return syntheticDaily(shape, 7, 50, 9)
}

// BenchmarkFitHoltWinters fits the damped additive Holt–Winters model on
// 10,080 one-minute points (Nelder–Mead on the one-step squared error).
func BenchmarkFitHoltWinters(b *testing.B) {
	y := weekPerMinute()
	for _, name := range []string{ModelHWAddDamped, ModelHWMulDamped, ModelHWLog} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				m, _ := newModel(name, 1440, 10)
				if err := m.fit(y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFitWeekly fits the double seasonal models on three weeks of
// one-minute points (30,240; Nelder–Mead on six parameters).
func BenchmarkFitWeekly(b *testing.B) {
	y := threeWeeksPerMinute()
	for _, name := range []string{ModelHWWeekly, ModelHWWeeklyLog} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				m, _ := newModel(name, 1440, 10)
				if err := m.fit(y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// threeWeeksPerMinute is three weeks of per-minute Poisson counts with a
// daily sine and weekends 40 % quieter.
func threeWeeksPerMinute() []float64 {
	shape := make([]float64, 144)
	for i := range shape {
		shape[i] = 100 + 60*math.Sin(2*math.Pi*float64(i)/144)
	}
	return syntheticWeekly(shape, 21, 50, 0.6, 9)
}

// BenchmarkForecasterFit is a whole auto fit on a week of one-minute data:
// every candidate fitted and validated on the last day.
func BenchmarkForecasterFit(b *testing.B) {
	y := weekPerMinute()
	for b.Loop() {
		f, _ := New(Options{Step: time.Minute})
		if err := f.Fit(0, y); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForecasterFitWeekly is a whole auto fit with Options.Weekly on
// three weeks of one-minute data: the last 15 days kept, every candidate
// (the weekly ones too) fitted on 14 and validated on the last day.
func BenchmarkForecasterFitWeekly(b *testing.B) {
	y := threeWeeksPerMinute()
	for b.Loop() {
		f, _ := New(Options{Step: time.Minute, Weekly: true})
		if err := f.Fit(0, y); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateForecast is one incremental update followed by a 10-step
// forecast with calibrated intervals, per series.
func BenchmarkUpdateForecast(b *testing.B) {
	y := weekPerMinute()
	for _, name := range []string{ModelAuto, ModelHWAddDamped, ModelRobust, ModelRevert, ModelHWWeekly} {
		b.Run(name, func(b *testing.B) {
			y := y
			if name == ModelHWWeekly {
				y = threeWeeksPerMinute()
			}
			f, err := New(Options{Step: time.Minute, Model: name})
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Fit(0, y[:len(y)-1440]); err != nil {
				b.Fatal(err)
			}
			if f.Model() != name && name != ModelAuto {
				b.Fatalf("fitted %s, want %s", f.Model(), name)
			}
			var fc Forecast
			i := len(y) - 1440
			for b.Loop() {
				if err := f.Update(int64(i)*60_000, y[i%len(y)]); err != nil {
					b.Fatal(err)
				}
				f.ForecastInto(&fc)
				i++
			}
		})
	}
}

// BenchmarkFitRevert fits the revert model (10 leads, with the daily
// profile's slope) on 10,080 one-minute points.
func BenchmarkFitRevert(b *testing.B) {
	y := weekPerMinute()
	for b.Loop() {
		m, _ := newModel(ModelRevert, 1440, 10)
		if err := m.fit(y); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSumUpdateForecast updates a Sum of 100 one-minute parts (a week
// of history each, auto between naive and seasonal_step) with one sample
// per part and forecasts the sum 10 steps ahead, refits excluded.
// ns/part is per part per update.
func BenchmarkSumUpdateForecast(b *testing.B) {
	const parts = 100
	y := weekPerMinute()
	s, err := NewSum(Options{Step: time.Minute}, parts)
	if err != nil {
		b.Fatal(err)
	}
	data := make([][]float64, parts)
	for k := range data {
		data[k] = y[:len(y)-1440]
	}
	if err := s.Fit(0, data); err != nil {
		b.Fatal(err)
	}
	ys := make([]float64, parts)
	var fc Forecast
	i := len(y) - 1440
	for b.Loop() {
		for k := range ys {
			ys[k] = y[(i+k)%len(y)]
		}
		if err := s.Update(int64(i)*60_000, ys); err != nil {
			b.Fatal(err)
		}
		s.ForecastInto(&fc)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*parts), "ns/part")
}
