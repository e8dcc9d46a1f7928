package metricname

import (
	"bytes"
	"io"

	"github.com/VictoriaMetrics/metrics"
)

// help is the one-line help text of every self-metric family, by family
// name: what a Prometheus user reads on its # HELP line. A family missing
// here is one the tests reject.
var help = map[string]string{
	// cmd/inferwatch: the daemon.
	"inferwatch_config_last_reload_successful":                "Whether the last configuration load (at start or on SIGHUP) succeeded: 1 yes, 0 no.",
	"inferwatch_config_last_reload_success_timestamp_seconds": "When the configuration was last loaded successfully, in Unix seconds.",

	// alerting/cluster: the replicas sharing a configuration.
	"inferwatch_cluster_members":                  "Live members of the set of replicas this one sees, itself included.",
	"inferwatch_cluster_groups_owned":             "Groups whose lease this replica holds: the groups it evaluates.",
	"inferwatch_cluster_lease_renewals_total":     "Renewals of a lease (a group's or a role's) this replica holds.",
	"inferwatch_cluster_lease_losses_total":       "Leases (of groups and roles) another replica took from this one after it had stopped renewing them (a pause, a partition).",
	"inferwatch_cluster_leases_taken_total":       "Leases (of groups and roles) this replica took: free ones, and those of replicas that stopped renewing them.",
	"inferwatch_cluster_leases_released_total":    "Leases (of groups and roles) this replica released: to the replica that should own them, or at shutdown.",
	"inferwatch_cluster_heartbeat_failures_total": "Failed writes of this replica's heartbeat.",
	"inferwatch_cluster_role_held":                "1 while this replica holds the role (incidents: it makes the incidents of the set), else 0.",

	// rules: the manager and its groups.
	"inferwatch_group_evaluations_total":              "Evaluations of a rule group.",
	"inferwatch_group_evaluation_failures_total":      "Group evaluations in which a rule or the output failed.",
	"inferwatch_group_evaluation_duration_seconds":    "How long a group evaluation took, fetching included.",
	"inferwatch_group_missed_iterations_total":        "Evaluation ticks of a group skipped because the previous evaluation overran or the process was paused.",
	"inferwatch_evaluation_pauses_total":              "Times the process did not run for an evaluation interval or more, or its clock jumped ahead.",
	"inferwatch_samples_late_total":                   "Samples judged that were not in the store when the rule first asked for them.",
	"inferwatch_series_forgotten_total":               "Series whose state was dropped after forget_after without a point.",
	"inferwatch_rule_newest_sample_timestamp_seconds": "The newest sample a rule has judged, in Unix seconds.",
	"inferwatch_rule_samples_behind":                  "Samples the store held that a rule judging nothing new had not judged, when last asked; 0 while it judges.",
	"inferwatch_rule_evaluation_failures_total":       "Failed evaluations of a rule.",
	"inferwatch_samples_scored_total":                 "Samples judged by the rules.",
	"inferwatch_samples_dropped_total":                "Samples skipped before judging, by reason: nan, inf, stale.",
	"inferwatch_series_tracked":                       "Series with state in a detector, window or forecaster.",
	"inferwatch_points_not_reported_total":            "Judged points older than --catch-up after a gap, not reported.",
	"inferwatch_progress_save_failures_total":         "Failed saves of a rule's last judged point to the state bucket.",
	"inferwatch_progress_held_total":                  "Evaluations whose progress was not saved because alert states of the group were not saved.",
	"inferwatch_rule_samples_set_aside_total":         "Samples an anomaly rule's detectors left out of what defines normal as extreme.",
	"inferwatch_rule_shifts_accepted_total":           "Incidents auto took for a new normal after they lasted accept.",

	// alerting: findings, alerts and the publisher.
	"inferwatch_findings_total":                     "Findings produced, by group, rule and severity.",
	"inferwatch_alert_events_total":                 "Alert transitions, by status: pending, firing, repeat, resolved, inactive.",
	"inferwatch_alerts_ended_absent_total":          "Alerts ended because their series had no point for resolve_after_absent.",
	"inferwatch_alert_state_conflicts_total":        "Alert state writes another writer beat, by outcome: yielded (its state taken), overwrote.",
	"inferwatch_progress_write_conflicts_total":     "Writes of a rule's last judged point another writer beat; the newer point is kept.",
	"inferwatch_alerts_active":                      "Alerts pending or firing, by status and severity.",
	"inferwatch_alert_state_save_failures_total":    "Failed saves of an alert state to the state bucket.",
	"inferwatch_alert_states_restored_total":        "Alert states restored from the state bucket at start.",
	"inferwatch_alert_states_skipped_total":         "Stored alert states not restored at start: unreadable, not ours, or past the restore bound.",
	"inferwatch_incident_events_total":              "Incident events, by status: opened, updated, resolved.",
	"inferwatch_incident_alerts_dropped_total":      "Alerts left out of incidents, by reason: max_open (the group's open incidents at the cap), max_members (the incident's members at the cap).",
	"inferwatch_incident_state_save_failures_total": "Failed saves of an open incident to the state bucket.",
	"inferwatch_incidents_restored_total":           "Open incidents restored from the state bucket: at start, or on a set of replicas when this one takes the incidents role.",
	"inferwatch_incidents_open":                     "Incidents open now.",
	"inferwatch_incident_feed_dropped_total":        "Batches a replica dropped instead of handing them to the replica that makes the incidents of the set: too many waited for NATS, or one could not be encoded.",
	"inferwatch_findings_pending":                   "Findings and alert events waiting for NATS.",
	"inferwatch_findings_dropped_total":             "Findings dropped, by reason: rejected for good by the output, or overflow of the pending queue.",
	"inferwatch_events_dropped_total":               "Forecasts and scale signals not published, superseded by the next evaluation's, by kind.",
	"inferwatch_outbox_failures_total":              "Failed outbox operations, by op: append, ack.",

	// alerting/natsjs: JetStream.
	"inferwatch_events_published_total":     "Events JetStream acknowledged, by kind.",
	"inferwatch_events_duplicate_total":     "Publishes JetStream recognised as duplicates, by kind.",
	"inferwatch_publish_retries_total":      "Publish attempts retried, by kind.",
	"inferwatch_publish_failures_total":     "Publishes given up after their retries, by kind.",
	"inferwatch_nats_connect_retries_total": "Connection attempts to NATS at start that failed and were retried.",
	"inferwatch_nats_disconnects_total":     "Times the connection to NATS was lost.",
	"inferwatch_nats_reconnects_total":      "Times the connection to NATS was re-established.",

	// alerting/outbox.
	"inferwatch_outbox_records_appended_total":     "Records written to the outbox.",
	"inferwatch_outbox_records_acknowledged_total": "Outbox records removed on JetStream's acknowledgement.",
	"inferwatch_outbox_records_pending":            "Records the outbox holds.",
	"inferwatch_outbox_bytes":                      "Bytes the outbox holds on disk.",
	"inferwatch_outbox_dropped_total":              "Outbox records dropped, oldest first, past outbox_max_bytes.",
	"inferwatch_outbox_corrupt_total":              "Torn or corrupt outbox records cut off.",
	"inferwatch_outbox_fsync_duration_seconds":     "How long an fsync of the outbox took.",

	// ingest: the store client.
	"inferwatch_source_requests_total":           "Requests to the store, by path and HTTP code (error: no response).",
	"inferwatch_source_request_retries_total":    "Requests to the store retried.",
	"inferwatch_source_request_duration_seconds": "How long a request to the store took, reading the answer included, by path.",
	"inferwatch_source_responses_refused_total":  "Store answers refused past a limit, by limit: bytes, series, points.",
	"inferwatch_source_export_refetches_total":   "Export ranges fetched again because a series needed a longer look-behind.",
	"inferwatch_source_request_splits_total":     "Exports the store refused for its limits and that were fetched again split, by time or by series.",

	// alerting/alertmanager.
	"inferwatch_alertmanager_alerts_sent_total":        "Alerts sent to an Alertmanager.",
	"inferwatch_alertmanager_errors_total":             "Failed sends to an Alertmanager.",
	"inferwatch_alertmanager_alerts_dropped_total":     "Alerts dropped for an Alertmanager, by reason.",
	"inferwatch_alertmanager_queue_length":             "Alerts waiting to be sent to an Alertmanager.",
	"inferwatch_alertmanager_queue_capacity":           "How many alerts an Alertmanager's queue holds at most.",
	"inferwatch_alertmanager_request_duration_seconds": "How long a request to an Alertmanager took.",

	// alerting/writeback.
	"inferwatch_writeback_samples_queued_total":     "Samples queued for write-back to the store.",
	"inferwatch_writeback_samples_sent_total":       "Samples written back to the store.",
	"inferwatch_writeback_samples_dropped_total":    "Samples not written back, by reason.",
	"inferwatch_writeback_requests_total":           "Write-back requests, by HTTP code.",
	"inferwatch_writeback_errors_total":             "Write-back requests that failed for good.",
	"inferwatch_writeback_retries_total":            "Write-back requests retried.",
	"inferwatch_writeback_queue_length":             "Samples waiting for write-back.",
	"inferwatch_writeback_queue_capacity":           "How many samples the write-back queue holds at most.",
	"inferwatch_writeback_request_duration_seconds": "How long a write-back request took.",

	// alerting/promexport: the exported gauges.
	"inferwatch_export_series":               "Series exposed, by exported gauge family.",
	"inferwatch_export_series_dropped_total": "Exported series not created because their family was at max_series.",
	"inferwatch_export_labels_changed_total": "Labels of exported series changed to fit the text format, by action.",

	// alerting/keda.
	"inferwatch_keda_targets":               "Scale targets KEDA can ask for.",
	"inferwatch_keda_targets_dropped_total": "New scale targets dropped past max_targets.",
	"inferwatch_keda_requests_total":        "Requests from KEDA answered, by api, method and code.",
	"inferwatch_keda_stale_answers_total":   "Requests from KEDA refused because the signal was stale, by api.",
	"inferwatch_keda_streams":               "Open StreamIsActive streams of the external scaler.",
	"inferwatch_keda_streams_refused_total": "StreamIsActive streams refused past max_streams.",

	// report.
	"inferwatch_reports_total":                 "Reports made.",
	"inferwatch_report_failures_total":         "Reports that failed.",
	"inferwatch_report_publish_failures_total": "Reports whose announcement on NATS failed.",
	"inferwatch_report_queries_total":          "Queries the reports sent to the store.",
	"inferwatch_report_query_failures_total":   "Queries of the reports that failed.",
	"inferwatch_report_duration_seconds":       "How long making a report took.",
}

