package natsjs

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/internal/httpretry"
	"github.com/inferwatch/inferwatch/internal/tick"
)

// KV keeps the daemon's state across restarts in a JetStream key-value
// bucket: the alerts' states (it implements alerting.StateStore) and the
// newest point each rule judged (rules.ProgressStore). Keys are hashes of
// the identities, which are kept in the values, so no name needs to be a
// valid key.
//
// Every write is a compare-and-swap on the revision this KV last read or
// wrote of the key, so a writer that lags (a process that was paused, a
// second process on the same bucket) never replaces newer state: an
// alert's write that loses returns an *alerting.ConflictError for the
// lifecycle to settle, and a rule's progress that loses is merged (the
// newer point of the two) and written again.
type KV struct {
	kv     jetstream.KeyValue
	bucket string
	nc     interface{ IsConnected() bool }
	log    *slog.Logger

	mu   sync.Mutex
	revs map[string]uint64 // by hashed key: the revision last read or written

	progressConflicts *metrics.Counter
}

// kvTimeout bounds one write: state is saved again with the next
// evaluation, which must not wait on a broker that is away.
const kvTimeout = 2 * time.Second

// errKVDisconnected is a write refused at once while NATS is away.
var errKVDisconnected = errors.New("NATS is disconnected; saved again with a later evaluation")

// ready refuses a write at once while the connection is down.
func (k *KV) ready() error {
	if k.nc != nil && !k.nc.IsConnected() {
		return fmt.Errorf("bucket %s: %w", k.bucket, errKVDisconnected)
	}
	return nil
}

// Key prefixes of the two kinds of state.
const (
	kvAlert    = "alert."
	kvProgress = "progress."
	kvIncident = "incident."
)

// DefaultStateBucket is the state bucket for a stream: <stream>_STATE.
func DefaultStateBucket(stream string) string { return stream + "_STATE" }

// KV creates or updates the bucket (file storage, one value per key) and
// returns it.
func (j *JetStream) KV(ctx context.Context, bucket string) (*KV, error) {
	if bucket == "" {
		bucket = DefaultStateBucket(j.o.Stream)
	}
	if strings.ContainsAny(bucket, ".*> \t\r\n/\\") {
		return nil, fmt.Errorf("state bucket name %q holds '.', '*', '>', a path separator or white space", bucket)
	}
	kv, err := j.createBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "inferwatch alert states and rule progress",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    cmp.Or(j.o.Replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("creating or updating the key-value bucket %s on %s: %w", bucket, j.url, err)
	}
	return &KV{kv: kv, bucket: bucket, nc: j.nc, log: j.o.Logger, revs: map[string]uint64{},
		progressConflicts: j.o.Metrics.GetOrCreateCounter("inferwatch_progress_write_conflicts_total")}, nil
}

func hashKey(prefix, id string) string {
	h := sha256.Sum256([]byte(id))
	return prefix + hex.EncodeToString(h[:16])
}

// load reads every value under prefix, keeping each key's revision.
func (k *KV) load(ctx context.Context, prefix string) (map[string][]byte, error) {
	w, err := k.kv.Watch(ctx, prefix+"*", jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("reading bucket %s: %w", k.bucket, err)
	}
	defer w.Stop()
	out := map[string][]byte{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reading bucket %s: %w", k.bucket, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok || e == nil { // nil: the initial values are all there
				// A key known from before that is gone now (another
				// process deleted it) is created by the next write.
				k.mu.Lock()
				for kk := range k.revs {
					if _, ok := out[kk]; !ok && strings.HasPrefix(kk, prefix) {
						delete(k.revs, kk)
					}
				}
				k.mu.Unlock()
				return out, nil
			}
			out[e.Key()] = e.Value()
			k.mu.Lock()
			k.revs[e.Key()] = e.Revision()
			k.mu.Unlock()
		}
	}
}

// Load returns the stored alert states (alerting.StateStore).
func (k *KV) Load(ctx context.Context) (map[string][]byte, error) { return k.load(ctx, kvAlert) }

