package alertmanager

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
)

// DefaultResendDelay is how often a firing alert is sent again, as
// Prometheus' --rules.alert.resend-delay: Alertmanager forgets an alert
// whose endsAt has passed, so a firing one is renewed well before.
const DefaultResendDelay = time.Minute

// ForwarderOptions configure a Forwarder.
type ForwarderOptions struct {
	// Notifier delivers the alerts.
	Notifier *Notifier
	// ResendDelay is how often firing alerts are sent again (default
	// DefaultResendDelay); their endsAt lies four times that ahead.
	ResendDelay time.Duration
	// ExternalURL, when set, is where a person looks at inferwatch (or a
	// dashboard of it): generatorURL is ExternalURL with the group, rule
	// and series as query parameters.
	ExternalURL string
	// Alerts and Incidents say what is forwarded: each alert, each
	// incident as one alert (alertname InferwatchIncident), or both. Both
	// false forwards both.
	Alerts, Incidents bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Forwarder turns alert events into Alertmanager alerts: a firing alert is
// sent when it fires and again every ResendDelay while it fires, with
// endsAt ahead of now, so Alertmanager's grouping, inhibition, silences
// and routing work as users run them; a resolved one is sent once with
// endsAt at its resolution. It implements alerting.Receiver.
type Forwarder struct {
	o ForwarderOptions

	mu       sync.Mutex
	firing   map[string]Alert // by group/rule/series
	lastSend time.Time
}

// NewForwarder returns a Forwarder sending through o.Notifier.
func NewForwarder(o ForwarderOptions) (*Forwarder, error) {
	if o.Notifier == nil {
		return nil, fmt.Errorf("alertmanager: ForwarderOptions needs a Notifier")
	}
	if o.ResendDelay <= 0 {
		o.ResendDelay = DefaultResendDelay
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if !o.Alerts && !o.Incidents {
		o.Alerts, o.Incidents = true, true
	}
	if o.ExternalURL != "" {
		if u, err := url.Parse(o.ExternalURL); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("alertmanager: external URL %q is not an absolute URL", o.ExternalURL)
		}
	}
	return &Forwarder{o: o, firing: map[string]Alert{}}, nil
}

// Seed makes the Forwarder send the alerts already firing (restored after
// a restart) as if they had just fired.
func (f *Forwarder) Seed(firing []alerting.AlertData) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.o.Alerts {
		return
	}
	for _, d := range firing {
		f.firing[key(d)] = f.alert(d)
	}
	f.lastSend = time.Time{}
}

// Forget stops re-sending the firing alerts of group: another process
// evaluates the group now and sends them.
func (f *Forwarder) Forget(group string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.firing {
		if strings.HasPrefix(k, group+"\x00") {
			delete(f.firing, k)
		}
	}
}

// SeedIncidents makes the Forwarder send the incidents already open
// (restored after a restart) as if they had just opened.
func (f *Forwarder) SeedIncidents(open []alerting.IncidentData) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.o.Incidents {
		return
	}
	for _, d := range open {
		f.firing[incidentKey(d)] = f.incident(d)
	}
	f.lastSend = time.Time{}
}

// ForgetIncidents stops re-sending the open incidents: another process
// of the set makes them now and sends them.
func (f *Forwarder) ForgetIncidents() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.firing {
		if strings.HasPrefix(k, incidentPrefix) {
			delete(f.firing, k)
		}
	}
}

// Send takes the alert events of one evaluation; it never waits on an
// Alertmanager.
func (f *Forwarder) Send(_ context.Context, b alerting.Batch) error {
	now := f.o.Now()
	f.mu.Lock()
	var out []Alert
	sent := map[string]bool{}
	for _, d := range b.Alerts {
		if !f.o.Alerts || d.Status == alerting.StatusPending || d.Status == alerting.StatusInactive {
			continue
		}
		sent[key(d)] = true
		a := f.alert(d)
		switch d.Status {
		case alerting.StatusFiring, alerting.StatusRepeat:
			f.firing[key(d)] = a
			a.EndsAt = now.Add(4 * f.o.ResendDelay)
			out = append(out, a)
		case alerting.StatusResolved:
			delete(f.firing, key(d))
			out = append(out, a)
		}
	}
	for _, d := range b.Incidents {
		if !f.o.Incidents {
			break
		}
		k := incidentKey(d)
		sent[k] = true
		a := f.incident(d)
		if prev, ok := f.firing[k]; ok && !maps.Equal(prev.Labels, a.Labels) {
			// Its diagnosis or severity changed: Alertmanager knows an
			// alert by its labels, so the one under the old labels ends.
			prev.EndsAt = now
			out = append(out, prev)
		}
		if d.Status == alerting.IncidentResolved {
			delete(f.firing, k)
		} else {
			f.firing[k] = a
			a.EndsAt = now.Add(4 * f.o.ResendDelay)
		}
		out = append(out, a)
	}
	if now.Sub(f.lastSend) >= f.o.ResendDelay {
		keys := make([]string, 0, len(f.firing))
		for k := range f.firing {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if sent[k] {
				continue
			}
			a := f.firing[k]
			a.EndsAt = now.Add(4 * f.o.ResendDelay)
			out = append(out, a)
		}
		f.lastSend = now
	}
	f.mu.Unlock()
	if len(out) > 0 {
		f.o.Notifier.Send(out...)
	}
	return nil
}

