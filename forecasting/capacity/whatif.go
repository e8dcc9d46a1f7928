package capacity

import (
	"math"

	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/internal/num"
)

// ScaleErrors rewrites fc as a forecast whose every error is f times as
// large: at each lead whose load l knows, the mean and the bounds (those
// of Plans too) move toward it, to f of their distance (f 0: the load
// itself, a perfect forecast; f 1: fc as it is), so the interval is f
// times as wide, as the quantiles of errors f times as large would make
// it. Where the load is not known (a gap, or past its end) the mean stays
// and the bounds move toward it. The peaks are the new path's. Lead 1 forecasts the step that
// starts at fc.Origin, the time at which the last step fc knows ended.
// Like foresight it reads the load to come: a what-if, not a forecast.
func ScaleErrors(fc *forecasting.Forecast, l Load, f float64) {
	k := int(math.Round(float64(fc.Origin-l.Start.UnixMilli()) / float64(l.Step.Milliseconds())))
	fc.Empirical = nil
	fc.Peak, fc.PeakLead, fc.UpperPeak = math.Inf(-1), 0, math.Inf(-1)
	for i, m := range fc.Mean {
		y := m
		if j := k + i; j >= 0 && j < len(l.Values) && num.Finite(l.Values[j]) {
			y = l.Values[j]
		}
		// (1 − f)·y + f·x is x itself at f 1 and y itself at f 0.
		fc.Mean[i] = (1-f)*y + f*m
		fc.Lower[i] = (1-f)*y + f*fc.Lower[i]
		fc.Upper[i] = (1-f)*y + f*fc.Upper[i]
		for _, p := range fc.Plans {
			p.Upper[i] = (1-f)*y + f*p.Upper[i]
		}
		if fc.Mean[i] > fc.Peak {
			fc.Peak, fc.PeakLead = fc.Mean[i], i+1
		}
		fc.UpperPeak = max(fc.UpperPeak, fc.Upper[i])
	}
}
