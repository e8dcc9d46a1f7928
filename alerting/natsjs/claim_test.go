package natsjs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

const (
	testClaimPoll  = 20 * time.Millisecond
	testClaimGrace = 200 * time.Millisecond
)

// claimants opens the claims of the named processes on one state bucket,
// each through its own connection, as processes of a set would; a process
// is live while live[name] is true.
func claimants(t *testing.T, names ...string) (map[string]*natsjs.Claims, func(name string, alive bool)) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := natstest.Start(t)
	var mu sync.Mutex
	live := map[string]bool{}
	isLive := func(c natsjs.Claimant) bool {
		mu.Lock()
		defer mu.Unlock()
		return live[c.Member]
	}
	out := map[string]*natsjs.Claims{}
	for i, name := range names {
		kv, err := connect(t, natsjs.Options{URL: srv.ClientURL()}).KV(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		c, err := kv.Claims(natsjs.ClaimsOptions{Me: natsjs.Claimant{Member: name, Started: time.Date(2026, 12, 6, 0, 0, i, 0, time.UTC)},
			Live: isLive, Poll: testClaimPoll, Grace: testClaimGrace})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = c
		live[name] = true
	}
	return out, func(name string, alive bool) {
		mu.Lock()
		defer mu.Unlock()
		live[name] = alive
	}
}

type followed struct {
	who  string
	held *natsjs.HeldClaim
	from natsjs.Claimant
	err  error
}

// TestClaimStates: the first process to claim holds the claim and the
// others see it claimed; a follower keeps following while the claimant is
// live and returns once it marks the claim done; and once a claimant is
// gone without marking its claim done, of two followers one takes it
// over, the other follows the new claimant until it marks it done, and
// the claimant that was gone cannot mark it done any more.
func TestClaimStates(t *testing.T) {
	cs, setLive := claimants(t, "a", "b", "c")
	ctx := context.Background()
	const id = "report\x00daily\x002026-12-06T05:00:00Z"

	// Claimed.
	held, _, err := cs["a"].Claim(ctx, id)
	if err != nil || held == nil {
		t.Fatalf("a's claim: %v %v", held, err)
	}
	for _, n := range []string{"b", "c"} {
		h, by, err := cs[n].Claim(ctx, id)
		if err != nil || h != nil || by.Member != "a" || !by.Started.Equal(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%s's claim: %v by %+v, %v; want a's claim", n, h, by, err)
		}
	}
	if h, _, err := cs["b"].Claim(ctx, "report\x00daily\x002026-12-07T05:00:00Z"); err != nil || h == nil {
		t.Errorf("the claim of another period end: %v %v", h, err)
	}

	// A live claimant's claim is followed, not taken, for many a grace.
	fctx, cancel := context.WithTimeout(ctx, 10*testClaimGrace)
	h, by, err := cs["b"].Follow(fctx, id)
	cancel()
	if h != nil || !errors.Is(err, context.DeadlineExceeded) || by.Member != "a" ||
		!strings.Contains(err.Error(), `following the claim of "report\x00daily\x002026-12-06T05:00:00Z" by a in bucket`) {
		t.Fatalf("following a live claimant's claim: %v by %+v, %v", h, by, err)
	}

	// Done.
	done := make(chan followed, 1)
	go func() {
		h, by, err := cs["b"].Follow(ctx, id)
		done <- followed{"b", h, by, err}
	}()
	time.Sleep(3 * testClaimPoll)
	if err := held.Done(ctx); err != nil {
		t.Fatalf("a marking its claim done: %v", err)
	}
	if f := <-done; f.held != nil || f.err != nil || f.from.Member != "a" {
		t.Fatalf("following until done: %+v", f)
	}
	if h, by, err := cs["c"].Follow(ctx, id); h != nil || err != nil || by.Member != "a" {
		t.Errorf("following a claim done before: %v by %+v, %v", h, by, err)
	}

	// The claimant gone: taken over once among two followers.
	const id2 = "report\x00daily\x002026-12-08T05:00:00Z"
	held, _, err = cs["a"].Claim(ctx, id2)
	if err != nil || held == nil {
		t.Fatalf("a's second claim: %v %v", held, err)
	}
	setLive("a", false)
	results := make(chan followed, 2)
	for _, n := range []string{"b", "c"} {
		go func() {
			h, by, err := cs[n].Follow(ctx, id2)
			results <- followed{n, h, by, err}
		}()
	}
	first := <-results
	if first.err != nil || first.held == nil || first.from.Member != "a" {
		t.Fatalf("the first follower to return: %+v, want a takeover from a", first)
	}
	select {
	case second := <-results:
		t.Fatalf("%s returned (%+v) while %s holds the claim and is live", second.who, second, first.who)
	case <-time.After(10 * testClaimGrace):
	}
	if err := held.Done(ctx); err == nil || !strings.Contains(err.Error(), "another member took it over (now held by "+first.who+")") {
		t.Errorf("a marking done the claim taken from it: %v", err)
	}
	if err := first.held.Done(ctx); err != nil {
		t.Fatalf("%s marking the claim it took done: %v", first.who, err)
	}
	second := <-results
	if second.err != nil || second.held != nil || second.from.Member != first.who {
		t.Errorf("the second follower: %+v, want the claim done by %s", second, first.who)
	}
}
