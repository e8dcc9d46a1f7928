package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is what a Member needs of a JetStream key-value bucket;
// jetstream.KeyValue implements it.
type Bucket interface {
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error)
	Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error)
	Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error)
}

// Defaults of Options.
const (
	DefaultTTL       = 15 * time.Second
	DefaultHeartbeat = 5 * time.Second
)

// Options configure a Member.
type Options struct {
	// Bucket holds the members' heartbeats and the leases. Required.
	Bucket Bucket
	// Info describes this member; Info.Name is its name in the set,
	// unique among the processes that run at one time. Required.
	Info Info
	// Groups are the names of the groups to lease (SetGroups changes
	// them). A member with none only announces itself.
	Groups []string
	// Roles are the roles the member may hold (role.go): each is held by
	// one live member of those that name it.
	Roles []string
	// TTL is how long a heartbeat or a lease lives without being
	// renewed (default DefaultTTL); Heartbeat how often the member
	// renews its heartbeat and its leases and looks at the others'
	// (default DefaultHeartbeat, at most TTL/3). A lease is used for at
	// most TTL - Heartbeat after its renewal was last asked for.
	TTL, Heartbeat time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger (nil: discard) and Metrics (nil: unregistered).
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// Info is what a member announces of itself.
type Info struct {
	Name    string    `json:"name"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started"`
	// Embedded says the member runs the NATS server itself: no other
	// member may join it.
	Embedded bool `json:"embedded,omitempty"`
}

// leaseValue is what a lease key holds.
type leaseValue struct {
	Group string `json:"group"`
	Owner string `json:"owner"`
}

// Key prefixes in the bucket.
const (
	memberPrefix = "member."
	leasePrefix  = "lease."
)

// LeaseKey is the bucket key of a group's lease.
func LeaseKey(group string) string {
	h := sha256.Sum256([]byte(group))
	return leasePrefix + hex.EncodeToString(h[:16])
}

// ErrEmbedded is Join's answer when the NATS server of the set is one
// member's embedded server.
var ErrEmbedded = errors.New("several replicas need an external NATS server (set nats.url on each to one they share)")

// Member is one process of a set sharing a configuration's groups. Run
// keeps its heartbeat and its leases; Acquire says whether it may evaluate
// a group now.
type Member struct {
	o             Options
	log           *slog.Logger
	renewDeadline time.Duration
	hbKey         string

	mu      sync.Mutex
	groups  map[string]string // lease key → group
	members map[string]memberSeen
	leases  map[string]*leaseState // by lease key
	watched map[string]Seen        // each key's newest revision the watch saw, and when, by key
	terms   uint64
	joined  bool

	wake  chan struct{} // a look at the set is due before the next heartbeat
	taken chan string   // groups whose lease the member took

	renewals, losses, takes, released, hbFailures *metrics.Counter
}

type memberSeen struct {
	Seen
	info Info
}

// leaseState is what the member knows and holds of one lease.
type leaseState struct {
	Lease
	group   string
	rev     uint64    // the revision we wrote, while held
	renewed time.Time // when its newest renewal was asked for, while held
	term    uint64    // a new one each time the member takes the lease
	busy    int       // evaluations running under the lease
}

// New returns a member that has not joined yet.
func New(o Options) (*Member, error) {
	if o.Bucket == nil {
		return nil, errors.New("cluster: Options needs a Bucket")
	}
	if o.Info.Name == "" || strings.ContainsFunc(o.Info.Name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return nil, fmt.Errorf("cluster: member name %q: want letters, digits, '-' and '_'", o.Info.Name)
	}
	for _, r := range o.Roles {
		if !validRole(r) {
			return nil, fmt.Errorf("cluster: role name %q: want letters, digits, '-' and '_'", r)
		}
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = min(DefaultHeartbeat, o.TTL/3)
	}
	if o.Heartbeat > o.TTL/3 {
		return nil, fmt.Errorf("cluster: heartbeat %s is more than a third of the lease TTL %s: a lease must be renewable twice before it expires", o.Heartbeat, o.TTL)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	m := &Member{o: o, log: o.Logger, renewDeadline: o.TTL - o.Heartbeat, hbKey: memberPrefix + o.Info.Name,
		groups: map[string]string{}, members: map[string]memberSeen{}, leases: map[string]*leaseState{}, watched: map[string]Seen{},
		wake: make(chan struct{}, 1), taken: make(chan string, takenBuffer)}
	set := o.Metrics
	m.renewals = set.GetOrCreateCounter("inferwatch_cluster_lease_renewals_total")
	m.losses = set.GetOrCreateCounter("inferwatch_cluster_lease_losses_total")
	m.takes = set.GetOrCreateCounter("inferwatch_cluster_leases_taken_total")
	m.released = set.GetOrCreateCounter("inferwatch_cluster_leases_released_total")
	m.hbFailures = set.GetOrCreateCounter("inferwatch_cluster_heartbeat_failures_total")
	set.GetOrCreateGauge("inferwatch_cluster_members", func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return float64(len(Live(m.heartbeats(), m.o.Info.Name, m.o.Now(), m.o.TTL)))
	})
	set.GetOrCreateGauge("inferwatch_cluster_groups_owned", func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		n := 0
		for k, st := range m.leases {
			if st.Held && !isRoleKey(k) {
				n++
			}
		}
		return float64(n)
	})
	m.registerRoles()
	m.setGroups(o.Groups)
	return m, nil
}

