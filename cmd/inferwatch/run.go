package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/VictoriaMetrics/metricsql"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/alertmanager"
	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/incidentrole"
	"github.com/inferwatch/inferwatch/alerting/keda"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/outbox"
	"github.com/inferwatch/inferwatch/alerting/promexport"
	"github.com/inferwatch/inferwatch/alerting/writeback"
	"github.com/inferwatch/inferwatch/internal/process"
	redactpkg "github.com/inferwatch/inferwatch/internal/redact"
	"github.com/inferwatch/inferwatch/internal/web"
	"github.com/inferwatch/inferwatch/report"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// durationFlag is a flag holding a duration in MetricsQL syntax (30s, 1h, 7d).
type durationFlag struct{ d time.Duration }

func (f *durationFlag) String() string { return f.d.String() }
func (f *durationFlag) Set(s string) error {
	ms, err := metricsql.DurationValue(s, 0)
	if err != nil {
		return fmt.Errorf("%q is not a duration (examples: 30s, 15m, 7d): %w", s, err)
	}
	if ms < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	f.d = time.Duration(ms) * time.Millisecond
	return nil
}

const runHelp = `Usage: inferwatch run --config FILE [flags]

Evaluates the rule groups of FILE on their schedule against the store of
source.url and publishes what they find on NATS JetStream (an embedded
server when nats.url is empty), until SIGINT or SIGTERM: then the
evaluations in flight finish, what is pending is published, and it exits 0.
SIGHUP reloads FILE: when the new configuration is valid its groups replace
the old ones (a rule that did not change keeps its state); when it is not,
the errors are logged and the old configuration keeps running.

Exit status: 0 after a stop or a successful --once, 1 when the daemon could
not start or an evaluation of --once failed, 2 on a usage error.

Flags:
`

