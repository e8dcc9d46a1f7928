package rules

import (
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// TestFileDefaultsAreTheEngines: the defaults the file format fills in
// that its documentation calls the analyses', the forecasters' or the
// store client's own are equal to those (rulefmt imports none of them).
func TestFileDefaultsAreTheEngines(t *testing.T) {
	for _, c := range []struct {
		name       string
		file, them float64
	}{
		{"correlate.min_abs_r", rulefmt.DefaultCorrelateMinAbsR, analysis.DefaultCouplingMinAbsR},
		{"correlate.max_p", rulefmt.DefaultCorrelateMaxP, analysis.DefaultCouplingMaxP},
		{"correlate.min_points", rulefmt.DefaultCorrelateMinPoints, analysis.DefaultCouplingMinN},
		{"decay.peak_quantile", rulefmt.DefaultDecayPeakQuantile, analysis.DefaultDecayPeakQuantile},
		{"decay.min_eta", rulefmt.DefaultDecayMinEta, analysis.DefaultDecayMinEta},
		{"decay.confidence", rulefmt.DefaultDecayConfidence, analysis.DefaultDecayConfidence},
		{"decay.current", float64(rulefmt.DefaultDecayCurrent), float64(time.Duration(analysis.DefaultDecayCurrent) * time.Millisecond)},
		{"knee.margin", rulefmt.DefaultKneeMargin, analysis.DefaultKneeMargin},
		{"spikiness.factor", rulefmt.DefaultSpikinessFactor, analysis.DefaultSpikeFactor},
		{"imbalance.warn", rulefmt.DefaultImbalanceWarn, analysis.DefaultImbalanceWarn},
		{"imbalance.critical", rulefmt.DefaultImbalanceCritical, analysis.DefaultImbalanceCritical},
		{"scale.scale_down_margin", rulefmt.DefaultScaleDownMargin, forecasting.DefaultScaleDownMargin},
		{"points per query", rulefmt.MaxPointsPerQuery, ingest.MaxPointsPerQuery},
	} {
		if c.file != c.them {
			t.Errorf("%s: the file's default is %g, the engine's %g", c.name, c.file, c.them)
		}
	}
}
