// Package report makes the daily trend reports people open: for each model
// or service of a fleet, its latency quantiles against the day before and
// the week before, throughput and its decay η, the knee of its
// QPS–concurrency curve and where it ran on it, capacity headroom, its
// SLOs (error budget and burn rates), the anomalies and alerts the daemon
// published, GPU-utilisation ↔ latency-jitter coupling, yesterday's
// forecast accuracy and the scale signals issued, with a few sentences at
// the top saying what changed and why.
//
// A report is gathered (Build: range queries through a Querier, the
// daemon's events through an EventReader), written as one self-contained
// HTML file with charts drawn by gonum/plot's SVG back end, a JSON file in
// the schema of schema/report.v1.json and a Markdown summary (Write), and
// announced as a CloudEvent on <prefix>.reports.<name> (Deliver). The
// Scheduler runs reports on their cron schedules.
package report

import (
	"time"

	"github.com/inferwatch/inferwatch/alerting"
)

// SchemaID names the version of the JSON document; it changes when a
// field changes meaning or goes away.
const SchemaID = "https://inferwatch.io/schemas/report.v1.json"

// F is a figure that may be undefined: NaN and ±Inf encode as null.
type F = alerting.JSONFloat

// Document is one report: every figure it shows.
type Document struct {
	Schema      string    `json:"$schema"`
	Name        string    `json:"name"`
	GeneratedAt time.Time `json:"generated_at"`
	TimeZone    string    `json:"time_zone"`
	// Period is what the report covers; Comparisons the periods it is
	// compared with (by default the day before and the same day a week
	// before), each as long in calendar terms.
	Period      Period   `json:"period"`
	Comparisons []Period `json:"comparisons"`
	Engine      string   `json:"engine"`
	Selector    string   `json:"selector"`
	By          []string `json:"by"`
	// Changes are the sentences of "what changed and why"; empty when
	// nothing crossed a threshold.
	Changes []Change `json:"changes"`
	Models  []Model  `json:"models"`
	// FleetChanges are the models (values of By) that appeared in the
	// period or vanished from it against the day before.
	FleetChanges []LabelChange `json:"fleet_changes"`
	SLOs         []SLOReport   `json:"slos"`
	Anomalies    Episodes      `json:"anomalies"`
	Alerts       Episodes      `json:"alerts"`
	// Incidents are the incidents of the period (open in it at some
	// time), in the order of their starts, as the daemon last published
	// them.
	Incidents []Incident     `json:"incidents"`
	Forecasts []ForecastRule `json:"forecasts"`
	Scale     []ScaleTarget  `json:"scale"`
	// Notes say what could not be measured and why (no data, an
	// unreachable stream, a query that failed).
	Notes []string `json:"notes"`
	// Events says whether the daemon's events could be read.
	Events EventsRead `json:"events"`
}

// Period is a span of time with its label ("report", "day before", …).
type Period struct {
	Label string    `json:"label"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Hours float64   `json:"hours"`
	// ClockChange says how a daylight-saving change made the period
	// shorter or longer than its nominal length ("" when none did).
	ClockChange string `json:"clock_change,omitempty"`
}

// EventsRead says what was read from the stream.
type EventsRead struct {
	Read      bool     `json:"read"`
	Subjects  []string `json:"subjects"`
	Count     int      `json:"count"`
	Error     string   `json:"error,omitempty"`
	Undecoded int      `json:"undecoded"`
}

// Change is one sentence of "what changed and why".
type Change struct {
	Kind  string `json:"kind"`
	Model string `json:"model,omitempty"`
	Text  string `json:"text"`
	// Evidence is the id of the section that holds the figures.
	Evidence string `json:"evidence"`
}

// Model is one model or service: the series sharing the values of By.
type Model struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels"`
	Coverage DataCoverage      `json:"coverage"`
	Replicas Replicas          `json:"replicas"`
	Latency  []Latency         `json:"latency"`
	Traffic  Traffic           `json:"traffic"`
	Decay    DecayReport       `json:"decay"`
	Knee     KneeReport        `json:"knee"`
	Capacity CapacityReport    `json:"capacity"`
	Coupling CouplingReport    `json:"coupling"`
	// LabelChanges are the values of tracked labels that appeared or
	// vanished against the day before.
	LabelChanges []LabelChange `json:"label_changes"`

	charts modelCharts
}

