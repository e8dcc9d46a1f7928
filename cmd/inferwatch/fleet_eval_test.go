package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

var (
	fleetSeeds  = flag.Int("fleet.seeds", 2, "how many generated fleets (seeds 1, 2, …) TestPresetsFindTheFleetsIncidents judges")
	fleetParams = flag.String("fleet.params", "", "parameters of the anomaly rules' detector in TestPresetsFindTheFleetsIncidents, key=value,key=value")
)

// fleetTail is how long after an incident's end its findings still count
// as the incident's, not as false alarms: as in analysis/families.
const fleetTail = time.Hour

// fleetFalseRate bounds the anomaly rules' false alarms per series-day on
// the generated fleets: a twentieth, one a day over twenty series.
const fleetFalseRate = 0.05

// fleetReach is how long after an incident's end a finding still counts
// as finding it: the rules' for (2 minutes) and the rate windows the
// queries take.
const fleetReach = 15 * time.Minute

// TestPresetsFindTheFleetsIncidents judges generated fleets (a week each, at
// 30 s steps, seeds 1 to -fleet.seeds) with the vLLM and DCGM presets
// through the daemon, as a user runs it, and scores the findings against
// the incidents each fleet injected: an incident is found when a finding
// on its model (and pod, when it hits one) from a rule that reads one of
// the metrics it shows in covers part of it (up to fleetReach after its
// end); a false alarm is an anomaly rule's finding on no incident's model
// and pod within the incident and the hour after it. With the defaults,
// every incident must be found and the false alarms stay under
// fleetFalseRate; what the quiet model raised is printed. With
// -fleet.params it prints what the parameters make of the fleets, and
// fails on nothing, for choosing them.
func TestPresetsFindTheFleetsIncidents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	params := map[string]string{}
	for _, kv := range strings.Split(*fleetParams, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("-fleet.params: %q is not key=value", kv)
		}
		params[k] = v
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "presets.yml")
	if err := os.WriteFile(file, []byte(presetsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(params) > 0 {
		cfg, err := rulefmt.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(presetsConfig+detectorOverrides(cfg.Groups[0].Rules, params)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := rulefmt.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string][]string{}
	var anomalyRules []string
	for _, r := range cfg.Groups[0].Rules {
		for _, q := range ruleQueries(r) {
			reads[r.Name] = append(reads[r.Name], metricNames(t, q)...)
		}
		if r.Kind == rulefmt.KindAnomaly {
			anomalyRules = append(anomalyRules, r.Name)
		}
	}

	var total fleetScore
	for seed := int64(1); seed <= int64(*fleetSeeds); seed++ {
		vm := localvm.Run(t)
		f := importFleet(t, vm, fleet.Options{Seed: seed, End: quietWeekEnd, Duration: fleetWeek, Step: 30 * time.Second})
		names, err := storeMetricNames(vm.URL(), f.End())
		if err != nil {
			t.Fatal(err)
		}
		_, nc := natsClient(t)
		findings, _ := runOnceCollecting(t, nc, "run", "--config", file, "--once", "--backfill", fleetBackfill(quietWeekEnd),
			"--source.url", vm.URL(), "--nats.url", nc.ConnectedUrl(), "--web.listen-address", "")
		s := scoreFleet(f, findings, reads, anomalyRules, names)
		t.Logf("seed %d: %s", seed, s)
		for _, m := range s.missed {
			t.Logf("seed %d: missed %s", seed, m)
		}
		for _, fd := range s.falses {
			t.Logf("seed %d: false alarm %s", seed, describeFinding(fd))
		}
		for _, fd := range s.quiet {
			t.Logf("seed %d: on the quiet model %s", seed, describeFinding(fd))
		}
		total.add(s)
		vm.Stop()
	}
	t.Logf("%d fleets, params %v: %s", *fleetSeeds, params, total)
	if len(params) > 0 {
		return
	}
	if len(total.missed) > 0 {
		t.Errorf("%d incidents went unfound", len(total.missed))
	}
	if rate := float64(len(total.falses)) / total.seriesDays; rate > fleetFalseRate {
		t.Errorf("the anomaly rules raise %.4f false alarms per series-day, more than %g", rate, fleetFalseRate)
	}
}

// detectorOverrides writes, for each anomaly rule of rules, a rule of the
// same name (which takes the preset rule's place) whose detector is auto
// with params.
func detectorOverrides(rules []rulefmt.Rule, params map[string]string) string {
	var b strings.Builder
	b.WriteString("    rules:\n")
	var det []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		det = append(det, k+": "+params[k])
	}
	for _, r := range rules {
		if r.Kind != rulefmt.KindAnomaly {
			continue
		}
		fmt.Fprintf(&b, "      - name: %s\n        expr: '%s'\n        step: %v\n        for: %v\n        min_dev: %g\n",
			r.Name, strings.ReplaceAll(r.Expr, "'", "''"), r.Step, r.For, r.MinDev)
		fmt.Fprintf(&b, "        labels: {preset: %s}\n        detector: {name: auto, %s}\n", r.Labels["preset"], strings.Join(det, ", "))
	}
	return b.String()
}

// fleetScore is what the presets made of generated fleets.
type fleetScore struct {
	found, incidents map[string]int // by incident kind
	missed           []string
	falses           []alerting.Finding
	quiet            []alerting.Finding // findings on the quiet model
	seriesDays       float64            // anomaly rule series times the days judged
}

func (s *fleetScore) add(o fleetScore) {
	if s.found == nil {
		s.found, s.incidents = map[string]int{}, map[string]int{}
	}
	for k, n := range o.found {
		s.found[k] += n
	}
	for k, n := range o.incidents {
		s.incidents[k] += n
	}
	s.missed = append(s.missed, o.missed...)
	s.falses = append(s.falses, o.falses...)
	s.quiet = append(s.quiet, o.quiet...)
	s.seriesDays += o.seriesDays
}

func (s fleetScore) String() string {
	found, n := 0, 0
	var by []string
	for _, k := range slices.Sorted(maps.Keys(s.incidents)) {
		found += s.found[k]
		n += s.incidents[k]
		by = append(by, fmt.Sprintf("%s %d/%d", k, s.found[k], s.incidents[k]))
	}
	return fmt.Sprintf("incidents found %d/%d (%s); false alarms %d, %.4f per series-day over %.0f series-days; on the quiet model %d",
		found, n, strings.Join(by, ", "), len(s.falses), float64(len(s.falses))/s.seriesDays, s.seriesDays, len(s.quiet))
}

// scoreFleet scores findings against f's incidents. reads holds the
// metric names each rule reads and fleetMetrics those the store holds;
// the anomaly rules' series are one a pod for each rule that reads one.
func scoreFleet(f *fleet.Fleet, findings []alerting.Finding, reads map[string][]string, anomalyRules []string, fleetMetrics map[string]bool) fleetScore {
	s := fleetScore{found: map[string]int{}, incidents: map[string]int{}}
	covers := func(inc fleet.Incident, fd alerting.Finding, reach time.Duration) bool {
		return inc.Covers(fd.Labels["model"], fd.Labels["pod"]) &&
			fd.WindowStart.Before(inc.End.Add(reach)) && !fd.WindowEnd.Before(inc.Start)
	}
	for _, inc := range f.Incidents {
		s.incidents[inc.Kind]++
		found := false
		for _, fd := range findings {
			if covers(inc, fd, fleetReach) && slices.ContainsFunc(reads[fd.Rule], func(m string) bool {
				return slices.ContainsFunc(inc.Metrics, func(im string) bool { return strings.HasPrefix(m, im) })
			}) {
				found = true
				break
			}
		}
		if found {
			s.found[inc.Kind]++
		} else {
			s.missed = append(s.missed, fmt.Sprintf("%s on %s/%s %v–%v", inc.Kind, inc.Model, inc.Pod,
				inc.Start.Format(time.RFC3339), inc.End.Format(time.RFC3339)))
		}
	}
	quiet := map[string]bool{}
	pods := 0
	for _, m := range f.Models {
		quiet[m.Name] = m.Quiet
		pods += len(m.Pods)
	}
	for _, fd := range findings {
		if quiet[fd.Labels["model"]] {
			s.quiet = append(s.quiet, fd)
		}
		if fd.Kind != "anomaly" || slices.ContainsFunc(f.Incidents, func(inc fleet.Incident) bool { return covers(inc, fd, fleetTail) }) {
			continue
		}
		s.falses = append(s.falses, fd)
	}
	for _, r := range anomalyRules {
		if slices.ContainsFunc(reads[r], func(m string) bool { return fleetMetrics[m] }) {
			s.seriesDays += float64(pods) * f.End().Sub(f.Start()).Hours() / 24
		}
	}
	return s
}

// storeMetricNames returns the metric names the store at url holds at at.
// The tests' stores hold one generated fleet each.
func storeMetricNames(url string, at time.Time) (map[string]bool, error) {
	client, err := ingest.NewClient(ingest.ClientOptions{URL: url})
	if err != nil {
		return nil, err
	}
	series, err := client.Query(context.Background(), `count by (__name__) ({__name__!=""})`, at)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, s := range series {
		names[s.Labels.Get("__name__")] = true
	}
	return names, nil
}

func describeFinding(fd alerting.Finding) string {
	return fmt.Sprintf("%s %s %s at %v–%v (score %.2f)", fd.Kind, fd.Rule, fd.Series,
		fd.WindowStart.Format(time.RFC3339), fd.WindowEnd.Format(time.RFC3339), fd.Score)
}
