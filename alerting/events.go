// Package alerting is what happens to the results of inferwatch's rules:
// the events people and machines receive (findings, forecasts, scale
// signals), their CloudEvents encoding, and the Publisher that hands them
// to an output in order, keeping findings the output has not accepted. The
// outputs live in sub-packages, one per sink (natsjs: NATS JetStream and
// the embedded server). It imports nothing of the rules that produce the
// results: they reach it through the types here.
package alerting

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Finding is one thing inferwatch noticed about one series.
type Finding struct {
	// Kind names what was found, e.g. "anomaly"; it is the last token of
	// the subject <prefix>.findings.<kind>.
	Kind  string `json:"kind"`
	Group string `json:"group"`
	Rule  string `json:"rule"`
	// Detector is the detector that scored the series, e.g. "sigma", or
	// the analysis of a window rule, e.g. "correlate".
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

// ForecastPoint is the forecast at one lead.
type ForecastPoint struct {
	Time  time.Time `json:"time"`
	Mean  JSONFloat `json:"mean"`
	Lower JSONFloat `json:"lower"`
	Upper JSONFloat `json:"upper"`
}

// ForecastAccuracy measures a series' own recent forecasts at the horizon
// against what came: MAE, the share of actuals inside the interval, and the
// MAE of the naive forecast (the value at the origin) on the same origins.
type ForecastAccuracy struct {
	LeadSeconds float64   `json:"lead_seconds"`
	N           int       `json:"n"`
	MAE         JSONFloat `json:"mae"`
	Coverage    JSONFloat `json:"coverage"`
	NaiveMAE    JSONFloat `json:"naive_mae"`
}

// ForecastHorizon is the outlook over one of the horizons a forecast rule
// serves: the peak of the mean over the leads up to it, when it is
// expected, and the peak of the upper bound.
type ForecastHorizon struct {
	HorizonSeconds float64   `json:"horizon_seconds"`
	Peak           JSONFloat `json:"peak"`
	PeakTime       time.Time `json:"peak_time"`
	UpperPeak      JSONFloat `json:"upper_peak"`
}

// ForecastData is the data of a forecast event: one series' outlook.
// Points reach the longest horizon, HorizonSeconds; Peak, PeakTime and
// UpperPeak are over it, and Horizons holds them over each horizon the
// rule serves, shortest first.
type ForecastData struct {
	Group          string            `json:"group"`
	Rule           string            `json:"rule"`
	Labels         map[string]string `json:"labels"`
	Series         string            `json:"series"`
	Origin         time.Time         `json:"origin"`
	LastValue      JSONFloat         `json:"last_value"`
	StepSeconds    float64           `json:"step_seconds"`
	HorizonSeconds float64           `json:"horizon_seconds"`
	Model          string            `json:"model"`
	Fallback       string            `json:"fallback,omitempty"`
	Level          float64           `json:"level"`
	Points         []ForecastPoint   `json:"points"`
	Peak           JSONFloat         `json:"peak"`
	PeakTime       time.Time         `json:"peak_time"`
	UpperPeak      JSONFloat         `json:"upper_peak"`
	GapsFilled     int               `json:"gaps_filled"`
	Accuracy       ForecastAccuracy  `json:"accuracy"`
	Horizons       []ForecastHorizon `json:"horizons,omitempty"`
}

// ScaleData is the data of a scale signal: the desired replicas of one
// target.
type ScaleData struct {
	Group string `json:"group"`
	Rule  string `json:"rule"`
	// Target is the target's identity: its labels in selector syntax,
	// e.g. {model="qwen2.5-32b-instruct"}.
	Target             string            `json:"target"`
	Labels             map[string]string `json:"labels"`
	Time               time.Time         `json:"time"`
	DesiredReplicas    int               `json:"desired_replicas"`
	CurrentReplicas    int               `json:"current_replicas"`
	CurrentKnown       bool              `json:"current_known"`
	PredictedLoad      JSONFloat         `json:"predicted_load"`
	PredictedUpper     JSONFloat         `json:"predicted_upper"`
	CapacityPerReplica JSONFloat         `json:"capacity_per_replica"`
	Tier               int               `json:"tier"`
	Reason             string            `json:"reason"`
	ValidUntil         time.Time         `json:"valid_until"`
	ForecastModel      string            `json:"forecast_model,omitempty"`
	// HorizonSeconds is the forecast horizon the decision served: the
	// predicted load is the peak over it (0, left out: none was known).
	HorizonSeconds float64 `json:"horizon_seconds,omitempty"`
	// PreviousDesiredReplicas is the previous decision of the same rule
	// and target, against which DesiredReplicas, the new decision, is
	// made (nil, left out: this is the first). CurrentReplicas are the
	// observed replicas, when CurrentKnown (0 otherwise).
	PreviousDesiredReplicas *int `json:"previous_desired_replicas,omitempty"`
}

// Scores are what an anomaly or window rule judged of one series in one
// evaluation, point by point: the score (≥ 1 anomalous), the expected value
// and the band, as vmanomaly's anomaly_score, yhat, yhat_lower and
// yhat_upper. NaN where a detector has no such figure (not ready yet, a
// one-sided band).
type Scores struct {
	Group, Rule string
	// Kind is the rule's kind, e.g. "anomaly".
	Kind string
	// Labels are the series' labels plus the rule's; Series its identity.
	Labels map[string]string
	Series string
	// T holds unix milliseconds, ascending; the other slices are as long.
	T                             []int64
	Value, Score, Expected, Lower []float64
	Upper                         []float64
}

// ReadingSpan is the span of which a rule hands on each series' highest
// judged value in Readings.
const ReadingSpan = 5 * time.Minute

// Readings are what an anomaly rule judged of one series in one
// evaluation, as levels: the highest value of each ReadingSpan (aligned
// on the epoch) with its time, anomalous or not.
type Readings struct {
	Group, Rule string
	// Labels are the series' labels plus the rule's; Series its identity.
	Labels map[string]string
	Series string
	// T holds unix milliseconds, ascending, one per span; V the values.
	T []int64
	V []float64
}

// ForecastMiss is a point of a forecast rule's series above the upper
// bound its last forecast gave for that time: load above the forecast's
// interval.
type ForecastMiss struct {
	Group  string            `json:"group"`
	Rule   string            `json:"rule"`
	Labels map[string]string `json:"labels"`
	Series string            `json:"series"`
	Time   time.Time         `json:"time"`
	Value  JSONFloat         `json:"value"`
	Upper  JSONFloat         `json:"upper"`
	// Origin is when the forecast that gave Upper was made.
	Origin time.Time `json:"origin"`
}

// Add adds a judged value at t (unix ms, not before the newest held):
// it becomes the span's reading when the span has none or a lower one.
// NaN and ±Inf are skipped.
func (r *Readings) Add(t int64, v float64) {
	if !isNum(v) {
		return
	}
	span := ReadingSpan.Milliseconds()
	if n := len(r.T); n > 0 && floorDiv(r.T[n-1], span) == floorDiv(t, span) {
		if v > r.V[n-1] {
			r.T[n-1], r.V[n-1] = t, v
		}
		return
	}
	r.T, r.V = append(r.T, t), append(r.V, v)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Batch is what one evaluation of a rule group produced, in order. Rules
// fill Observations (the points of series whose alerts are or may become
// active); a Lifecycle turns them into Findings and Alerts. Scores are
// filled only when the manager is asked for them.
type Batch struct {
	Group string
	// At is the evaluation's time: the newest point it judged.
	At           time.Time
	Observations []Observation
	Findings     []Finding
	Alerts       []AlertData
	Forecasts    []ForecastData
	Scales       []ScaleData
	// Incidents are the incident events the alerts of this batch made
	// (Pipeline.Incidents fills them).
	Incidents []IncidentData
	Scores    []Scores
	// Readings are the levels the rules judged on each series, anomalous
	// or not: a LevelStore keeps them for the incidents' diagnoses.
	Readings []Readings
	// Misses are the points forecast rules saw above their own last
	// forecast's interval: load the forecast did not expect.
	Misses []ForecastMiss
	// Evaluated are the rules of the group whose evaluation succeeded,
	// each with the newest point it judged: the lifecycle ends the alerts
	// of a rule's series that had no point for its AbsentAfter by then.
	Evaluated []RuleEvaluated
}

// RuleEvaluated says that a rule judged its series up to Through.
type RuleEvaluated struct {
	Rule        string
	Through     time.Time
	AbsentAfter time.Duration
}

// Len is the number of events in b (scores are not events).
func (b *Batch) Len() int {
	return len(b.Findings) + len(b.Alerts) + len(b.Forecasts) + len(b.Scales) + len(b.Incidents)
}

// JSONFloat is a float64 that encodes NaN and ±Inf as null: an undefined
// figure.
type JSONFloat float64

// MarshalJSON writes f, or null when f is not finite.
func (f JSONFloat) MarshalJSON() ([]byte, error) {
	return appendJSONFigure(make([]byte, 0, 24), f), nil
}

// appendJSONFloat appends the finite x as encoding/json writes a float64:
// the shortest decimal, in exponent form below 1e-6 and from 1e21, with
// the exponent's leading zero dropped (1e-7, not 1e-07).
func appendJSONFloat(b []byte, x float64) []byte {
	format := byte('f')
	if a := math.Abs(x); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, x, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// appendJSONFigure appends x as JSONFloat encodes it: null when it is not
// finite.
func appendJSONFigure(b []byte, x JSONFloat) []byte {
	if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return appendJSONFloat(b, float64(x))
}

// MarshalJSON writes the point as its fields' encodings would be, in one
// piece: a forecast event holds a point per lead (40 at a 15-second step
// and a 10-minute horizon), and encoding/json would otherwise call and
// check four encoders per point.
func (p ForecastPoint) MarshalJSON() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, 128))
}