// DataCoverage is how much of the period the model has samples for.
type DataCoverage struct {
	Share F      `json:"share"`
	Gaps  []Span `json:"gaps"`
	// FirstSample and LastSample are the model's first and last samples
	// in the period (null: none).
	FirstSample *time.Time `json:"first_sample"`
	LastSample  *time.Time `json:"last_sample"`
}

// Replicas counts the model's replicas (instance label values).
type Replicas struct {
	AtEnd int `json:"at_end"`
	Max   int `json:"max"`
}

// Latency is one latency histogram's quantiles over the period and the
// comparison periods.
type Latency struct {
	Kind      string     `json:"kind"` // ttft, itl, e2e
	Title     string     `json:"title"`
	Metric    string     `json:"metric"`
	Available bool       `json:"available"`
	Quantiles []Quantile `json:"quantiles"`
}

// Quantile is one quantile in seconds: its value over the period, over
// each comparison period, and the relative change against each.
type Quantile struct {
	Q        float64 `json:"q"`
	Value    F       `json:"value"`
	Previous []F     `json:"previous"`
	Change   []F     `json:"change"`
}

// Traffic is the request rate and the generation token rate.
type Traffic struct {
	Requests Rate `json:"requests_per_second"`
	Tokens   Rate `json:"generation_tokens_per_second"`
}

// Rate is a rate over the period (5-minute rates): its mean and peak, and
// the means over the comparison periods with the relative change.
type Rate struct {
	Mean     F          `json:"mean"`
	Peak     F          `json:"peak"`
	PeakTime *time.Time `json:"peak_time"`
	Previous []F        `json:"previous"`
	Change   []F        `json:"change"`
	// SurgeRatio is the largest ratio, held for at least 15 minutes, of
	// the rate to the rate at the same time the day before; SurgeAt when.
	SurgeRatio F          `json:"surge_ratio"`
	SurgeAt    *time.Time `json:"surge_at"`
}

// DecayReport is throughput decay: η = 1 − T/T_peak of generation tokens
// per second per running request, T_peak the 0.99 quantile of the week
// before the period's end.
type DecayReport struct {
	Available bool `json:"available"`
	Peak      F    `json:"peak"`
	// EtaCurrent is the median η of the period's last hour; EtaMean the
	// mean over the period.
	EtaCurrent F `json:"eta_current"`
	EtaMean    F `json:"eta_mean"`
	// TrendPerDay is the Theil–Sen slope of η over the period (per day)
	// with its 95 % interval; Significant when the interval excludes 0 on
	// the decaying side and the slope is at least MinSlope.
	TrendPerDay F       `json:"trend_per_day"`
	TrendLower  F       `json:"trend_lower"`
	TrendUpper  F       `json:"trend_upper"`
	MinSlope    float64 `json:"min_slope"`
	Significant bool    `json:"significant"`
	// DayOverDay and WeekOverWeek are the mean η of the last day minus
	// that of the day before and of the same day a week before.
	DayOverDay   F `json:"day_over_day"`
	WeekOverWeek F `json:"week_over_week"`
}

// KneeReport is the knee of the QPS–concurrency curve over the week up to
// the period's end, and where the model ran on it during the period.
type KneeReport struct {
	Found  bool   `json:"found"`
	Reason string `json:"reason,omitempty"`
	// Concurrency and QPS are the knee's, for the whole model; Strength
	// Kneedle's (how far the knee stands above the chord).
	Concurrency F `json:"concurrency"`
	QPS         F `json:"qps"`
	Strength    F `json:"strength"`
	// MedianConcurrency and P95Concurrency are the period's; ShareBeyond
	// the share of its minutes at or past the knee.
	MedianConcurrency F   `json:"median_concurrency"`
	P95Concurrency    F   `json:"p95_concurrency"`
	ShareBeyond       F   `json:"share_beyond"`
	Points            int `json:"points"`
}

