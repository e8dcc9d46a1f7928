package rules

import (
	"context"
	"log/slog"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/internal/tick"
)

// ProgressRetainer deletes the progress of the rules keep refuses and
// says how many it deleted; *natsjs.KV implements it.
type ProgressRetainer interface {
	RetainProgress(ctx context.Context, keep func(rule string) bool) (int, error)
}

// AlertRetainer resolves the alerts of the rules keep refuses and returns
// their resolved events: those it holds (Retain) and those that other
// processes sharing its store left there (RetainStored);
// *alerting.Lifecycle implements it.
type AlertRetainer interface {
	Retain(now time.Time, keep func(group, rule string) bool) []alerting.AlertData
	RetainStored(ctx context.Context, now time.Time, keep func(group, rule string) bool) ([]alerting.AlertData, error)
}

// RetainOptions say where Retain finds the state of rules and where it
// sends the resolved alerts.
type RetainOptions struct {
	Progress ProgressRetainer
	Alerts   AlertRetainer
	Out      Sink
	// Shared says that other processes share the store (replicas): the
	// alerts they left of rules the groups no longer have are resolved
	// too.
	Shared bool
	// Logger is nil to discard.
	Logger *slog.Logger
}

// Retain keeps only the state of the rules of groups: it deletes the
// progress of rules the groups no longer have (and the newest evaluated
// tick of groups gone), resolves their restored
// or running alerts at now and sends the resolved events to o.Out. A
// failure is logged: the state is retained again at the next reload.
func Retain(ctx context.Context, groups []*Group, now time.Time, o RetainOptions) {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	have, progress := map[string]bool{}, map[string]bool{}
	for _, g := range groups {
		progress[evaluatedKey(g.Name())] = true
		for _, r := range g.Rules() {
			have[g.Name()+"\x00"+r.Name()] = true
			progress[ProgressKey(g.Name(), r.Name())] = true
		}
	}
	if n, err := o.Progress.RetainProgress(ctx, func(rule string) bool { return progress[rule] }); err != nil {
		logger.Warn("deleting the progress of rules the configuration no longer has", "err", err)
	} else if n > 0 {
		logger.Info("deleted the progress of rules the configuration no longer has", "rules", n)
	}
	keep := func(group, rule string) bool { return have[group+"\x00"+rule] }
	evs := o.Alerts.Retain(now, keep)
	if o.Shared {
		left, err := o.Alerts.RetainStored(ctx, now, keep)
		if err != nil {
			logger.Warn("resolving the alerts other replicas left of rules the configuration no longer has", "err", err)
		}
		evs = append(evs, left...)
	}
	if len(evs) == 0 {
		return
	}
	logger.Info("resolving the alerts of rules the configuration no longer has", "alerts", len(evs))
	if err := o.Out.Send(ctx, alerting.Batch{Alerts: evs}); err != nil {
		logger.Warn("publishing the resolved alerts of removed rules", "err", err)
	}
}

// RetainEvery calls Retain on the groups groups gives every interval until
// ctx is done or the returned function is called (it waits for a Retain
// in flight): replicas resolve what processes with another configuration
// left behind in a rolling update, after those processes stopped.
func RetainEvery(ctx context.Context, every time.Duration, groups func() []*Group, o RetainOptions) (stop func()) {
	return tick.Start(ctx, every, func(ctx context.Context, now time.Time) { Retain(ctx, groups(), now, o) })
}