func (p ForecastPoint) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"time":"`...)
	b, err := p.Time.AppendText(b)
	if err != nil {
		return nil, fmt.Errorf("forecast point: %w", err)
	}
	b = append(b, `","mean":`...)
	b = appendJSONFigure(b, p.Mean)
	b = append(b, `,"lower":`...)
	b = appendJSONFigure(b, p.Lower)
	b = append(b, `,"upper":`...)
	b = appendJSONFigure(b, p.Upper)
	return append(b, '}'), nil
}

// forecastHead and forecastTail are ForecastData's fields before and after
// Points, in its order, for encodeForecast.
type forecastHead struct {
	Group          string            `json:"group"`
	Rule           string            `json:"rule"`
	Labels         map[string]string `json:"labels"`
	Series         string            `json:"series"`
	Origin         time.Time         `json:"origin"`
	LastValue      JSONFloat         `json:"last_value"`
	StepSeconds    float64           `json:"step_seconds"`
	HorizonSeconds float64           `json:"horizon_seconds"`
	Model          string            `json:"model"`
	Fallback       string            `json:"fallback,omitempty"`
	Level          float64           `json:"level"`
}

type forecastTail struct {
	Peak       JSONFloat         `json:"peak"`
	PeakTime   time.Time         `json:"peak_time"`
	UpperPeak  JSONFloat         `json:"upper_peak"`
	GapsFilled int               `json:"gaps_filled"`
	Accuracy   ForecastAccuracy  `json:"accuracy"`
	Horizons   []ForecastHorizon `json:"horizons,omitempty"`
}

