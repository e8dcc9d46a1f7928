package alerting

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkIncidentsProcess runs one batch of 10,000 alerts firing, 10 on
// each of 1,000 models, through the incidents (each model's opened and 9
// updates), then their 10,000 resolutions and the gap: a backfill's worth
// of a large fleet.
func BenchmarkIncidentsProcess(b *testing.B) {
	var fire, res []AlertData
	for m := range 1000 {
		for r := range 10 {
			d := fired(fmt.Sprintf("rule%d", r), fmt.Sprintf("model-%d", m), fmt.Sprintf("pod-%d", r%3), float64(r), float64(r)+2)
			fire = append(fire, d)
			res = append(res, resolved(d, 30, 31))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		tr := NewIncidents(IncidentOptions{})
		b1 := Batch{Group: "fleet", At: atMin(15), Alerts: fire}
		tr.Process(context.Background(), &b1)
		b2 := Batch{Group: "fleet", At: atMin(31).Add(time.Hour), Alerts: res}
		tr.Process(context.Background(), &b2)
		if len(b1.Incidents) != 10000 || len(b2.Incidents) != 1000 {
			b.Fatalf("%d and %d incident events, want 10000 and 1000", len(b1.Incidents), len(b2.Incidents))
		}
	}
}