// CapacityReport is headroom against the knee and the latency SLO: the
// knee's throughput (the most the model served before more concurrency
// stopped paying) against the period's peak request rate, and the
// period's P99 end-to-end latency against the latency SLO's threshold.
type CapacityReport struct {
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// KneeRPS is the model's throughput at the knee; PerReplica that over
	// the replicas at the period's end.
	KneeRPS    F `json:"knee_rps"`
	PerReplica F `json:"per_replica_rps"`
	PeakDemand F `json:"peak_demand_rps"`
	// Utilization is the peak over KneeRPS and Headroom 1 − Utilization;
	// Needed the replicas that carry the peak at PerReplica each.
	Utilization F   `json:"utilization"`
	Headroom    F   `json:"headroom"`
	Needed      int `json:"replicas_needed"`
	// P99 is the period's P99 end-to-end latency; SLOThreshold that of the
	// latency SLO named SLO ("" and null: none); WithinSLO whether it held.
	P99          F      `json:"p99_seconds"`
	SLO          string `json:"slo"`
	SLOThreshold F      `json:"slo_threshold_seconds"`
	WithinSLO    *bool  `json:"within_slo"`
}

// CouplingReport is GPU utilisation against latency jitter per replica.
type CouplingReport struct {
	Available bool             `json:"available"`
	Reason    string           `json:"reason,omitempty"`
	Pairs     int              `json:"pairs"`
	Windows   int              `json:"windows_judged"`
	Coupled   []CouplingWindow `json:"coupled"`
}

