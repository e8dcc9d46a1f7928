package cluster

import (
	"fmt"
	"testing"
	"time"
)

// The weights are those of an independent implementation: FNV-1a 64 of
// member, a zero byte and key, then SplitMix64's finaliser, computed in
// Python.
func TestWeight(t *testing.T) {
	f := func(member, key string, want uint64) {
		t.Helper()
		if got := Weight(member, key); got != want {
			t.Errorf("Weight(%q, %q) = %d, want %d", member, key, got, want)
		}
	}
	f("a", "g", 11871990653111870064)
	f("member-1", "vllm-latency", 10075709253034557737)
	f("member-2", "vllm-latency", 6255492842533989864)
	f("member-3", "vllm-latency", 18218970014691197785)
}

func TestOwner(t *testing.T) {
	members := []string{"member-1", "member-2", "member-3"}
	for key, want := range map[string]string{
		"vllm-latency": "member-3", "tgi": "member-2", "dcgm": "member-2", "sglang": "member-1", "triton": "member-2",
	} {
		if got := Owner(key, members); got != want {
			t.Errorf("Owner(%q) = %q, want %q", key, got, want)
		}
	}
	if got := Owner("g", nil); got != "" {
		t.Errorf("Owner with no members = %q, want none", got)
	}
}

// A member that leaves gives away only its own keys, and one that joins
// takes keys only for itself.
func TestOwnerMovesOnlyItsShare(t *testing.T) {
	three := []string{"a", "b", "c"}
	four := []string{"a", "b", "c", "d"}
	moved, toD := 0, 0
	for i := range 1000 {
		key := fmt.Sprintf("group-%d", i)
		before, after := Owner(key, three), Owner(key, four)
		if before != after {
			moved++
			if after != "d" {
				t.Fatalf("key %s moved from %s to %s when d joined", key, before, after)
			}
		}
		if after == "d" {
			toD++
		}
		if without := Owner(key, []string{"a", "c"}); before != "b" && without != before {
			t.Fatalf("key %s of %s moved to %s when b left", key, before, without)
		}
	}
	// Each of four members weighs most for about a quarter of the keys.
	if toD < 200 || toD > 300 || moved != toD {
		t.Errorf("d took %d of 1000 keys (moved %d), want about 250", toD, moved)
	}
}

func TestLive(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := 15 * time.Second
	hb := map[string]Seen{
		"a": {Revision: 4, Since: t0},                      // stale at t0+15s
		"b": {Revision: 9, Since: t0.Add(5 * time.Second)}, // live until t0+20s
	}
	got := fmt.Sprint(Live(hb, "me", t0.Add(15*time.Second), ttl))
	if got != "[b me]" {
		t.Errorf("Live at t0+15s = %s, want [b me]", got)
	}
	got = fmt.Sprint(Live(hb, "me", t0.Add(14*time.Second), ttl))
	if got != "[a b me]" {
		t.Errorf("Live at t0+14s = %s, want [a b me]", got)
	}
}

func TestObserve(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Observe(Seen{}, 3, t0)
	if s != (Seen{Revision: 3, Since: t0}) {
		t.Fatalf("first sight: %+v", s)
	}
	if s2 := Observe(s, 3, t0.Add(time.Minute)); s2 != s {
		t.Errorf("the same revision later moved Since: %+v", s2)
	}
	if s3 := Observe(s, 4, t0.Add(time.Minute)); s3 != (Seen{Revision: 4, Since: t0.Add(time.Minute)}) {
		t.Errorf("a new revision: %+v", s3)
	}
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := 15 * time.Second
	fresh := Seen{Revision: 7, Since: t0}
	f := func(l Lease, want bool, now time.Time, expect Action) {
		t.Helper()
		if got := Decide(l, "me", want, now, ttl); got != expect {
			t.Errorf("Decide(%+v, want=%v, t0%+v) = %s, want %s", l, want, now.Sub(t0), got, expect)
		}
	}
	f(Lease{}, true, t0, Take)
	f(Lease{}, false, t0, Wait)
	f(Lease{Owner: "me", Seen: fresh, Held: true}, true, t0, Renew)
	f(Lease{Owner: "me", Seen: fresh, Held: true}, false, t0, Release)
	f(Lease{Owner: "me", Seen: fresh}, true, t0, TakeOver)
	f(Lease{Owner: "me", Seen: fresh}, false, t0, Release)
	// Another owner's lease: taken over once unchanged for the TTL, by the
	// member that should own it only.
	f(Lease{Owner: "other", Seen: fresh}, true, t0.Add(14*time.Second), Wait)
	f(Lease{Owner: "other", Seen: fresh}, true, t0.Add(15*time.Second), TakeOver)
	f(Lease{Owner: "other", Seen: fresh}, false, t0.Add(time.Hour), Wait)
}

// An owner stops using its lease before any other member may take it:
// the other first sees the renewal at or after it was asked for, and waits
// the TTL from then.
func TestValidEndsBeforeTakeOver(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl, deadline := 15*time.Second, 10*time.Second
	renewed := t0
	seenByOther := Seen{Revision: 8, Since: t0.Add(300 * time.Millisecond)}
	for d := time.Duration(0); d <= 30*time.Second; d += 100 * time.Millisecond {
		now := t0.Add(d)
		if Valid(renewed, now, deadline) && Decide(Lease{Owner: "owner", Seen: seenByOther}, "other", true, now, ttl) == TakeOver {
			t.Fatalf("at t0+%s the owner still uses the lease and another may take it", d)
		}
	}
	if !Valid(renewed, t0.Add(9*time.Second), deadline) || Valid(renewed, t0.Add(10*time.Second), deadline) {
		t.Error("Valid does not end at the renew deadline")
	}
	if Valid(time.Time{}, t0, deadline) {
		t.Error("a lease never renewed is valid")
	}
}
