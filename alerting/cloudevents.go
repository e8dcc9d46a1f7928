package alerting

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// CloudEvents constants used by every event inferwatch publishes.
const (
	// CloudEventsSpecVersion is the CloudEvents specification version of Event.
	CloudEventsSpecVersion = "1.0"
	// CloudEventsContentType is the NATS Content-Type header of a
	// structured-mode CloudEvent.
	CloudEventsContentType = "application/cloudevents+json"
	// DefaultEventSource is the CloudEvents source when none is configured.
	DefaultEventSource = "/inferwatch"
	// The event types, versioned: a consumer that reads v1 keeps working
	// while a v2 is published beside it.
	FindingEventType  = "io.inferwatch.finding.v1"
	AlertEventType    = "io.inferwatch.alert.v1"
	ForecastEventType = "io.inferwatch.forecast.v1"
	ScaleEventType    = "io.inferwatch.scale.v1"
	ReportEventType   = "io.inferwatch.report.v1"
	IncidentEventType = "io.inferwatch.incident.v1"
)

// The classes of events, as the self-metrics label them (kind="…").
const (
	ClassFinding  = "finding"
	ClassAlert    = "alert"
	ClassForecast = "forecast"
	ClassScale    = "scale"
	ClassReport   = "report"
	ClassIncident = "incident"
	ClassOther    = "other"
)

// EventClasses lists the classes of events.
var EventClasses = []string{ClassFinding, ClassAlert, ClassForecast, ClassScale, ClassReport, ClassIncident, ClassOther}

// EventClass names the class of an event type: finding, alert, forecast,
// scale, report, incident, or other for a type inferwatch does not publish itself.
func EventClass(typ string) string {
	switch typ {
	case FindingEventType:
		return ClassFinding
	case AlertEventType:
		return ClassAlert
	case ForecastEventType:
		return ClassForecast
	case ScaleEventType:
		return ClassScale
	case ReportEventType:
		return ClassReport
	case IncidentEventType:
		return ClassIncident
	}
	return ClassOther
}

// FindingSubject, AlertSubject, ForecastSubject and ScaleSubject are the
// subjects events are published on under prefix: <prefix>.findings.<kind>,
// <prefix>.alerts.<group>.<rule>, <prefix>.forecasts.<rule> and
// <prefix>.scale.<rule>.
func FindingSubject(prefix, kind string) string { return prefix + ".findings." + kind }
func AlertSubject(prefix, group, rule string) string {
	return prefix + ".alerts." + group + "." + rule
}
func ForecastSubject(prefix, rule string) string { return prefix + ".forecasts." + rule }
func ScaleSubject(prefix, rule string) string    { return prefix + ".scale." + rule }

// IncidentSubject is the subject of incident events: <prefix>.incidents.<group>.
func IncidentSubject(prefix, group string) string { return prefix + ".incidents." + group }

// Event is a CloudEvents 1.0 envelope in structured-mode JSON.
type Event struct {
	SpecVersion string `json:"specversion"` // always "1.0"
	ID          string `json:"id"`
	// Source is a URI-reference naming the producer, default "/inferwatch".
	Source string `json:"source"`
	// Type is one of the versioned event types: FindingEventType,
	// AlertEventType, ForecastEventType, ScaleEventType, ReportEventType.
	Type string `json:"type"`
	// Subject is the series selector the event is about.
	Subject string `json:"subject,omitempty"`
	// Time is when the event happened, in UTC: a finding's WindowEnd, an
	// alert's evaluation, a forecast's origin, a scale decision's time.
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"` // "application/json"
	// Data is the event's JSON, as the constructors (NewFindingEvent, …)
	// and DecodeEvent make it; Encode and publishers do not scan it again.
	Data json.RawMessage `json:"data"`
}

// Validate reports the first required CloudEvents attribute that is missing
// or malformed, or data that is not JSON.
func (ev Event) Validate() error {
	if err := ev.ValidateAttributes(); err != nil {
		return err
	}
	if len(ev.Data) > 0 && !json.Valid(ev.Data) {
		return fmt.Errorf("cloudevent %q: data is not valid JSON", ev.ID)
	}
	return nil
}

// ValidateAttributes is Validate without the check of Data. Scanning a
// forecast event's data costs as much as making the event, and the events
// of NewFindingEvent, NewForecastEvent, the other constructors and
// DecodeEvent hold JSON by construction: a publisher of those checks the
// attributes only.
func (ev Event) ValidateAttributes() error {
	switch {
	case ev.SpecVersion != CloudEventsSpecVersion:
		return fmt.Errorf("cloudevent %q: specversion is %q, want %q", ev.ID, ev.SpecVersion, CloudEventsSpecVersion)
	case ev.ID == "":
		return errors.New("cloudevent: id is empty")
	case ev.Source == "":
		return fmt.Errorf("cloudevent %q: source is empty", ev.ID)
	case ev.Type == "":
		return fmt.Errorf("cloudevent %q: type is empty", ev.ID)
	}
	if _, err := url.Parse(ev.Source); err != nil {
		return fmt.Errorf("cloudevent %q: source %q is not a URI-reference: %w", ev.ID, ev.Source, err)
	}
	return nil
}