type runFlags struct {
	configFile  string
	once        bool
	backfill    durationFlag
	listenAddr  string
	sourceURL   string
	natsURL     string
	logLevel    string
	logFormat   string
	connectWait time.Duration
	catchUp     time.Duration
	kedaListen  string
	embedded    string
	outboxDir   string
	enablePprof bool
	memRatio    float64
	gcPercent   int
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f runFlags
	fs := newOfflineFlagSet("inferwatch run", runHelp)
	fs.StringVar(&f.configFile, "config", "", "configuration `FILE`")
	fs.BoolVar(&f.once, "once", false, "evaluate every group once, publish, and exit (non-zero if any evaluation failed)")
	fs.Var(&f.backfill, "backfill", "on the first evaluation of each rule, also report the anomalies of this much history (e.g. 7d)")
	fs.StringVar(&f.listenAddr, "web.listen-address", "127.0.0.1:9464", "address of the HTTP listener for "+strings.Join(web.Paths(), ", ")+
		" and, unless export.keda.metrics_api is false, "+keda.PathPrefix+" (empty: none)")
	fs.BoolVar(&f.enablePprof, "web.enable-pprof", false, "also serve Go's runtime profiles (CPU, heap, goroutines, ...) under /debug/pprof/ on --web.listen-address")
	fs.StringVar(&f.sourceURL, "source.url", "", "override source.url of the configuration")
	fs.StringVar(&f.natsURL, "nats.url", "", "override nats.url of the configuration")
	fs.StringVar(&f.outboxDir, "outbox.dir", "", "override nats.outbox_dir: where findings and alert events wait, on disk, for NATS to take them (none: no outbox)")
	fs.StringVar(&f.embedded, "nats.embedded.listen", "", "override nats.embedded.listen: host:port of the embedded NATS server (port 0 picks a free one)")
	fs.StringVar(&f.kedaListen, "keda.listen-address", "", "override export.keda.listen: host:port of the KEDA external scaler's gRPC server")
	fs.StringVar(&f.logLevel, "log.level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log.format", "logfmt", "log format: logfmt or json")
	fs.DurationVar(&f.connectWait, "nats.connect-timeout", 2*time.Minute, "how long to keep retrying to reach NATS at start")
	fs.Float64Var(&f.memRatio, "auto-gomemlimit.ratio", process.DefaultMemLimitRatio, "unless GOMEMLIMIT is set, set Go's soft memory limit to this share of the container's memory limit (cgroup), in (0, 1]; 0: none")
	fs.IntVar(&f.gcPercent, "runtime.gogc", process.DefaultGCPercent, "unless GOGC is set, the garbage collector's target: collect once the heap has grown by this percentage of the live data (Go's default is 100; a lower one keeps the peak nearer the live data for more CPU)")
	fs.DurationVar(&f.catchUp, "catch-up", rules.DefaultCatchUp, "after a delayed evaluation (a store or broker outage, a restart), report what was judged since the previous one, back to at most this long")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if f.configFile == "" {
		return usageError(stderr, fs, "--config FILE is required")
	}
	if f.enablePprof && f.listenAddr == "" {
		return usageError(stderr, fs, "--web.enable-pprof needs a --web.listen-address")
	}
	if !(f.memRatio >= 0 && f.memRatio <= 1) {
		return usageError(stderr, fs, fmt.Sprintf("--auto-gomemlimit.ratio %g: want a share in (0, 1], or 0 for none", f.memRatio))
	}
	if f.gcPercent < 1 {
		return usageError(stderr, fs, fmt.Sprintf("--runtime.gogc %d: want a percentage of at least 1 (GOGC=off turns the collector off)", f.gcPercent))
	}
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return usageError(stderr, fs, err.Error())
	}
	if gc, why := process.ApplyGCPercent(f.gcPercent); gc > 0 {
		logger.Debug("garbage collector target set", "percent", gc, "from", why)
	} else {
		logger.Debug("garbage collector target left as GOGC sets it", "GOGC", os.Getenv("GOGC"))
	}
	plan, err := process.ApplyMemLimit(f.memRatio)
	if err != nil {
		logger.Error("inferwatch stopped", "err", err)
		return 1
	}
	if plan.Limit > 0 {
		logger.Info("Go's soft memory limit set", "limit", process.MiB(plan.Limit), "from", plan.Reason)
	} else {
		logger.Debug("no soft memory limit set by inferwatch", "why", plan.Reason)
	}
	if err := run(ctx, f, logger); err != nil {
		logger.Error("inferwatch stopped", "err", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log.level: %q is not one of debug, info, warn, error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "logfmt":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log.format: %q is not one of logfmt, json", format)
}

// load reads, checks and builds the configuration with the flags'
// overrides applied.
func (f runFlags) load() (*rulefmt.Config, []*rules.Group, error) {
	cfg, groups, err := loadConfig(f.configFile)
	if err != nil {
		return nil, nil, err
	}
	if f.sourceURL != "" {
		if err := rulefmt.CheckSourceURL(f.sourceURL); err != nil {
			return nil, nil, fmt.Errorf("--source.url: %w", err)
		}
		cfg.Source.URL = f.sourceURL
	}
	if f.natsURL != "" {
		if errs := rulefmt.CheckNATSURL(f.natsURL); len(errs) > 0 {
			return nil, nil, fmt.Errorf("--nats.url: %w", errors.Join(errs...))
		}
		cfg.NATS.URL = f.natsURL
	}
	if f.kedaListen != "" {
		cfg.Export.KEDA.Listen = f.kedaListen
	}
	if f.outboxDir != "" {
		cfg.NATS.OutboxDir = f.outboxDir
	}
	if f.embedded != "" {
		host, _, err := net.SplitHostPort(f.embedded)
		if err != nil {
			return nil, nil, fmt.Errorf("--nats.embedded.listen %q: want host:port: %w", f.embedded, err)
		}
		em := cfg.NATS.Embedded
		if !natsjs.IsLoopback(host) && host != "" && em.Token == "" && (em.User == "" || em.Password == "") {
			return nil, nil, fmt.Errorf("--nats.embedded.listen %q is beyond loopback: set nats.embedded.user and password (or token) in %s, or listen on 127.0.0.1", f.embedded, cfg.File)
		}
		cfg.NATS.Embedded.Listen = f.embedded
	}
	return cfg, groups, nil
}

// run is the daemon: it wires the configuration, the store client, NATS and
// the rule manager together and runs them until ctx is cancelled.
func run(ctx context.Context, f runFlags, logger *slog.Logger) error {
	cfg, groups, err := f.load()
	if err != nil {
		return err
	}
	set := metrics.NewSet()
	reloadOK := set.NewGauge("inferwatch_config_last_reload_successful", nil)
	reloadAt := set.NewGauge("inferwatch_config_last_reload_success_timestamp_seconds", nil)
	reloadOK.Set(1)
	reloadAt.Set(float64(time.Now().Unix()))

	ready := web.NewReadiness("config", "nats", "store")
	ready.Set("config", func(context.Context) error { return nil })
	// The outputs that never wait come before NATS in the pipeline: an
	// autoscaler reads them while the publisher may be retrying.
	var receivers []alerting.Receiver
	handlers := map[string]http.Handler{}
	ex := cfg.Export
	var exported *promexport.Exporter
	var sigs *keda.Signals
	if ex.Metrics.Enabled {
		exported = promexport.New(promexport.Options{Metrics: set, MaxSeries: ex.Metrics.MaxSeries,
			Expiry: ex.Metrics.Expiry, Leads: ex.Metrics.Leads, Logger: logger})
		receivers = append(receivers, exported)
	}
	if ex.KEDA.MetricsAPI || ex.KEDA.Listen != "" {
		var err error
		sigs, err = keda.New(keda.Options{MaxTargets: ex.KEDA.MaxTargets, Grace: ex.KEDA.Grace, Forget: ex.KEDA.Forget,
			MaxStreams: ex.KEDA.MaxStreams, Logger: logger, Metrics: set})
		if err != nil {
			return err
		}
		defer sigs.Close()
		receivers = append(receivers, sigs)
		if ex.KEDA.MetricsAPI {
			handlers[keda.PathPrefix] = sigs.Handler()
		}
		if ex.KEDA.Listen != "" {
			ln, err := net.Listen("tcp", ex.KEDA.Listen)
			if err != nil {
				return fmt.Errorf("export.keda.listen (--keda.listen-address): %w", err)
			}
			stopScaler := sigs.ServeGRPC(ln)
			defer stopScaler()
		}
	}
	if wc := cfg.Writeback; wc != nil {
		wb, err := newWriteback(wc, logger, set)
		if err != nil {
			return fmt.Errorf("%s: writeback: %w", cfg.File, err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), wc.FlushTimeout+time.Second)
			defer cancel()
			if left, err := wb.Close(ctx); err != nil {
				logger.Warn("stopping: samples left unwritten", "left", left, "err", err)
			}
		}()
		receivers = append(receivers, wb)
	}
	if f.enablePprof {
		handlers["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		handlers["/debug/pprof/cmdline"] = http.HandlerFunc(pprof.Cmdline)
		handlers["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		handlers["/debug/pprof/symbol"] = http.HandlerFunc(pprof.Symbol)
		handlers["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
	}
	if f.listenAddr != "" {
		srv, err := web.Serve(web.Options{Addr: f.listenAddr, Metrics: set, Handlers: handlers, Ready: ready, Logger: logger})
		if err != nil {
			return fmt.Errorf("--web.listen-address: %w", err)
		}
		defer srv.Stop()
	}

	natsURL := cfg.NATS.URL
	if natsURL == "" {
		em := cfg.NATS.Embedded
		srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{
			Listen:   em.Listen,
			StoreDir: em.StoreDir,
			User:     em.User, Password: string(em.Password), Token: string(em.Token),
			Logger: logger,
		})
		if err != nil {
			return fmt.Errorf("starting the embedded NATS server on %s: %w", cfg.NATS.Embedded.Listen, err)
		}
		defer srv.Shutdown()
		natsURL = srv.ClientURL()
		logger.Info("embedded NATS server with JetStream started", "url", natsURL, "store", srv.StoreDir())
	}
	tlsConfig, err := natsTLS(cfg)
	if err != nil {
		return err
	}
	auth, _ := natsAuth(cfg.NATS, cfg.File)
	connectCtx, cancel := context.WithTimeout(ctx, f.connectWait)
	js, err := natsjs.Connect(connectCtx, natsjs.Options{
		URL:             natsURL,
		Prefix:          cfg.NATS.SubjectPrefix,
		Stream:          cfg.NATS.Stream,
		DuplicateWindow: cfg.NATS.DuplicateWindow,
		Auth:            auth,
		TLS:             tlsConfig,
		MaxAge:          cfg.NATS.StreamMaxAge,
		MaxBytes:        cfg.NATS.StreamMaxBytes,
		Replicas:        cfg.NATS.StreamReplicas,
		Logger:          logger,
		Metrics:         set,
	})
	cancel()
	if err != nil {
		return fmt.Errorf("connecting to NATS: %w", err)
	}
	defer func() {
		if err := js.Close(); err != nil {
			logger.Warn("draining the NATS connection", "err", err)
		}
	}()
	ready.Set("nats", func(context.Context) error { return js.Ready() })
	var box alerting.Outbox // a nil interface when there is no outbox
	outboxDir := defaultOutboxDir(cfg.NATS, natsURL)
	if outboxDir != "" {
		ob, err := outbox.Open(outbox.Options{Dir: outboxDir, MaxBytes: cfg.NATS.OutboxMaxBytes, Logger: logger, Metrics: set})
		if err != nil {
			return fmt.Errorf("the outbox (nats.outbox_dir or --outbox.dir; none for no outbox): %w", err)
		}
		defer ob.Close()
		box = ob
		logger.Info("findings wait in an outbox until NATS takes them", "outbox", outboxDir, "pending", ob.Len())
	} else {
		logger.Warn("no outbox: findings NATS has not taken when the daemon stops are lost", "hint", "set nats.outbox_dir, or nats.embedded.store_dir for an embedded server")
	}
	pub, err := alerting.NewPublisher(alerting.PublisherOptions{
		Output:  js,
		Prefix:  cfg.NATS.SubjectPrefix,
		Outbox:  box,
		Async:   true,
		Logger:  logger,
		Metrics: set,
	})
	if err != nil {
		return err
	}
	closePublisher := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		kept, err := pub.Close(cctx)
		switch {
		case kept > 0 && box != nil:
			logger.Warn(fmt.Sprintf("stopping: %d findings kept in the outbox for the next start", kept), "outbox", outboxDir, "err", err)
		case kept > 0:
			logger.Error(fmt.Sprintf("stopping: %d findings NATS did not take are lost: there is no outbox", kept), "err", err)
		}
	}

	client, err := newStoreClient(cfg, set, logger)
	if err != nil {
		return err
	}
	ready.Set("store", func(ctx context.Context) error {
		_, err := client.Query(ctx, "vector(1)", time.Now())
		return err
	})
	kv, err := js.KV(ctx, cfg.NATS.StateBucket)
	if err != nil {
		return err
	}
	stopMember := func() {}
	life := alerting.NewLifecycle(alerting.LifecycleOptions{Store: kv, Logger: logger, Metrics: set})
	// Replicas on an external NATS share the groups: each restores the
	// alerts of a group when it takes the group's lease.
	var member *cluster.Member
	var fwd *alertmanager.Forwarder
	if !f.once {
		m, leave, err := joinSet(ctx, cfg, js, outboxDir, groups, f.connectWait, logger, set)
		if err != nil {
			return err
		}
		defer leave()
		ready.Set("members", func(context.Context) error { return m.Joined() })
		if cfg.NATS.URL != "" {
			member = m
		}
		stopMember = leave
	}
	if member == nil {
		if _, err := life.Restore(ctx, maxRestoredAlerts); err != nil {
			logger.Error("alert states could not be restored; alerts start afresh", "bucket", cfg.NATS.StateBucket, "err", err)
		}
	}
	incidents, levels := newIncidents(cfg, kv.Incidents(), logger, set)
	sink := &alerting.Pipeline{Lifecycle: life, Levels: levels, Incidents: incidents, Receivers: append(receivers, pub)}
	// The alerts of removed rules resolve through the incidents too.
	retained := &alerting.Pipeline{Incidents: incidents, Receivers: []alerting.Receiver{pub}}
	var feed *natsjs.Feed
	if member == nil {
		if _, err := incidents.Restore(ctx); err != nil {
			logger.Error("incidents could not be restored; they start afresh", "bucket", cfg.NATS.StateBucket, "err", err)
		}
	} else {
		// One member of the set, the holder of the incidents role, makes
		// the incidents of every member's batches (incidentrole.Holder).
		feed, err = js.Feed(ctx, natsjs.FeedOptions{Name: incidentrole.Role, MaxAge: incidentFeedMaxAge, AckWait: cfg.NATS.LeaseTTL})
		if err != nil {
			return err
		}
		fs := incidentrole.NewSender(feed, logger, set)
		sink = &alerting.Pipeline{Lifecycle: life, Receivers: append(receivers, pub, fs)}
		retained = &alerting.Pipeline{Receivers: []alerting.Receiver{pub, fs}}
	}
	hand := &alerting.Handover{Lifecycle: life, Logger: logger}
	if exported != nil {
		hand.Forget = append(hand.Forget, exported)
	}
	if am := cfg.Alertmanager; am != nil {
		notifier, err := alertmanager.New(alertmanager.Options{URLs: am.URLs, HTTPClientConfig: &am.HTTPClientConfig,
			Timeout: am.Timeout, Logger: logger, Metrics: set})
		if err != nil {
			return fmt.Errorf("%s: alertmanager: %w", cfg.File, err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if left, err := notifier.Close(ctx); err != nil {
				logger.Warn("stopping: alerts left unsent to Alertmanager", "left", left, "err", err)
			}
		}()
		fwd, err = alertmanager.NewForwarder(alertmanager.ForwarderOptions{Notifier: notifier, ResendDelay: am.ResendDelay, ExternalURL: am.ExternalURL,
			Alerts: am.SendAlerts, Incidents: am.SendIncidents})
		if err != nil {
			return fmt.Errorf("%s: alertmanager: %w", cfg.File, err)
		}
		fwd.Seed(life.Firing())
		fwd.SeedIncidents(incidents.Open())
		sink.Receivers = append(sink.Receivers, fwd)
		hand.Forwarder = fwd
		logger.Info("forwarding alerts to Alertmanager", "urls", redactAll(am.URLs), "resend_delay", am.ResendDelay)
	}
	mo := rules.ManagerOptions{
		Querier:         client,
		Sink:            sink,
		CatchUp:         f.catchUp,
		Progress:        kv,
		Readings:        levels,
		Scores:          scorePoints(ex.Metrics.Enabled, cfg.Writeback != nil && cfg.Writeback.Scores),
		EvaluationDelay: cfg.Source.EvaluationDelay,
		Backfill:        f.backfill.d,
		Forgotten:       process.ReleaseForgotten(logger),
		Logger:          logger,
		Metrics:         set,
	}
	if member != nil {
		mo.Leases, mo.Handover = member, hand
		if sigs != nil {
			stop := followScales(ctx, js, cfg.NATS.SubjectPrefix, sigs, ex.KEDA.Forget)
			defer stop()
		}
	}
	manager, err := rules.NewManager(mo, groups)
	if err != nil {
		return err
	}
	expectFirstBatches(incidents, manager.Groups())
	stopHolder := func() {}
	if member != nil {
		h := &incidentrole.Holder{Member: member, Feed: feed, Incidents: incidents, Levels: levels, Out: []alerting.Receiver{pub},
			Expect: func() { expectFirstBatches(incidents, manager.Groups()) },
			Poll:   min(time.Second, cfg.NATS.Heartbeat), Logger: logger}
		if fwd != nil {
			h.Forwarder = fwd
			h.Out = append(h.Out, fwd)
		}
		hctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.Run(hctx)
		}()
		stopHolder = sync.OnceFunc(func() { cancel(); <-done })
		defer stopHolder()
	}
	if _, err := manager.Resume(ctx); err != nil {
		logger.Error("the rules' progress could not be restored; they start afresh", "bucket", cfg.NATS.StateBucket, "err", err)
	}
	ready.Set("rules", func(context.Context) error { return manager.Stalled() })
	retain := rules.RetainOptions{Progress: kv, Alerts: life, Out: retained, Shared: member != nil, Logger: logger}
	rules.Retain(ctx, groups, time.Now(), retain)
	stopPurge := kv.PurgeDeletesEvery(ctx, purgeEvery)
	defer stopPurge()
	if member != nil { // what replicas with another configuration leave behind
		stopRetain := rules.RetainEvery(ctx, purgeEvery, manager.Groups, retain)
		defer stopRetain()
	}
	logger.Info("inferwatch started", "config", cfg.File, "source", redact(cfg.Source.URL),
		"groups", len(groups), "rules", countRules(groups), "once", f.once)
	if f.once {
		err := manager.RunOnce(ctx)
		if ferr := pub.Flush(ctx); ferr != nil && err == nil {
			err = ferr
		}
		closePublisher()
		if err != nil {
			return fmt.Errorf("evaluating once: %w", err)
		}
		logger.Info("evaluated every group once")
		return nil
	}

	// Reports on their schedules, until ctx is cancelled; the report in
	// flight is cancelled and waited for before NATS is drained.
	var claims report.Claims
	if member != nil {
		if claims, err = newReportClaims(kv, member, cfg.NATS.Heartbeat, cfg.NATS.LeaseTTL); err != nil {
			return err
		}
	}
	stopReports, err := startReports(ctx, cfg, natsURL, client, js, claims, logger, set)
	if err != nil {
		return err
	}
	defer stopReports()

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	done := make(chan struct{})
	go func() {
		defer close(done)
		manager.Run(ctx)
	}()
	for {
		select {
		case <-done:
			logger.Info("stopping: the evaluations in flight have finished")
			stopHolder()
			stopMember()
			closePublisher()
			return nil
		case <-hup:
			if reload(f, cfg, manager, incidentsReloader(incidents, levels, logger), logger, reloadOK, reloadAt) {
				rules.Retain(ctx, manager.Groups(), time.Now(), retain)
				if member != nil {
					member.SetGroups(groupNames(manager.Groups()))
				}
			}
		}
	}
}

// reload reads the configuration again and hands its groups to the
// manager and its incidents section to apply; an invalid configuration is
// logged and the running one kept. Sections the running daemon cannot
// change (source, nats) are reported as needing a restart.
func reload(f runFlags, running *rulefmt.Config, m *rules.Manager, apply func(*rulefmt.Config), logger *slog.Logger, ok, at *metrics.Gauge) bool {
	logger.Info("SIGHUP: reloading the configuration", "config", f.configFile)
	cfg, groups, err := f.load()
	if err != nil {
		ok.Set(0)
		logger.Error("reloading the configuration failed; the previous configuration keeps running", "config", f.configFile, "err", err)
		return false
	}
	if !reflect.DeepEqual(cfg.Source, running.Source) || !reflect.DeepEqual(cfg.NATS, running.NATS) ||
		!reflect.DeepEqual(cfg.Export, running.Export) || !reflect.DeepEqual(cfg.Alertmanager, running.Alertmanager) ||
		!reflect.DeepEqual(cfg.Writeback, running.Writeback) || !reflect.DeepEqual(cfg.SLOs, running.SLOs) ||
		!reflect.DeepEqual(cfg.Reports, running.Reports) {
		logger.Warn("the source, nats, alertmanager, export, writeback, slos or reports sections changed: they take effect at the next restart; the groups are reloaded now")
	}
	kept := m.Update(groups)
	apply(cfg)
	ok.Set(1)
	at.Set(float64(time.Now().Unix()))
	logger.Info("configuration reloaded", "config", f.configFile, "groups", len(groups), "rules", countRules(groups), "rules_kept", kept)
	return true
}

// defaultOutboxDir is where the outbox lives: nats.outbox_dir ("none": no
// outbox), else beside an embedded server's store, else under the user's
// state directory (outbox.StateDir).
func defaultOutboxDir(n rulefmt.NATS, natsURL string) string {
	switch {
	case n.OutboxDir == "none":
		return ""
	case n.OutboxDir != "":
		return n.OutboxDir
	case n.URL == "" && n.Embedded.StoreDir != "":
		return filepath.Join(n.Embedded.StoreDir, "inferwatch-outbox")
	case n.URL == "":
		return "" // a temporary store: the stream goes with the daemon
	}
	return outbox.StateDir(n.Stream, redact(natsURL))
}

// incidentFeedMaxAge is how long the members' batches wait on the
// incidents' feed for a holder of the incidents role.
const incidentFeedMaxAge = 24 * time.Hour

// maxRestoredAlerts bounds the alert states restored at start-up.
const maxRestoredAlerts = 1_000_000

// purgeEvery is how often the daemon purges the markers deleted alert
// states leave in the state bucket, and how old a marker must be.
const purgeEvery = 10 * time.Minute

func countRules(groups []*rules.Group) int {
	n := 0
	for _, g := range groups {
		n += len(g.Rules())
	}
	return n
}

func redactAll(us []string) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = redact(u)
	}
	return out
}