// Name is the member's name in the set.
func (m *Member) Name() string { return m.o.Info.Name }

// Info is what the member announces of itself.
func (m *Member) Info() Info { return m.o.Info }

// Live reports whether the member named name is live in the set as this
// member last looked at it: its heartbeat was there and has changed
// within the TTL; info is what that heartbeat announces. This member is
// live while it runs. A member that left (its heartbeat deleted) is not
// live from the look its deletion wakes; one that died, from a TTL after
// its last heartbeat.
func (m *Member) Live(name string) (info Info, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == m.o.Info.Name {
		return m.o.Info, true
	}
	s, seen := m.members[name]
	if !seen || Stale(s.Seen, m.o.Now(), m.o.TTL) {
		return Info{}, false
	}
	return s.info, true
}

// SetGroups changes the groups the member leases, as after a reload: the
// leases of groups that are gone are released at the next heartbeat.
func (m *Member) SetGroups(groups []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setGroups(groups)
}

func (m *Member) setGroups(groups []string) {
	m.groups = map[string]string{}
	for _, g := range groups {
		m.groups[LeaseKey(g)] = g
	}
	for _, r := range m.o.Roles {
		m.groups[RoleKey(r)] = r
	}
}

// Joined reports whether the member has announced itself and taken its
// first look at the set: nil once it has.
func (m *Member) Joined() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.joined {
		return fmt.Errorf("member %s has not joined the set yet", m.o.Info.Name)
	}
	return nil
}

// Join announces the member, looks at the set once and takes the leases
// that are free for it. It refuses to join a set whose NATS server a
// member embeds.
func (m *Member) Join(ctx context.Context) error {
	if err := m.heartbeat(ctx); err != nil {
		return err
	}
	entries, err := m.snapshot(ctx)
	if err != nil {
		return err
	}
	// The server an embedded member runs has just started with it: a
	// heartbeat found there is its own from before a restart.
	for k, e := range entries {
		if m.o.Info.Embedded || !strings.HasPrefix(k, memberPrefix) || k == m.hbKey {
			continue
		}
		var in Info
		if json.Unmarshal(e.Value(), &in) == nil && in.Embedded {
			m.Leave(context.WithoutCancel(ctx))
			return fmt.Errorf("this NATS server is the embedded server of inferwatch member %s (host %s, pid %d): %w", in.Name, in.Host, in.PID, ErrEmbedded)
		}
	}
	m.decide(ctx, entries)
	m.mu.Lock()
	m.joined = true
	m.mu.Unlock()
	m.log.Info("joined the set of members", "member", m.o.Info.Name, "ttl", m.o.TTL, "heartbeat", m.o.Heartbeat)
	return nil
}

