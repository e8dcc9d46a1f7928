package alerting

import (
	"context"
	"testing"
)

// seeder records what a Handover hands its forwarder.
type seeder struct {
	seeded []AlertData
	forgot []string
}

func (s *seeder) Seed(firing []AlertData) { s.seeded = append(s.seeded, firing...) }
func (s *seeder) Forget(group string)     { s.forgot = append(s.forgot, group) }

// TestHandover: a replica gaining a group restores only that group's
// alerts and seeds the forwarder with its firing ones; losing it forgets
// them in the lifecycle and the forwarder, and the store keeps them.
func TestHandover(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	first := NewLifecycle(LifecycleOptions{Store: store})
	first.Process(ctx, batchOf(point{0, true, 3}, point{1, true, 3}))
	other := batchOf(point{0, true, 3}, point{1, true, 3})
	other.Group = "h"
	for i := range other.Observations {
		other.Observations[i].Group = "h"
	}
	first.Process(ctx, other)
	if n := len(first.Firing()); n != 2 || len(store.m) != 2 {
		t.Fatalf("before the handover: %d firing, %d stored; want 2 and 2", n, len(store.m))
	}

	fwd := &seeder{}
	h := &Handover{Lifecycle: NewLifecycle(LifecycleOptions{Store: store}), Forwarder: fwd}
	if err := h.Gained(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if f := h.Lifecycle.Firing(); len(f) != 1 || f[0].Group != "g" {
		t.Fatalf("after gaining g: firing %+v, want g's alert only", f)
	}
	if len(fwd.seeded) != 1 || fwd.seeded[0].Group != "g" || fwd.seeded[0].Status != StatusFiring {
		t.Fatalf("the forwarder was seeded with %+v, want g's firing alert", fwd.seeded)
	}
	h.Lost("g")
	if f := h.Lifecycle.Firing(); len(f) != 0 || len(fwd.forgot) != 1 || fwd.forgot[0] != "g" || len(store.m) != 2 {
		t.Fatalf("after losing g: firing %+v, the forwarder forgot %v, %d stored; want none, [g], 2", f, fwd.forgot, len(store.m))
	}

	// Without a forwarder, only the lifecycle.
	h = &Handover{Lifecycle: NewLifecycle(LifecycleOptions{Store: store})}
	if err := h.Gained(ctx, "h"); err != nil || len(h.Lifecycle.Firing()) != 1 {
		t.Fatalf("gaining h without a forwarder: %v, firing %+v", err, h.Lifecycle.Firing())
	}
	h.Lost("h")
}
