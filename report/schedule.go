package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	// Reporter makes the reports; required.
	Reporter *Reporter
	// Specs are the reports to schedule.
	Specs []Spec
	// Logger, nil discards.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Claims, when set, grant each report of a period end to one replica
	// of a set: a report is made only by the replica that claims it.
	Claims Claims
}

// Claims grant each report of a period end to one replica of a set, which
// claim it in a store they share (SchedulerOptions.Claims).
type Claims interface {
	// Claim claims the report of periodEnd for this replica. When this
	// replica is the first to, it returns done, to call once the report is
	// written; otherwise it returns a nil done and the replica that holds
	// the claim.
	Claim(ctx context.Context, report string, periodEnd time.Time) (done func(context.Context) error, holder string, err error)
	// Follow follows the claim another replica holds until that replica has
	// made the report (a nil done, and its name), or it left the set without
	// making it and this replica took the claim over (done, and the name of
	// the replica that was gone), or ctx ends (an error).
	Follow(ctx context.Context, report string, periodEnd time.Time) (done func(context.Context) error, holder string, err error)
}

// Scheduler makes reports on their cron schedules (robfig/cron): a report
// still being made when it falls due again is skipped, not queued, and a
// panic while making one is logged and recovered. A report that fell due
// while the daemon was down is made once at start, for its newest due
// time, not once per missed run.
type Scheduler struct {
	o SchedulerOptions
}

// NewScheduler checks o and fills its defaults.
func NewScheduler(o SchedulerOptions) (*Scheduler, error) {
	if o.Reporter == nil {
		return nil, errors.New("report scheduler: Options.Reporter is required")
	}
	for _, s := range o.Specs {
		if s.Cron == nil {
			return nil, fmt.Errorf("report scheduler: report %q has no parsed schedule", s.Name)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Scheduler{o: o}, nil
}

// cronLogger sends robfig/cron's log to slog: a skipped run is a warning,
// a recovered panic an error, its routine messages debug.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) {
	if msg == "skip" {
		c.l.Warn("a report fell due while the previous run was still making it; skipped", kv...)
		return
	}
	c.l.Debug("cron: "+msg, kv...)
}

func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("report scheduler: "+msg, append(kv, "err", err)...)
}

// job makes one report at the time it runs, unless the output directory
// already holds the report of that time.
type job struct {
	s    *Scheduler
	ctx  context.Context
	spec Spec
}

func (j job) Run() {
	now := j.s.o.Now()
	due := PeriodEnd(j.spec.Cron, now)
	if last, ok, err := LastEnd(j.spec.OutputDir, j.spec.Name); err == nil && ok && !last.Before(due) {
		j.s.o.Logger.Debug("report already made", "report", j.spec.Name, "period_end", due)
		return
	}
	var done func(context.Context) error
	if j.s.o.Claims != nil {
		var ok bool
		if done, ok = j.claim(due); !ok {
			return
		}
	}
	if _, err := j.s.o.Reporter.Make(j.ctx, j.spec, now); err != nil {
		if j.ctx.Err() != nil {
			j.s.o.Logger.Warn("making a report was stopped", "report", j.spec.Name, "err", err)
			return
		}
		j.s.o.Logger.Error("making a report failed", "report", j.spec.Name, "period_end", due, "err", err)
		return
	}
	if done != nil {
		if err := done(j.ctx); err != nil {
			j.s.o.Logger.Warn("the report is made but its claim could not be marked done; another replica may make it too", "report", j.spec.Name,
				"period_end", due, "err", err)
		}
	}
}

// followFor is how much of the way to a report's next period end a
// replica follows another's claim of the report: it stops before the next
// run falls due, which would be skipped while it follows.
const followFor = 0.9

// claim says whether this replica makes the report of due, among the
// replicas of a set, and returns the claim's done when it does. A report
// another replica claimed is followed until that replica has made it, or
// until followFor of the way to the next period end: when that replica
// leaves the set without making it, this replica takes the report over.
func (j job) claim(due time.Time) (done func(context.Context) error, ok bool) {
	log := j.s.o.Logger.With("report", j.spec.Name, "period_end", due)
	done, holder, err := j.s.o.Claims.Claim(j.ctx, j.spec.Name, due)
	switch {
	case err != nil:
		log.Error("claiming a report among the replicas failed; this replica does not make it", "err", err)
		return nil, false
	case done != nil:
		log.Info("this replica makes the report")
		return done, true
	}
	log.Info("another replica makes this report", "member", holder)
	until := due.Add(time.Duration(float64(j.spec.Cron.Next(due).Sub(due)) * followFor))
	ctx, cancel := context.WithTimeout(j.ctx, until.Sub(j.s.o.Now()))
	defer cancel()
	done, holder, err = j.s.o.Claims.Follow(ctx, j.spec.Name, due)
	switch {
	case err != nil && j.ctx.Err() != nil:
		return nil, false
	case err != nil:
		log.Warn("the replica that claimed the report has not made it and its next run is near; this replica stops following its claim", "err", err)
		return nil, false
	case done == nil:
		log.Info("the replica that claimed the report made it", "member", holder)
		return nil, false
	}
	log.Info("the replica that claimed the report left the set without making it; this replica takes the report over", "member", holder)
	return done, true
}

// CatchUp returns the period end of the report missed while nothing ran:
// the newest scheduled time not after now, when it is after the last
// report made (last). Without a last report nothing was missed.
func CatchUp(s cron.Schedule, last time.Time, haveLast bool, now time.Time) (time.Time, bool) {
	if !haveLast {
		return time.Time{}, false
	}
	due := PeriodEnd(s, now)
	if due.After(last) && !due.After(now) {
		return due, true
	}
	return time.Time{}, false
}

// Run schedules the reports and blocks until ctx is cancelled; then it
// stops scheduling, cancels the reports being made (ctx is theirs) and
// waits for them to return.
func (s *Scheduler) Run(ctx context.Context) {
	log := cronLogger{s.o.Logger}
	// Each report's job is wrapped once, so that its catch-up run and its
	// scheduled runs share one "still running" guard.
	c := cron.New(cron.WithLogger(log))
	var catchUps sync.WaitGroup
	now := s.o.Now()
	for _, spec := range s.o.Specs {
		wrapped := cron.NewChain(cron.Recover(log), cron.SkipIfStillRunning(log)).Then(job{s: s, ctx: ctx, spec: spec})
		c.Schedule(spec.Cron, wrapped)
		last, ok, err := LastEnd(spec.OutputDir, spec.Name)
		if err != nil {
			s.o.Logger.Warn("reading the last report made", "report", spec.Name, "dir", spec.OutputDir, "err", err)
		}
		if due, missed := CatchUp(spec.Cron, last, ok, now); missed {
			s.o.Logger.Info("a report fell due while inferwatch was not running; making it now", "report", spec.Name,
				"period_end", due.Format(time.RFC3339), "last_period_end", last.Format(time.RFC3339))
			catchUps.Go(wrapped.Run)
		}
		s.o.Logger.Info("report scheduled", "report", spec.Name, "schedule", spec.Schedule, "time_zone", spec.TimeZone,
			"next", spec.Cron.Next(now).Format(time.RFC3339), "dir", spec.OutputDir)
	}
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	catchUps.Wait()
}