// Run renews the heartbeat and the leases every Heartbeat, takes the
// leases of groups the member should own, and releases those it should
// not, until ctx is done. Join comes first. Between heartbeats it watches
// the bucket: it looks at the set again as soon as a lease or a heartbeat
// is deleted (a member left or handed a group on) and as soon as a key it
// saw change may have gone stale, TTL after that change, so that a lease
// is taken over TTL after its owner's last renewal rather than up to two
// heartbeats later.
func (m *Member) Run(ctx context.Context) {
	var watching sync.WaitGroup
	defer watching.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watching.Go(func() { m.watch(ctx) })
	t := time.NewTicker(m.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.cycle(ctx)
		case <-m.wake:
			m.look(ctx)
		}
	}
}

// takenBuffer is how many takes Taken holds before it drops some.
const takenBuffer = 256

// Taken delivers the name of each group whose lease the member takes
// once it has joined (rules.Takeovers), so that the group is evaluated at
// once. When no one reads them, the newest are dropped.
func (m *Member) Taken() <-chan string { return m.taken }

// watch follows the changes of the bucket as they happen until ctx is
// done: it notes each key's revision and when it saw it on this member's
// clock (what the heartbeat's read then counts the TTL from, which is as
// safe as that read: a revision is seen only after it was written), keeps
// the members' heartbeats as they change (for Live), and
// wakes Run on a deletion and once a key it saw has not changed for the
// TTL. A watch that fails is opened again a heartbeat later.
func (m *Member) watch(ctx context.Context) {
	for ctx.Err() == nil {
		if err := m.follow(ctx); err != nil && ctx.Err() == nil {
			m.log.Debug("watching the members bucket failed; the heartbeats go on, and the watch is opened again", "member", m.o.Info.Name, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(m.o.Heartbeat):
		}
	}
}

// follow is one watch of the bucket, from the changes after it opens.
func (m *Member) follow(ctx context.Context) error {
	w, err := m.o.Bucket.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("watching the members bucket: %w", err)
	}
	defer w.Stop()
	// The watch shows the changes from now on: a look at the set catches
	// those made since the last one (a member that left while the watch
	// was being opened, or was away).
	m.poke()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	stale := map[string]time.Time{} // keys not yet stale: when they will be, on this member's clock
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("the watch of the members bucket ended")
			}
			if e == nil || e.Key() == m.hbKey {
				continue
			}
			now := m.o.Now()
			m.mu.Lock()
			name, isMember := strings.CutPrefix(e.Key(), memberPrefix)
			if e.Operation() == jetstream.KeyValuePut {
				m.watched[e.Key()] = Seen{Revision: e.Revision(), Since: now}
				stale[e.Key()] = now.Add(m.o.TTL)
				if isMember { // Live knows a member from its first heartbeat
					var in Info
					json.Unmarshal(e.Value(), &in)
					m.members[name] = memberSeen{Seen: Observe(m.members[name].Seen, e.Revision(), now), info: in}
				}
			} else {
				delete(m.watched, e.Key())
				delete(stale, e.Key())
				if isMember {
					delete(m.members, name)
				}
			}
			m.mu.Unlock()
			if e.Operation() != jetstream.KeyValuePut {
				m.poke()
			}
		case <-timer.C:
			now := m.o.Now()
			for k, at := range stale {
				if !now.Before(at) {
					delete(stale, k)
				}
			}
			m.poke()
		}
		// The timer is set for the key that goes stale first.
		var first time.Time
		for _, at := range stale {
			if first.IsZero() || at.Before(first) {
				first = at
			}
		}
		timer.Stop()
		if !first.IsZero() {
			timer.Reset(max(first.Sub(m.o.Now()), 0))
		}
	}
}

// poke asks Run for a look at the set.
func (m *Member) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// look reads the set and acts on it, between heartbeats.
func (m *Member) look(ctx context.Context) {
	entries, err := m.snapshot(ctx)
	if err != nil {
		m.log.Debug("reading the set's heartbeats and leases failed; read again at the next heartbeat", "member", m.o.Info.Name, "err", err)
		return
	}
	m.decide(ctx, entries)
}

