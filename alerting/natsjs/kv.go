package natsjs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KV keeps the daemon's state across restarts in a JetStream key-value
// bucket: the alerts' states (it implements alerting.StateStore) and the
// newest point each rule judged (rules.ProgressStore). Keys are hashes of
// the identities, which are kept in the values, so no name needs to be a
// valid key.
type KV struct {
	kv     jetstream.KeyValue
	bucket string
	nc     interface{ IsConnected() bool }
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
	kv, err := j.jsm.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "inferwatch alert states and rule progress",
		History:     1,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("creating or updating the key-value bucket %s on %s: %w", bucket, j.url, err)
	}
	return &KV{kv: kv, bucket: bucket, nc: j.nc}, nil
}

func hashKey(prefix, id string) string {
	h := sha256.Sum256([]byte(id))
	return prefix + hex.EncodeToString(h[:16])
}

// load reads every value under prefix.
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
			if !ok {
				return out, nil
			}
			if e == nil { // the initial values are all there
				return out, nil
			}
			out[e.Key()] = e.Value()
		}
	}
}

// Load returns the stored alert states (alerting.StateStore).
func (k *KV) Load(ctx context.Context) (map[string][]byte, error) { return k.load(ctx, kvAlert) }

// Save stores an alert's state, or deletes it when state is nil.
func (k *KV) Save(ctx context.Context, key string, state []byte) error {
	if err := k.ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	kk := hashKey(kvAlert, key)
	if state == nil {
		if err := k.kv.Delete(ctx, kk); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("deleting %s from bucket %s: %w", kk, k.bucket, err)
		}
		return nil
	}
	if _, err := k.kv.Put(ctx, kk, state); err != nil {
		return fmt.Errorf("writing %s to bucket %s: %w", kk, k.bucket, err)
	}
	return nil
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

// SaveProgress stores the rules' progress.
func (k *KV) SaveProgress(ctx context.Context, ps map[string]time.Time) error {
	if err := k.ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	var errs []error
	for rule, t := range ps {
		b, _ := json.Marshal(progress{Rule: rule, T: t.UTC()})
		if _, err := k.kv.Put(ctx, hashKey(kvProgress, rule), b); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("writing the progress of %d rules to bucket %s: %w", len(errs), k.bucket, errs[0])
	}
	return nil
}
