package rules

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// anomalyRuleOf builds one anomaly rule of a one-minute group.
func anomalyRuleOf(t *testing.T, r rulefmt.Rule) Rule {
	t.Helper()
	r.Name, r.Expr, r.Kind = "r", "x", rulefmt.KindAnomaly
	if r.Spec == nil {
		r.Spec = &rulefmt.Detector{Name: "auto"}
	}
	if r.Step == 0 {
		r.Step = time.Minute
	}
	gs, err := Build([]rulefmt.Group{{Name: "g", Interval: time.Minute, Rules: []rulefmt.Rule{r}}})
	if err != nil {
		t.Fatal(err)
	}
	return gs[0].rules[0]
}

// TestAnomalyWarmUpIsTheDetectorsNeed: a rule without a lookback fetches,
// at its first evaluation, the history its detector needs at the rule's
// step, in consecutive parts on the step's grid (the first of 60 points,
// so that the points of many series are never held at once); the next
// evaluation fetches only what is new. With a lookback, the lookback.
func TestAnomalyWarmUpIsTheDetectorsNeed(t *testing.T) {
	series := minuteSeries("x", 12*24*60+2, nil) // up to a minute past the first evaluation
	now := t0.Add(12 * 24 * time.Hour)
	for _, c := range []struct {
		lookback time.Duration
		warm     time.Duration
	}{{0, 0}, {3 * time.Hour, 3 * time.Hour}} {
		r := anomalyRuleOf(t, rulefmt.Rule{Lookback: c.lookback})
		want := c.warm
		if want == 0 {
			n, err := analysis.NeedsOf(analysis.Spec{Name: "auto"}, time.Minute.Milliseconds())
			if err != nil {
				t.Fatal(err)
			}
			want = time.Duration(n.History) * time.Millisecond
		}
		store := &memStore{series: []ingest.Series{series}}
		env := &Env{Querier: store, Interval: time.Minute}
		at := now.Truncate(time.Minute)
		res, err := r.Eval(context.Background(), at, env)
		if err != nil {
			t.Fatal(err)
		}
		from := at.Add(-time.Minute) // the interval reported
		if got := store.calls[0][0]; !got.Equal(from.Add(-want)) {
			t.Errorf("lookback %v: the first fetch starts %v before the report, want %v", c.lookback, from.Sub(got), want)
		}
		if first := store.calls[0]; first[1].Sub(first[0]) != 59*time.Minute && want > time.Hour {
			t.Errorf("lookback %v: the first part spans %v, want 59m (60 points)", c.lookback, first[1].Sub(first[0]))
		}
		for i := 1; i < len(store.calls); i++ {
			if !store.calls[i][0].Equal(store.calls[i-1][1].Add(time.Minute)) {
				t.Fatalf("lookback %v: part %d starts at %v, the one before ended at %v", c.lookback, i, store.calls[i][0], store.calls[i-1][1])
			}
		}
		if last := store.calls[len(store.calls)-1][1]; !last.Equal(at) {
			t.Errorf("lookback %v: the last part ends at %v, want %v", c.lookback, last, at)
		}
		if wantPoints := int(want/time.Minute) + 2; res.Scored != wantPoints {
			t.Errorf("lookback %v: %d points scored, want %d", c.lookback, res.Scored, wantPoints)
		}
		store.calls = nil
		if _, err := r.Eval(context.Background(), at.Add(time.Minute), env); err != nil {
			t.Fatal(err)
		}
		if len(store.calls) != 1 || !store.calls[0][0].Equal(at.Add(time.Minute)) {
			t.Errorf("lookback %v: the second evaluation fetched %v, want the new minute only", c.lookback, store.calls)
		}
	}
}

