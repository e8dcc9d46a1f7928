package rules

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
)

// retainer stands in for the state bucket and the lifecycle: it holds the
// progress keys and the alerts' group/rule, and keeps what keep accepts.
type retainer struct {
	progress []string
	alerts   [][2]string
	stored   [][2]string // what other processes left in the bucket
	fail     error
}

func (r *retainer) RetainStored(_ context.Context, now time.Time, keep func(group, rule string) bool) ([]alerting.AlertData, error) {
	var kept [][2]string
	var resolved []alerting.AlertData
	for _, a := range r.stored {
		if keep(a[0], a[1]) {
			kept = append(kept, a)
			continue
		}
		resolved = append(resolved, alerting.AlertData{Group: a[0], Rule: a[1], Status: alerting.StatusResolved, Time: now})
	}
	r.stored = kept
	return resolved, nil
}

func (r *retainer) RetainProgress(_ context.Context, keep func(rule string) bool) (int, error) {
	if r.fail != nil {
		return 0, r.fail
	}
	var kept []string
	for _, p := range r.progress {
		if keep(p) {
			kept = append(kept, p)
		}
	}
	n := len(r.progress) - len(kept)
	r.progress = kept
	return n, nil
}

func (r *retainer) Retain(now time.Time, keep func(group, rule string) bool) []alerting.AlertData {
	var kept [][2]string
	var resolved []alerting.AlertData
	for _, a := range r.alerts {
		if keep(a[0], a[1]) {
			kept = append(kept, a)
			continue
		}
		resolved = append(resolved, alerting.AlertData{Group: a[0], Rule: a[1], Status: alerting.StatusResolved, Time: now})
	}
	r.alerts = kept
	return resolved
}

type sentBatches []alerting.Batch

func (b *sentBatches) Send(_ context.Context, x alerting.Batch) error { *b = append(*b, x); return nil }

// TestRetain keeps the progress and the alerts of the configured rules
// only, and sends the removed rules' resolved alerts.
func TestRetain(t *testing.T) {
	groups, err := Build(testGroups(0)) // latency/ttft
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	st := &retainer{progress: []string{"latency/ttft", "latency/gone", "old/ttft", "latency/", "old/"},
		alerts: [][2]string{{"latency", "ttft"}, {"latency", "gone"}, {"old", "ttft"}}, stored: [][2]string{{"left", "r"}}}
	var out sentBatches
	Retain(context.Background(), groups, now, RetainOptions{Progress: st, Alerts: st, Out: &out})
	if strings.Join(st.progress, " ") != "latency/ttft latency/" || len(st.alerts) != 1 || st.alerts[0] != [2]string{"latency", "ttft"} {
		t.Fatalf("kept progress %v and alerts %v, want latency/ttft's and the group latency's evaluated tick only", st.progress, st.alerts)
	}
	if len(st.stored) != 1 {
		t.Fatal("a process that shares no store resolved what another left")
	}
	if len(out) != 1 || len(out[0].Alerts) != 2 || out[0].Alerts[0].Rule != "gone" || out[0].Alerts[1].Group != "old" || !out[0].Alerts[0].Time.Equal(now) {
		t.Fatalf("sent %+v, want one batch resolving latency/gone and old/ttft at now", out)
	}

	// Nothing to resolve sends nothing; a bucket that fails keeps the
	// alerts retained all the same.
	out = nil
	st.fail = errors.New("bucket away")
	st.alerts = append(st.alerts, [2]string{"old", "x"})
	Retain(context.Background(), groups, now, RetainOptions{Progress: st, Alerts: st, Out: &out})
	if len(out) != 1 || len(out[0].Alerts) != 1 || len(st.alerts) != 1 {
		t.Fatalf("with the bucket failing: sent %+v, alerts %v", out, st.alerts)
	}
	out = nil
	Retain(context.Background(), groups, now, RetainOptions{Progress: st, Alerts: st, Out: &out})
	if len(out) != 0 {
		t.Fatalf("nothing removed: sent %+v", out)
	}
}

// TestRetainShared: replicas also resolve the alerts other processes left
// in the shared bucket of rules the groups no longer have.
func TestRetainShared(t *testing.T) {
	groups, err := Build(testGroups(0)) // latency/ttft
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	st := &retainer{stored: [][2]string{{"latency", "ttft"}, {"removed", "r"}}}
	var out sentBatches
	Retain(context.Background(), groups, now, RetainOptions{Progress: st, Alerts: st, Out: &out, Shared: true})
	if len(out) != 1 || len(out[0].Alerts) != 1 || out[0].Alerts[0].Group != "removed" || len(st.stored) != 1 {
		t.Fatalf("sent %+v, left %v; want the removed group's alert resolved and latency/ttft's kept", out, st.stored)
	}
}
