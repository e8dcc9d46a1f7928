// Package grafana builds inferwatch's Grafana dashboard with the Grafana
// Foundation SDK. The JSON is committed twice, as deploy/grafana/inferwatch.json
// (to import by hand) and in the chart (dashboards/inferwatch.json, for
// Grafana's dashboard sidecar); a test checks both are what Dashboard
// builds, and go test -run TestDashboardIsGenerated -update rewrites them.
package grafana

import (
	"encoding/json"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UID is the dashboard's uid, stable across versions so links keep working.
const UID = "inferwatch"

// Query is one query of a panel.
type Query struct {
	Expr, Legend string
}

// Panel is one panel: its title, what it shows, and its queries.
type Panel struct {
	Title, Description, Unit string
	Kind                     string // "timeseries" or "stat"
	Queries                  []Query
	// ScoreThreshold marks 1, where a score means anomalous.
	ScoreThreshold bool
	// TierMappings names the scale tiers.
	TierMappings bool
}

// Row is a titled group of panels.
type Row struct {
	Title  string
	Panels []Panel
}

// rateWindow is Grafana's rate interval: at least four scrapes.
const rateWindow = "$__rate_interval"

// Rows are the dashboard's contents, top to bottom. The queries read the
// daemon's own metrics (docs/production.md), its gauges
// (docs/autoscaling.md), the series write-back puts in the store
// (docs/writeback.md) and vLLM's own metrics.
var Rows = []Row{
	{Title: "Alerts and findings", Panels: []Panel{
		{Title: "Alerts pending or firing by severity", Kind: "stat", Description: "Alerts of every rule that are pending or firing now, by status and severity.",
			Queries: []Query{{Expr: `sum by (status, severity) (inferwatch_alerts_active)`, Legend: "{{status}} {{severity}}"}}},
		{Title: "Alert transitions by status", Kind: "timeseries", Description: "Alerts that became pending, fired, repeated, resolved or ended without firing.",
			Queries: []Query{{Expr: `sum by (status) (increase(inferwatch_alert_events_total[` + rateWindow + `]))`, Legend: "{{status}}"}}},
		{Title: "Findings by rule and severity", Kind: "timeseries", Description: "Findings each rule produced, by severity.",
			Queries: []Query{{Expr: `sum by (group, rule, severity) (increase(inferwatch_findings_total{group=~"$group"}[` + rateWindow + `]))`, Legend: "{{group}}/{{rule}} {{severity}}"}}},
		{Title: "Incidents", Kind: "timeseries",
			Description: "Incidents open now (the alerts of one model that fire together, with a first diagnosis; `inferwatch tail` shows each), and incidents opened, updated and resolved.",
			Queries: []Query{
				{Expr: `sum(inferwatch_incidents_open)`, Legend: "open"},
				{Expr: `sum by (status) (increase(inferwatch_incident_events_total[` + rateWindow + `]))`, Legend: "{{status}}"},
			}},
	}},
	{Title: "Anomalies", Panels: []Panel{
		{Title: "Anomaly score per series", Kind: "timeseries", ScoreThreshold: true,
			Description: "The newest score of each series a detector or window rule watches; 1 and above is anomalous.",
			Queries:     []Query{{Expr: `inferwatch_anomaly_score{rule=~"$rule"}`, Legend: "{{rule}} {{model_name}} {{pod}} {{gpu}}"}}},
		{Title: "Value against its band", Kind: "timeseries",
			Description: "What the rule judged and the band of normal values, from the series write-back puts in the store (needs a writeback section).",
			Queries: []Query{
				{Expr: `y{for=~"$rule"}`, Legend: "value {{for}} {{model_name}} {{pod}}"},
				{Expr: `yhat_lower{for=~"$rule"}`, Legend: "lower {{for}} {{model_name}} {{pod}}"},
				{Expr: `yhat_upper{for=~"$rule"}`, Legend: "upper {{for}} {{model_name}} {{pod}}"},
			}},
	}},
	{Title: "Forecasts", Panels: []Panel{
		{Title: "Forecast against what came", Kind: "timeseries", Unit: "reqps",
			Description: "The forecast made $horizon earlier, shifted to the time it forecast, with its 0.9 interval, against vLLM's request rate per model.",
			Queries: []Query{
				{Expr: `inferwatch_forecast{rule=~"$forecast_rule", horizon="$horizon", quantile="0.5"} offset $horizon`, Legend: "forecast {{model_name}}"},
				{Expr: `inferwatch_forecast{rule=~"$forecast_rule", horizon="$horizon", quantile="0.05"} offset $horizon`, Legend: "lower {{model_name}}"},
				{Expr: `inferwatch_forecast{rule=~"$forecast_rule", horizon="$horizon", quantile="0.95"} offset $horizon`, Legend: "upper {{model_name}}"},
				{Expr: `sum by (model_name) (rate(vllm:request_success_total[2m]))`, Legend: "actual {{model_name}}"},
			}},
	}},
	{Title: "Scale signals", Panels: []Panel{
		{Title: "Desired against current replicas", Kind: "timeseries",
			Description: "What each scale rule wants per target, and the replicas it saw.",
			Queries: []Query{
				{Expr: `inferwatch_scale_desired_replicas{rule=~"$scale_rule"}`, Legend: "desired {{rule}} {{model_name}}"},
				{Expr: `inferwatch_scale_current_replicas{rule=~"$scale_rule"}`, Legend: "current {{rule}} {{model_name}}"},
			}},
		{Title: "Why: the tier of each decision", Kind: "stat", TierMappings: true,
			Description: "1: saturated now, 2: latency near the SLO, 3: the forecast, 0: nothing to act on. The full reason is in each scale event (inferwatch tail).",
			Queries:     []Query{{Expr: `inferwatch_scale_tier{rule=~"$scale_rule"}`, Legend: "{{rule}} {{model_name}}"}}},
		{Title: "Signal valid for", Kind: "timeseries", Unit: "s",
			Description: "Seconds until each signal goes stale; below 0 KEDA's fallback acts.",
			Queries:     []Query{{Expr: `inferwatch_scale_valid_until_seconds{rule=~"$scale_rule"} - time()`, Legend: "{{rule}} {{model_name}}"}}},
	}},
	{Title: "Throughput decay", Panels: []Panel{
		{Title: "Decode throughput decay η", Kind: "timeseries", Unit: "percentunit",
			Description: "η = 1 − T / T_peak: tokens per second per running request against its peak of the last day, as the decode-throughput-decay rule judges it.",
			Queries: []Query{{
				Expr: `1 - (sum by (model_name, pod) (rate(vllm:generation_tokens_total[5m])) / sum by (model_name, pod) (vllm:num_requests_running))` +
					` / max_over_time((sum by (model_name, pod) (rate(vllm:generation_tokens_total[5m])) / sum by (model_name, pod) (vllm:num_requests_running))[1d:5m])`,
				Legend: "{{model_name}} {{pod}}",
			}}},
	}},
	{Title: "The daemon", Panels: []Panel{
		{Title: "Evaluation duration against the interval", Kind: "timeseries", Unit: "s",
			Description: "The 90th percentile of each group's evaluation, against the mean time between its evaluations: a duration near the interval misses ticks.",
			Queries: []Query{
				{Expr: `histogram_quantile(0.9, sum by (group, le) (rate(inferwatch_group_evaluation_duration_seconds_bucket{group=~"$group"}[` + rateWindow + `])))`, Legend: "p90 {{group}}"},
				{Expr: `1 / sum by (group) (rate(inferwatch_group_evaluations_total{group=~"$group"}[` + rateWindow + `]))`, Legend: "interval {{group}}"},
			}},
		{Title: "Missed ticks and failed evaluations", Kind: "timeseries",
			Queries: []Query{
				{Expr: `sum by (group) (increase(inferwatch_group_missed_iterations_total{group=~"$group"}[` + rateWindow + `]))`, Legend: "missed {{group}}"},
				{Expr: `sum by (group, rule) (increase(inferwatch_rule_evaluation_failures_total{group=~"$group"}[` + rateWindow + `]))`, Legend: "failed {{group}}/{{rule}}"},
			}},
		{Title: "Store requests", Kind: "timeseries", Unit: "reqps",
			Description: "Requests to the store by HTTP code (error: no answer), and retries.",
			Queries: []Query{
				{Expr: `sum by (code) (rate(inferwatch_source_requests_total[` + rateWindow + `]))`, Legend: "{{code}}"},
				{Expr: `sum(rate(inferwatch_source_request_retries_total[` + rateWindow + `]))`, Legend: "retries"},
			}},
		{Title: "NATS", Kind: "timeseries",
			Description: "Publishes given up and retried, and the connection's disconnects.",
			Queries: []Query{
				{Expr: `sum by (kind) (increase(inferwatch_publish_failures_total[` + rateWindow + `]))`, Legend: "failed {{kind}}"},
				{Expr: `sum by (kind) (increase(inferwatch_publish_retries_total[` + rateWindow + `]))`, Legend: "retried {{kind}}"},
				{Expr: `sum(increase(inferwatch_nats_disconnects_total[` + rateWindow + `]))`, Legend: "disconnects"},
			}},
		{Title: "Outbox depth", Kind: "timeseries",
			Description: "Findings and alert events waiting for NATS, in the outbox on disk and in memory.",
			Queries: []Query{
				{Expr: `sum(inferwatch_outbox_records_pending)`, Legend: "outbox records"},
				{Expr: `sum(inferwatch_findings_pending)`, Legend: "pending"},
			}},
		{Title: "Memory", Kind: "timeseries", Unit: "bytes",
			Queries: []Query{
				{Expr: `process_resident_memory_bytes{job=~".*inferwatch.*"}`, Legend: "resident {{instance}}"},
				{Expr: `go_memstats_heap_inuse_bytes{job=~".*inferwatch.*"}`, Legend: "heap in use {{instance}}"},
			}},
	}},
}

// Variable is a dashboard variable filled from a label's values.
type Variable struct {
	Name, Label, Metric, LabelName string
	Multi                          bool
}

// Variables are the label variables, each filled from a metric the
// daemon exports.
var Variables = []Variable{
	{Name: "group", Label: "Group", Metric: "inferwatch_group_evaluations_total", LabelName: "group", Multi: true},
	{Name: "rule", Label: "Rule", Metric: "inferwatch_anomaly_score", LabelName: "rule", Multi: true},
	{Name: "forecast_rule", Label: "Forecast rule", Metric: "inferwatch_forecast", LabelName: "rule", Multi: true},
	{Name: "horizon", Label: "Horizon", Metric: "inferwatch_forecast", LabelName: "horizon"},
	{Name: "scale_rule", Label: "Scale rule", Metric: "inferwatch_scale_desired_replicas", LabelName: "rule", Multi: true},
}

var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// Dashboard builds the dashboard.
func Dashboard() (dashboard.Dashboard, error) {
	b := dashboard.NewDashboardBuilder("inferwatch").
		Uid(UID).
		Description("Findings, anomaly scores, forecasts, scale signals and the health of the inferwatch daemon.").
		Tags([]string{"inferwatch", "llm", "vllm"}).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus"))
	for _, v := range Variables {
		q := "label_values(" + v.Metric + ", " + v.LabelName + ")"
		vb := dashboard.NewQueryVariableBuilder(v.Name).
			Label(v.Label).
			Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
			Definition(q).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc)
		if v.Multi {
			vb = vb.Multi(true).IncludeAll(true).AllValue(".*")
		}
		b = b.WithVariable(vb)
	}
	for _, row := range Rows {
		b = b.WithRow(dashboard.NewRowBuilder(row.Title))
		for _, p := range row.Panels {
			b = b.WithPanel(panel(p))
		}
	}
	return b.Build()
}

