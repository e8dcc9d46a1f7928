package alerting

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func atMin(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

// fired is the firing event of an alert of rule on model/pod, anomalous
// from start (minutes after t0), fired at fire.
func fired(rule, model, pod string, start, fire float64) AlertData {
	labels := map[string]string{"pod": pod}
	if model != "" {
		labels["model"] = model
	}
	f := atMin(fire)
	return AlertData{Status: StatusFiring, Group: "fleet", Rule: rule, Kind: "anomaly", Detector: "auto",
		Series: `{model="` + model + `", pod="` + pod + `"}`, Labels: labels, Severity: "warning",
		ActiveAt: atMin(start), FiredAt: &f, LastAnomalousAt: f, Time: f, Value: 2, Expected: 1, Score: 3}
}

// resolved is the resolved event of the alert of d, last anomalous at
// last and resolved at res.
func resolved(d AlertData, last, res float64) AlertData {
	d.Status, d.LastAnomalousAt, d.Time = StatusResolved, atMin(last), atMin(res)
	return d
}

// run feeds the events to JoinIncident per unit, ticking at each event's
// time first and at the end at now, as the Incidents tracker does, and
// returns the statuses with their units and times.
func runIncidents(t *testing.T, p IncidentPolicy, now float64, evs ...AlertData) ([]IncidentData, map[string]Incident) {
	t.Helper()
	open := map[string]Incident{}
	var out []IncidentData
	tick := func(now time.Time) {
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range open {
				if !yield(k) {
					return
				}
			}
		}) {
			next, e := TickIncident(open[k], now, p, nil)
			open[k] = next
			out = append(out, e...)
		}
	}
	for _, d := range evs {
		tick(d.ActiveAt)
		unit, _ := IncidentUnit(&d, p.withDefaults().By)
		next, e := JoinIncident(open[unit], d, p, nil)
		open[unit] = next
		out = append(out, e...)
	}
	tick(atMin(now))
	return out, open
}

func incidentStatuses(evs []IncidentData) string {
	var s []string
	for _, e := range evs {
		s = append(s, string(e.Status)+" "+e.Unit+" "+e.Time.Sub(t0).String())
	}
	return strings.Join(s, "; ")
}

func TestIncidentLifecycle(t *testing.T) {
	p := IncidentPolicy{Gap: 10 * time.Minute}
	ttft := fired("ttft", "m1", "p0", 0, 2)
	e2e := fired("e2e", "m1", "p1", 1, 3)
	gpu := fired("gpu", "m1", "p0", 20, 25) // starts 10 min after ttft's last anomalous point (min 10)
	late := fired("gpu", "m1", "p0", 40, 45)
	other := fired("ttft", "m2", "p9", 1, 3)
	lone := fired("ttft", "", "p5", 1, 3)
	lone.Labels = map[string]string{}
	f := func(name string, now float64, want string, evs ...AlertData) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			got, _ := runIncidents(t, p, now, evs...)
			if s := incidentStatuses(got); s != want {
				t.Errorf("events:\n got %s\nwant %s", s, want)
			}
		})
	}
	// Two pods of one model overlapping: one incident, opened then updated.
	f("overlap", 5, "opened model=m1 2m0s; updated model=m1 3m0s", ttft, e2e)
	// Another model: an incident of its own.
	f("other unit", 5, "opened model=m1 2m0s; opened model=m2 3m0s", ttft, other)
	// Resolved at min 10, the gap passes at min 20: a window starting at
	// min 20 follows within the gap and joins; the incident resolves 10
	// min after the newest anomalous point (25) once it has resolved.
	f("within the gap", 60, "opened model=m1 2m0s; updated model=m1 25m0s; resolved model=m1 35m0s",
		ttft, resolved(ttft, 10, 11), gpu, resolved(gpu, 25, 26))
	// A window starting 30 min after the last anomalous point: the first
	// incident resolved at 10+10 = min 20, a new one opens.
	f("after the gap", 60, "opened model=m1 2m0s; resolved model=m1 20m0s; opened model=m1 45m0s",
		ttft, resolved(ttft, 10, 11), late)
	// A member still firing keeps the incident open past the gap.
	f("member firing", 60, "opened model=m1 2m0s; updated model=m1 3m0s", ttft, e2e, resolved(ttft, 10, 11))
	// All resolved, but the gap has not passed at the last tick.
	f("gap not passed", 19, "opened model=m1 2m0s", ttft, resolved(ttft, 10, 11))
	// An alert without the unit labels forms an incident of its own.
	f("no unit labels", 5, "opened model=m1 2m0s; opened fleet/ttft/{model=\"\", pod=\"p5\"} 3m0s", ttft, lone)
	// Pending and inactive alerts are no incident.
	pending := ttft
	pending.Status = StatusPending
	f("pending", 5, "", pending)

	// The settle time delays the resolution, not its time.
	p.Settle = 5 * time.Minute
	got, _ := runIncidents(t, p, 24, ttft, resolved(ttft, 10, 11))
	if s := incidentStatuses(got); s != "opened model=m1 2m0s" {
		t.Errorf("settling: %s", s)
	}
	got, _ = runIncidents(t, p, 25.5, ttft, resolved(ttft, 10, 11))
	if s := incidentStatuses(got); s != "opened model=m1 2m0s; resolved model=m1 20m0s" {
		t.Errorf("settled: %s", s)
	}
}

