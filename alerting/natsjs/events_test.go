package natsjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// TestFollowEvents: a follower gets the events on its subjects published before
// it started (from since on) and after, and nothing else.
func TestFollowEvents(t *testing.T) {
	srv := natstest.Start(t)
	j := connect(t, natsjs.Options{URL: srv.ClientURL()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	publish := func(rule string, desired int) {
		t.Helper()
		d := alerting.ScaleData{Group: "g", Rule: rule, Target: `{model="m"}`, Time: t0.Add(time.Duration(desired) * time.Minute), DesiredReplicas: desired}
		ev, err := alerting.NewScaleEvent(d, defaultSource)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.PublishEvent(ctx, alerting.ScaleSubject(testSubjectsPrefix, rule), ev); err != nil {
			t.Fatal(err)
		}
	}
	publish("before", 1)
	other := alerting.Event{SpecVersion: "1.0", ID: "x", Source: defaultSource, Type: alerting.ForecastEventType, Time: t0,
		DataContentType: "application/json", Data: []byte(`{}`)}
	if err := j.PublishEvent(ctx, alerting.ForecastSubject(testSubjectsPrefix, "before"), other); err != nil {
		t.Fatal(err)
	}
	got := make(chan alerting.ScaleData, 10)
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- j.FollowEvents(fctx, []string{testSubjectsPrefix + ".scale.>"}, time.Now().Add(-time.Minute), func(subject string, ev alerting.Event) {
			d, err := alerting.DecodeData(ev)
			if err != nil {
				t.Errorf("%s: %v", subject, err)
				return
			}
			got <- *d.(*alerting.ScaleData)
		})
	}()
	publish("after", 2)
	var rules []string
	for len(rules) < 2 {
		select {
		case d := <-got:
			rules = append(rules, d.Rule)
		case <-ctx.Done():
			t.Fatalf("followed %v before the deadline, want [before after]", rules)
		}
	}
	if rules[0] != "before" || rules[1] != "after" {
		t.Errorf("followed %v, want [before after]", rules)
	}
	stop()
	if err := <-done; err != context.Canceled {
		t.Errorf("FollowEvents returned %v after its context ended, want context.Canceled", err)
	}
	select {
	case d := <-got:
		t.Errorf("an event more than published: %+v", d)
	default:
	}
}
