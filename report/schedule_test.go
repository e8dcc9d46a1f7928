package report_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/report"
	"github.com/inferwatch/inferwatch/report/jsread"
)

// syncBuffer is a log sink safe for the scheduler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond for up to two minutes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1200; i++ {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

// TestSchedulerCatchesUpOnce: the daemon was down from the report of 22
// Nov to 24 Nov 00:05; at start it makes the report due at 24 Nov 00:00
// once, not the two it missed.
func TestSchedulerCatchesUpOnce(t *testing.T) {
	setup(t)
	dir := t.TempDir()
	cfg := loadConfig(t, dir)
	sp := spec(t, cfg, "daily")
	sp.Formats = []string{"json"}
	if err := report.SaveState(dir, "daily", day(22)); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := reporter(t, cfg, false)
	s, err := report.NewScheduler(report.SchedulerOptions{Reporter: r, Specs: []report.Spec{sp}, Logger: log,
		Now: func() time.Time { return day(24).Add(5 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	waitFor(t, "the catch-up report", func() bool {
		end, ok, _ := report.LastEnd(dir, "daily")
		return ok && end.Equal(day(24))
	})
	cancel()
	<-done
	files, _ := filepath.Glob(filepath.Join(dir, "daily-*.json"))
	if len(files) != 1 || filepath.Base(files[0]) != "daily-2026-11-24T0000+0000.json" {
		t.Errorf("files %q, want only the report of 24 Nov", files)
	}
	if !strings.Contains(logs.String(), "a report fell due while inferwatch was not running") {
		t.Errorf("the catch-up is not logged:\n%s", logs.String())
	}
}

type panicky struct{}

func (panicky) QueryRange(context.Context, string, time.Time, time.Time, time.Duration) ([]ingest.Series, error) {
	panic("the store client broke")
}

// blocking answers nothing until the report is cancelled.
type blocking struct{}

func (blocking) QueryRange(ctx context.Context, _ string, _, _ time.Time, _ time.Duration) ([]ingest.Series, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestSchedulerRecoversAndSkips: a report that panics is logged and the
// scheduler goes on; a report still being made when it falls due again
// is skipped, not queued; stopping cancels the report in flight.
func TestSchedulerRecoversAndSkips(t *testing.T) {
	cfg := loadConfig(t, t.TempDir())
	for _, tc := range []struct {
		name string
		q    report.Querier
		want string
	}{
		{"panic", panicky{}, "panic"},
		{"skip", blocking{}, "fell due while the previous run was still making it; skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sp := spec(t, cfg, "daily")
			sp.OutputDir = dir
			sched, err := cron.ParseStandard("@every 1s")
			if err != nil {
				t.Fatal(err)
			}
			sp.Cron = sched
			if err := report.SaveState(dir, "daily", time.Now().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			r, err := report.New(report.Options{Querier: tc.q})
			if err != nil {
				t.Fatal(err)
			}
			s, err := report.NewScheduler(report.SchedulerOptions{Reporter: r, Specs: []report.Spec{sp},
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); s.Run(ctx) }()
			waitFor(t, tc.want+" in the log", func() bool { return strings.Contains(logs.String(), tc.want) })
			cancel()
			<-done
		})
	}
}

// announceRuns numbers TestAnnounce's runs in this process.
var announceRuns atomic.Int32

// TestAnnounce: each report made is announced on inferwatch.reports.<name>
// as a CloudEvent carrying its summary and files.
func TestAnnounce(t *testing.T) {
	f := setup(t)
	dir := t.TempDir()
	cfg := loadConfig(t, dir)
	js, err := natsjs.Connect(context.Background(), natsjs.Options{URL: f.nats.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	client, err := ingest.NewClient(ingest.ClientOptions{URL: f.vm.URL()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.New(report.Options{Querier: client, Publisher: js})
	if err != nil {
		t.Fatal(err)
	}
	sp := spec(t, cfg, "daily")
	sp.Formats = []string{"json", "md"}
	// A report's event id is stable over its name and period, so JetStream
	// drops the same report announced again: a name of its own per run
	// keeps this test's event apart from an earlier run's (-count).
	sp.Name = fmt.Sprintf("daily-%d", announceRuns.Add(1))
	res, err := r.Make(context.Background(), sp, day(25).Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := jsread.Open(jsread.Options{URL: f.nats.ClientURL(), Stream: "INFERWATCH"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	evs, err := rd.ReadEvents(context.Background(), []string{report.Subject("inferwatch", sp.Name)}, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range evs {
		if e.Event.Type != report.EventType || e.Event.Time != day(25) {
			continue
		}
		found = true
		var h report.Headline
		if err := jsonUnmarshal(e.Event.Data, &h); err != nil {
			t.Fatal(err)
		}
		if h.Files["json"] != res.Files["json"] || h.Files["md"] != res.Files["md"] || len(h.Models) != 3 || h.Name != sp.Name {
			t.Errorf("announced %+v, made %v", h, res.Files)
		}
	}
	if !found {
		t.Errorf("no %s event for 25 Nov among %d", report.EventType, len(evs))
	}
}

// memClaims are the claims of a set of replicas in memory: the first to
// claim a report holds it; a follower returns once the holder marks it
// done, or takes it over once the holder is gone.
type memClaims struct {
	mu     sync.Mutex
	holder map[string]string
	done   map[string]bool
	gone   map[string]bool // replicas that left the set
	calls  int             // calls of Claim
}

func newMemClaims() *memClaims {
	return &memClaims{holder: map[string]string{}, done: map[string]bool{}, gone: map[string]bool{}}
}

// replica is the claims of one replica.
func (m *memClaims) replica(me string) report.Claims { return replicaClaims{m, me} }

type replicaClaims struct {
	m  *memClaims
	me string
}

func claimKey(name string, end time.Time) string { return name + "@" + end.Format(time.RFC3339) }

func (r replicaClaims) markDone(k string) func(context.Context) error {
	return func(context.Context) error {
		r.m.mu.Lock()
		defer r.m.mu.Unlock()
		if r.m.holder[k] != r.me {
			return fmt.Errorf("%s holds %s", r.m.holder[k], k)
		}
		r.m.done[k] = true
		return nil
	}
}

func (r replicaClaims) Claim(_ context.Context, name string, end time.Time) (func(context.Context) error, string, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.calls++
	k := claimKey(name, end)
	if h, ok := r.m.holder[k]; ok {
		return nil, h, nil
	}
	r.m.holder[k] = r.me
	return r.markDone(k), "", nil
}

func (r replicaClaims) Follow(ctx context.Context, name string, end time.Time) (func(context.Context) error, string, error) {
	k := claimKey(name, end)
	for {
		r.m.mu.Lock()
		h, done, gone := r.m.holder[k], r.m.done[k], r.m.gone[r.m.holder[k]]
		if !done && gone {
			r.m.holder[k] = r.me
		}
		r.m.mu.Unlock()
		switch {
		case done:
			return nil, h, nil
		case gone:
			return r.markDone(k), h, nil
		}
		select {
		case <-ctx.Done():
			return nil, h, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// claimingReplicas runs a scheduler of the daily report for each replica
// (its claims, its own output directory), all behind since 22 Nov at 24
// Nov 00:05, until the returned function is called; it returns their
// directories and their log.
func claimingReplicas(t *testing.T, claims ...report.Claims) (dirs []string, logs *syncBuffer, stop func()) {
	t.Helper()
	logs = &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range claims {
		dir := t.TempDir()
		dirs = append(dirs, dir)
		cfg := loadConfig(t, dir)
		sp := spec(t, cfg, "daily")
		sp.Formats = []string{"json"}
		if err := report.SaveState(dir, "daily", day(22)); err != nil {
			t.Fatal(err)
		}
		s, err := report.NewScheduler(report.SchedulerOptions{Reporter: reporter(t, cfg, false), Specs: []report.Spec{sp}, Logger: log,
			Now: func() time.Time { return day(24).Add(5 * time.Minute) }, Claims: c})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { s.Run(ctx) })
	}
	return dirs, logs, func() { cancel(); wg.Wait() }
}

// reportFiles are the daily reports in dirs.
func reportFiles(dirs []string) []string {
	var files []string
	for _, dir := range dirs {
		f, _ := filepath.Glob(filepath.Join(dir, "daily-*.json"))
		files = append(files, f...)
	}
	return files
}

// TestSchedulerClaims: two replicas, each with its own output directory,
// fall behind on the same report and catch up at start; the claim they
// share grants its period end to one of them, which alone makes it and
// marks the claim done; the other follows the claim until then.
func TestSchedulerClaims(t *testing.T) {
	setup(t)
	claims := newMemClaims()
	dirs, logs, stop := claimingReplicas(t, claims.replica("r1"), claims.replica("r2"))
	k := claimKey("daily", day(24))
	waitFor(t, "the claim done", func() bool {
		claims.mu.Lock()
		defer claims.mu.Unlock()
		return claims.done[k]
	})
	waitFor(t, "the follower's return", func() bool { return strings.Contains(logs.String(), "the replica that claimed the report made it") })
	stop()
	if files := reportFiles(dirs); len(files) != 1 || filepath.Base(files[0]) != "daily-2026-11-24T0000+0000.json" {
		t.Errorf("files %q, want one report of 24 Nov", files)
	}
	if claims.calls != 2 {
		t.Errorf("%d claims, want 2", claims.calls)
	}
	if !strings.Contains(logs.String(), "another replica makes this report") {
		t.Errorf("the refused claim is not logged:\n%s", logs.String())
	}
}

// TestSchedulerTakesOverAClaim: the replica that claimed a report left
// the set before making it; the replica that follows the claim takes it
// over, makes the report, marks the claim done and logs the takeover.
func TestSchedulerTakesOverAClaim(t *testing.T) {
	setup(t)
	claims := newMemClaims()
	k := claimKey("daily", day(24))
	claims.holder[k] = "r1"
	claims.gone["r1"] = true
	dirs, logs, stop := claimingReplicas(t, claims.replica("r2"))
	waitFor(t, "the claim done", func() bool {
		claims.mu.Lock()
		defer claims.mu.Unlock()
		return claims.done[k]
	})
	stop()
	if files := reportFiles(dirs); len(files) != 1 || filepath.Base(files[0]) != "daily-2026-11-24T0000+0000.json" {
		t.Errorf("files %q, want the report of 24 Nov", files)
	}
	if h := claims.holder[k]; h != "r2" {
		t.Errorf("the claim is held by %s, want r2", h)
	}
	want := `msg="the replica that claimed the report left the set without making it; this replica takes the report over" report=daily period_end=2026-11-24T00:00:00.000Z member=r1`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the takeover is not logged as %s:\n%s", want, logs.String())
	}
}