func TestIncidentMembersAndPods(t *testing.T) {
	p := IncidentPolicy{}
	evs := []AlertData{fired("ttft", "m1", "p1", 0, 2), fired("e2e", "m1", "p0", 0, 2), fired("ttft", "m1", "p0", 1, 3)}
	evs[1].Labels["Hostname"] = "gpu-node-01"
	got, open := runIncidents(t, p, 5, evs...)
	inc := open["model=m1"]
	if len(got) != 3 || len(inc.Members) != 3 || inc.Version != 3 {
		t.Fatalf("%d events, %d members, version %d: want 3, 3, 3", len(got), len(inc.Members), inc.Version)
	}
	if w := inc.Where; !slices.Equal(w["pod"], []string{"p0", "p1"}) || !slices.Equal(w["Hostname"], []string{"gpu-node-01"}) {
		t.Errorf("where %v", w)
	}
	if !inc.Start.Equal(atMin(0)) || !inc.End.Equal(atMin(3)) || !inc.OpenedAt.Equal(atMin(2)) {
		t.Errorf("start %v end %v opened %v", inc.Start, inc.End, inc.OpenedAt)
	}
	if len(inc.Timeline) != 3 || inc.Timeline[2].Rule != "ttft" || !strings.Contains(inc.Timeline[2].Text, "ttft up") {
		t.Errorf("timeline %+v", inc.Timeline)
	}
	// The first event keeps what it said.
	if len(got[0].Members) != 1 {
		t.Errorf("the opening event has %d members, want 1", len(got[0].Members))
	}
	// A repeat moves the member's window; it makes no event.
	rep := evs[0]
	rep.Status, rep.LastAnomalousAt, rep.Time = StatusRepeat, atMin(30), atMin(30)
	next, e := JoinIncident(inc, rep, p, nil)
	if len(e) != 0 || !next.End.Equal(atMin(30)) {
		t.Errorf("repeat: %d events, end %v", len(e), next.End)
	}
}