// cycle is one heartbeat: announce, look, act.
func (m *Member) cycle(ctx context.Context) {
	if err := m.heartbeat(ctx); err != nil {
		m.log.Warn("renewing the member's heartbeat failed; tried again at the next one", "member", m.o.Info.Name, "err", err)
	}
	entries, err := m.snapshot(ctx)
	if err != nil {
		m.log.Warn("reading the set's heartbeats and leases failed; the leases are not renewed until it succeeds", "member", m.o.Info.Name, "err", err)
		return
	}
	m.decide(ctx, entries)
}

// opTimeout bounds one read or write of the bucket.
func (m *Member) opTimeout() time.Duration { return max(m.o.Heartbeat, time.Second) }

func (m *Member) heartbeat(ctx context.Context) error {
	b, _ := json.Marshal(m.o.Info)
	ctx, cancel := context.WithTimeout(ctx, m.opTimeout())
	defer cancel()
	if _, err := m.o.Bucket.Put(ctx, m.hbKey, b); err != nil {
		m.hbFailures.Inc()
		return fmt.Errorf("writing the heartbeat %s: %w", m.hbKey, err)
	}
	return nil
}

// snapshot reads every live key of the bucket.
func (m *Member) snapshot(ctx context.Context) (map[string]jetstream.KeyValueEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opTimeout())
	defer cancel()
	return readAll(ctx, m.o.Bucket)
}

func readAll(ctx context.Context, b Bucket) (map[string]jetstream.KeyValueEntry, error) {
	w, err := b.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("reading the members bucket: %w", err)
	}
	defer w.Stop()
	out := map[string]jetstream.KeyValueEntry{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reading the members bucket: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok || e == nil {
				return out, nil
			}
			out[e.Key()] = e
		}
	}
}

// heartbeats are the members' heartbeats as seen; m.mu is held.
func (m *Member) heartbeats() map[string]Seen {
	out := make(map[string]Seen, len(m.members))
	for n, s := range m.members {
		out[n] = s.Seen
	}
	return out
}

// observe is Observe of key at rev, read at now, counted from when the
// watch saw that revision when it saw it earlier; m.mu is held.
func (m *Member) observe(key string, prev Seen, rev uint64, now time.Time) Seen {
	s := Observe(prev, rev, now)
	if w, ok := m.watched[key]; ok && w.Revision == rev && w.Since.Before(s.Since) {
		s.Since = w.Since
	}
	return s
}

// step is an action decided on a lease, carried out outside the lock.
type step struct {
	key, group string
	act        Action
	rev        uint64
}

// decide updates what the member knows from entries, decides what to do
// with each lease and does it.
func (m *Member) decide(ctx context.Context, entries map[string]jetstream.KeyValueEntry) {
	m.mu.Lock()
	now := m.o.Now()
	members := map[string]memberSeen{}
	for k, e := range entries {
		if name, ok := strings.CutPrefix(k, memberPrefix); ok {
			var in Info
			json.Unmarshal(e.Value(), &in)
			members[name] = memberSeen{Seen: m.observe(k, m.members[name].Seen, e.Revision(), now), info: in}
		}
	}
	m.members = members
	live := Live(m.heartbeats(), m.o.Info.Name, now, m.o.TTL)
	var steps []step
	keys := slices.Sorted(maps.Keys(m.groups))
	for k := range m.leases {
		if _, ok := m.groups[k]; !ok {
			keys = append(keys, k) // a group that is gone: released below
		}
	}
	for _, k := range keys {
		st := m.leases[k]
		if st == nil {
			st = &leaseState{group: m.groups[k]}
			m.leases[k] = st
		}
		owner, rev := "", uint64(0)
		if e, ok := entries[k]; ok {
			var v leaseValue
			json.Unmarshal(e.Value(), &v)
			owner, rev = v.Owner, e.Revision()
		}
		if st.Held && (owner != m.o.Info.Name || rev != st.rev) {
			// Another member took it: its holder had stopped renewing it
			// (a pause, a partition) for the TTL.
			st.Held = false
			m.losses.Inc()
			what, attr := leaseWhat(k)
			m.log.Info(what+" lost to another member", attr, st.group, "member", m.o.Info.Name, "owner", owner)
		}
		st.Owner = owner
		if rev == 0 {
			st.Seen = Seen{}
		} else {
			st.Seen = m.observe(k, st.Seen, rev, now)
		}
		_, configured := m.groups[k]
		want := configured && Owner(st.group, live) == m.o.Info.Name
		act := Decide(st.Lease, m.o.Info.Name, want, now, m.o.TTL)
		if act == Release && st.busy > 0 {
			act = Renew // released once its evaluation has finished
		}
		if act == Release && st.Held {
			st.Held = false // no evaluation starts from now on
		}
		if act == Wait && !configured {
			delete(m.leases, k)
		}
		if act != Wait {
			steps = append(steps, step{key: k, group: st.group, act: act, rev: rev})
		}
	}
	m.mu.Unlock()
	for _, s := range steps {
		m.do(ctx, s)
	}
}

