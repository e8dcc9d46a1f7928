package rules

import (
	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// IncidentPolicy is the incident policy of a configuration: its incidents
// section, the preset rules' signals, and a settle time of the longest
// for of its rules (an alert whose window starts within the gap fires that
// much later).
func IncidentPolicy(cfg *rulefmt.Config) alerting.IncidentPolicy {
	in := cfg.Incidents
	p := alerting.IncidentPolicy{By: in.By, List: in.List, Gap: in.Gap, MaxAge: in.MaxAge, MaxOpen: in.MaxOpen,
		MaxMembers: in.MaxMembers, Signals: rulefmt.PresetSignals(), ChangeWithin: in.ChangeWithin,
		ChangeLabels: in.ChangeLabels}
	if in.By == nil { // a configuration made in code, not read from a file
		p.By, p.List = nil, nil
	}
	for _, g := range cfg.Groups {
		for _, r := range g.Rules {
			p.Settle = max(p.Settle, r.For)
		}
	}
	diagnoses := in.Diagnoses
	if diagnoses == nil {
		diagnoses = rulefmt.DefaultDiagnoses
	}
	for _, d := range diagnoses {
		p.Diagnoses = append(p.Diagnoses, alerting.DiagnosisRule{Name: d.Name, Title: d.Title, Check: d.Check,
			When: conditions(d.When), Also: conditions(d.Also)})
	}
	return p
}

func conditions(cs []rulefmt.Condition) []alerting.Condition {
	var out []alerting.Condition
	for _, c := range cs {
		out = append(out, alerting.Condition{Signal: c.Signal, Is: c.Is, Detail: c.Detail, Above: c.Above, Below: c.Below,
			LevelAbove: c.LevelAbove, LevelBelow: c.LevelBelow, LabelChanged: c.LabelChanged, Labels: c.Labels,
			ForecastMissed: c.ForecastMissed, Any: conditions(c.Any)})
	}
	return out
}