func TestIncidentCaps(t *testing.T) {
	p := IncidentPolicy{MaxMembers: 2, MaxAge: time.Hour}
	_, open := runIncidents(t, p, 5, fired("a", "m1", "p0", 0, 1), fired("b", "m1", "p0", 0, 1), fired("c", "m1", "p0", 0, 1))
	if inc := open["model=m1"]; len(inc.Members) != 2 || inc.Dropped != 1 {
		t.Errorf("members %d dropped %d, want 2 and 1", len(inc.Members), inc.Dropped)
	}
	// Anomalous for an hour with a member firing: closed and continued.
	a, b := fired("a", "m1", "p0", 0, 1), fired("b", "m1", "p1", 0, 2)
	repeat := a
	repeat.Status, repeat.LastAnomalousAt, repeat.Time = StatusRepeat, atMin(61), atMin(61)
	got, open := runIncidents(t, p, 61, a, b, resolved(b, 5, 6))
	if s := incidentStatuses(got); s != "opened model=m1 1m0s; updated model=m1 2m0s" {
		t.Fatalf("an hour open, anomalous for 5 minutes: %s", s)
	}
	got, open = runIncidents(t, p, 200, a, b, resolved(b, 5, 6), repeat)
	if s := incidentStatuses(got); s != "opened model=m1 1m0s; updated model=m1 2m0s; resolved model=m1 1h1m0s; opened model=m1 1h1m0s" {
		t.Fatalf("events: %s", s)
	}
	cont := open["model=m1"]
	if cont.Continues != got[0].ID || cont.ID == got[0].ID || len(cont.Members) != 1 || cont.Members[0].Rule != "a" {
		t.Errorf("continuation %s of %s with %+v", cont.ID, cont.Continues, cont.Members)
	}
	if last := got[2].Timeline[len(got[2].Timeline)-1]; last.What != "note" || !strings.Contains(last.Text, "continued as "+cont.ID) {
		t.Errorf("closing note %+v", last)
	}
	// The continuation counts its age from where it starts.
	if next, e := TickIncident(cont, atMin(500), p, nil); len(e) != 0 || next.ID != cont.ID {
		t.Errorf("the continuation closes again at once: %s", incidentStatuses(e))
	}

	// The tracker caps the open incidents of a group and counts the rest.
	set := metrics.NewSet()
	tr := NewIncidents(IncidentOptions{Policy: IncidentPolicy{MaxOpen: 2}, Metrics: set})
	bt := Batch{Group: "fleet", At: atMin(5), Alerts: []AlertData{fired("a", "m1", "p0", 0, 1), fired("a", "m2", "p0", 0, 1), fired("a", "m3", "p0", 0, 1)}}
	tr.Process(context.Background(), &bt)
	if len(bt.Incidents) != 2 || len(tr.Open()) != 2 {
		t.Errorf("%d incident events, %d open, want 2 and 2", len(bt.Incidents), len(tr.Open()))
	}
	var w strings.Builder
	set.WritePrometheus(&w)
	for _, want := range []string{`inferwatch_incident_alerts_dropped_total{reason="max_open"} 1`, "inferwatch_incidents_open 2",
		`inferwatch_incident_events_total{status="opened"} 2`} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, w.String())
		}
	}
}

func TestIncidentsRestore(t *testing.T) {
	ctx := context.Background()
	store := &memStore{m: map[string][]byte{}}
	tr := NewIncidents(IncidentOptions{Store: store})
	a := fired("a", "m1", "p0", 0, 1)
	b := Batch{Group: "fleet", At: atMin(2), Alerts: []AlertData{a}}
	tr.Process(ctx, &b)
	if len(store.m) != 1 {
		t.Fatalf("%d stored incidents, want 1", len(store.m))
	}
	// A restarted tracker continues the incident: the alert resolves, and
	// the incident with it once the gap has passed.
	again := NewIncidents(IncidentOptions{Store: store})
	if n, err := again.Restore(ctx); n != 1 || err != nil {
		t.Fatalf("restored %d, %v", n, err)
	}
	b = Batch{Group: "fleet", At: atMin(30), Alerts: []AlertData{resolved(a, 5, 6)}}
	again.Process(ctx, &b)
	if len(b.Incidents) != 1 || b.Incidents[0].Status != IncidentResolved || b.Incidents[0].ID != tr.Open()[0].ID ||
		!b.Incidents[0].Time.Equal(atMin(15)) {
		t.Fatalf("after the restart: %s", incidentStatuses(b.Incidents))
	}
	// The resolved incident stays stored for an alert that comes late: a
	// tracker restarted once more opens it again with one whose window
	// lies within it, as the first would have.
	if len(store.m) != 1 {
		t.Fatalf("%d stored incidents after the resolution, want the resolved one", len(store.m))
	}
	third := NewIncidents(IncidentOptions{Store: store})
	if n, err := third.Restore(ctx); n != 0 || err != nil {
		t.Fatalf("restored %d open incidents, %v; want none open", n, err)
	}
	late := fired("gpu", "m1", "p0", 3, 40)
	late.Group = "gpu"
	b = Batch{Group: "gpu", At: atMin(41), Alerts: []AlertData{late}}
	third.Process(ctx, &b)
	if len(b.Incidents) != 1 || b.Incidents[0].Status != IncidentUpdated || b.Incidents[0].ID != tr.Open()[0].ID || len(b.Incidents[0].Members) != 2 {
		t.Fatalf("a late alert after the restart: %s", incidentStatuses(b.Incidents))
	}
	// Past MaxOpen resolved incidents, the one that resolved first is
	// forgotten, in the store too.
	small := NewIncidents(IncidentOptions{Store: store, Policy: IncidentPolicy{MaxOpen: 1}})
	small.Restore(ctx)
	other := fired("a", "m2", "p0", 100, 101)
	b = Batch{Group: "fleet", At: atMin(200), Alerts: []AlertData{other, resolved(other, 102, 103)}}
	small.Process(ctx, &b)
	b = Batch{Group: "gpu", At: atMin(300), Alerts: []AlertData{resolved(late, 45, 46)}}
	small.Process(ctx, &b)
	if len(store.m) != 1 {
		t.Errorf("%d stored incidents with max_open 1, want 1", len(store.m))
	}
}