// WritePrometheus writes set to w in the Prometheus text format. When the
// metrics package exposes metadata (metrics.ExposeMetadata, a process-wide
// switch the daemon turns on), the package writes each family's # HELP
// line without text; WritePrometheus puts the family's help text on it.
// Lines with a text of their own, those of the exported gauges, are kept.
func WritePrometheus(w io.Writer, set *metrics.Set) {
	var page bytes.Buffer
	set.WritePrometheus(&page)
	w.Write(withHelp(page.Bytes()))
}

// withHelp returns page with the help text of each # HELP line that has
// none and whose family has one.
func withHelp(page []byte) []byte {
	out := make([]byte, 0, len(page)+len(page)/8)
	for len(page) > 0 {
		line, rest, _ := bytes.Cut(page, []byte{'\n'})
		page = rest
		out = append(out, line...)
		if name, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok && bytes.IndexByte(name, ' ') < 0 {
			if h := help[string(name)]; h != "" {
				out = append(out, ' ')
				out = append(out, h...)
			}
		}
		out = append(out, '\n')
	}
	return out
}

// Bucket upper bounds, in seconds, of the self-metrics' histograms (the
// +Inf bucket is always there). Each call returns a new slice: a
// histogram keeps the one it is given.

// RequestBuckets suits an HTTP request to the store, an Alertmanager or a
// write-back target: 1 ms to a minute, past the longest default timeout
// (30 s).
func RequestBuckets() []float64 {
	return []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
}

// EvaluationBuckets suits a group evaluation: milliseconds for a steady
// cycle, minutes for a first one that fetches a week of history.
func EvaluationBuckets() []float64 {
	return []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
}

// FsyncBuckets suits an fsync: 100 µs on a fast disk to a second on a
// loaded one.
func FsyncBuckets() []float64 {
	return []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
}

// ReportBuckets suits making a report, dozens of queries: 100 ms to
// 10 minutes.
func ReportBuckets() []float64 {
	return []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
}
