package alerting

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
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
	// FindingEventTypePrefix precedes a finding's kind in the event type.
	FindingEventTypePrefix = "io.inferwatch.finding."
)

// Event is a CloudEvents 1.0 envelope in structured-mode JSON.
type Event struct {
	SpecVersion string `json:"specversion"` // always "1.0"
	ID          string `json:"id"`
	// Source is a URI-reference naming the producer, default "/inferwatch".
	Source string `json:"source"`
	// Type is "io.inferwatch.finding.<kind>" for findings.
	Type string `json:"type"`
	// Subject is the series selector the event is about.
	Subject string `json:"subject,omitempty"`
	// Time is when the event happened: a finding's WindowEnd, in UTC.
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"` // "application/json"
	Data            json.RawMessage `json:"data"`
}

// Validate reports the first required CloudEvents attribute that is missing
// or malformed.
func (ev Event) Validate() error {
	switch {
	case ev.SpecVersion != CloudEventsSpecVersion:
		return fmt.Errorf("cloudevent %q: specversion is %q, want %q", ev.ID, ev.SpecVersion, CloudEventsSpecVersion)
	case ev.ID == "":
		return errors.New("cloudevent: id is empty")
	case ev.Source == "":
		return fmt.Errorf("cloudevent %q: source is empty", ev.ID)
	case ev.Type == "":
		return fmt.Errorf("cloudevent %q: type is empty", ev.ID)
	case len(ev.Data) > 0 && !json.Valid(ev.Data):
		return fmt.Errorf("cloudevent %q: data is not valid JSON", ev.ID)
	}
	if _, err := url.Parse(ev.Source); err != nil {
		return fmt.Errorf("cloudevent %q: source %q is not a URI-reference: %w", ev.ID, ev.Source, err)
	}
	return nil
}

// FindingID is the stable identity of a finding: the first 32 hex digits of
// a SHA-256 over its group, rule, labels sorted by name and WindowEnd in Unix
// milliseconds. Every string is length-prefixed, so no choice of label names
// or values can make two different findings collide by concatenation. The ID
// does not depend on map order, score, value or the time zone of WindowEnd;
// it is the Nats-Msg-Id that lets JetStream drop a re-published finding.
func FindingID(f Finding) string {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	writeStr := func(s string) {
		n := binary.PutUvarint(buf[:], uint64(len(s)))
		h.Write(buf[:n])
		h.Write([]byte(s))
	}
	writeStr("inferwatch.finding.v1")
	writeStr(f.Group)
	writeStr(f.Rule)
	names := make([]string, 0, len(f.Labels))
	for name := range f.Labels {
		names = append(names, name)
	}
	sort.Strings(names)
	n := binary.PutUvarint(buf[:], uint64(len(names)))
	h.Write(buf[:n])
	for _, name := range names {
		writeStr(name)
		writeStr(f.Labels[name])
	}
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(f.WindowEnd.UnixMilli()))
	h.Write(ms[:])
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:16])
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

// validSubject reports why s is not a literal NATS subject, or nil.
func validSubject(s string) error {
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
		Value: jsonFloat(f.Value), Expected: jsonFloat(f.Expected), Lower: jsonFloat(f.Lower),
		Upper: jsonFloat(f.Upper), Score: jsonFloat(f.Score)})
	if err != nil {
		return Event{}, fmt.Errorf("encoding finding of rule %q in group %q: %w", f.Rule, f.Group, err)
	}
	return Event{
		SpecVersion:     CloudEventsSpecVersion,
		ID:              FindingID(f),
		Source:          source,
		Type:            FindingEventTypePrefix + f.Kind,
		Subject:         f.Series,
		Time:            f.WindowEnd.UTC(),
		DataContentType: "application/json",
		Data:            data,
	}, nil
}

// findingAlias has Finding's fields without its methods, so that encoding it
// cannot recurse into a MarshalJSON of Finding.
type findingAlias Finding

// findingData encodes a Finding with its float fields replaced by ones that
// write non-finite values as null; encoding/json prefers the shallower field
// of a given name, so these shadow the embedded ones.
type findingData struct {
	*findingAlias
	Value    jsonFloat `json:"value"`
	Expected jsonFloat `json:"expected"`
	Lower    jsonFloat `json:"lower"`
	Upper    jsonFloat `json:"upper"`
	Score    jsonFloat `json:"score"`
}

// jsonFloat is a float64 that encodes NaN and ±Inf as null.
type jsonFloat float64

func (v jsonFloat) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}