// FindingID is the stable identity of a finding: the first 32 hex digits
// of a SHA-256 over its group, rule, the series' own identity (Series: the
// labels a rule adds or overrides do not change it) and its window, start
// and end in Unix milliseconds. Every string is length-prefixed, so no
// choice of names can make two different findings collide by
// concatenation. It does not depend on score, value or the time zone of
// the window; it is the Nats-Msg-Id that lets JetStream drop a finding
// published again (after a restart, or a retry whose acknowledgement was
// lost).
func FindingID(f Finding) string {
	return eventIDOf("inferwatch.finding.v1", []string{f.Group, f.Rule, f.Series}, f.WindowStart.UnixMilli(), f.WindowEnd.UnixMilli())
}

// AlertID is the stable identity of an alert event: its group, rule,
// series, the episode's start, the status and the event's time.
func AlertID(d AlertData) string {
	return eventIDOf("inferwatch.alert.v1", []string{d.Group, d.Rule, d.Series, string(d.Status)}, d.ActiveAt.UnixMilli(), d.Time.UnixMilli())
}

// eventIDOf hashes a tag, strings (each length-prefixed) and times.
func eventIDOf(tag string, parts []string, times ...int64) string {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	w := func(s string) {
		n := binary.PutUvarint(buf[:], uint64(len(s)))
		h.Write(buf[:n])
		h.Write([]byte(s))
	}
	w(tag)
	n := binary.PutUvarint(buf[:], uint64(len(parts)))
	h.Write(buf[:n])
	for _, p := range parts {
		w(p)
	}
	for _, t := range times {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(t))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// ValidSubjectToken reports whether s can be one token of a NATS subject:
// non-empty, without '.', the wildcards '*' and '>', or white space.
func ValidSubjectToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n', '\f', '\v', 0:
			return false
		}
	}
	return true
}

// ValidSubject reports why s is not a literal NATS subject, or nil.
func ValidSubject(s string) error {
	if s == "" {
		return errors.New("subject is empty")
	}
	for i, tok := range strings.Split(s, ".") {
		if !ValidSubjectToken(tok) {
			return fmt.Errorf("subject %q: token %d (%q) is empty or holds '*', '>' or white space", s, i+1, tok)
		}
	}
	return nil
}

// NewFindingEvent wraps f in a CloudEvent from source ("" means
// DefaultEventSource). The data is the finding as JSON, with non-finite
// numbers (a one-sided band's ±Inf, an undefined estimate's NaN) written as
// null so that every finding can be encoded.
func NewFindingEvent(f Finding, source string) (Event, error) {
	if source == "" {
		source = DefaultEventSource
	}
	if !ValidSubjectToken(f.Kind) {
		return Event{}, fmt.Errorf("finding of rule %q in group %q: kind %q is not a single NATS subject token (empty, or holds '.', '*', '>' or white space)", f.Rule, f.Group, f.Kind)
	}
	if _, err := url.Parse(source); err != nil {
		return Event{}, fmt.Errorf("cloudevents source %q is not a URI-reference: %w", source, err)
	}
	data, err := json.Marshal(findingData{findingAlias: (*findingAlias)(&f),
		Value: JSONFloat(f.Value), Expected: JSONFloat(f.Expected), Lower: JSONFloat(f.Lower),
		Upper: JSONFloat(f.Upper), Score: JSONFloat(f.Score)})
	if err != nil {
		return Event{}, fmt.Errorf("encoding finding of rule %q in group %q: %w", f.Rule, f.Group, err)
	}
	return envelope(FindingEventType, FindingID(f), f.Series, source, f.WindowEnd, data), nil
}

// findingAlias has Finding's fields without its methods, so that encoding it
// cannot recurse into a MarshalJSON of Finding.
type findingAlias Finding

// findingData encodes a Finding with its float fields replaced by ones that
// write non-finite values as null; encoding/json prefers the shallower field
// of a given name, so these shadow the embedded ones.
type findingData struct {
	*findingAlias
	Value    JSONFloat `json:"value"`
	Expected JSONFloat `json:"expected"`
	Lower    JSONFloat `json:"lower"`
	Upper    JSONFloat `json:"upper"`
	Score    JSONFloat `json:"score"`
}

// UnmarshalJSON reads a finding's data as NewFindingEvent wrote it: a
// null figure (an undefined one, such as the missing side of a one-sided
// band) reads as NaN, not 0.
func (f *Finding) UnmarshalJSON(b []byte) error {
	d := findingData{findingAlias: (*findingAlias)(f), Value: JSONFloat(f.Value), Expected: JSONFloat(f.Expected),
		Lower: JSONFloat(f.Lower), Upper: JSONFloat(f.Upper), Score: JSONFloat(f.Score)}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	f.Value, f.Expected, f.Lower, f.Upper, f.Score = float64(d.Value), float64(d.Expected), float64(d.Lower), float64(d.Upper), float64(d.Score)
	return nil
}

