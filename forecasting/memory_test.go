package forecasting

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"
)

// seriesProfile names a file that retainedPerSeries writes a heap
// profile to while its forecasters are live (the last case measured
// wins): go test -run '^$' -bench RetainedPerSeries/step=15s/history=1h
// -benchtime 1x -memprofilerate 1 -series-memprofile heap.out.
var seriesProfile = flag.String("series-memprofile", "", "write a heap profile of the live forecasters of BenchmarkRetainedPerSeries to `file`")

// ruleOptions are the options a forecast rule gives its forecasters for a
// step and a history: auto, a 10-minute horizon, a 0.9 interval, a daily
// period and the history kept.
func ruleOptions(step, history time.Duration) Options {
	return Options{Step: step, Model: ModelAuto, Horizon: int(10 * time.Minute / step),
		Level: 0.9, Period: int(24 * time.Hour / step), MaxHistory: int(history / step)}
}

// perStep is days of Poisson counts (mean 30 a minute) with a daily sine,
// at the given step.
func perStep(step time.Duration, days int) []float64 {
	shape := make([]float64, 144)
	for i := range shape {
		shape[i] = 100 + 60*math.Sin(2*math.Pi*float64(i)/144)
	}
	m := syntheticDaily(shape, days, 30, 11)
	k := int(time.Minute / step)
	y := make([]float64, len(m)*k)
	for i := range y {
		y[i] = m[i/k] / float64(k)
	}
	return y
}

// retainedPerSeries builds n forecasters with opts as a forecast rule
// does: each fitted on y[:fit], then updated point by point through the
// next updates points (refitting when due, forecasting after each). It
// returns the heap they retain, in bytes per series.
func retainedPerSeries(tb testing.TB, opts Options, y []float64, fit, updates, n int) float64 {
	tb.Helper()
	step := opts.Step.Milliseconds()
	fs := make([]*Forecaster, n)
	var fc Forecast
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for k := range fs {
		f, err := New(opts)
		if err != nil {
			tb.Fatal(err)
		}
		if err := f.Fit(0, y[:fit]); err != nil {
			tb.Fatal(err)
		}
		for i := fit; i < fit+updates; i++ {
			if err := f.Update(int64(i)*step, y[i]); err != nil {
				tb.Fatal(err)
			}
			if f.RefitDue() {
				if err := f.Refit(); err != nil {
					tb.Fatal(err)
				}
			}
			f.ForecastInto(&fc)
		}
		fs[k] = f
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if *seriesProfile != "" {
		out, err := os.Create(*seriesProfile)
		if err != nil {
			tb.Fatal(err)
		}
		if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
			tb.Fatal(err)
		}
		if err := out.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.KeepAlive(fs)
	runtime.KeepAlive(y) // freed after its last use, it would count against them
	return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
}

// memoryCases are the histories a series may hold, at one-minute,
// 30-second and 15-second steps, with how many series to measure (fewer for the long
// histories and for a day, where auto falls back and refits every
// Horizon updates). A series holding a history is fitted on all but the
// last min(history/2, period) of it, then updated through those, so its
// calibration windows are in their steady state; a long-running one has
// been fitted on its history and updated for as long again: it holds what
// a series holds however long it runs.
var memoryCases = []struct {
	step    time.Duration
	history time.Duration
	long    bool
	series  int
}{
	{time.Minute, time.Hour, false, 1000},
	{time.Minute, 24 * time.Hour, false, 16},
	{time.Minute, 7 * 24 * time.Hour, false, 8},
	{time.Minute, 7 * 24 * time.Hour, true, 8},
	{30 * time.Second, time.Hour, false, 500},
	{30 * time.Second, 24 * time.Hour, false, 6},
	{15 * time.Second, time.Hour, false, 500},
	{15 * time.Second, 24 * time.Hour, false, 3},
	{15 * time.Second, 24 * time.Hour, true, 3},
	{15 * time.Second, 7 * 24 * time.Hour, false, 4},
	{15 * time.Second, 7 * 24 * time.Hour, true, 3},
}

// memoryCase returns the fit and the updates of a case with opts.
func memoryCase(opts Options, history time.Duration, long bool) (fit, updates int) {
	held := int(history / opts.Step)
	if long {
		return held, held - 1
	}
	updates = min(held/2, opts.Period)
	return held - updates, updates
}

// BenchmarkRetainedPerSeries reports the heap a forecast rule's
// forecaster retains per series (B/series) at each history and step.
// ns/op is the time to build all the series of a case.
func BenchmarkRetainedPerSeries(b *testing.B) {
	y := map[time.Duration][]float64{}
	for _, c := range memoryCases {
		name := fmt.Sprintf("step=%v/history=%v", c.step, c.history)
		if c.long {
			name += fmt.Sprintf("+%v", c.history) // run as long again
		}
		b.Run(name, func(b *testing.B) {
			opts := ruleOptions(c.step, c.history)
			if y[c.step] == nil {
				y[c.step] = perStep(c.step, 14)
			}
			fit, updates := memoryCase(opts, c.history, c.long)
			var per float64
			for b.Loop() {
				per = retainedPerSeries(b, opts, y[c.step], fit, updates, c.series)
			}
			b.ReportMetric(per, "B/series")
		})
	}
}

// A 10-minute forecast costs about as much at 15 s steps as at a minute: an
// hour of history to at most 16–28 KiB a series, a day to 64 KiB.
func TestRetainedPerSeries(t *testing.T) {
	for _, c := range []struct {
		step    time.Duration
		history time.Duration
		most    float64 // bytes a series may retain
		count   int
	}{
		{time.Minute, time.Hour, 16 << 10, 100},
		{30 * time.Second, time.Hour, 20 << 10, 40},
		{15 * time.Second, time.Hour, 28 << 10, 20},
		{time.Minute, 24 * time.Hour, 64 << 10, 8},
		{30 * time.Second, 24 * time.Hour, 64 << 10, 6},
		{15 * time.Second, 24 * time.Hour, 64 << 10, 6},
	} {
		opts := ruleOptions(c.step, c.history)
		fit, updates := memoryCase(opts, c.history, false)
		got := retainedPerSeries(t, opts, perStep(c.step, 1+int(c.history/(24*time.Hour))), fit, updates, c.count)
		t.Logf("step %v, %v of history: %.0f bytes a series", c.step, c.history, got)
		if got > c.most {
			t.Errorf("step %v, %v of history: a series retains %.0f bytes, want at most %.0f", c.step, c.history, got, c.most)
		}
	}
}
