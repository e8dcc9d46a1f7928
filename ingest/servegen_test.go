package ingest

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// trace is a client trace of n windows of 600 s, each with the row fields
// after t_seconds.
func trace(t *testing.T, n int, fields string) *ArrivalTrace {
	t.Helper()
	var b strings.Builder
	b.WriteString("t_seconds,rate_req_per_s,cv,pattern,p1,p2\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,%s\n", 600*i, fields)
	}
	tr, err := ReadArrivalTrace(strings.NewReader(b.String()), "chunk-0-trace.csv")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestReadArrivalTrace(t *testing.T) {
	tr, err := ReadArrivalTrace(strings.NewReader("0,1.33,8.6,Weibull,0.375,0.397\n600,0,0,,0,0\n1200,0.15,4.07,Gamma,0.06,103.7\n"), "c.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []ArrivalWindow{{0, 1.33, 8.6, "Weibull", 0.375, 0.397}, {600000, 0, 0, "", 0, 0}, {1200000, 0.15, 4.07, "Gamma", 0.06, 103.7}}
	if tr.Span != 10*time.Minute || !slices.Equal(tr.Windows, want) {
		t.Errorf("span %v, windows %+v", tr.Span, tr.Windows)
	}
	for _, c := range []struct{ in, want string }{
		{"0,1,1,Gamma,1,1\n600,x,1,Gamma,1,1\n", `c.csv:2: rate_req_per_s: "x" is not a number of 0 or more`},
		{"0,1,1,Gamma,1,1\n600,1,1,Pareto,1,1\n", `c.csv:2: pattern: "Pareto" with a rate of 1: want Gamma or Weibull`},
		{"0,1,1,Gamma,1,1\n600,1,1,Gamma,1\n", `c.csv:2: row: 5 fields, want 6`},
		{"0,1,1,Gamma,1,1\n600,1,1,Gamma,1,1\n1500,1,1,Gamma,1,1\n", `c.csv:3: t_seconds: 1500 is 15m0s after the row before, the rows before are 10m0s apart`},
		{"0,1,1,Weibull,0,1\n600,1,1,Gamma,1,1\n", `c.csv:1: p1: a Weibull shape of 0: want more than 0`},
		{"0,1,-1,Gamma,1,1\n", `c.csv:1: cv: "-1" is not a number of 0 or more`},
		{"0,1,1,Gamma,1,1\n", `c.csv: 1 windows: want at least 2`},
	} {
		_, err := ReadArrivalTrace(strings.NewReader(c.in), "c.csv")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestSynthesizeArrivals(t *testing.T) {
	const windows = 2000
	// windowCounts is the requests of each window, and the variance over
	// mean of the requests per step.
	stats := func(s *EvenSeries) (perWindow []float64, dispersion float64) {
		st := s.Step.Seconds()
		per := int(10 * time.Minute / s.Step)
		perWindow = make([]float64, len(s.Values)/per)
		var sum, sq float64
		for i, v := range s.Values {
			c := v * st
			perWindow[i/per] += c
			sum += c
			sq += c * c
		}
		n := float64(len(s.Values))
		m := sum / n
		return perWindow, (sq/n - m*m) / m
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	for _, c := range []struct {
		name, fields   string
		want, tol      float64 // requests a window, on average, and how far the mean may be
		dispLo, dispHi float64 // variance over mean of a minute's requests
	}{
		// Poisson: 1,200 a window, a minute's count has variance = mean.
		{"poisson", "2,1,Gamma,1,0.5", 1200, 6, 0.9, 1.1},
		// Bursty: 300 a window (sd 139: rate·span·CV²), se of the mean
		// 3.1; a process begun afresh at each window would hold 31.5 more.
		{"gamma cv 8", "0.5,8,Gamma,0.0156,128", 300, 12, 10, 1e9},
		// Weibull of shape 0.5 (CV √5): 600 a window.
		{"weibull 0.5", "1,2.236,Weibull,0.5,0.5", 600, 6, 2, 1e9},
		// Evenly spaced: 1,200 a window to within one.
		{"even", "2,0,Gamma,0,0", 1200, 1, 0, 0.1},
	} {
		s, err := SynthesizeArrivals([]*ArrivalTrace{trace(t, windows, c.fields)}, time.Minute, 1)
		if err != nil {
			t.Fatal(err)
		}
		w, disp := stats(s)
		if m := mean(w); math.Abs(m-c.want) > c.tol || disp < c.dispLo || disp > c.dispHi {
			t.Errorf("%s: %.1f requests a window (want %v ± %v), dispersion %.2f (want %v–%v)", c.name, m, c.want, c.tol, disp, c.dispLo, c.dispHi)
		}
	}
	// A client's requests do not change when another is added.
	a, b := trace(t, 20, "2,3,Gamma,0.11,4.5"), trace(t, 20, "1,1,Weibull,1,1")
	sa, _ := SynthesizeArrivals([]*ArrivalTrace{a}, 15*time.Second, 7)
	sab, _ := SynthesizeArrivals([]*ArrivalTrace{a, b}, 15*time.Second, 7)
	sb1, _ := SynthesizeArrivals([]*ArrivalTrace{trace(t, 20, "0,0,,0,0"), b}, 15*time.Second, 7)
	for i := range sab.Values {
		if math.Abs(sab.Values[i]-sa.Values[i]-sb1.Values[i]) > 1e-9 {
			t.Fatalf("step %d: %v with both, %v + %v alone", i, sab.Values[i], sa.Values[i], sb1.Values[i])
		}
	}
	if _, err := SynthesizeArrivals([]*ArrivalTrace{a}, 7*time.Minute, 1); err == nil || !strings.Contains(err.Error(), "does not divide") {
		t.Errorf("a step that does not divide the span: %v", err)
	}
}

// TestReadArrivalTraces reads each file in order and stops at the first
// that does not read, naming it.
func TestReadArrivalTraces(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.csv", "0,1,1,Gamma,1,1\n600,2,1,Gamma,1,1\n")
	b := write("b.csv", "0,3,1,Gamma,1,1\n600,4,1,Gamma,1,1\n")
	bad := write("bad.csv", "0,1,1,Gamma,1,1\n")
	trs, err := ReadArrivalTraces([]string{a, b})
	if err != nil || len(trs) != 2 || trs[0].File != a || trs[1].Windows[1].Rate != 4 {
		t.Fatalf("ReadArrivalTraces = %+v, %v; want a's and b's", trs, err)
	}
	if _, err := ReadArrivalTraces([]string{a, bad}); err == nil || !strings.HasPrefix(err.Error(), bad+": 1 windows") {
		t.Errorf("with a bad file: %v, want its error", err)
	}
	if _, err := ReadArrivalTraces([]string{filepath.Join(dir, "none.csv")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want os.ErrNotExist", err)
	}
}
