package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/common/config"

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

// reportClaim grants each report of a period end to the first replica of
// the set to claim it in the state bucket, naming member in the claim.
func reportClaim(kv *natsjs.KV, member string) func(context.Context, string, time.Time) (bool, error) {
	return func(ctx context.Context, name string, end time.Time) (bool, error) {
		v, _ := json.Marshal(struct {
			Report    string    `json:"report"`
			PeriodEnd time.Time `json:"period_end"`
			Member    string    `json:"member"`
		}{name, end.UTC(), member})
		return kv.Claim(ctx, "report\x00"+name+"\x00"+end.UTC().Format(time.RFC3339), v)
	}
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
// claim, when not nil, grants each report of a time to one replica of the
// set (report.SchedulerOptions.Claim).
func startReports(ctx context.Context, cfg *rulefmt.Config, natsURL string, q report.Querier, pub report.EventPublisher,
	claim func(context.Context, string, time.Time) (bool, error), logger *slog.Logger, set *metrics.Set) (func(), error) {
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
	sched, err := report.NewScheduler(report.SchedulerOptions{Reporter: r, Specs: specs, Claim: claim, Logger: logger})
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
