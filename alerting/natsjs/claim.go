package natsjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// kvClaim is the key prefix of the claims.
const kvClaim = "claim."

// Claimant is a process of a set of replicas that claims work in the
// state bucket: its member name in the set, and when it started, which
// tells it from a later process of the same name (zero: any process of
// that name).
type Claimant struct {
	Member  string    `json:"member"`
	Started time.Time `json:"started,omitzero"`
}

// claimValue is what a claim key holds: what is claimed, by whom, and
// whether it is done.
type claimValue struct {
	ID string `json:"id"`
	Claimant
	Done bool `json:"done,omitempty"`
}

// Defaults of ClaimsOptions.
const (
	DefaultClaimPoll  = 5 * time.Second
	DefaultClaimGrace = 15 * time.Second
)

// ClaimsOptions configure Claims.
type ClaimsOptions struct {
	// Me is this process; Me.Member is required.
	Me Claimant
	// Live reports whether the process that made a claim is a live member
	// of the set now. Required.
	Live func(Claimant) bool
	// Poll is how often Follow reads the claim it follows (default
	// DefaultClaimPoll). Grace is how long Follow follows a claim before
	// it may take it over (default DefaultClaimGrace): at least the
	// members' lease TTL, so that the heartbeat of a member that has just
	// joined and claimed is seen first.
	Poll, Grace time.Duration
}

// Claims are the claims that one process of a set of replicas makes in
// the state bucket, so that what the set does once (a scheduled report of
// a period end) is done once. The first process to create a claim's key
// does the work and marks the claim done once it has; the others follow
// the claim and take it over when its claimant has left the set without
// marking it done. Claims are kept with the bucket.
type Claims struct {
	k *KV
	o ClaimsOptions
}

// Claims returns the claims of the process o.Me in the bucket.
func (k *KV) Claims(o ClaimsOptions) (*Claims, error) {
	if o.Me.Member == "" {
		return nil, fmt.Errorf("claims in bucket %s: ClaimsOptions.Me needs a member name", k.bucket)
	}
	if o.Live == nil {
		return nil, fmt.Errorf("claims in bucket %s: ClaimsOptions.Live is required", k.bucket)
	}
	if o.Poll <= 0 {
		o.Poll = DefaultClaimPoll
	}
	if o.Grace <= 0 {
		o.Grace = DefaultClaimGrace
	}
	o.Me.Started = o.Me.Started.UTC()
	return &Claims{k: k, o: o}, nil
}

// HeldClaim is a claim this process holds.
type HeldClaim struct {
	c   *Claims
	id  string
	key string
	rev uint64 // the revision this process wrote
}

// Claim creates the claim of id for this process when no one has, and
// returns it; when another process has, it returns nil and the claimant
// the key names.
func (c *Claims) Claim(ctx context.Context, id string) (*HeldClaim, Claimant, error) {
	if c.k.nc != nil && !c.k.nc.IsConnected() {
		return nil, Claimant{}, fmt.Errorf("claiming %q in bucket %s: NATS is disconnected", id, c.k.bucket)
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	key := hashKey(kvClaim, id)
	h, err := c.create(ctx, id, key)
	if err == nil {
		return h, Claimant{}, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, Claimant{}, err
	}
	v, _, err := c.read(ctx, id, key)
	if err != nil {
		return nil, Claimant{}, err
	}
	return nil, v.Claimant, nil
}

// value is the claim of id by this process, done or not.
func (c *Claims) value(id string, done bool) []byte {
	b, _ := json.Marshal(claimValue{ID: id, Claimant: c.o.Me, Done: done})
	return b
}

// create creates the claim's key; ErrKeyExists when it exists.
func (c *Claims) create(ctx context.Context, id, key string) (*HeldClaim, error) {
	rev, err := c.k.kv.Create(ctx, key, c.value(id, false))
	if err != nil {
		return nil, fmt.Errorf("claiming %q in bucket %s: %w", id, c.k.bucket, err)
	}
	return &HeldClaim{c: c, id: id, key: key, rev: rev}, nil
}

// read reads the claim of id: its value and revision; a claim that is
// gone (deleted or purged) has revision 0.
func (c *Claims) read(ctx context.Context, id, key string) (claimValue, uint64, error) {
	e, err := c.k.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return claimValue{}, 0, nil
	case err != nil:
		return claimValue{}, 0, fmt.Errorf("reading the claim of %q in bucket %s: %w", id, c.k.bucket, err)
	}
	var v claimValue
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return claimValue{}, 0, fmt.Errorf("reading the claim of %q in bucket %s: revision %d: %w", id, c.k.bucket, e.Revision(), err)
	}
	return v, e.Revision(), nil
}

