package alerting

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// A batch's incident parts come through the feed as they went in; the
// other parts are left out.
func TestFeedRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	fired := at.Add(-time.Minute)
	b := Batch{Group: "g", At: at,
		Alerts:    []AlertData{{Status: StatusFiring, Group: "g", Rule: "r", Series: `x{pod="p"}`, Labels: map[string]string{"pod": "p"}, ActiveAt: fired, FiredAt: &fired, Time: at}},
		Readings:  []Readings{{Group: "g", Rule: "r", Labels: map[string]string{"model": "m"}, Series: "x", T: []int64{1, 2}, V: []float64{3, 4}}},
		Misses:    []ForecastMiss{{Group: "g", Rule: "f", Time: at, Value: 5, Upper: JSONFloat(math.Inf(1))}},
		Scales:    []ScaleData{{Group: "g", Rule: "s", Target: "t", Time: at, DesiredReplicas: 3}},
		Evaluated: []RuleEvaluated{{Rule: "r", Through: at, AbsentAfter: time.Minute}},
		Findings:  []Finding{{}},
	}
	data, err := EncodeFeed(&b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeFeed(data)
	if err != nil {
		t.Fatal(err)
	}
	want := b
	want.Findings = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, want)
	}
	if _, err := DecodeFeed([]byte("{}")); err == nil {
		t.Error("a message of another kind decodes")
	}
}