// redact hides the secrets of a URL.
func redact(u string) string { return redactpkg.URL(u) }

// newWriteback builds the writer of the writeback section.
func newWriteback(wc *rulefmt.Writeback, logger *slog.Logger, set *metrics.Set) (*writeback.Writer, error) {
	hc := wc.HTTPClientConfig
	return writeback.New(writeback.Options{
		URL:               wc.URL,
		Protocol:          writeback.Protocol(wc.Protocol),
		HTTPClientConfig:  &hc,
		Timeout:           wc.Timeout,
		Rules:             wc.Rules,
		SkipScores:        !wc.Scores,
		SkipForecasts:     !wc.Forecasts,
		ForecastAt:        writeback.ForecastTime(wc.ForecastTime),
		Horizons:          wc.Horizons,
		QueueCapacity:     wc.QueueCapacity,
		MaxSamplesPerSend: wc.MaxSamplesPerSend,
		BatchDeadline:     wc.BatchDeadline,
		BackoffMax:        wc.MaxBackoff,
		FlushTimeout:      wc.FlushTimeout,
		Logger:            logger,
		Metrics:           set,
	})
}

// scorePoints is what the outputs need of the rules' scores: every point
// for write-back (anomaly_score and its band), each series' newest for the
// gauge inferwatch_anomaly_score, else none.
func scorePoints(gauges, writeBack bool) rules.ScorePoints {
	switch {
	case writeBack:
		return rules.ScoresEvery
	case gauges:
		return rules.ScoresNewest
	}
	return rules.ScoresNone
}
