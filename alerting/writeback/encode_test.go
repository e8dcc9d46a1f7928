package writeback

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/easyproto"
	"github.com/golang/snappy"

	"github.com/inferwatch/inferwatch/ingest"
)

// decodeWriteRequest reads a snappy-compressed remote-write 1.0
// WriteRequest, independently of the encoder: one ingest.Series per
// TimeSeries, in order.
func decodeWriteRequest(body []byte) ([]ingest.Series, error) {
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	var out []ingest.Series
	var fc easyproto.FieldContext
	for len(raw) > 0 {
		if raw, err = fc.NextField(raw); err != nil {
			return nil, err
		}
		if fc.FieldNum != 1 {
			return nil, fmt.Errorf("WriteRequest field %d, want only timeseries (1)", fc.FieldNum)
		}
		ts, ok := fc.MessageData()
		if !ok {
			return nil, fmt.Errorf("timeseries is not a message")
		}
		var s ingest.Series
		for len(ts) > 0 {
			if ts, err = fc.NextField(ts); err != nil {
				return nil, err
			}
			msg, ok := fc.MessageData()
			if !ok {
				return nil, fmt.Errorf("TimeSeries field %d is not a message", fc.FieldNum)
			}
			switch fc.FieldNum {
			case 1:
				var l ingest.Label
				for len(msg) > 0 {
					if msg, err = fc.NextField(msg); err != nil {
						return nil, err
					}
					v, ok := fc.String()
					if !ok {
						return nil, fmt.Errorf("label field %d is not a string", fc.FieldNum)
					}
					switch fc.FieldNum {
					case 1:
						l.Name = v
					case 2:
						l.Value = v
					}
				}
				s.Labels = append(s.Labels, l)
			case 2:
				var v float64
				var t int64
				for len(msg) > 0 {
					if msg, err = fc.NextField(msg); err != nil {
						return nil, err
					}
					switch fc.FieldNum {
					case 1:
						if v, ok = fc.Double(); !ok {
							return nil, fmt.Errorf("sample value is not a double")
						}
					case 2:
						if t, ok = fc.Int64(); !ok {
							return nil, fmt.Errorf("sample timestamp is not an int64")
						}
					}
				}
				s.Timestamps, s.Values = append(s.Timestamps, t), append(s.Values, v)
			default:
				return nil, fmt.Errorf("TimeSeries field %d, want labels (1) or samples (2)", fc.FieldNum)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeImport reads /api/v1/import JSON lines.
func decodeImport(body []byte) ([]ingest.Series, error) {
	var out []ingest.Series
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Metric     map[string]string `json:"metric"`
			Values     []float64         `json:"values"`
			Timestamps []int64           `json:"timestamps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%w: %s", err, sc.Bytes())
		}
		if len(line.Values) != len(line.Timestamps) {
			return nil, fmt.Errorf("%d values, %d timestamps", len(line.Values), len(line.Timestamps))
		}
		out = append(out, ingest.Series{Labels: ingest.LabelsFromMap(line.Metric), Timestamps: line.Timestamps, Values: line.Values})
	}
	return out, sc.Err()
}

func testSeries() []*series {
	a := &series{labels: ingest.Labels{{Name: "__name__", Value: "yhat"}, {Name: "for", Value: "r"}, {Name: "model", Value: "ünï\"code"}}}
	for i := range 2500 {
		a.t = append(a.t, 1_700_000_000_000+int64(i)*15_000)
		a.v = append(a.v, float64(i)/3-100)
	}
	b := &series{labels: ingest.Labels{{Name: "__name__", Value: "anomaly_score"}, {Name: "for", Value: "r"}},
		t: []int64{-5, 0, 7}, v: []float64{0, math.MaxFloat64, -math.SmallestNonzeroFloat64}}
	for _, s := range []*series{a, b} {
		s.key = s.labels.String()
	}
	return []*series{a, b}
}

func TestEncodeRemoteWrite(t *testing.T) {
	in := testSeries()
	got, err := decodeWriteRequest(encodeRemoteWrite(in))
	if err != nil {
		t.Fatal(err)
	}
	compare(t, got, in)
}

func TestEncodeImport(t *testing.T) {
	in := testSeries()
	body := appendImport(nil, in)
	lines := strings.Count(string(body), "\n")
	if lines != 4 { // 2500 samples in lines of at most 1000, and b
		t.Errorf("%d lines, want 4", lines)
	}
	got, err := decodeImport(body)
	if err != nil {
		t.Fatal(err)
	}
	// Join the lines of a series, as VictoriaMetrics does.
	var joined []ingest.Series
	for _, s := range got {
		if n := len(joined); n > 0 && joined[n-1].Labels.String() == s.Labels.String() {
			joined[n-1].Timestamps = append(joined[n-1].Timestamps, s.Timestamps...)
			joined[n-1].Values = append(joined[n-1].Values, s.Values...)
			continue
		}
		joined = append(joined, s)
	}
	compare(t, joined, in)
}

// compare checks that got holds exactly the series of want, in order.
func compare(t *testing.T, got []ingest.Series, want []*series) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Labels.String() != w.key {
			t.Errorf("series %d: labels %s, want %s", i, g.Labels, w.key)
		}
		if len(g.Timestamps) != len(w.t) {
			t.Fatalf("%s: %d samples, want %d", w.key, len(g.Timestamps), len(w.t))
		}
		for j := range w.t {
			if g.Timestamps[j] != w.t[j] || math.Float64bits(g.Values[j]) != math.Float64bits(w.v[j]) {
				t.Fatalf("%s sample %d: (%d, %g), want (%d, %g)", w.key, j, g.Timestamps[j], g.Values[j], w.t[j], w.v[j])
			}
		}
	}
}