// CouplingWindow is a stretch where one replica's GPU utilisation and the
// jitter of its time to first token (15-minute standard deviation) were
// coupled while the GPU ran at 95 % or more.
type CouplingWindow struct {
	Instance   string    `json:"instance"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Pearson    F         `json:"pearson"`
	PValue     F         `json:"p_value"`
	N          int       `json:"n"`
	LagSeconds F         `json:"lag_seconds"`
	GPUMax     F         `json:"gpu_max"`
}

// LabelChange is a value of a tracked label that appeared in the period
// or that was there the day before and is gone.
type LabelChange struct {
	Label  string    `json:"label"`
	Value  string    `json:"value"`
	Change string    `json:"change"` // appeared, vanished
	At     time.Time `json:"at"`     // first sample (appeared) or last (vanished)
}

// SLOReport is one SLO and its series.
type SLOReport struct {
	Name          string      `json:"name"`
	Description   string      `json:"description,omitempty"`
	Kind          string      `json:"kind"` // events, latency
	ObjectivePct  float64     `json:"objective_percent"`
	WindowSeconds float64     `json:"window_seconds"`
	Threshold     F           `json:"threshold_seconds"`
	Series        []SLOSeries `json:"series"`
	Reason        string      `json:"reason,omitempty"`
}

// SLOSeries is one series of an SLI: the SLI over the period and over
// the SLO window, the error budget, and the burn rates at the period's
// end.
type SLOSeries struct {
	ID     string            `json:"id"`
	Labels map[string]string `json:"labels"`
	// SLIPeriod and SLIWindow are the shares of good events.
	SLIPeriod F `json:"sli_period"`
	SLIWindow F `json:"sli_window"`
	// WindowData is the share of the SLO window the store has data for.
	WindowData  F `json:"window_data"`
	BudgetSpent F `json:"budget_spent"`
	BudgetLeft  F `json:"budget_left"`
	// PeriodBudget is the share of the window's budget the period used.
	PeriodBudget F     `json:"period_budget"`
	Burn1h       F     `json:"burn_rate_1h"`
	Burn6h       F     `json:"burn_rate_6h"`
	Burn24h      F     `json:"burn_rate_24h"`
	Met          *bool `json:"met"`

	chart []point
}

// Episodes are findings (or alerts) of the period.
type Episodes struct {
	Count int `json:"count"`
	// TotalSeconds sums each episode's span in the period: a finding's
	// from its first anomalous sample to the sample at which it fired, an
	// alert's from when it became active to when it resolved.
	TotalSeconds F              `json:"total_seconds"`
	ByKind       map[string]int `json:"by_kind"`
	Top          []Episode      `json:"top"`
}

// Incident is one incident: the alerts of one serving unit that fired
// together, with its first diagnosis.
type Incident struct {
	ID     string            `json:"id"`
	Group  string            `json:"group"`
	Unit   string            `json:"unit"`
	Labels map[string]string `json:"labels"`
	Start  time.Time         `json:"start"`
	End    time.Time         `json:"end"`
	// ResolvedAt is absent while the incident is open.
	ResolvedAt *time.Time          `json:"resolved_at,omitempty"`
	Alerts     int                 `json:"alerts"`
	Where      map[string][]string `json:"where,omitempty"`
	// Diagnosis is the diagnosis rule's name (none: no diagnosis), Title
	// its words, Confidence the share of its conditions that hold.
	Diagnosis  string   `json:"diagnosis"`
	Title      string   `json:"title"`
	Confidence F        `json:"confidence"`
	Check      string   `json:"check,omitempty"`
	Evidence   []string `json:"evidence"`
}

// Episode is one finding or alert.
type Episode struct {
	Kind     string            `json:"kind"`
	Group    string            `json:"group,omitempty"`
	Rule     string            `json:"rule,omitempty"`
	Series   string            `json:"series"`
	Labels   map[string]string `json:"labels"`
	Start    time.Time         `json:"start"`
	End      time.Time         `json:"end"`
	Severity string            `json:"severity,omitempty"`
	Score    F                 `json:"score"`
	Value    F                 `json:"value"`
}

// ForecastRule is one forecast rule's series checked against the store.
type ForecastRule struct {
	Group  string            `json:"group"`
	Rule   string            `json:"rule"`
	Series string            `json:"series"`
	Labels map[string]string `json:"labels"`
	// Events are the forecasts of the period read; Checked those whose
	// target lay in the period and had an actual in the store.
	Events      int     `json:"events"`
	Checked     int     `json:"checked"`
	LeadSeconds float64 `json:"lead_seconds"`
	Level       float64 `json:"level"`
	MAE         F       `json:"mae"`
	NaiveMAE    F       `json:"naive_mae"`
	Ratio       F       `json:"ratio"`
	Coverage    F       `json:"coverage"`
	AboveUpper  int     `json:"above_upper"`
	// LongestAbove is the longest run of checked forecasts in a row whose
	// actual was above the interval, and LongestAboveSeconds its span.
	LongestAbove        int    `json:"longest_above"`
	LongestAboveSeconds F      `json:"longest_above_seconds"`
	Reason              string `json:"reason,omitempty"`
	// Reported is the daemon's own accuracy of the newest event.
	Reported alerting.ForecastAccuracy `json:"reported"`
}

// ScaleTarget summarises the scale signals of one target.
type ScaleTarget struct {
	Group   string    `json:"group"`
	Rule    string    `json:"rule"`
	Target  string    `json:"target"`
	Signals int       `json:"signals"`
	Min     int       `json:"min_desired"`
	Max     int       `json:"max_desired"`
	Last    time.Time `json:"last_time"`
	Desired int       `json:"last_desired"`
	Current int       `json:"last_current"`
	Tier    int       `json:"last_tier"`
	Reason  string    `json:"last_reason"`
}

// point is one sample of a chart.
type point struct {
	T int64 // unix ms
	V float64
}

// band is a forecast interval at one time.
type band struct {
	T            int64
	Lower, Upper float64
	Mean         float64
}

// modelCharts are the series the HTML charts draw.
type modelCharts struct {
	latency  map[string][3][]point // kind → P50, P95, P99
	requests []point
	reqPrev  []point // the day before, shifted onto the period
	forecast []band
	eta      []point
	trend    [2]point
	kneeAll  [][2]float64       // concurrency, qps over the week
	kneeNow  [][2]float64       // the period's
	marks    []Span             // findings of the model
	sloLine  map[string]float64 // latency kind → objective in seconds
}