// Follow follows the claim of id that another process holds, reading it
// every Poll, until:
//   - its claimant has marked it done: Follow returns nil and the
//     claimant;
//   - Follow has followed the claim's revision for Grace, its claimant is
//     not live (Live) and has not marked it done: this process takes the
//     claim over with a compare-and-swap on that revision and returns the
//     claim and the claimant that was gone. Of the processes that try at
//     once one wins; the others follow the winner's claim;
//   - the claim is gone (deleted): this process claims it afresh, as
//     Claim does, and returns it with a zero claimant;
//   - ctx ends: Follow returns ctx's error, with the claimant and the last
//     failed read, if any.
func (c *Claims) Follow(ctx context.Context, id string) (*HeldClaim, Claimant, error) {
	f := following{c: c, id: id, key: hashKey(kvClaim, id)}
	tick := time.NewTicker(c.o.Poll)
	defer tick.Stop()
	var lastErr error
	for {
		h, gone, done, err := f.look(ctx)
		switch {
		case h != nil:
			return h, gone, nil
		case done:
			return nil, f.holder, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			err := fmt.Errorf("following the claim of %q by %s in bucket %s: %w", id, f.holder.Member, c.k.bucket, ctx.Err())
			if lastErr != nil {
				err = fmt.Errorf("%w (last read: %w)", err, lastErr)
			}
			return nil, f.holder, err
		case <-tick.C:
		}
	}
}

// following is what Follow knows of the claim it follows.
type following struct {
	c       *Claims
	id, key string
	rev     uint64    // the revision followed
	since   time.Time // when this process first read it
	holder  Claimant  // its claimant
}

// look reads the claim once and acts on it: h is the claim when this
// process took it over (from gone) or created it afresh; done says its
// claimant marked it done.
func (f *following) look(ctx context.Context) (h *HeldClaim, gone Claimant, done bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	c := f.c
	v, rev, err := c.read(ctx, f.id, f.key)
	if err != nil {
		return nil, Claimant{}, false, err
	}
	now := time.Now()
	if rev == 0 {
		h, err := c.create(ctx, f.id, f.key)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, Claimant{}, false, nil // another process was first: read it next time
		}
		return h, Claimant{}, false, err
	}
	if rev != f.rev {
		f.rev, f.since, f.holder = rev, now, v.Claimant
	}
	if v.Done {
		return nil, Claimant{}, true, nil
	}
	if now.Sub(f.since) < c.o.Grace || c.o.Live(v.Claimant) {
		return nil, Claimant{}, false, nil
	}
	nrev, err := c.k.kv.Update(ctx, f.key, c.value(f.id, false), rev)
	if isConflict(err) {
		return nil, Claimant{}, false, nil // another process took it first: follow it
	}
	if err != nil {
		return nil, Claimant{}, false, fmt.Errorf("taking over the claim of %q by %s in bucket %s: %w", f.id, v.Member, c.k.bucket, err)
	}
	return &HeldClaim{c: c, id: f.id, key: f.key, rev: nrev}, v.Claimant, false, nil
}

// Done marks the claim done, on the revision this process wrote. It fails
// when another process changed the claim since (it took the claim over,
// having seen this process gone from the set).
func (h *HeldClaim) Done(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	rev, err := h.c.k.kv.Update(ctx, h.key, h.c.value(h.id, true), h.rev)
	if isConflict(err) {
		v, _, rerr := h.c.read(ctx, h.id, h.key)
		holder := "no one (the claim is gone)"
		if rerr == nil && v.Member != "" {
			holder = v.Member
		}
		return fmt.Errorf("marking the claim of %q done in bucket %s: another member took it over (now held by %s): %w", h.id, h.c.k.bucket, holder, err)
	}
	if err != nil {
		return fmt.Errorf("marking the claim of %q done in bucket %s: %w", h.id, h.c.k.bucket, err)
	}
	h.rev = rev
	return nil
}