// Save stores an alert's state, or deletes it when state is nil, on the
// revision last read or written (a key never read is created). When
// another writer changed the key since, nothing is written and the error
// is an *alerting.ConflictError holding what the bucket holds now; a
// Save after it writes on that.
func (k *KV) Save(ctx context.Context, key string, state []byte) error {
	if err := k.ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	kk := hashKey(kvAlert, key)
	err := k.swap(ctx, kk, state)
	if !isConflict(err) {
		return err
	}
	stored, rerr := k.reread(ctx, kk)
	if rerr != nil {
		return fmt.Errorf("%w; reading it again: %w", err, rerr)
	}
	return &alerting.ConflictError{Key: key, Stored: stored}
}

// swap writes value (nil: deletes) on the key's known revision.
func (k *KV) swap(ctx context.Context, kk string, value []byte) error {
	k.mu.Lock()
	rev, known := k.revs[kk]
	k.mu.Unlock()
	var err error
	switch {
	case value == nil && !known:
		// Never read nor written: whether it holds another writer's state
		// is not known.
		if _, err := k.kv.Get(ctx, kk); errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil
		}
		return fmt.Errorf("deleting %s from bucket %s: %w", kk, k.bucket, jetstream.ErrKeyRevisionMismatch)
	case value == nil:
		err = k.kv.Delete(ctx, kk, jetstream.LastRevision(rev))
		if err == nil {
			k.mu.Lock()
			delete(k.revs, kk) // the next write creates it
			k.mu.Unlock()
			return nil
		}
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		return fmt.Errorf("deleting %s from bucket %s: %w", kk, k.bucket, err)
	case known:
		rev, err = k.kv.Update(ctx, kk, value, rev)
	default:
		rev, err = k.kv.Create(ctx, kk, value)
	}
	if err != nil {
		return fmt.Errorf("writing %s to bucket %s: %w", kk, k.bucket, err)
	}
	k.mu.Lock()
	k.revs[kk] = rev
	k.mu.Unlock()
	return nil
}

func isConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}

// reread reads a key again after a lost compare-and-swap and keeps its
// revision: its value, or nil when it is deleted or absent.
func (k *KV) reread(ctx context.Context, kk string) ([]byte, error) {
	e, err := k.kv.Get(ctx, kk)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		k.mu.Lock()
		delete(k.revs, kk)
		k.mu.Unlock()
		return nil, nil
	case err != nil:
		return nil, err
	}
	k.mu.Lock()
	k.revs[kk] = e.Revision()
	k.mu.Unlock()
	return e.Value(), nil
}

// Incidents returns the store of the incidents in the same bucket
// (alerting.StateStore): each unit's open incident, or its last resolved
// one. Another writer's change is overwritten: an
// incident's state is made again from the alert events at its next
// change.
func (k *KV) Incidents() alerting.StateStore { return incidentStore{k} }

type incidentStore struct{ k *KV }

// Load returns the stored incidents by their hashed keys.
func (s incidentStore) Load(ctx context.Context) (map[string][]byte, error) {
	return s.k.load(ctx, kvIncident)
}

// Save stores the incident of a unit, or deletes it when state is nil.
func (s incidentStore) Save(ctx context.Context, unit string, state []byte) error {
	if err := s.k.ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	kk := hashKey(kvIncident, unit)
	err := s.k.swap(ctx, kk, state)
	if !isConflict(err) {
		return err
	}
	if _, rerr := s.k.reread(ctx, kk); rerr != nil {
		return fmt.Errorf("%w; reading it again: %w", err, rerr)
	}
	return s.k.swap(ctx, kk, state)
}

type progress struct {
	Rule string    `json:"rule"`
	T    time.Time `json:"t"`
}

// LoadProgress returns the newest point each rule judged
// (rules.ProgressStore); an entry it cannot read is left out.
func (k *KV) LoadProgress(ctx context.Context) (map[string]time.Time, error) {
	raw, err := k.load(ctx, kvProgress)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(raw))
	for _, v := range raw {
		var p progress
		if json.Unmarshal(v, &p) == nil && p.Rule != "" {
			out[p.Rule] = p.T
		}
	}
	return out, nil
}

// SaveProgress stores the rules' progress. A rule's progress another
// writer moved since it was last read is merged: the newer point of the
// two is kept.
func (k *KV) SaveProgress(ctx context.Context, ps map[string]time.Time) error {
	if err := k.ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	var errs []error
	for rule, t := range ps {
		if err := k.saveProgress(ctx, rule, t); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("writing the progress of %d rules to bucket %s: %w", len(errs), k.bucket, errs[0])
	}
	return nil
}