// TestAnomalyNotes: what the detector cannot do at the rule's step, and a
// store that returns less history than the detector asked for, are noted
// at the first evaluation only; the findings of a detector that could not
// run every test say which in details.mode, and every finding of auto says
// which test fired, and on what, in details.test and details.against.
func TestAnomalyNotes(t *testing.T) {
	// Two hours of history where a week was asked for, and a spike at the
	// end.
	s := minuteSeries("x", 121, map[int]float64{120: 50})
	at := t0.Add(121 * time.Minute)
	r := anomalyRuleOf(t, rulefmt.Rule{})
	env := &Env{Querier: &memStore{series: []ingest.Series{s}}, Interval: time.Minute, Backfill: 30 * time.Minute}
	res, err := r.Eval(context.Background(), at, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "the store returned 1h31m of the 7d2h of history the detector auto asked for") {
		t.Errorf("notes %q, want one on the short history", res.Notes)
	}
	var modes, tests []string
	for _, o := range res.Observations {
		if o.Anomalous {
			m, _ := o.Details["mode"].(string)
			modes = append(modes, m)
			test, _ := o.Details["test"].(string)
			against, _ := o.Details["against"].(string)
			tests = append(tests, test+": "+against)
		}
	}
	if len(modes) != 1 || modes[0] != "tail only: 2h of the 22h the seen-before test needs and the 3d the phase test needs" {
		t.Errorf("anomalous observations' modes %q", modes)
	}
	if len(tests) != 1 || tests[0] != "tail: the median and the tails of the bins of the window, incidents left out" {
		t.Errorf("anomalous observations' tests %q", tests)
	}
	if res, err := r.Eval(context.Background(), at.Add(time.Minute), env); err != nil || len(res.Notes) != 0 {
		t.Errorf("the second evaluation notes %q (%v)", res.Notes, err)
	}

	coarse := anomalyRuleOf(t, rulefmt.Rule{Step: 6 * time.Hour})
	res, err = coarse.Eval(context.Background(), at, &Env{Querier: &memStore{}, Interval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "detector auto at step 6h0m0s: its bins of 6h") {
		t.Errorf("a 6h step notes %q", res.Notes)
	}
}

// TestAnomalyForgetsGoneSeries: a series no longer returned keeps its
// state for forget_after (by default the longer of resolve_after_absent
// and twenty steps) and is then forgotten and counted; one whose alert may
// be active is reported gone, so that alert ends. A series that keeps
// coming is kept.
func TestAnomalyForgetsGoneSeries(t *testing.T) {
	f := func(forget time.Duration, wantAt int) {
		t.Helper()
		r := anomalyRuleOf(t, rulefmt.Rule{Spec: &rulefmt.Detector{Name: "sigma", Params: map[string]string{"min_points": "10"}},
			Lookback: 30 * time.Minute, ForgetAfter: forget})
		a := minuteSeries("x", 300, nil)
		b := minuteSeries("x", 100, map[int]float64{99: 500}) // anomalous at its last point
		b.Labels = ingest.Labels{{Name: "__name__", Value: "x"}, {Name: "pod", Value: "p1"}}
		store := &memStore{series: []ingest.Series{a, b}}
		env := &Env{Querier: store, Interval: time.Minute, Backfill: time.Hour}
		ar := r.(*anomalyRule)
		var gone []string
		forgotten := 0
		for m := 100; m < 300; m++ {
			res, err := r.Eval(context.Background(), t0.Add(time.Duration(m)*time.Minute), env)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range res.Observations {
				if o.Gone {
					gone = append(gone, o.Series)
				}
			}
			forgotten += res.Forgotten
			n := len(ar.series.series)
			switch {
			case m < wantAt && n != 2, m >= wantAt && n != 1:
				t.Fatalf("forget_after %v, minute %d: %d series held", forget, m, n)
			}
		}
		if len(gone) != 1 || !strings.Contains(gone[0], `pod="p1"`) || forgotten != 1 {
			t.Errorf("forget_after %v: gone %v, %d forgotten; want the series of p1 once", forget, gone, forgotten)
		}
	}
	f(0, 121)             // the default: twenty one-minute steps after its last evaluation seen
	f(time.Hour, 161)     // set by the rule
	f(7*time.Minute, 108) // shorter than the default
}

// TestAnomalyKeepFiringFor: an alert kept firing for keep_firing_for after
// its last anomalous point resolves at the first normal point after that,
// however many normal points came before it: the rule goes on observing
// them. A spike while it still fires is the same episode; one after it
// resolved is a new finding.
func TestAnomalyKeepFiringFor(t *testing.T) {
	g := testGroups(0)
	g[0].Rules[0].KeepFiringFor = 10 * time.Minute
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 200, map[int]float64{100: 50, 105: 60, 150: 70})}}
	out := &recorder{}
	now := t0.Add(199 * time.Minute)
	m, err := newTestManager(testOptions{Groups: g, Querier: store, Output: out, Backfill: 3 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var fired []int
	for _, f := range out.got {
		fired = append(fired, int(f.WindowEnd.Sub(t0)/time.Minute))
	}
	var resolved []int
	for _, a := range out.alerts {
		if a.ResolvedAt != nil {
			resolved = append(resolved, int(a.ResolvedAt.Sub(t0)/time.Minute))
		}
	}
	if want := []int{100, 150}; !slices.Equal(fired, want) {
		t.Errorf("findings at minutes %v, want %v (105 is the first episode's, kept firing)", fired, want)
	}
	if want := []int{115, 160}; !slices.Equal(resolved, want) {
		t.Errorf("alerts resolved at minutes %v, want %v (10 minutes after each episode's last spike)", resolved, want)
	}
}