// do carries out one action on a lease.
func (m *Member) do(ctx context.Context, s step) {
	ctx, cancel := context.WithTimeout(ctx, m.opTimeout())
	defer cancel()
	value, _ := json.Marshal(leaseValue{Group: s.group, Owner: m.o.Info.Name})
	sent := m.o.Now()
	var (
		rev uint64
		err error
	)
	switch s.act {
	case Take:
		rev, err = m.o.Bucket.Create(ctx, s.key, value)
	case TakeOver, Renew:
		rev, err = m.o.Bucket.Update(ctx, s.key, value, s.rev)
	case Release:
		err = m.o.Bucket.Delete(ctx, s.key, jetstream.LastRevision(s.rev))
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			err = m.releaseOwn(ctx, s.key)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.leases[s.key]
	if st == nil {
		return
	}
	conflict := errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
	what, attr := leaseWhat(s.key)
	switch {
	case s.act == Release:
		if err != nil && !conflict {
			m.log.Warn("releasing a "+what+" failed; it expires on its own", attr, s.group, "member", m.o.Info.Name, "err", err)
		}
		m.released.Inc()
		m.log.Info(what+" released", attr, s.group, "member", m.o.Info.Name)
		if _, ok := m.groups[s.key]; !ok {
			delete(m.leases, s.key)
		}
	case err == nil && s.act == Renew:
		if !Valid(st.renewed, sent, m.renewDeadline) {
			// Renewed after it lapsed (a pause, a partition) and no one
			// took it meanwhile: a new term, as what was kept for the
			// group may have been dropped while it had lapsed.
			m.terms++
			st.term = m.terms
		}
		st.rev, st.renewed = rev, sent
		st.Seen = Seen{Revision: rev, Since: sent}
		m.renewals.Inc()
	case err == nil:
		m.terms++
		st.Held, st.Owner, st.rev, st.renewed, st.term = true, m.o.Info.Name, rev, sent, m.terms
		st.Seen = Seen{Revision: rev, Since: sent}
		m.takes.Inc()
		m.log.Info(what+" taken", attr, s.group, "member", m.o.Info.Name, "how", s.act.String())
		if m.joined && !isRoleKey(s.key) { // what Join takes is evaluated from its next tick, as at any start
			select {
			case m.taken <- s.group:
			default:
			}
		}
	case conflict && s.act == Renew:
		if st.Held {
			st.Held = false
			m.losses.Inc()
			m.log.Info(what+" lost to another member", attr, s.group, "member", m.o.Info.Name)
		}
	case conflict:
		m.log.Debug("another member took the "+what+" first", attr, s.group, "member", m.o.Info.Name)
	default:
		m.log.Warn("writing a "+what+" failed; tried again at the next heartbeat", attr, s.group, "member", m.o.Info.Name,
			"action", s.act.String(), "err", err)
	}
}

// releaseOwn deletes the lease at key when this member still owns it at
// a revision other than the one it knows: a renewal whose answer was lost
// (its context ended as the member stopped) moved it. A lease another
// member holds is left to it (ErrKeyRevisionMismatch); one that is gone is
// released already.
func (m *Member) releaseOwn(ctx context.Context, key string) error {
	e, err := m.o.Bucket.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil
	case err != nil:
		return err
	}
	var v leaseValue
	if json.Unmarshal(e.Value(), &v) != nil || v.Owner != m.o.Info.Name {
		return jetstream.ErrKeyRevisionMismatch
	}
	return m.o.Bucket.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
}

