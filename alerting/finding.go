// Package alerting evaluates rule groups on their schedule and tells people
// and machines what it found. It is the end of the one-way flow: it consumes
// ingest (through the Querier interface it defines), analysis, and the
// configuration from rules, and hands findings to Outputs.
package alerting

import "time"

// Finding is one thing inferwatch noticed about one series.
type Finding struct {
	// Kind names what was found, e.g. "anomaly"; it is the last token of
	// the subject <prefix>.findings.<kind>.
	Kind  string `json:"kind"`
	Group string `json:"group"`
	Rule  string `json:"rule"`
	// Detector is the detector that scored the series, e.g. "sigma".
	Detector string `json:"detector"`
	// Labels are the series' labels plus the rule's extra labels.
	Labels map[string]string `json:"labels"`
	// Series is the series' identity in Prometheus selector syntax.
	Series string `json:"series"`
	// WindowStart and WindowEnd bound the anomalous stretch: from its first
	// anomalous sample to the sample at which the finding fired.
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	// Value is the sample with the highest score in the window, at ValueTime.
	Value     float64   `json:"value"`
	ValueTime time.Time `json:"value_time"`
	// Expected, Lower and Upper are the detector's estimate and band at
	// ValueTime.
	Expected float64 `json:"expected"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	// Score is the highest score in the window (≥ 1).
	Score    float64 `json:"score"`
	Severity string  `json:"severity"`
	// Details holds what the rule kind measured beyond the value and band:
	// for a correlation, the coefficients, p-value, n and best lag; for a
	// decay, the peak, η and its trend with its interval.
	Details map[string]any `json:"details,omitempty"`
}