// encodeForecast writes d byte for byte as json.Marshal does, with the
// points written here between the fields before and after them:
// encoding/json checks and compacts what each point's MarshalJSON returns,
// which was most of the cost of a forecast event.
func encodeForecast(d *ForecastData) ([]byte, error) {
	head, err := json.Marshal(forecastHead{Group: d.Group, Rule: d.Rule, Labels: d.Labels, Series: d.Series,
		Origin: d.Origin, LastValue: d.LastValue, StepSeconds: d.StepSeconds, HorizonSeconds: d.HorizonSeconds,
		Model: d.Model, Fallback: d.Fallback, Level: d.Level})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(forecastTail{Peak: d.Peak, PeakTime: d.PeakTime, UpperPeak: d.UpperPeak,
		GapsFilled: d.GapsFilled, Accuracy: d.Accuracy, Horizons: d.Horizons})
	if err != nil {
		return nil, err
	}
	// Both are objects with at least one field: head loses its '}' and
	// tail its '{'.
	b := make([]byte, 0, len(head)+len(tail)+16+128*len(d.Points))
	b = append(b, head[:len(head)-1]...)
	b = append(b, `,"points":`...)
	if d.Points == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range d.Points {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = p.appendJSON(b); err != nil {
				return nil, fmt.Errorf("point %d: %w", i+1, err)
			}
		}
		b = append(b, ']')
	}
	b = append(b, ',')
	return append(b, tail[1:]...), nil
}

// UnmarshalJSON reads a number, or null as NaN: what MarshalJSON wrote
// reads back as the same figure, undefined included.
func (f *JSONFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = JSONFloat(math.NaN())
		return nil
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*f = JSONFloat(x)
	return nil
}
