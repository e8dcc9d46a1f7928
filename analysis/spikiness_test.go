package analysis_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/inferwatch/inferwatch/analysis"
)

// Baseline P99 = 100 ms and P999 = 150 ms: level 2 needs > 1.2·150 = 180.
// Of the 9 finite latencies, 120, 170 and 100.5 exceed only the P99
// (level 1: 3/9) and 181 and 250 exceed both (level 2: 2/9). 100 itself is
// not above the P99. The NaN is dropped.
func ExampleSpikes() {
	lat := []float64{50, 90, 120, 170, 181, 250, math.NaN(), 100, 100.5, 60}
	s := analysis.Spikes(lat, analysis.SpikeBaseline{P99: 100, P999: 150})
	fmt.Printf("n=%d dropped=%d level1=%d (%.4f) level2=%d (%.4f)\n",
		s.N, s.Dropped, s.Level1, s.Share1, s.Level2, s.Share2)
	// Output:
	// n=9 dropped=1 level1=3 (0.3333) level2=2 (0.2222)
}

func TestBaselineOf(t *testing.T) {
	lat := []float64{math.Inf(1)}
	for i := 1000; i >= 1; i-- {
		lat = append(lat, float64(i))
	}
	// Type 7 on 1…1000: h = 999·0.99 = 989.01 → 990.01;
	// h = 999·0.999 = 998.001 → 999.001.
	b := analysis.BaselineOf(lat)
	if math.Abs(b.P99-990.01) > 1e-9 || math.Abs(b.P999-999.001) > 1e-9 || b.Factor != 1.2 {
		t.Errorf("BaselineOf(1…1000) = %+v, want P99 990.01, P999 999.001, factor 1.2", b)
	}
	if e := analysis.BaselineOf([]float64{math.NaN()}); !math.IsNaN(e.P99) {
		t.Errorf("BaselineOf(NaN) = %+v, want NaN quantiles", e)
	}
}

func TestSpikes(t *testing.T) {
	f := func(name string, lat []float64, b analysis.SpikeBaseline, n, l1, l2 int) {
		t.Helper()
		s := analysis.Spikes(lat, b)
		if s.N != n || s.Level1 != l1 || s.Level2 != l2 {
			t.Errorf("%s: %+v, want n=%d level1=%d level2=%d", name, s, n, l1, l2)
		}
		if n > 0 && (s.Share1 != float64(l1)/float64(n) || s.Share2 != float64(l2)/float64(n)) {
			t.Errorf("%s: shares %v %v", name, s.Share1, s.Share2)
		}
	}
	base := analysis.SpikeBaseline{P99: 1, P999: 2}
	f("none", []float64{0.5, 1}, base, 2, 0, 0)
	f("boundaries are not spikes", []float64{1, 2.4, 2.4000001}, base, 3, 1, 1)
	f("custom factor", []float64{2.5, 3.5}, analysis.SpikeBaseline{P99: 1, P999: 2, Factor: 1.5}, 2, 1, 1)
	// A P999 baseline below the P99 one still needs the P99 crossed.
	f("level 2 needs P99 too", []float64{0.9, 1.5}, analysis.SpikeBaseline{P99: 1, P999: 0.5}, 2, 0, 1)
	if s := analysis.Spikes(nil, base); !math.IsNaN(s.Share1) || s.N != 0 {
		t.Errorf("empty: %+v, want NaN shares", s)
	}
}