func panel(p Panel) cog.Builder[dashboard.Panel] {
	var targets []cog.Builder[variants.Dataquery]
	for i, q := range p.Queries {
		targets = append(targets, prometheus.NewDataqueryBuilder().
			Expr(q.Expr).LegendFormat(q.Legend).RefId(string(rune('A'+i))).Datasource(datasource))
	}
	if p.Kind == "stat" {
		s := stat.NewPanelBuilder().Title(p.Title).Description(p.Description).Datasource(datasource).
			Targets(targets).Height(6).Span(8)
		if p.Unit != "" {
			s = s.Unit(p.Unit)
		}
		if p.TierMappings {
			s = s.Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
				Type: dashboard.MappingTypeValueToText,
				Options: map[string]dashboard.ValueMappingResult{
					"0": {Text: cog.ToPtr("nothing to act on"), Color: cog.ToPtr("green"), Index: cog.ToPtr[int32](0)},
					"1": {Text: cog.ToPtr("saturated now"), Color: cog.ToPtr("red"), Index: cog.ToPtr[int32](1)},
					"2": {Text: cog.ToPtr("latency near the SLO"), Color: cog.ToPtr("orange"), Index: cog.ToPtr[int32](2)},
					"3": {Text: cog.ToPtr("the forecast"), Color: cog.ToPtr("blue"), Index: cog.ToPtr[int32](3)},
				},
			}}})
		}
		return s
	}
	ts := timeseries.NewPanelBuilder().Title(p.Title).Description(p.Description).Datasource(datasource).
		Targets(targets).Height(8).Span(12)
	if p.Unit != "" {
		ts = ts.Unit(p.Unit)
	}
	if p.ScoreThreshold {
		ts = ts.Thresholds(dashboard.NewThresholdsConfigBuilder().
			Mode(dashboard.ThresholdsModeAbsolute).
			Steps([]dashboard.Threshold{{Color: "green"}, {Value: cog.ToPtr(1.0), Color: "red"}})).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeLine))
	}
	return ts
}

// JSON is the dashboard as committed: indented, ending in a newline.
func JSON() ([]byte, error) {
	d, err := Dashboard()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
