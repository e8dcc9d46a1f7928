package analysis_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/analysis"
)

// Replica a serves 110, 130 and 120 req/s (μa = 120), replica b 70, 90 and
// 80 (μb = 80): LII = |120 − 80| / 120 = 0.3333, above the warning level
// 0.2 and below the critical 0.5.
func ExampleLoadImbalance() {
	im, err := analysis.LoadImbalance(
		[]float64{110, 130, 120},
		[]float64{70, 90, math.NaN(), 80},
		analysis.ImbalanceThresholds{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("μa=%.0f μb=%.0f (n=%d) LII=%.4f level=%d\n", im.MeanA, im.MeanB, im.NB, im.LII, im.Level)
	// Output:
	// μa=120 μb=80 (n=3) LII=0.3333 level=1
}

func TestLoadImbalance(t *testing.T) {
	f := func(name string, a, b []float64, th analysis.ImbalanceThresholds, lii float64, level int) {
		t.Helper()
		im, err := analysis.LoadImbalance(a, b, th)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if math.IsNaN(lii) != math.IsNaN(im.LII) || math.Abs(im.LII-lii) > 1e-12 || im.Level != level {
			t.Errorf("%s: LII %v level %d, want %v level %d", name, im.LII, im.Level, lii, level)
		}
	}
	f("balanced", []float64{50, 50}, []float64{45, 55}, analysis.ImbalanceThresholds{}, 0, 0)
	f("just under warn", []float64{100}, []float64{81}, analysis.ImbalanceThresholds{}, 0.19, 0)
	f("critical", []float64{40}, []float64{100}, analysis.ImbalanceThresholds{}, 0.6, 2)
	f("exactly critical", []float64{50}, []float64{100}, analysis.ImbalanceThresholds{}, 0.5, 2)
	f("custom levels", []float64{90}, []float64{100}, analysis.ImbalanceThresholds{Warn: 0.05, Critical: 0.08}, 0.1, 2)
	f("one side idle", []float64{0, 0}, []float64{10}, analysis.ImbalanceThresholds{}, 1, 2)
	f("both idle", []float64{0}, []float64{0}, analysis.ImbalanceThresholds{}, 0, 0)
	f("no data on one side", nil, []float64{10}, analysis.ImbalanceThresholds{}, math.NaN(), 0)
	f("negative load", []float64{-1}, []float64{10}, analysis.ImbalanceThresholds{}, math.NaN(), 0)

	if _, err := analysis.LoadImbalance(nil, nil, analysis.ImbalanceThresholds{Warn: 0.6, Critical: 0.5}); err == nil || !strings.Contains(err.Error(), "warn ≤ critical") {
		t.Errorf("warn > critical: error %v", err)
	}
}
