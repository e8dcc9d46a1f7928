package analysis

import (
	"math"

	"github.com/inferwatch/inferwatch/internal/num"
	"github.com/inferwatch/inferwatch/internal/order"
)

// DefaultSpikeFactor is how far above the P999 baseline a latency must be,
// on top of exceeding the P99 baseline, to be a level-2 spike.
const DefaultSpikeFactor = 1.2

// SpikeBaseline is the latency distribution of a healthy period.
type SpikeBaseline struct {
	P99, P999 float64
	// Factor multiplies P999 for level 2 (default 1.2).
	Factor float64
}

// BaselineOf estimates a SpikeBaseline from the latencies of a reference
// period (non-finite values dropped), by selection (R type 7 quantiles).
// P99 and P999 are NaN when no value is finite.
func BaselineOf(latency []float64) SpikeBaseline {
	xs := finite(latency)
	b := SpikeBaseline{P99: math.NaN(), P999: math.NaN(), Factor: DefaultSpikeFactor}
	if len(xs) > 0 {
		b.P99 = order.Quantile(xs, 0.99)
		b.P999 = order.Quantile(xs, 0.999)
	}
	return b
}

// Spikiness counts the evaluations whose latency spiked.
type Spikiness struct {
	// N is the number of finite latencies judged and Dropped the number
	// of non-finite ones left out.
	N, Dropped int
	// Level1 counts latencies > P99 but ≤ Factor·P999; Level2 those > P99
	// and > Factor·P999. A latency is counted in one level only.
	Level1, Level2 int
	// Share1 = Level1/N and Share2 = Level2/N; NaN when N = 0.
	Share1, Share2 float64
}

// Spikes judges each latency against the baseline b. A zero Factor means
// DefaultSpikeFactor.
func Spikes(latency []float64, b SpikeBaseline) Spikiness {
	if b.Factor == 0 {
		b.Factor = DefaultSpikeFactor
	}
	var s Spikiness
	hi := b.Factor * b.P999
	for _, x := range latency {
		if !num.Finite(x) {
			s.Dropped++
			continue
		}
		s.N++
		if x > b.P99 {
			if x > hi {
				s.Level2++
			} else {
				s.Level1++
			}
		}
	}
	s.Share1, s.Share2 = math.NaN(), math.NaN()
	if s.N > 0 {
		s.Share1 = float64(s.Level1) / float64(s.N)
		s.Share2 = float64(s.Level2) / float64(s.N)
	}
	return s
}
