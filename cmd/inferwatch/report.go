package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/common/config"

	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/report"
	"github.com/inferwatch/inferwatch/report/jsread"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

const reportHelp = `Usage: inferwatch report --config FILE --name NAME [--at TIME] [flags]

Makes the report NAME of FILE's reports: section now, without the daemon:
the report its schedule makes at TIME (default now), i.e. the one whose
period ends at the newest scheduled time at or before TIME. TIME is RFC 3339
(2026-11-25T06:00:00Z), or a date and time in the report's time zone
(2026-11-25 06:00), or a date (2026-11-25: the report made during that
day). It writes the report's files into its output_dir, keeps the newest
keep of them, prints their paths, and announces the report on
<prefix>.reports.NAME when NATS can be reached.

Findings, alerts, forecasts and scale signals are read from the daemon's
JetStream stream at nats.url (an embedded server: its listen address, while
the daemon runs); when it cannot be reached the report says so and is made
without them.

Exit status: 0 when the report was made, 1 when it could not be, 2 on a
usage error.

Flags:
`

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newOfflineFlagSet("inferwatch report", reportHelp)
	configFile := fs.String("config", "", "configuration `FILE`")
	name := fs.String("name", "", "the report to make (a name of the reports: section)")
	at := fs.String("at", "", "make the report the schedule makes at this `TIME` (default now)")
	out := fs.String("out", "", "write into this `DIR` instead of the report's output_dir")
	sourceURL := fs.String("source.url", "", "override source.url of the configuration")
	natsURL := fs.String("nats.url", "", "read events from and announce on this NATS server (default: nats.url, or the embedded server's listen address)")
	noEvents := fs.Bool("no-events", false, "do not read the daemon's events, nor announce the report")
	logLevel := fs.String("log.level", "warn", "log level: debug, info, warn or error")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if *configFile == "" || *name == "" {
		return usageError(stderr, fs, "--config FILE and --name NAME are required")
	}
	logger, err := newLogger(stderr, *logLevel, "logfmt")
	if err != nil {
		return usageError(stderr, fs, err.Error())
	}
	cfg, _, err := loadConfig(*configFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	spec, err := report.Find(report.Specs(cfg), *name)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch report:", err)
		return 1
	}
	if *out != "" {
		spec.OutputDir = *out
	}
	when := time.Now()
	if *at != "" {
		if when, err = report.ParseAt(*at, spec.Location); err != nil {
			return usageError(stderr, fs, "--at "+err.Error())
		}
	}
	if *sourceURL != "" {
		cfg.Source.URL = *sourceURL
	}
	set := metrics.NewSet()
	client, err := newStoreClient(cfg, set, logger)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch report:", err)
		return 1
	}
	opts := report.Options{Querier: client, Prefix: cfg.NATS.SubjectPrefix, Forecasts: report.ForecastQueries(cfg), Logger: logger, Metrics: set}
	if !*noEvents {
		u := *natsURL
		if u == "" {
			u = cfg.NATS.URL
		}
		auth, _ := natsAuth(cfg.NATS, cfg.File)
		if u == "" {
			// The daemon's embedded server, while the daemon runs.
			if u, err = embeddedURL(cfg.NATS.Embedded.Listen); err != nil {
				fmt.Fprintf(stderr, "inferwatch report: %s: %v\n", cfg.File, err)
				return 1
			}
		}
		tlsConfig, err := natsTLS(cfg)
		if err != nil {
			fmt.Fprintln(stderr, "inferwatch report:", err)
			return 1
		}
		if u != "" {
			if rd, err := jsread.Open(jsread.Options{URL: u, Stream: cfg.NATS.Stream, Timeout: 5 * time.Second, Auth: auth, TLS: tlsConfig}); err != nil {
				logger.Warn("the daemon's events cannot be read; the report is made without them", "err", err)
				opts.Events = report.Unreadable(err)
			} else {
				defer rd.Close()
				opts.Events = rd
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				js, err := natsjs.Connect(cctx, natsjs.Options{URL: u, Prefix: cfg.NATS.SubjectPrefix, Stream: cfg.NATS.Stream,
					DuplicateWindow: cfg.NATS.DuplicateWindow, Auth: auth, TLS: tlsConfig, Logger: logger, Metrics: set})
				cancel()
				if err != nil {
					logger.Warn("the report cannot be announced on NATS", "err", err)
				} else {
					defer js.Close()
					opts.Publisher = js
				}
			}
		}
	}
	r, err := report.New(opts)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch report:", err)
		return 1
	}
	res, err := r.Make(ctx, spec, when)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch report:", err)
		return 1
	}
	formats := make([]string, 0, len(res.Files))
	for f := range res.Files {
		formats = append(formats, f)
	}
	sort.Strings(formats)
	for _, f := range formats {
		fmt.Fprintln(stdout, res.Files[f])
	}
	for _, c := range res.Document.Changes {
		logger.Info("changed", "report", spec.Name, "kind", c.Kind, "text", c.Text)
	}
	return 0
}

