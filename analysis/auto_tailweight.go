package analysis

import "math"

// emSteps is how many EM steps heavyTail takes towards each t_ν's scale.
const emSteps = 4

// tailWeights are the tail weights a young series' noise may have, as
// Student's t degrees of freedom ν: the tail index ξ = 1/ν evenly from 0
// (the normal, ν = ∞) to 1/2 (ν = 2, where the variance stops being
// finite), each as likely before the samples speak.
var tailWeights = [...]float64{math.Inf(1), 10, 5, 10.0 / 3, 2.5, 2}

// heavyTail returns how much further than a normal tail a young series'
// band reaches, for its two spreads: tail for the tails' spread, read
// from the extremes of n bins (the bin being filled counted by its share
// of a bin's samples, or whole while it holds none), and spread for the
// robust spread, read from the median absolute deviation mad. While the
// bins are too few to hold the P tail (tp = 1/(n+1) > P), the tails'
// extremes are read at the
// tail q = tp/3 and carried to the tail P/3, where an old series reads
// them, by the ratio of two normal quantiles; the robust spread is read
// at the tail 1/4 and carried to the band, K of it, whose normal tail is
// Φ̄(K). How far a tail reaches beyond what the samples have shown
// depends on how heavy it is, which few samples hardly say: under
// Student's t with ν degrees of freedom the ratio from q to α is
// t_ν(1 − α)/t_ν(1 − q), from one bin (q = 1/6) to P/3 = 0.003 2.84 for
// the normal, 6.1 for ν = 3 and 10.2 for ν = 2.
//
// heavyTail weighs the tail weights of tailWeights by how well each
// explains the samples vals(from) … vals(to−1) (those inside the band: a
// sample beyond it is an incident's, not the noise's): a t_ν around the
// median m with the scale of highest likelihood, in which one sample in
// n+1 may come from the heaviest tail, so that one far sample does not
// rule a tail weight out (n the samples). The weights are the
// likelihoods (the prior is even); stretch turns them into the ratio to
// the normal one. Both are 1 once tp ≤ P (the bins hold the P tail and
// nothing is carried), and when mad is 0 (no scale to read a tail by).
// Ten samples leave every tail weight likely, and the band is drawn for
// the heavy ones; a few hundred of normal noise leave the normal, and of
// a heavy tail that tail.
func heavyTail(vals func(int) float64, from, to int, m, mad, tp, p, k float64) (tail, spread float64) {
	if !(tp > p) || !(mad > 0) || to <= from {
		return 1, 1
	}
	q := tp / 3
	// The scale that explains the samples best under each t_ν (the
	// profile likelihood), by a few steps of the EM iteration σ² ←
	// mean((ν+1)d²/(ν + d²/σ²)) from the median absolute deviation's;
	// for the normal the mean square.
	var s2, c [len(tailWeights)]float64
	n := float64(to - from)
	for j, nu := range tailWeights {
		if math.IsInf(nu, 1) {
			for i := from; i < to; i++ {
				d := vals(i) - m
				s2[j] += d * d
			}
			s2[j] /= n
			c[j] = -0.5 * math.Log(2*math.Pi*s2[j])
		} else {
			s := mad / studentQuantile(0.25, nu)
			s2[j] = s * s
			for range emSteps {
				var sum float64
				for i := from; i < to; i++ {
					d := vals(i) - m
					sum += (nu + 1) * d * d / (nu + d*d/s2[j])
				}
				s2[j] = sum / n
			}
			g1, _ := math.Lgamma((nu + 1) / 2)
			g2, _ := math.Lgamma(nu / 2)
			c[j] = g1 - g2 - 0.5*math.Log(nu*math.Pi*s2[j])
		}
		if !(s2[j] > 0) {
			return 1, 1
		}
	}
	// Each tail weight allows one sample in n+1 to be an incident's, of
	// the heaviest tail: one far sample cannot rule a tail weight out.
	heaviest := len(tailWeights) - 1
	keep, stray := math.Log(n/(n+1)), math.Log(1/(n+1))
	var ll [len(tailWeights)]float64
	for i := from; i < to; i++ {
		d := vals(i) - m
		var lf [len(tailWeights)]float64
		for j, nu := range tailWeights {
			if math.IsInf(nu, 1) {
				lf[j] = c[j] - d*d/(2*s2[j])
			} else {
				lf[j] = c[j] - (nu+1)/2*math.Log1p(d*d/(nu*s2[j]))
			}
		}
		for j := range lf {
			if j == heaviest {
				ll[j] += lf[j]
				continue
			}
			a, b := keep+lf[j], stray+lf[heaviest]
			ll[j] += max(a, b) + math.Log1p(math.Exp(-math.Abs(a-b)))
		}
	}
	best := math.Inf(-1)
	for _, l := range ll {
		best = max(best, l)
	}
	var post [len(tailWeights)]float64
	for j := range ll {
		post[j] = math.Exp(ll[j] - best)
	}
	return stretch(&post, p/3, q), stretch(&post, 0.5*math.Erfc(k/math.Sqrt2), 0.25)
}

// stretch returns the h ≥ 1 by which a reach of h·r_∞ times the
// (1 − q)-quantile, r_∞ = Φ⁻¹(1 − α)/Φ⁻¹(1 − q) (the normal tail's reach
// from q to α), is exceeded with probability α when the tail weight is
// drawn from the weights post (in proportion) over tailWeights:
//
//	Σ_ν post_ν S_ν(h·r_∞·t_ν(1 − q)) = α Σ_ν post_ν
//
// with S_∞ the normal tail and, for t_ν, the power law of its tail
// through its α quantile, S_ν(x) = α·(x/t_ν(1 − α))^−ν, found by
// bisection. Weights sure of the normal give 1; sure of t_ν, r_ν/r_∞
// with r_ν = t_ν(1 − α)/t_ν(1 − q); undecided, a reach drawn for the
// heavier tails, whose exceedances dominate the sum.
func stretch(post *[len(tailWeights)]float64, alpha, q float64) float64 {
	za := -normQuantile(alpha)
	rInf := za / -normQuantile(q)
	var rel [len(tailWeights)]float64 // r_ν / r_∞
	hi, total := 1.0, 0.0
	for j, nu := range tailWeights {
		total += post[j]
		if !math.IsInf(nu, 1) {
			rel[j] = studentQuantile(alpha, nu) / studentQuantile(q, nu) / rInf
			hi = max(hi, rel[j])
		}
	}
	excess := func(h float64) float64 {
		var sum float64
		for j, nu := range tailWeights {
			if math.IsInf(nu, 1) {
				sum += post[j] * 0.5 * math.Erfc(h*za/math.Sqrt2) / alpha
			} else {
				sum += post[j] * math.Pow(h/rel[j], -nu)
			}
		}
		return sum - total
	}
	lo := 1.0
	if excess(lo) <= 0 {
		return 1
	}
	for range 30 {
		mid := (lo + hi) / 2
		if excess(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