// TestIncidentsTakeLateGroups: in a backfill each group's batch covers
// the whole history, so one group's batch resolves an incident before
// another group's alerts in its window come; they open it again.
func TestIncidentsTakeLateGroups(t *testing.T) {
	tr := NewIncidents(IncidentOptions{})
	a := fired("ttft", "m1", "p0", 0, 2)
	b := Batch{Group: "fleet", At: atMin(600), Alerts: []AlertData{a, resolved(a, 10, 11)}}
	tr.Process(context.Background(), &b)
	if s := incidentStatuses(b.Incidents); s != "opened model=m1 2m0s; resolved model=m1 20m0s" {
		t.Fatalf("group A: %s", s)
	}
	gpu := fired("gpu", "m1", "p0", 5, 10)
	gpu.Group = "gpu"
	later := fired("gpu", "m1", "p0", 300, 305)
	later.Group = "gpu"
	b2 := Batch{Group: "gpu", At: atMin(600), Alerts: []AlertData{gpu, resolved(gpu, 12, 13), later}}
	tr.Process(context.Background(), &b2)
	if s := incidentStatuses(b2.Incidents); s != "updated model=m1 10m0s; resolved model=m1 22m0s; opened model=m1 5h5m0s" {
		t.Fatalf("group B: %s", s)
	}
	if b2.Incidents[0].ID != b.Incidents[0].ID || len(b2.Incidents[1].Members) != 2 || b2.Incidents[2].ID == b.Incidents[0].ID {
		t.Errorf("the late alert did not join the incident it lies in: %+v", b2.Incidents)
	}
}

// TestIncidentsIndependentOfArrival: two groups' first batches, as a
// backfill judges them at once, make the same incidents (ids, groups,
// events) whichever comes first once the tracker expects both; without,
// the incident belongs to the group whose batch came first.
func TestIncidentsIndependentOfArrival(t *testing.T) {
	batches := func() []Batch {
		// The capacity alert's window starts first but it fires after the
		// latency alert: the latter opens the incident.
		rate := fired("request_rate", "m1", "", 0, 4)
		rate.Group, rate.Series = "capacity", `{model="m1"}`
		ttft := fired("ttft", "m1", "p0", 1, 2)
		ttft.Group = "latency"
		return []Batch{
			{Group: "capacity", At: atMin(600), Alerts: []AlertData{rate, resolved(rate, 20, 21)}},
			{Group: "latency", At: atMin(600), Alerts: []AlertData{ttft, resolved(ttft, 15, 16)}},
		}
	}
	run := func(expect bool, order ...int) string {
		t.Helper()
		tr := NewIncidents(IncidentOptions{})
		if expect {
			tr.Expect([]string{"capacity", "latency"}, 5*time.Minute)
		}
		bs := batches()
		var out []string
		for _, i := range order {
			b := bs[i]
			tr.Process(context.Background(), &b)
			for _, e := range b.Incidents {
				out = append(out, fmt.Sprintf("%s %s %s v%d %d alerts, start %s", e.Status, e.ID, e.Group, e.Version, len(e.Members), e.Start.Sub(t0)))
			}
		}
		return strings.Join(out, "\n")
	}
	capacityFirst, latencyFirst := run(true, 0, 1), run(true, 1, 0)
	if capacityFirst != latencyFirst {
		t.Errorf("the incidents depend on which group came first:\ncapacity first:\n%s\nlatency first:\n%s", capacityFirst, latencyFirst)
	}
	if !strings.HasPrefix(capacityFirst, "opened ") || !strings.Contains(strings.SplitN(capacityFirst, "\n", 2)[0], " latency v1 ") ||
		!strings.Contains(capacityFirst, "resolved ") || !strings.Contains(capacityFirst, "2 alerts, start 0s") {
		t.Errorf("want the incident opened by the alert that fired first (latency), resolved with both alerts from minute 0:\n%s", capacityFirst)
	}
	if a, b := run(false, 0, 1), run(false, 1, 0); a == b {
		t.Errorf("without Expect the groups' order shows, want it to (the case Expect is for):\n%s", a)
	}
	// A group that never comes holds the others no longer than hold.
	tr := NewIncidents(IncidentOptions{})
	tr.Expect([]string{"capacity", "latency", "gone"}, 5*time.Minute)
	bs := batches()
	tr.Process(context.Background(), &bs[0])
	tr.Process(context.Background(), &bs[1])
	if len(bs[0].Incidents)+len(bs[1].Incidents) != 0 {
		t.Fatalf("incidents before every group came: %s", incidentStatuses(append(bs[0].Incidents, bs[1].Incidents...)))
	}
	next := Batch{Group: "latency", At: atMin(605)}
	tr.Process(context.Background(), &next)
	if s := incidentStatuses(next.Incidents); s != "opened model=m1 2m0s; updated model=m1 4m0s; resolved model=m1 30m0s" {
		t.Errorf("after hold: %s", s)
	}
}

