// Package cluster lets several inferwatch processes on one configuration
// and one NATS share its rule groups. Each member announces itself with a
// heartbeat key in a JetStream key-value bucket; each group is owned by one
// live member, chosen by rendezvous hashing over the live members, through
// a lease key in the same bucket: created when absent to take it, updated
// on its revision to renew it, taken over on its revision once its owner
// has stopped renewing it for the lease TTL.
//
// The decisions — who should own a key, which members are live, what to do
// with a lease — are pure functions of what the member has seen and the
// time (this file); Member (member.go) is the shell that reads and writes
// the bucket.
//
// Time is only ever compared on one member's own clock: a member counts a
// key as stale when the revision it sees has not changed for the TTL since
// it first saw that revision, so clocks that disagree between machines do
// not matter. An owner stops using its lease RenewDeadline after it last
// asked to renew it, and RenewDeadline < TTL: by the time another member
// may take the lease, the owner has stopped.
package cluster

import (
	"hash/fnv"
	"io"
	"slices"
	"time"
)

// Weight is the rendezvous weight of member for key: a 64-bit hash of both,
// mixed so that nearby names spread evenly.
func Weight(member, key string) uint64 {
	h := fnv.New64a()
	io.WriteString(h, member)
	h.Write([]byte{0})
	io.WriteString(h, key)
	return mix(h.Sum64())
}

// mix is the finaliser of SplitMix64.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Owner is the member that should own key: the one of highest Weight (the
// smaller name on a tie); "" when there is none. A member that joins takes
// only the keys it now weighs most for, and one that leaves gives only its
// own keys to others.
func Owner(key string, members []string) string {
	best, bestW := "", uint64(0)
	for _, m := range members {
		w := Weight(m, key)
		if best == "" || w > bestW || (w == bestW && m < best) {
			best, bestW = m, w
		}
	}
	return best
}

// Seen is what a member knows of one key of the bucket: the revision it
// saw last and when (on its own clock) it first saw that revision.
type Seen struct {
	Revision uint64
	Since    time.Time
}

// Observe returns what is known of a key after seeing it at revision rev at
// time now: a new revision starts a new Since.
func Observe(prev Seen, rev uint64, now time.Time) Seen {
	if prev.Revision == rev && !prev.Since.IsZero() {
		return prev
	}
	return Seen{Revision: rev, Since: now}
}

// Stale reports whether a key seen as s has not changed for ttl by now.
func Stale(s Seen, now time.Time, ttl time.Duration) bool {
	return now.Sub(s.Since) >= ttl
}

// Live returns the members whose heartbeats are not stale at now, sorted,
// with me among them (a member counts itself as live while it runs).
func Live(heartbeats map[string]Seen, me string, now time.Time, ttl time.Duration) []string {
	out := []string{me}
	for m, s := range heartbeats {
		if m != me && !Stale(s, now, ttl) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// Lease is what a member knows of one lease key: its owner ("" when the
// key is absent or deleted), its revision (0 when absent), when the member
// first saw that revision, and whether this process holds it (took or
// renewed it itself, as opposed to finding its own name in the bucket
// after a restart).
type Lease struct {
	Owner string
	Seen
	Held bool
}

// Action is what a member does with a lease.
type Action uint8

// The actions on a lease.
const (
	// Wait: nothing to do.
	Wait Action = iota
	// Take: create the absent key.
	Take
	// TakeOver: update the key on its revision (its owner stopped renewing
	// it, or it is ours from before a restart).
	TakeOver
	// Renew: update the key we hold on its revision.
	Renew
	// Release: delete the key we hold on its revision.
	Release
)

func (a Action) String() string {
	return [...]string{"wait", "take", "take over", "renew", "release"}[a]
}

// Decide is what member me does with lease l at time now, given whether it
// should own the lease's key (want: it weighs most among the live
// members) and the lease TTL.
func Decide(l Lease, me string, want bool, now time.Time, ttl time.Duration) Action {
	switch {
	case l.Owner == "" && want:
		return Take
	case l.Owner == "":
		return Wait
	case l.Owner == me && l.Held && want:
		return Renew
	case l.Owner == me && want:
		// Our name from before a restart: the process that wrote it is
		// gone (one member name is one process at a time).
		return TakeOver
	case l.Owner == me:
		return Release
	case want && Stale(l.Seen, now, ttl):
		return TakeOver
	}
	return Wait
}

// Valid reports whether a lease whose renewal was last asked for at
// renewed is still ours to use at now.
func Valid(renewed, now time.Time, renewDeadline time.Duration) bool {
	return !renewed.IsZero() && now.Sub(renewed) < renewDeadline
}
