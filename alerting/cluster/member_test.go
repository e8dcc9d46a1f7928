package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

const (
	testTTL       = 900 * time.Millisecond
	testHeartbeat = 300 * time.Millisecond
)

// bucket makes a members bucket on a fresh embedded NATS server.
func bucket(t *testing.T) jetstream.KeyValue {
	t.Helper()
	srv := natstest.Start(t)
	js := natstest.JetStream(t, srv.ClientURL())
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "TEST_MEMBERS", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// running is a member whose heartbeat loop runs until stop or the test's end.
type running struct {
	*cluster.Member
	cancel context.CancelFunc
	done   chan struct{}
}

// stop ends the loop without leaving, as a process killed.
func (r *running) stop() {
	r.cancel()
	<-r.done
}

func start(t *testing.T, kv jetstream.KeyValue, name string, groups []string) *running {
	t.Helper()
	return startMember(t, cluster.Options{Bucket: kv, Info: cluster.Info{Name: name}, Groups: groups, TTL: testTTL, Heartbeat: testHeartbeat})
}

// startMember joins a member of o and runs its loop until the test ends.
func startMember(t *testing.T, o cluster.Options) *running {
	t.Helper()
	name := o.Info.Name
	m, err := cluster.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Join(context.Background()); err != nil {
		t.Fatalf("%s joining: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Member: m, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// owners returns, per group, the members that may evaluate it now.
func owners(ms []*running, groups []string) map[string][]string {
	out := map[string][]string{}
	for _, g := range groups {
		for _, m := range ms {
			if _, done, ok := m.Acquire(g); ok {
				done()
				out[g] = append(out[g], m.Name())
			}
		}
	}
	return out
}

// waitOwners polls until every group has exactly one owner among ms, all
// of them ones want accepts, and fails after a bounded wait. Meanwhile no
// group may ever have two owners.
func waitOwners(t *testing.T, ms []*running, groups []string, want func(owner string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(20 * testTTL)
	for {
		got := owners(ms, groups)
		settled := map[string]string{}
		for g, os := range got {
			if len(os) > 1 {
				t.Fatalf("group %s has %d owners at once: %v", g, len(os), os)
			}
			if want(os[0]) {
				settled[g] = os[0]
			}
		}
		if len(settled) == len(groups) {
			return settled
		}
		if time.Now().After(deadline) {
			t.Fatalf("groups not settled: owners %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func groupNames(n int) []string {
	var gs []string
	for i := range n {
		gs = append(gs, fmt.Sprintf("group-%02d", i))
	}
	return gs
}

func TestMembersShareGroups(t *testing.T) {
	kv := bucket(t)
	groups := groupNames(12)
	a := start(t, kv, "a", groups)
	// Alone, a takes every group at once, in Join.
	if got := owners([]*running{a}, groups); len(got) != len(groups) {
		t.Fatalf("a alone owns %d of %d groups after joining", len(got), len(groups))
	}
	b := start(t, kv, "b", groups)
	c := start(t, kv, "c", groups)
	all := []*running{a, b, c}
	live := []string{"a", "b", "c"}
	// The groups move to their rendezvous owners, never with two owners
	// at once.
	var got map[string]string
	deadline := time.Now().Add(20 * testTTL)
	for {
		got = waitOwners(t, all, groups, func(string) bool { return true })
		ok := true
		for g, o := range got {
			ok = ok && o == cluster.Owner(g, live)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("owners %v are not the rendezvous owners", got)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// b is killed: its groups go to a and c once its lease expires, the
	// others stay where they are.
	before := got
	b.stop()
	got = waitOwners(t, all, groups, func(o string) bool { return o != "b" })
	for g, o := range got {
		if before[g] != "b" && o != before[g] {
			t.Errorf("group %s moved from %s to %s when b died", g, before[g], o)
		}
		if want := cluster.Owner(g, []string{"a", "c"}); o != want {
			t.Errorf("group %s went to %s, want %s", g, o, want)
		}
	}

	// c leaves: its groups go to a at a's next heartbeat.
	c.cancel()
	<-c.done
	c.Leave(context.Background())
	got = waitOwners(t, all, groups, func(o string) bool { return o == "a" })
	if len(got) != len(groups) {
		t.Fatalf("a owns %d groups", len(got))
	}
	view, err := cluster.Read(context.Background(), kv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range view.Members {
		names = append(names, m.Name)
	}
	// b was killed: its heartbeat stays until the bucket's TTL removes it.
	if strings.Join(names, " ") != "a b" || len(view.Leases) != len(groups) {
		t.Errorf("view: members %v, %d leases", names, len(view.Leases))
	}
}

// A member whose heartbeats stop for longer than the TTL (a paused
// process) stops using its leases before another member takes them, and
// after it resumes, sees them lost.
func TestPausedMemberLosesLeases(t *testing.T) {
	kv := bucket(t)
	groups := groupNames(6)
	var mu sync.Mutex
	paused := false
	a, err := cluster.New(cluster.Options{Bucket: &pausable{KeyValue: kv, paused: func() bool { mu.Lock(); defer mu.Unlock(); return paused }},
		Info: cluster.Info{Name: "a"}, Groups: groups, TTL: testTTL, Heartbeat: testHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	terms := map[string]uint64{}
	for _, g := range groups {
		term, release, ok := a.Acquire(g)
		if !ok {
			t.Fatalf("a does not hold %s", g)
		}
		release()
		terms[g] = term
	}
	b := start(t, kv, "b", groups)
	mu.Lock()
	paused = true // a's reads and writes of the bucket now hang
	mu.Unlock()
	ra := &running{Member: a}
	got := waitOwners(t, []*running{ra, b}, groups, func(o string) bool { return o == "b" })
	if len(got) != len(groups) {
		t.Fatalf("b owns %d groups", len(got))
	}
	mu.Lock()
	paused = false
	mu.Unlock()
	// Back, a sees b's leases: it takes back the groups it weighs most for
	// once b hands them over, under a new term.
	waitOwners(t, []*running{ra, b}, groups, func(o string) bool { return true })
	deadline := time.Now().Add(20 * testTTL)
	for {
		n := 0
		for _, g := range groups {
			if term, release, ok := a.Acquire(g); ok {
				release()
				if term == terms[g] {
					t.Fatalf("a holds %s again under its old term %d", g, term)
				}
				n++
			}
		}
		want := 0
		for _, g := range groups {
			if cluster.Owner(g, []string{"a", "b"}) == "a" {
				want++
			}
		}
		if n == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a holds %d groups after resuming, want %d", n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pausable is a bucket whose calls hang until their context ends while
// paused says so, as those of a process that does not run.
type pausable struct {
	jetstream.KeyValue
	paused func() bool
}

func (p *pausable) wait(ctx context.Context) error {
	if !p.paused() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (p *pausable) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if err := p.wait(ctx); err != nil {
		return 0, err
	}
	return p.KeyValue.Put(ctx, key, value)
}

func (p *pausable) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := p.wait(ctx); err != nil {
		return 0, err
	}
	return p.KeyValue.Update(ctx, key, value, rev)
}

func (p *pausable) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	return p.KeyValue.WatchAll(ctx, opts...)
}

func TestJoinRefusesEmbedded(t *testing.T) {
	kv := bucket(t)
	e, err := cluster.New(cluster.Options{Bucket: kv, Info: cluster.Info{Name: "solo", Host: "node-1", PID: 42, Embedded: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, err := cluster.New(cluster.Options{Bucket: kv, Info: cluster.Info{Name: "second"}, Groups: []string{"g"}})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Join(context.Background())
	if err == nil || !strings.Contains(err.Error(), "embedded server of inferwatch member solo (host node-1, pid 42)") ||
		!strings.Contains(err.Error(), "external NATS") {
		t.Fatalf("joining beside an embedded member: %v", err)
	}
	if _, _, ok := m.Acquire("g"); ok {
		t.Error("the refused member holds a lease")
	}
	// The embedded member restarted (a new name, on its own server) finds
	// its old heartbeat and joins.
	again, err := cluster.New(cluster.Options{Bucket: kv, Info: cluster.Info{Name: "solo-2", Embedded: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Join(context.Background()); err != nil {
		t.Errorf("an embedded member beside its own old heartbeat: %v", err)
	}
}

// A member that leaves hands its groups on at once: the others watch the
// bucket, see its leases and heartbeat deleted and take the groups without
// waiting for their next heartbeat (an hour here), and tell Taken.
func TestMembersTakeReleasedLeasesAtOnce(t *testing.T) {
	kv := bucket(t)
	// Groups that b owns by rendezvous with a live too: b takes them all at
	// join and keeps them through any look at the set while it is there,
	// whenever a joins.
	var groups []string
	for _, g := range groupNames(100) {
		if cluster.Owner(g, []string{"a", "b"}) == "b" && len(groups) < 8 {
			groups = append(groups, g)
		}
	}
	startSlow := func(name string) *running {
		m, err := cluster.New(cluster.Options{Bucket: kv, Info: cluster.Info{Name: name}, Groups: groups, TTL: 3 * time.Hour, Heartbeat: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Join(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &running{Member: m, cancel: cancel, done: make(chan struct{})}
		go func() { defer close(r.done); m.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-r.done })
		return r
	}
	// b joins first and takes every group; a joins after, and b, their
	// owner by rendezvous, keeps them until it leaves.
	b := startSlow("b")
	a := startSlow("a")
	got := waitOwners(t, []*running{a, b}, groups, func(o string) bool { return o == "b" })
	if len(got) != len(groups) {
		t.Fatalf("b owns %d groups", len(got))
	}
	for len(a.Taken()) > 0 {
		<-a.Taken()
	}
	b.stop()
	b.Leave(context.Background())
	waitOwners(t, []*running{a, b}, groups, func(o string) bool { return o == "a" })
	taken := map[string]bool{}
	for len(a.Taken()) > 0 {
		taken[<-a.Taken()] = true
	}
	for _, g := range groups {
		if !taken[g] {
			t.Errorf("a took %s without telling Taken", g)
		}
	}
}

// Live: a member sees the others live with what their heartbeats
// announce; one killed is not live once its heartbeat has lapsed for the
// TTL; with heartbeats an hour apart, a member knows another from the
// heartbeat its watch sees, and one that leaves is not live from the
// deletion its watch sees (nothing else could make it so).
func TestLive(t *testing.T) {
	kv := bucket(t)
	started := time.Date(2026, 12, 6, 5, 0, 0, 123456789, time.UTC)
	a := startMember(t, cluster.Options{Bucket: kv, Info: cluster.Info{Name: "a"}, TTL: testTTL, Heartbeat: testHeartbeat})
	b := startMember(t, cluster.Options{Bucket: kv, Info: cluster.Info{Name: "b", PID: 7, Started: started}, TTL: testTTL, Heartbeat: testHeartbeat})
	waitLive := func(m *running, name string, want bool) cluster.Info {
		t.Helper()
		deadline := time.Now().Add(20 * testTTL)
		for {
			info, ok := m.Live(name)
			if ok == want {
				return info
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %s live: %v, want %v", m.Name(), name, ok, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if info := waitLive(a, "b", true); info.PID != 7 || !info.Started.Equal(started) {
		t.Errorf("a sees b's heartbeat as %+v", info)
	}
	if info, ok := a.Live("a"); !ok || info.Name != "a" {
		t.Errorf("a sees itself as %+v, live %v", info, ok)
	}
	if _, ok := a.Live("nobody"); ok {
		t.Error("a member that never announced itself is live")
	}
	b.stop()
	waitLive(a, "b", false)

	// With heartbeats an hour apart, c knows d from the heartbeat its
	// watch sees (d announces itself again until c's watch is open), and
	// not from d once d has left.
	slow := cluster.Options{Bucket: kv, TTL: 3 * time.Hour, Heartbeat: time.Hour}
	slow.Info.Name = "c"
	c := startMember(t, slow)
	slow.Info.Name = "d"
	d, err := cluster.New(slow)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * testTTL)
	for {
		if err := d.Join(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Live("d"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("c does not see d's heartbeats")
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.Leave(context.Background())
	waitLive(c, "d", false)
}

// A member that leaves releases a lease whose revision moved on without
// its knowing (a renewal whose answer was lost as it stopped): the lease
// is still its own, so it is deleted; one another member holds is left.
func TestLeaveReleasesALeaseRenewedUnknown(t *testing.T) {
	kv := bucket(t)
	slow := cluster.Options{Bucket: kv, TTL: 3 * time.Hour, Heartbeat: time.Hour}
	slow.Info, slow.Groups = cluster.Info{Name: "a"}, []string{"g", "h"}
	a, err := cluster.New(slow)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// g renewed by a with its answer lost; h taken by b meanwhile.
	for _, c := range []struct{ group, owner string }{{"g", "a"}, {"h", "b"}} {
		e, err := kv.Get(ctx, cluster.LeaseKey(c.group))
		if err != nil {
			t.Fatalf("a holds no lease of %s: %v", c.group, err)
		}
		if _, err := kv.Update(ctx, e.Key(), []byte(`{"group":"`+c.group+`","owner":"`+c.owner+`"}`), e.Revision()); err != nil {
			t.Fatal(err)
		}
	}
	a.Leave(ctx)
	if _, err := kv.Get(ctx, cluster.LeaseKey("g")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("the lease of g, a's at a revision it did not know, is still there after a left: %v", err)
	}
	if e, err := kv.Get(ctx, cluster.LeaseKey("h")); err != nil || !strings.Contains(string(e.Value()), `"owner":"b"`) {
		t.Errorf("the lease of h, b's, after a left: %v", err)
	}
}