// TestIncidentsSetPolicy: after SetPolicy, what comes next follows the new
// policy: with a gap of a minute, two alerts five minutes apart are two
// incidents, which the default gap of ten minutes makes one.
func TestIncidentsSetPolicy(t *testing.T) {
	f := func(p *IncidentPolicy) int {
		t.Helper()
		tr := NewIncidents(IncidentOptions{})
		if p != nil {
			tr.SetPolicy(*p)
		}
		a := fired("ttft", "m1", "p0", 0, 1)
		b := fired("e2e", "m1", "p0", 7, 8)
		batch := Batch{Group: "fleet", At: atMin(100), Alerts: []AlertData{a, resolved(a, 2, 3), b, resolved(b, 9, 10)}}
		tr.Process(context.Background(), &batch)
		opened := 0
		for _, e := range batch.Incidents {
			if e.Status == IncidentOpened {
				opened++
			}
		}
		return opened
	}
	if n := f(nil); n != 1 {
		t.Errorf("default gap: %d incidents, want 1", n)
	}
	if n := f(&IncidentPolicy{Gap: time.Minute}); n != 2 {
		t.Errorf("a gap of a minute: %d incidents, want 2", n)
	}
}

// A tracker that gives up the incidents of a set of replicas (Reset)
// keeps none of them; another that takes them up restores what the first
// stored, and a second Reset and Restore on the first gives it back the
// incident the other moved on.
func TestIncidentsReset(t *testing.T) {
	ctx := context.Background()
	store := &memStore{m: map[string][]byte{}}
	first := NewIncidents(IncidentOptions{Store: store})
	a := fired("a", "m1", "p0", 0, 1)
	b := Batch{Group: "fleet", At: atMin(2), Alerts: []AlertData{a}}
	first.Process(ctx, &b)
	id := first.Open()[0].ID
	first.Reset()
	if open := first.Open(); len(open) != 0 {
		t.Fatalf("after Reset: %d open incidents", len(open))
	}
	second := NewIncidents(IncidentOptions{Store: store})
	if n, err := second.Restore(ctx); n != 1 || err != nil {
		t.Fatalf("restored %d, %v", n, err)
	}
	b = Batch{Group: "fleet", At: atMin(3), Alerts: []AlertData{fired("b", "m1", "p1", 2, 3)}}
	second.Process(ctx, &b)
	if len(b.Incidents) != 1 || b.Incidents[0].Status != IncidentUpdated || b.Incidents[0].ID != id {
		t.Fatalf("the restored incident: %s", incidentStatuses(b.Incidents))
	}
	first.Reset()
	if n, err := first.Restore(ctx); n != 1 || err != nil {
		t.Fatalf("restored %d, %v", n, err)
	}
	if open := first.Open(); len(open) != 1 || open[0].ID != id || len(open[0].Members) != 2 {
		t.Fatalf("restored again: %+v", open)
	}
}