// NewForecastEvent wraps a forecast in a CloudEvent from source (""
// means DefaultEventSource). Its id is stable over (group, rule, labels,
// origin): an outlook published again is the same event.
func NewForecastEvent(d ForecastData, source string) (Event, error) {
	id := eventIDOf("inferwatch.forecast.v1", []string{d.Group, d.Rule, d.Series}, d.Origin.UnixMilli())
	body, err := encodeForecast(&d)
	if err != nil {
		return Event{}, fmt.Errorf("encoding the forecast of %s: %w", d.Series, err)
	}
	return envelope(ForecastEventType, id, d.Series, source, d.Origin, body), nil
}

// NewScaleEvent wraps a scale signal in a CloudEvent from source; its id
// is stable over (group, rule, labels, time).
func NewScaleEvent(d ScaleData, source string) (Event, error) {
	id := eventIDOf("inferwatch.scale.v1", []string{d.Group, d.Rule, d.Target}, d.Time.UnixMilli())
	ev, err := newEvent(ScaleEventType, id, d.Target, source, d.Time, d)
	if err != nil {
		return Event{}, fmt.Errorf("encoding the scale signal for %s: %w", d.Target, err)
	}
	return ev, nil
}

func newEvent(typ, id, subject, source string, t time.Time, data any) (Event, error) {
	body, err := json.Marshal(data)
	if err != nil {
		return Event{}, err
	}
	return envelope(typ, id, subject, source, t, body), nil
}

// envelope wraps body, JSON, in a CloudEvent.
func envelope(typ, id, subject, source string, t time.Time, body []byte) Event {
	if source == "" {
		source = DefaultEventSource
	}
	return Event{SpecVersion: CloudEventsSpecVersion, ID: id, Source: source, Type: typ,
		Subject: subject, Time: t.UTC(), DataContentType: "application/json", Data: body}
}

// NewAlertEvent wraps an alert event in a CloudEvent from source.
func NewAlertEvent(d AlertData, source string) (Event, error) {
	if !ValidSubjectToken(d.Group) || !ValidSubjectToken(d.Rule) {
		return Event{}, fmt.Errorf("alert of rule %q in group %q: the group and rule names end its subject and must be NATS subject tokens (no '.', '*', '>' or white space)", d.Rule, d.Group)
	}
	ev, err := newEvent(AlertEventType, AlertID(d), d.Series, source, d.Time, d)
	if err != nil {
		return Event{}, fmt.Errorf("encoding the alert of %s: %w", d.Series, err)
	}
	return ev, nil
}

// IncidentEventID is the stable identity of an incident event: the
// incident's ID, the status, its version and the event's time.
func IncidentEventID(d IncidentData) string {
	return eventIDOf("inferwatch.incident.event.v1", []string{d.ID, string(d.Status)}, int64(d.Version), d.Time.UnixMilli())
}

// NewIncidentEvent wraps an incident event in a CloudEvent from source;
// its subject is the incident's unit.
func NewIncidentEvent(d IncidentData, source string) (Event, error) {
	if !ValidSubjectToken(d.Group) {
		return Event{}, fmt.Errorf("incident %s of group %q: the group name ends its subject and must be a NATS subject token (no '.', '*', '>' or white space)", d.ID, d.Group)
	}
	ev, err := newEvent(IncidentEventType, IncidentEventID(d), d.Unit, source, d.Time, d)
	if err != nil {
		return Event{}, fmt.Errorf("encoding incident %s of %s: %w", d.ID, d.Unit, err)
	}
	return ev, nil
}

// DecodeEvent reads a CloudEvent in structured-mode JSON, as inferwatch
// publishes it, and checks its required attributes.
func DecodeEvent(b []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return Event{}, fmt.Errorf("not a CloudEvent in JSON: %w", err)
	}
	if err := ev.Validate(); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// Encode returns ev in structured-mode JSON, byte for byte as json.Marshal
// writes it, without checking and compacting Data again: Data, the last
// attribute, is spliced in as it is, and must be JSON (newEvent's is).
// A forecast event's data is several kilobytes; a forecast rule encodes
// one per series each evaluation.
func (ev Event) Encode() ([]byte, error) {
	data := ev.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	// Without its data the event ends in "data":null}, which data replaces.
	ev.Data = nil
	head, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	head = head[:len(head)-len("null}")]
	b := make([]byte, 0, len(head)+len(data)+1)
	b = append(b, head...)
	b = append(b, data...)
	return append(b, '}'), nil
}

// DecodeData decodes the data of an event of a type inferwatch publishes
// for rules: a *Finding, *AlertData, *ForecastData, *ScaleData or
// *IncidentData; nil and
// no error for any other type.
func DecodeData(ev Event) (any, error) {
	var d any
	switch ev.Type {
	case FindingEventType:
		d = new(Finding)
	case AlertEventType:
		d = new(AlertData)
	case ForecastEventType:
		d = new(ForecastData)
	case ScaleEventType:
		d = new(ScaleData)
	case IncidentEventType:
		d = new(IncidentData)
	default:
		return nil, nil
	}
	if err := json.Unmarshal(ev.Data, d); err != nil {
		return nil, err
	}
	return d, nil
}
