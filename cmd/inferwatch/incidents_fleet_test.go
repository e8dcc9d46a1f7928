package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// causeOf is the diagnosis an injected incident of each kind of the
// generated fleet should get: the cause the generator injected.
var causeOf = map[string]string{
	fleet.LatencySpike:        "engine_stall",
	fleet.ThroughputDecay:     "regression",
	fleet.GPUSaturationJitter: "gpu_saturation",
	fleet.TrafficSurge:        "traffic_surge",
}

// fleetRun is what the daemon published over a generated week.
type fleetRun struct {
	fleet *fleet.Fleet
	// incidents holds the newest event of each incident, by its start.
	incidents []alerting.IncidentData
	findings  int
}

// runFleetIncidents imports a generated week of seed into a real
// VictoriaMetrics and runs the daemon once over it with the vllm and dcgm
// presets and a real NATS server; it returns the findings and incident
// events NATS received.
func runFleetIncidents(t *testing.T, seed int64) fleetRun {
	t.Helper()
	end := fleetEnd(t, quietWeekEnd)
	vm := localvm.Run(t)
	f := importFleet(t, vm, fleet.Options{Seed: seed, End: end, Duration: fleetWeek, Step: 30 * time.Second})
	srv := natstest.Start(t)
	file := filepath.Join(t.TempDir(), "fleet.yml")
	if err := os.WriteFile(file, []byte(presetsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	incidents := natstest.Collect(t, srv.ClientURL(), "inferwatch.incidents.>")
	findings := natstest.Collect(t, srv.ClientURL(), "inferwatch.findings.>")
	runOnce(t, file, "--backfill", fleetBackfill(end), "--source.url", vm.URL(), "--nats.url", srv.ClientURL())
	run := fleetRun{fleet: f, findings: len(findings(10000, 2*time.Second))}
	newest := map[string]alerting.IncidentData{}
	for _, m := range incidents(10000, 2*time.Second) {
		d := eventData[alerting.IncidentData](t, m, alerting.IncidentEventType)
		if want := "inferwatch.incidents." + d.Group; m.Subject() != want {
			t.Errorf("incident on %s, want %s", m.Subject(), want)
		}
		if old, ok := newest[d.ID]; !ok || d.Version > old.Version {
			newest[d.ID] = d
		}
	}
	for _, d := range newest {
		run.incidents = append(run.incidents, d)
	}
	sort.Slice(run.incidents, func(i, j int) bool { return run.incidents[i].Start.Before(run.incidents[j].Start) })
	return run
}

// incidentScore compares the incidents with the injected ones.
type incidentScore struct {
	// matched[i] are the incidents that match injected incident i: on its
	// model, starting between ten minutes before it and the end of
	// matchAfter after its end.
	matched [][]alerting.IncidentData
	// truePositives are the incidents that match an injected one.
	truePositives int
	// diagnosed counts the injected incidents whose first match has the
	// cause the generator injected.
	diagnosed int
}

// matchAfter is how long after an injected incident's end an incident on
// its model still counts as the same: a decay judged over a day's window
// shows up to hours after the injected decay levels off.
const matchAfter = 2 * time.Hour

func scoreIncidents(f *fleet.Fleet, incs []alerting.IncidentData) incidentScore {
	s := incidentScore{matched: make([][]alerting.IncidentData, len(f.Incidents))}
	for _, d := range incs {
		hit := false
		for i, inj := range f.Incidents {
			if d.UnitLabels["model"] == inj.Model && !d.Start.Before(inj.Start.Add(-10*time.Minute)) && !d.Start.After(inj.End.Add(matchAfter)) {
				s.matched[i] = append(s.matched[i], d)
				hit = true
			}
		}
		if hit {
			s.truePositives++
		}
	}
	for i, inj := range f.Incidents {
		if len(s.matched[i]) > 0 && s.matched[i][0].Diagnosis.Name == causeOf[inj.Kind] {
			s.diagnosed++
		}
	}
	return s
}

// table writes the score for the docs: one row per injected incident,
// then the totals.
func (s incidentScore) table(f *fleet.Fleet, incs []alerting.IncidentData, findings int) string {
	var b strings.Builder
	for i, inj := range f.Incidents {
		var got []string
		for _, d := range s.matched[i] {
			var levels []string
			for _, sig := range slices.Sorted(maps.Keys(d.Levels)) {
				levels = append(levels, fmt.Sprintf("%s %.3g", sig, float64(d.Levels[sig].Value)))
			}
			got = append(got, fmt.Sprintf("%s (%d alerts, %s, levels %s)", d.Diagnosis.Name, len(d.Members), d.Diagnosis.Others, strings.Join(levels, " ")))
		}
		fmt.Fprintf(&b, "%-22s %-22s %s %-16s %d incidents: %s\n", inj.Kind, inj.Model, inj.Start.Format("01-02 15:04"), inj.Pod, len(s.matched[i]), strings.Join(got, "; "))
	}
	recalled := 0
	for _, m := range s.matched {
		if len(m) > 0 {
			recalled++
		}
	}
	fmt.Fprintf(&b, "precision %d/%d, recall %d/%d, right cause %d/%d, findings %d → incidents %d\n",
		s.truePositives, len(incs), recalled, len(f.Incidents), s.diagnosed, len(f.Incidents), findings, len(incs))
	for _, d := range incs {
		matched := false
		for _, m := range s.matched {
			for _, x := range m {
				matched = matched || x.ID == d.ID
			}
		}
		if !matched {
			fmt.Fprintf(&b, "unmatched: %s %s %s %d alerts %s\n", d.Unit, d.Start.Format("01-02 15:04"), d.Diagnosis.Name, len(d.Members), d.Summary)
		}
	}
	return b.String()
}

// TestIncidentsOnTheFleet runs the daemon over two generated weeks (seeds
// 1 and 2: other models, pods and times) in a real VictoriaMetrics,
// publishing on a real NATS, and logs the table docs/figures.md shows.
// Every injected incident is one incident; on seed 1 each has the cause
// the generator injected as its diagnosis and lists the pod it hit, on
// seed 2 all but one at most.
func TestIncidentsOnTheFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	for _, seed := range []int64{1, 2} {
		run := runFleetIncidents(t, seed)
		s := scoreIncidents(run.fleet, run.incidents)
		t.Logf("seed %d:\n%s", seed, s.table(run.fleet, run.incidents, run.findings))
		for i, inj := range run.fleet.Incidents {
			m := s.matched[i]
			if len(m) != 1 {
				t.Errorf("seed %d: %s on %s at %v: %d incidents, want one", seed, inj.Kind, inj.Model, inj.Start, len(m))
				continue
			}
			if inj.Pod != "" && !slices.Contains(m[0].Where["pod"], inj.Pod) {
				t.Errorf("seed %d: %s on %s: the incident lists pods %v, not %s", seed, inj.Kind, inj.Model, m[0].Where["pod"], inj.Pod)
			}
			if got, want := m[0].Diagnosis.Name, causeOf[inj.Kind]; seed == 1 && got != want {
				t.Errorf("seed 1: %s on %s at %v: diagnosis %s, want %s:\n%s", inj.Kind, inj.Model, inj.Start, got, want, m[0].Description)
			}
		}
		if s.diagnosed < len(run.fleet.Incidents)-1 {
			t.Errorf("seed %d: %d of %d injected incidents diagnosed with their cause, want all but one at most", seed, s.diagnosed, len(run.fleet.Incidents))
		}
	}
}