// Acquire says whether the member may evaluate group now: it holds the
// group's lease, renewed recently enough. When ok, term identifies this
// holding of the lease (a new term is a gain: the state kept for the group
// may be stale), and done must be called once the evaluation has
// finished; until then the lease is not released.
func (m *Member) Acquire(group string) (term uint64, done func(), ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.leases[LeaseKey(group)]
	if st == nil || !st.Held || !Valid(st.renewed, m.o.Now(), m.renewDeadline) {
		return 0, nil, false
	}
	st.busy++
	var once sync.Once
	return st.term, func() {
		once.Do(func() {
			m.mu.Lock()
			st.busy--
			m.mu.Unlock()
		})
	}, true
}

// Leave releases the member's leases and deletes its heartbeat, so that
// the others take its groups at their next heartbeat. The evaluations
// under the leases must have finished.
func (m *Member) Leave(ctx context.Context) {
	m.mu.Lock()
	var steps []step
	for k, st := range m.leases {
		if st.Held {
			st.Held = false
			steps = append(steps, step{key: k, group: st.group, act: Release, rev: st.rev})
		}
	}
	m.mu.Unlock()
	for _, s := range steps {
		m.do(ctx, s)
	}
	ctx, cancel := context.WithTimeout(ctx, m.opTimeout())
	defer cancel()
	if err := m.o.Bucket.Delete(ctx, m.hbKey); err != nil {
		m.log.Warn("deleting the member's heartbeat failed; it expires on its own", "member", m.o.Info.Name, "err", err)
	}
	m.log.Info("left the set of members", "member", m.o.Info.Name, "released", len(steps))
}

// View is who is in a set and who owns which group, as the bucket holds it.
type View struct {
	Members []ViewMember
	Leases  []ViewLease
	// Roles are the roles' leases (role.go), Group naming the role.
	Roles []ViewLease
}

// ViewMember is a member's heartbeat; Age is how long ago the server
// stored it.
type ViewMember struct {
	Info
	Age time.Duration
}

// ViewLease is a group's lease; Age is how long ago it was last renewed.
type ViewLease struct {
	Group, Owner string
	Age          time.Duration
}

// Read reads a set's members and leases from its bucket, sorted by name
// and by group.
func Read(ctx context.Context, b Bucket, now time.Time) (View, error) {
	entries, err := readAll(ctx, b)
	if err != nil {
		return View{}, err
	}
	var v View
	for k, e := range entries {
		switch {
		case strings.HasPrefix(k, memberPrefix):
			var in Info
			if json.Unmarshal(e.Value(), &in) == nil {
				v.Members = append(v.Members, ViewMember{Info: in, Age: now.Sub(e.Created())})
			}
		case strings.HasPrefix(k, leasePrefix):
			var l leaseValue
			if json.Unmarshal(e.Value(), &l) == nil {
				v.Leases = append(v.Leases, ViewLease{Group: l.Group, Owner: l.Owner, Age: now.Sub(e.Created())})
			}
		case isRoleKey(k):
			var l leaseValue
			if json.Unmarshal(e.Value(), &l) == nil {
				v.Roles = append(v.Roles, ViewLease{Group: l.Group, Owner: l.Owner, Age: now.Sub(e.Created())})
			}
		}
	}
	slices.SortFunc(v.Members, func(a, b ViewMember) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(v.Leases, func(a, b ViewLease) int { return strings.Compare(a.Group, b.Group) })
	slices.SortFunc(v.Roles, func(a, b ViewLease) int { return strings.Compare(a.Group, b.Group) })
	return v, nil
}
