package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStretch checks stretch against values computed by hand: weights
// sure of the normal give 1, and weights sure of ν = 2, where t has a
// closed form, give r_2/r_∞.
func TestStretch(t *testing.T) {
	var normal, t2 [len(tailWeights)]float64
	normal[0], t2[len(t2)-1] = 1, 1
	if got := stretch(&normal, 0.003, 1.0/6); math.Abs(got-1) > 1e-6 {
		t.Errorf("sure of the normal: %v, want 1", got)
	}
	// α = 0.003: t_2 = 0.994/√(2·0.003·0.997) = 12.851777; q = 1/6:
	// t_2 = (2/3)/√(2·(1/6)·(5/6)) = 1.264911; Φ⁻¹(0.997) = 2.747781,
	// Φ⁻¹(5/6) = 0.967422: (12.851777/1.264911)/(2.747781/0.967422) =
	// 10.160209/2.840313 = 3.577140.
	if got := stretch(&t2, 0.003, 1.0/6); math.Abs(got/3.577140-1) > 1.5e-3 {
		t.Errorf("sure of ν = 2: %.6f, want 3.577140", got)
	}
	// Undecided weights reach further than their mean ratio: the heavy
	// tails' exceedances dominate.
	even := [len(tailWeights)]float64{1, 1, 1, 1, 1, 1}
	var mean float64
	for _, nu := range tailWeights {
		r := 1.0
		if !math.IsInf(nu, 1) {
			r = studentQuantile(0.003, nu) / studentQuantile(1.0/6, nu) / (2.747781 / 0.967422)
		}
		mean += r / float64(len(tailWeights))
	}
	if got := stretch(&even, 0.003, 1.0/6); !(got > mean && got < 3.577140) {
		t.Errorf("even weights: %.4f, want between the mean ratio %.4f and ν = 2's 3.5771", got, mean)
	}
}

// TestHeavyTail: ten samples of normal noise leave every tail weight
// likely and the band stretched; four hundred leave little but the normal
// and t₁₀, while four hundred of t₃ noise keep the stretch; nothing is stretched once
// the bins hold the P tail, or when the samples have no spread.
func TestHeavyTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	draw := func(n int, heavy bool) ([]float64, float64, float64) {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
			if heavy {
				var c float64
				for range 3 {
					z := rng.NormFloat64()
					c += z * z
				}
				x[i] /= math.Sqrt(c / 3)
			}
		}
		slices.Sort(x)
		m := x[n/2]
		d := make([]float64, n)
		for i := range x {
			d[i] = math.Abs(x[i] - m)
		}
		slices.Sort(d)
		return x, m, d[n/2]
	}
	at := func(x []float64) func(int) float64 { return func(i int) float64 { return x[i] } }
	x, m, mad := draw(10, false)
	tail10, sd10 := heavyTail(at(x), 0, len(x), m, mad, 0.5, 0.009, 3)
	x, m, mad = draw(400, false)
	tail400, sd400 := heavyTail(at(x), 0, len(x), m, mad, 0.5, 0.009, 3)
	x, m, mad = draw(400, true)
	tailT3, sdT3 := heavyTail(at(x), 0, len(x), m, mad, 0.5, 0.009, 3)
	t.Logf("stretch of the tails, of the robust spread: 10 normal %.2f %.2f, 400 normal %.2f %.2f, 400 t₃ %.2f %.2f",
		tail10, sd10, tail400, sd400, tailT3, sdT3)
	if !(tail10 > 1.5 && sd10 > 1.5) {
		t.Errorf("ten normal samples: %.2f %.2f, want both above 1.5", tail10, sd10)
	}
	if !(tail400 < 1.3 && sd400 < 1.3) {
		t.Errorf("400 normal samples: %.2f %.2f, want both below 1.3", tail400, sd400)
	}
	if !(tailT3 > 2 && sdT3 > 2) {
		t.Errorf("400 samples of t₃: %.2f %.2f, want both above 2", tailT3, sdT3)
	}
	if a, b := heavyTail(at(x), 0, len(x), m, mad, 0.009, 0.009, 3); a != 1 || b != 1 {
		t.Errorf("bins holding the P tail: %v %v, want 1 1", a, b)
	}
	if a, b := heavyTail(at(x), 0, len(x), m, 0, 0.5, 0.009, 3); a != 1 || b != 1 {
		t.Errorf("no spread: %v %v, want 1 1", a, b)
	}
}
