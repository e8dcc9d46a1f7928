package alerting

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"time"
)

// The incidents of a set of replicas are made by one member, the holder
// of the incidents role, from the batches of every member: each member
// sends what the incidents need of each batch it evaluates (the feed), and
// the holder runs it through its LevelStore and Incidents as one process
// runs its own batches.

// feedVersion is the first byte of an encoded feed batch.
const feedVersion = 1

// feedBatch is what the incidents need of a batch: its group and time
// (an incident resolves as time passes, so every batch counts, even one
// without alerts), its alert events, and what the diagnoses read.
type feedBatch struct {
	Group     string
	At        time.Time
	Alerts    []AlertData
	Readings  []Readings
	Misses    []ForecastMiss
	Scales    []ScaleData
	Evaluated []RuleEvaluated
}

// EncodeFeed encodes what the incidents need of b.
func EncodeFeed(b *Batch) ([]byte, error) {
	fb := feedBatch{Group: b.Group, At: b.At, Alerts: b.Alerts, Readings: b.Readings, Misses: b.Misses, Scales: b.Scales, Evaluated: b.Evaluated}
	var buf bytes.Buffer
	buf.WriteByte(feedVersion)
	if err := gob.NewEncoder(&buf).Encode(&fb); err != nil {
		return nil, fmt.Errorf("encoding the incidents' part of a batch of group %s: %w", b.Group, err)
	}
	return buf.Bytes(), nil
}

// DecodeFeed decodes a batch EncodeFeed encoded: the parts the incidents
// need, the others empty.
func DecodeFeed(data []byte) (Batch, error) {
	if len(data) == 0 || data[0] != feedVersion {
		return Batch{}, errors.New("decoding a batch for the incidents: not one of version 1")
	}
	var fb feedBatch
	if err := gob.NewDecoder(bytes.NewReader(data[1:])).Decode(&fb); err != nil {
		return Batch{}, fmt.Errorf("decoding a batch for the incidents: %w", err)
	}
	return Batch{Group: fb.Group, At: fb.At, Alerts: fb.Alerts, Readings: fb.Readings, Misses: fb.Misses, Scales: fb.Scales, Evaluated: fb.Evaluated}, nil
}
