package ingest

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// ArrivalWindow is one window of a ServeGen client trace: the arrival
// process fitted to the client's requests from Start (unix milliseconds)
// until the next window.
type ArrivalWindow struct {
	Start int64
	// Rate is the requests per second; CV the coefficient of variation of
	// the times between them.
	Rate, CV float64
	// Pattern is the distribution of the times between requests, Gamma or
	// Weibull ("" with a rate of 0); P1 and P2 its fitted shape and scale.
	Pattern string
	P1, P2  float64
}

// ArrivalTrace is one client's windows, on an even step.
type ArrivalTrace struct {
	File    string
	Span    time.Duration // the step of the windows
	Windows []ArrivalWindow
}

// ReadArrivalTrace reads a ServeGen client trace: CSV rows
// t_seconds,rate_req_per_s,cv,pattern,p1,p2 (a header line is allowed),
// one per window, the windows on an even step. Errors name the file, the
// line and the field.
func ReadArrivalTrace(r io.Reader, file string) (*ArrivalTrace, error) {
	tr := &ArrivalTrace{File: file}
	sc := bufio.NewScanner(r)
	line := 0
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s: %s", file, line, field, fmt.Sprintf(format, args...))
	}
	num := func(field, s string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fail(field, "%q is not a number of 0 or more", s)
		}
		return v, nil
	}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		if line == 1 && strings.HasPrefix(f[0], "t_seconds") {
			continue
		}
		if len(f) != 6 {
			return nil, fail("row", "%d fields, want 6 (t_seconds,rate_req_per_s,cv,pattern,p1,p2)", len(f))
		}
		var w ArrivalWindow
		t, err := num("t_seconds", f[0])
		if err != nil {
			return nil, err
		}
		w.Start = int64(math.Round(t * 1000))
		if w.Rate, err = num("rate_req_per_s", f[1]); err != nil {
			return nil, err
		}
		if w.CV, err = num("cv", f[2]); err != nil {
			return nil, err
		}
		if w.P1, err = num("p1", f[4]); err != nil {
			return nil, err
		}
		if w.P2, err = num("p2", f[5]); err != nil {
			return nil, err
		}
		w.Pattern = strings.TrimSpace(f[3])
		switch {
		case w.Rate == 0:
		case w.Pattern == "Gamma":
		case w.Pattern == "Weibull":
			if w.P1 <= 0 {
				return nil, fail("p1", "a Weibull shape of %v: want more than 0", w.P1)
			}
		default:
			return nil, fail("pattern", "%q with a rate of %v: want Gamma or Weibull", w.Pattern, w.Rate)
		}
		if n := len(tr.Windows); n > 0 {
			span := time.Duration(w.Start-tr.Windows[n-1].Start) * time.Millisecond
			switch {
			case span <= 0:
				return nil, fail("t_seconds", "%v is not after the row before", t)
			case n == 1:
				tr.Span = span
			case span != tr.Span:
				return nil, fail("t_seconds", "%v is %v after the row before, the rows before are %v apart", t, span, tr.Span)
			}
		}
		tr.Windows = append(tr.Windows, w)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(tr.Windows) < 2 {
		return nil, fmt.Errorf("%s: %d windows: want at least 2, to know their span", file, len(tr.Windows))
	}
	return tr, nil
}

// ReadArrivalTraces reads the ServeGen client traces in files
// (ReadArrivalTrace).
func ReadArrivalTraces(files []string) ([]*ArrivalTrace, error) {
	var traces []*ArrivalTrace
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		tr, err := ReadArrivalTrace(r, f)
		r.Close()
		if err != nil {
			return nil, err
		}
		traces = append(traces, tr)
	}
	return traces, nil
}

// SynthesizeArrivals draws requests from the traces' arrival processes
// and returns their sum as a request rate per step: in each window a
// client's requests arrive as a renewal process in its steady state (its
// first request drawn from the process's forward recurrence time, so a
// window holds Rate × its span requests on average however bursty), the
// times between them drawn from the window's pattern with the window's
// mean 1/Rate — Gamma with shape 1/CV² (CV 0: evenly spaced), Weibull with
// its fitted shape P1 and the scale that gives that mean — and each
// step's requests are counted. The traces must share their span
// and start; step must divide the span. Each client draws from its own
// generator, seeded by seed and its place in traces, so a client's
// requests do not change when others are added.
func SynthesizeArrivals(traces []*ArrivalTrace, step time.Duration, seed uint64) (*EvenSeries, error) {
	if len(traces) == 0 {
		return nil, fmt.Errorf("synthesizing arrivals: no traces")
	}
	first := traces[0]
	if step <= 0 || first.Span%step != 0 {
		return nil, fmt.Errorf("synthesizing arrivals: a step of %v does not divide the windows' span of %v", step, first.Span)
	}
	n := 0
	for _, tr := range traces {
		if tr.Span != first.Span || tr.Windows[0].Start != first.Windows[0].Start {
			return nil, fmt.Errorf("synthesizing arrivals: %s has windows of %v from %v; %s of %v from %v: want the same",
				tr.File, tr.Span, time.UnixMilli(tr.Windows[0].Start).UTC(), first.File, first.Span, time.UnixMilli(first.Windows[0].Start).UTC())
		}
		n = max(n, len(tr.Windows))
	}
	per := int(first.Span / step)
	counts := make([]float64, n*per)
	span, st := first.Span.Seconds(), step.Seconds()
	for c, tr := range traces {
		src := rand.NewPCG(seed, uint64(c))
		rng := rand.New(src)
		for i, w := range tr.Windows {
			if w.Rate == 0 {
				continue
			}
			first, next := gaps(w, src, rng)
			bins := counts[i*per : (i+1)*per]
			for t := first(); t < span; t += next() {
				bins[int(t/st)]++
			}
		}
	}
	for i := range counts {
		counts[i] /= st
	}
	return &EvenSeries{Start: first.Windows[0].Start, Step: step, Values: counts}, nil
}

// gaps returns draws, in seconds, of the time from a window's start to
// its first request, and of the time between two requests of window w.
// The first is the steady state's forward recurrence time: a uniform share
// of a length-biased gap, which is Gamma(k+1, θ) for a Gamma(k, θ) gap and
// λ·G^(1/k) with G ~ Gamma(1+1/k, 1) for a Weibull(k, λ) gap.
func gaps(w ArrivalWindow, src rand.Source, rng *rand.Rand) (first, next func() float64) {
	mean := 1 / w.Rate
	switch {
	case w.Pattern == "Weibull":
		k := w.P1
		scale := mean / math.Gamma(1+1/k)
		lb := distuv.Gamma{Alpha: 1 + 1/k, Beta: 1, Src: src}
		return func() float64 { return rng.Float64() * scale * math.Pow(lb.Rand(), 1/k) },
			func() float64 { return scale * math.Pow(rng.ExpFloat64(), 1/k) }
	case w.CV == 0:
		return func() float64 { return rng.Float64() * mean }, func() float64 { return mean }
	}
	shape := 1 / (w.CV * w.CV)
	g := distuv.Gamma{Alpha: shape, Beta: shape / mean, Src: src}
	lb := distuv.Gamma{Alpha: shape + 1, Beta: shape / mean, Src: src}
	return func() float64 { return rng.Float64() * lb.Rand() }, g.Rand
}