// newStoreClient is the store client of the configuration's source.
func newStoreClient(cfg *rulefmt.Config, set *metrics.Set, logger *slog.Logger) (*ingest.Client, error) {
	hc, err := config.NewClientFromConfig(cfg.Source.HTTPClientConfig, "inferwatch")
	if err != nil {
		return nil, fmt.Errorf("%s: source: %w", cfg.File, err)
	}
	return ingest.NewClient(ingest.ClientOptions{URL: cfg.Source.URL, HTTPClient: hc, Timeout: cfg.Source.Timeout,
		UsePOST: cfg.Source.UsePOST, MaxResponseBytes: cfg.Source.MaxResponseBytes, MaxResponseSeries: cfg.Source.MaxResponseSeries,
		MaxResponsePoints: cfg.Source.MaxResponsePoints, Metrics: set, Logger: logger})
}

// reportClaims are the claims of the scheduled reports of one replica of
// a set, in the state bucket (report.Claims): the first replica to claim
// a report of a period end makes it; the others follow its claim and take
// it over when its claimant leaves the set (its heartbeat deleted, or
// lapsed for the lease TTL) without having made it.
type reportClaims struct{ c *natsjs.Claims }

// newReportClaims returns the report claims of member in kv, reading
// them every heartbeat and taking one over after a lease TTL at least.
func newReportClaims(kv *natsjs.KV, member *cluster.Member, heartbeat, ttl time.Duration) (reportClaims, error) {
	me := member.Info()
	c, err := kv.Claims(natsjs.ClaimsOptions{Me: natsjs.Claimant{Member: me.Name, Started: me.Started},
		Live: func(c natsjs.Claimant) bool { return claimantLive(member.Live, c) }, Poll: heartbeat, Grace: ttl})
	return reportClaims{c}, err
}

// claimantLive reports whether the process that made a claim is live in
// the set: a live member of its name, started when the claim says (a
// member of that name started since is another process).
func claimantLive(live func(name string) (cluster.Info, bool), c natsjs.Claimant) bool {
	info, ok := live(c.Member)
	return ok && (c.Started.IsZero() || info.Started.Equal(c.Started))
}

// reportClaimID names the claim of a report of a period end.
func reportClaimID(name string, end time.Time) string {
	return "report\x00" + name + "\x00" + end.UTC().Format(time.RFC3339)
}

func (r reportClaims) Claim(ctx context.Context, name string, end time.Time) (func(context.Context) error, string, error) {
	h, by, err := r.c.Claim(ctx, reportClaimID(name, end))
	if h == nil {
		return nil, by.Member, err
	}
	return h.Done, "", nil
}

func (r reportClaims) Follow(ctx context.Context, name string, end time.Time) (func(context.Context) error, string, error) {
	h, by, err := r.c.Follow(ctx, reportClaimID(name, end))
	if h == nil {
		return nil, by.Member, err
	}
	return h.Done, by.Member, nil
}

// natsTLS is the TLS configuration of nats.tls (nil: none).
func natsTLS(cfg *rulefmt.Config) (*tls.Config, error) {
	if cfg.NATS.TLS == nil {
		return nil, nil
	}
	c, err := config.NewTLSConfig(cfg.NATS.TLS)
	if err != nil {
		return nil, fmt.Errorf("%s: nats.tls: %w", cfg.File, err)
	}
	return c, nil
}

// startReports runs the scheduler of the configuration's reports until
// ctx is cancelled, reading events from the daemon's stream at natsURL
// (with nats' credentials and TLS, as the daemon connects) and announcing
// each report through pub. The returned function waits for the
// scheduler to stop (after ctx is cancelled) and closes its connection.
// claims, when not nil, grant each report of a period end to one replica
// of the set (report.SchedulerOptions.Claims).
func startReports(ctx context.Context, cfg *rulefmt.Config, natsURL string, q report.Querier, pub report.EventPublisher,
	claims report.Claims, logger *slog.Logger, set *metrics.Set) (func(), error) {
	specs := report.Specs(cfg)
	if len(specs) == 0 {
		return func() {}, nil
	}
	tlsConfig, err := natsTLS(cfg)
	if err != nil {
		return nil, err
	}
	auth, _ := natsAuth(cfg.NATS, cfg.File)
	rd, err := jsread.Open(jsread.Options{URL: natsURL, Stream: cfg.NATS.Stream, Auth: auth, TLS: tlsConfig})
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	r, err := report.New(report.Options{Querier: q, Events: rd, Publisher: pub, Prefix: cfg.NATS.SubjectPrefix,
		Forecasts: report.ForecastQueries(cfg), Logger: logger, Metrics: set})
	if err != nil {
		rd.Close()
		return nil, err
	}
	sched, err := report.NewScheduler(report.SchedulerOptions{Reporter: r, Specs: specs, Claims: claims, Logger: logger})
	if err != nil {
		rd.Close()
		return nil, err
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	logger.Info("reports scheduled", "reports", strings.Join(names, ","))
	done := make(chan struct{})
	go func() {
		defer close(done)
		sched.Run(ctx)
	}()
	return func() {
		<-done
		rd.Close()
	}, nil
}
