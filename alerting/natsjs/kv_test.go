package natsjs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// twoWriters opens the same state bucket through two connections to one
// server, as two processes would.
func twoWriters(t *testing.T) (a, b *natsjs.KV, set *metrics.Set) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := natstest.Start(t)
	ctx := context.Background()
	set = metrics.NewSet()
	open := func() *natsjs.KV {
		j := connect(t, natsjs.Options{URL: srv.ClientURL(), Metrics: set})
		kv, err := j.KV(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return kv
	}
	return open(), open(), set
}

// TestKVWritesAreConditional: a writer whose last read of a key is older
// than another's write neither replaces nor deletes it: it gets a
// *alerting.ConflictError with what the bucket holds, and writes on that
// afterwards.
func TestKVWritesAreConditional(t *testing.T) {
	a, b, _ := twoWriters(t)
	ctx := context.Background()
	if err := a.Save(ctx, "k", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(ctx, "k", []byte(`{"from":"b"}`)); !isConflict(err, `{"v":1}`) {
		t.Fatalf("b created a key a had written: %v", err)
	}
	if err := b.Save(ctx, "k", []byte(`{"v":2}`)); err != nil {
		t.Fatalf("b writing on what it just read: %v", err)
	}
	if err := a.Save(ctx, "k", []byte(`{"v":3}`)); !isConflict(err, `{"v":2}`) {
		t.Fatalf("a replaced b's newer state: %v", err)
	}
	if err := b.Save(ctx, "k", nil); err != nil {
		t.Fatalf("b deleting: %v", err)
	}
	if err := a.Save(ctx, "k", []byte(`{"v":4}`)); !isConflict(err, "") {
		t.Fatalf("a wrote over b's delete: %v", err)
	}
	if err := a.Save(ctx, "k", []byte(`{"v":5}`)); err != nil {
		t.Fatalf("a re-creating after reading the delete: %v", err)
	}
	got, err := b.Load(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("loaded %v, %v", got, err)
	}
	for _, v := range got {
		if string(v) != `{"v":5}` {
			t.Errorf("the bucket holds %s", v)
		}
	}
	// b has read it (Load); a's stale delete is refused, b's goes through.
	if err := b.Save(ctx, "k", []byte(`{"v":6}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(ctx, "k", nil); !isConflict(err, `{"v":6}`) {
		t.Fatalf("a deleted b's newer state: %v", err)
	}
}

// TestKVLoadForgetsDeletedKeys: a writer that loads the bucket after
// another deleted a key it knew (a replica taking a group over after the
// old owner resolved an alert) creates the key afresh, without a conflict.
func TestKVLoadForgetsDeletedKeys(t *testing.T) {
	a, b, _ := twoWriters(t)
	ctx := context.Background()
	if err := a.Save(ctx, "k", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(ctx, "k", nil); err != nil {
		t.Fatalf("b deleting: %v", err)
	}
	if got, err := a.Load(ctx); err != nil || len(got) != 0 {
		t.Fatalf("a loaded %v, %v; want nothing", got, err)
	}
	if err := a.Save(ctx, "k", []byte(`{"v":2}`)); err != nil {
		t.Fatalf("a creating the key again after loading: %v", err)
	}
}

func isConflict(err error, stored string) bool {
	var ce *alerting.ConflictError
	return errors.As(err, &ce) && string(ce.Stored) == stored
}

// TestKVProgressMerges: two writers of a rule's progress keep the newer
// point, whichever writes last.
func TestKVProgressMerges(t *testing.T) {
	a, b, set := twoWriters(t)
	ctx := context.Background()
	t1 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if err := a.SaveProgress(ctx, map[string]time.Time{"g/r": t1.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveProgress(ctx, map[string]time.Time{"g/r": t1}); err != nil { // b lags
		t.Fatal(err)
	}
	if err := a.SaveProgress(ctx, map[string]time.Time{"g/r": t1.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got, err := b.LoadProgress(ctx)
	if err != nil || !got["g/r"].Equal(t1.Add(2*time.Minute)) {
		t.Fatalf("progress %v (%v), want the newest point a wrote", got, err)
	}
	if n := set.GetOrCreateCounter("inferwatch_progress_write_conflicts_total").Get(); n != 1 {
		t.Errorf("%d conflicts counted, want 1 (b's)", n)
	}
}

// TestKVStaysTheSizeOfTheLiveState: alerts that come and go leave delete
// markers until PurgeDeletes removes them; the progress of rules no longer
// configured is deleted by RetainProgress.
func TestKVStaysTheSizeOfTheLiveState(t *testing.T) {
	a, _, _ := twoWriters(t)
	ctx := context.Background()
	for i := range 50 {
		k := string(rune('a'+i%26)) + string(rune('0'+i/26))
		if err := a.Save(ctx, k, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if i%5 != 0 {
			if err := a.Save(ctx, k, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	t1 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if err := a.SaveProgress(ctx, map[string]time.Time{"g/kept": t1, "g/removed": t1}); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Entries(ctx); err != nil || n != 52 {
		t.Fatalf("%d entries before the purge (%v), want 10 alerts, 40 markers and 2 progress keys", n, err)
	}
	if err := a.PurgeDeletes(ctx, -1); err != nil {
		t.Fatal(err)
	}
	if n, err := a.RetainProgress(ctx, func(rule string) bool { return rule == "g/kept" }); err != nil || n != 1 {
		t.Fatalf("retained: %d deleted, %v", n, err)
	}
	if err := a.PurgeDeletes(ctx, -1); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Entries(ctx); err != nil || n != 11 {
		t.Fatalf("%d entries after the purge (%v), want the 10 live alerts and the kept rule's progress", n, err)
	}
	// A key deleted and purged is created again.
	if err := a.Save(ctx, "b0", []byte(`{"again":true}`)); err != nil {
		t.Fatal(err)
	}
}

// TestKVKeepsIncidentsApart: the incidents live beside the alert states
// in the bucket, each kind loads only its own, and an incident another
// writer changed is overwritten.
func TestKVKeepsIncidentsApart(t *testing.T) {
	a, b, _ := twoWriters(t)
	ctx := context.Background()
	if err := a.Save(ctx, "alert-key", []byte(`{"alert":1}`)); err != nil {
		t.Fatal(err)
	}
	inc := a.Incidents()
	if err := inc.Save(ctx, "model=m1", []byte(`{"incident":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := b.Incidents().Save(ctx, "model=m1", []byte(`{"incident":2}`)); err != nil {
		t.Fatalf("b writing over a's incident: %v", err)
	}
	got, err := inc.Load(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("incidents %v, %v", got, err)
	}
	for _, v := range got {
		if string(v) != `{"incident":2}` {
			t.Errorf("incident %s, want b's", v)
		}
	}
	alerts, err := a.Load(ctx)
	if err != nil || len(alerts) != 1 {
		t.Fatalf("alert states %v, %v", alerts, err)
	}
	if err := inc.Save(ctx, "model=m1", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Incidents().Load(ctx); err != nil || len(got) != 0 {
		t.Errorf("after the delete: %v, %v", got, err)
	}
}

// TestKVPurgeDeletesEvery purges the markers of deleted keys on its own,
// and stops when asked.
func TestKVPurgeDeletesEvery(t *testing.T) {
	a, _, _ := twoWriters(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if err := a.Save(ctx, k, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := a.Save(ctx, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := a.Entries(ctx); err != nil || n != 3 {
		t.Fatalf("%d entries before the purges (%v), want 3 markers", n, err)
	}
	stop := a.PurgeDeletesEvery(ctx, 50*time.Millisecond)
	deadline := time.Now().Add(20 * time.Second)
	for n, err := a.Entries(ctx); n != 0; n, err = a.Entries(ctx) {
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("%d entries left (%v), want the markers purged", n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
}
