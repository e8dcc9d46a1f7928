package alerting

import (
	"context"
	"log/slog"
)

// GroupForwarder is what a Handover needs of a forwarder that re-sends
// the firing alerts (the Alertmanager forwarder): to be seeded with a
// gained group's firing alerts, and to forget a lost group's.
type GroupForwarder interface {
	Seed(firing []AlertData)
	Forget(group string)
}

// Handover moves a group's alerts in and out of this process as the
// group's lease comes and goes between replicas (the rules' Handover):
// Gained restores the group's alert states and seeds the forwarder with
// its firing alerts; Lost forgets both.
type Handover struct {
	Lifecycle *Lifecycle
	// Forwarder is nil without one.
	Forwarder GroupForwarder
	// Forget are told each group lost (the exported gauges, which
	// another process exports now).
	Forget []interface{ Forget(group string) }
	// Logger is nil to discard.
	Logger *slog.Logger
}

// Gained restores the alert states of group.
func (h *Handover) Gained(ctx context.Context, group string) error {
	n, err := h.Lifecycle.RestoreGroup(ctx, group)
	if err != nil {
		return err
	}
	if h.Forwarder != nil {
		var firing []AlertData
		for _, d := range h.Lifecycle.Firing() {
			if d.Group == group {
				firing = append(firing, d)
			}
		}
		h.Forwarder.Seed(firing)
	}
	if h.Logger != nil {
		h.Logger.Info("the group's alert states restored", "group", group, "alerts", n)
	}
	return nil
}

// Lost forgets the alerts of group, and tells Forget.
func (h *Handover) Lost(group string) {
	h.Lifecycle.ForgetGroup(group)
	if h.Forwarder != nil {
		h.Forwarder.Forget(group)
	}
	for _, f := range h.Forget {
		f.Forget(group)
	}
}