func (k *KV) saveProgress(ctx context.Context, rule string, t time.Time) error {
	kk := hashKey(kvProgress, rule)
	for attempt := 0; ; attempt++ {
		b, _ := json.Marshal(progress{Rule: rule, T: t.UTC()})
		err := k.swap(ctx, kk, b)
		if !isConflict(err) || attempt == 2 {
			return err
		}
		k.progressConflicts.Inc()
		stored, rerr := k.reread(ctx, kk)
		if rerr != nil {
			return rerr
		}
		var p progress
		if json.Unmarshal(stored, &p) == nil && p.Rule == rule && p.T.After(t) {
			return nil // the other writer is further on
		}
	}
}

// RetainProgress deletes the progress of the rules keep says are gone (a
// reload or a restart removed them) and returns how many it deleted.
func (k *KV) RetainProgress(ctx context.Context, keep func(rule string) bool) (int, error) {
	raw, err := k.load(ctx, kvProgress)
	if err != nil {
		return 0, err
	}
	n := 0
	for kk, v := range raw {
		var p progress
		if json.Unmarshal(v, &p) != nil || p.Rule == "" || keep(p.Rule) {
			continue
		}
		if err := k.swap(ctx, kk, nil); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// PurgeDeletes removes the markers that deleted keys leave behind once
// they are older than olderThan, so that the bucket holds the live alerts
// and the rules' progress, not every alert there ever was.
func (k *KV) PurgeDeletes(ctx context.Context, olderThan time.Duration) error {
	if err := k.ready(); err != nil {
		return err
	}
	if err := k.kv.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(olderThan)); err != nil {
		return fmt.Errorf("purging the delete markers of bucket %s: %w", k.bucket, err)
	}
	return nil
}

// PurgeDeletesEvery purges the bucket's delete markers older than every
// (PurgeDeletes), every that long, until ctx is done or the returned
// function is called; a purge that fails is logged and tried at the next.
func (k *KV) PurgeDeletesEvery(ctx context.Context, every time.Duration) (stop func()) {
	return tick.Start(ctx, every, func(ctx context.Context, _ time.Time) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := k.PurgeDeletes(ctx, every); err != nil {
			k.log.Debug("purging the state bucket's delete markers failed; tried again later", "err", err)
		}
	})
}

// Entries counts the messages the bucket holds: live values and the
// markers of deleted keys not purged yet.
func (k *KV) Entries(ctx context.Context) (uint64, error) {
	st, err := k.kv.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the status of bucket %s: %w", k.bucket, err)
	}
	return st.Values(), nil
}

// DefaultMembersBucket is the bucket of the members of a stream's set:
// <stream>_MEMBERS.
func DefaultMembersBucket(stream string) string { return stream + "_MEMBERS" }

// MembersBucket creates or updates the bucket where the processes of one
// configuration announce themselves and lease its groups
// (cluster.Bucket), with one value per key, and keys no one has written
// for keep (a member or group that is gone) expiring.
func (j *JetStream) MembersBucket(ctx context.Context, keep time.Duration) (jetstream.KeyValue, error) {
	bucket := DefaultMembersBucket(j.o.Stream)
	kv, err := j.createBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "inferwatch members and their group leases",
		History:     1,
		TTL:         keep,
		Storage:     jetstream.FileStorage,
		Replicas:    cmp.Or(j.o.Replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("creating or updating the key-value bucket %s on %s: %w", bucket, j.url, err)
	}
	return kv, nil
}

// bucketRetries bounds the attempts at creating or updating a bucket.
const bucketRetries = 12

// createBucket creates or updates a bucket. As for the stream, an attempt
// a cluster leaves unanswered is bounded and tried again; an answer that
// refuses is not.
func (j *JetStream) createBucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, streamAttempt)
		kv, err := j.jsm.CreateOrUpdateKeyValue(actx, cfg)
		cancel()
		var aerr *jetstream.APIError
		if err == nil || errors.As(err, &aerr) || attempt+1 >= bucketRetries {
			return kv, err
		}
		wait := backoffDelay(attempt, backoffBase, j.o.ConnectBackoffMax)
		if httpretry.Sleep(ctx, wait) != nil {
			return nil, err
		}
		j.o.Logger.Warn("creating or updating a key-value bucket failed; retrying with backoff", "bucket", cfg.Bucket, "attempt", attempt+1, "wait", wait, "err", err)
	}
}