func key(d alerting.AlertData) string { return d.Group + "\x00" + d.Rule + "\x00" + d.Series }

// incidentKey starts with the separator, which no group name does.
func incidentKey(d alerting.IncidentData) string { return incidentPrefix + d.ID }

const incidentPrefix = "\x00incident\x00"

// IncidentAlertName is the alertname of an incident's alert.
const IncidentAlertName = "InferwatchIncident"

// incident is the Alertmanager alert of an incident: alertname
// InferwatchIncident, the unit's labels, the group, the kind "incident",
// the diagnosis and the highest severity of its members (when these
// change, Send ends the alert under the old labels); the summary, the
// description (what happened, in order, and the diagnosis), the
// diagnosis' check and the pods as annotations.
func (f *Forwarder) incident(d alerting.IncidentData) Alert {
	labels := map[string]string{}
	for k, v := range d.UnitLabels {
		if labelNameRE.MatchString(k) && v != "" && k[0:min(2, len(k))] != "__" {
			labels[k] = v
		}
	}
	sev := "warning"
	for _, m := range d.Members {
		if m.Severity == "critical" || (m.Severity != "" && m.Severity != "warning" && sev == "warning") {
			sev = m.Severity
		}
	}
	labels["alertname"] = IncidentAlertName
	labels["inferwatch_group"] = d.Group
	labels["inferwatch_kind"] = "incident"
	labels["incident_id"] = d.ID
	labels["diagnosis"] = d.Diagnosis.Name
	labels["severity"] = sev
	ann := map[string]string{
		"summary":     d.Summary,
		"description": d.Description,
		"unit":        d.Unit,
		"diagnosis":   d.Diagnosis.Title,
		"confidence":  fmt.Sprintf("%.2f", d.Diagnosis.Confidence),
		"alerts":      fmt.Sprint(len(d.Members)),
	}
	if d.Diagnosis.Check != "" {
		ann["check"] = d.Diagnosis.Check
	}
	for l, vs := range d.Where {
		if labelNameRE.MatchString(l) {
			ann[l] = strings.Join(vs, ", ")
		}
	}
	a := Alert{Labels: labels, Annotations: ann, StartsAt: d.OpenedAt}
	if d.ResolvedAt != nil {
		a.EndsAt = *d.ResolvedAt
	}
	if f.o.ExternalURL != "" {
		q := url.Values{"group": {d.Group}, "incident": {d.ID}}
		a.GeneratorURL = f.o.ExternalURL + "?" + q.Encode()
	}
	return a
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// alert is the Alertmanager alert of an event: alertname is the rule, the
// series' labels (its metric name as "metric") and the rule's, the group
// as inferwatch_group, the severity and the kind; the summary, the
// description and the figures as annotations.
func (f *Forwarder) alert(d alerting.AlertData) Alert {
	labels := map[string]string{}
	for k, v := range d.Labels {
		switch {
		case k == "__name__":
			labels["metric"] = v
		case labelNameRE.MatchString(k) && v != "" && k[0:min(2, len(k))] != "__":
			labels[k] = v
		}
	}
	labels["alertname"] = d.Rule
	labels["inferwatch_group"] = d.Group
	labels["inferwatch_kind"] = d.Kind
	labels["severity"] = d.Severity
	ann := map[string]string{
		"summary":     d.Summary,
		"description": d.Description,
		"series":      d.Series,
		"detector":    d.Detector,
		"score":       fmt.Sprintf("%.4g", float64(d.Score)),
		"value":       fmt.Sprintf("%.6g", float64(d.Value)),
		"expected":    fmt.Sprintf("%.6g", float64(d.Expected)),
	}
	a := Alert{Labels: labels, Annotations: ann}
	if d.FiredAt != nil {
		a.StartsAt = *d.FiredAt
	}
	if d.ResolvedAt != nil {
		a.EndsAt = *d.ResolvedAt
	}
	if f.o.ExternalURL != "" {
		q := url.Values{"group": {d.Group}, "rule": {d.Rule}, "series": {d.Series}}
		a.GeneratorURL = f.o.ExternalURL + "?" + q.Encode()
	}
	return a
}
