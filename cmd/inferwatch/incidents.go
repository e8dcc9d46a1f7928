package main

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// newIncidents makes the incident tracker of cfg and the level store the
// pipeline records the rules' readings in, which gives the tracker's
// diagnoses the levels of the units' signals.
func newIncidents(cfg *rulefmt.Config, store alerting.StateStore, logger *slog.Logger, set *metrics.Set) (*alerting.Incidents, *alerting.LevelStore) {
	p := rules.IncidentPolicy(cfg)
	levels := alerting.NewLevelStore(alerting.LevelOptions{Policy: p})
	return alerting.NewIncidents(alerting.IncidentOptions{Policy: p, Store: store, Levels: levels, Logger: logger, Metrics: set}), levels
}

// incidentsReloader applies the incidents section of a reloaded
// configuration to the tracker and the level store.
func incidentsReloader(incidents *alerting.Incidents, levels *alerting.LevelStore, logger *slog.Logger) func(*rulefmt.Config) {
	return func(cfg *rulefmt.Config) {
		p := rules.IncidentPolicy(cfg)
		levels.SetPolicy(p)
		incidents.SetPolicy(p)
		logger.Info("incidents section applied", "gap", p.Gap, "diagnoses", len(p.Diagnoses))
	}
}

// expectFirstBatches makes the incidents wait for the first evaluation of
// every group, at most the longest group interval, so that a backfill's
// groups judged at once open each incident by the alert that fired first,
// whichever group's evaluation finishes first.
func expectFirstBatches(incidents *alerting.Incidents, groups []*rules.Group) {
	var longest time.Duration
	for _, g := range groups {
		longest = max(longest, g.Interval())
	}
	incidents.Expect(groupNames(groups), longest)
}

var incidentColours = map[alerting.IncidentStatus]string{
	alerting.IncidentOpened:   ansiBoldRed,
	alerting.IncidentUpdated:  ansiMagenta,
	alerting.IncidentResolved: ansiGreen,
}

// incident renders an incident event as a block: a head line with the
// unit, the pods and the diagnosis, then the timeline, the evidence and
// what to check, indented.
func (p *tailPrinter) incident(at time.Time, d *alerting.IncidentData) string {
	sev := "warning"
	for _, m := range d.Members {
		if m.Severity == "critical" {
			sev = "critical"
		}
	}
	where := ""
	for _, l := range slices.Sorted(maps.Keys(d.Where)) {
		where += fmt.Sprintf(", %s %s", l, strings.Join(d.Where[l], " "))
	}
	diag := "no diagnosis"
	if d.Diagnosis.Name != alerting.DiagnosisNone {
		diag = fmt.Sprintf("%s (confidence %.2f)", d.Diagnosis.Title, d.Diagnosis.Confidence)
	}
	var b strings.Builder
	b.WriteString(p.paint(ansiDim, at.UTC().Format(time.RFC3339)) + "  " + p.col(incidentColours[d.Status], "incident", 11) + " " +
		p.col(severityColour(sev), sev, 8) + "  " + p.paint(ansiBold, d.Group+"/"+d.Unit) + "  " +
		fmt.Sprintf("%s: %s, %d alerts%s, from %s", d.Status, p.paint(ansiBold, diag), len(d.Members), where, d.Start.UTC().Format(time.RFC3339)))
	if d.ResolvedAt != nil {
		b.WriteString(" to " + d.ResolvedAt.UTC().Format(time.RFC3339))
	}
	for _, e := range d.Timeline {
		fmt.Fprintf(&b, "\n    %s  %-8s %s", e.Time.UTC().Format("15:04:05"), e.What, e.Text)
	}
	if d.Dropped > 0 {
		fmt.Fprintf(&b, "\n    %d more alerts are not listed", d.Dropped)
	}
	for _, e := range d.Diagnosis.Evidence {
		b.WriteString("\n    " + p.paint(ansiDim, e))
	}
	if d.Diagnosis.Check != "" {
		b.WriteString("\n    check: " + d.Diagnosis.Check)
	}
	if len(d.Diagnosis.Others) > 0 {
		b.WriteString("\n    also possible: " + strings.Join(d.Diagnosis.Others, ", "))
	}
	return b.String()
}
