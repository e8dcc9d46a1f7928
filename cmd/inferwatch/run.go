package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/VictoriaMetrics/metricsql"
	"github.com/prometheus/common/config"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
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
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f runFlags
	fs := flag.NewFlagSet("inferwatch run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.configFile, "config", "", "configuration file")
	fs.BoolVar(&f.once, "once", false, "evaluate every group once, publish, and exit (non-zero if any evaluation failed)")
	fs.Var(&f.backfill, "backfill", "on the first evaluation of each rule, also report the anomalies of this much history (e.g. 7d)")
	fs.StringVar(&f.listenAddr, "web.listen-address", "127.0.0.1:9464", "address of the HTTP listener for /metrics and /healthz (empty: none)")
	fs.StringVar(&f.sourceURL, "source.url", "", "override source.url of the configuration")
	fs.StringVar(&f.natsURL, "nats.url", "", "override nats.url of the configuration")
	fs.StringVar(&f.logLevel, "log.level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log.format", "logfmt", "log format: logfmt or json")
	fs.DurationVar(&f.connectWait, "nats.connect-timeout", 2*time.Minute, "how long to keep retrying to reach NATS at start")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if f.configFile == "" {
		fmt.Fprintln(stderr, "inferwatch run: --config FILE is required")
		return 2
	}
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch run:", err)
		return 2
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

// run is the daemon: it wires the configuration, the store client, NATS and
// the engine together and runs them until ctx is cancelled.
func run(ctx context.Context, f runFlags, logger *slog.Logger) error {
	cfg, err := loadConfig(f.configFile)
	if err != nil {
		return err
	}
	if f.sourceURL != "" {
		cfg.Source.URL = f.sourceURL
	}
	if f.natsURL != "" {
		cfg.NATS.URL = f.natsURL
	}
	set := metrics.NewSet()

	if f.listenAddr != "" {
		stopWeb, err := serveWeb(f.listenAddr, set, logger)
		if err != nil {
			return err
		}
		defer stopWeb()
	}

	natsURL := cfg.NATS.URL
	if natsURL == "" {
		srv, err := alerting.StartEmbeddedNATS(alerting.EmbeddedOptions{
			Listen:   cfg.NATS.Embedded.Listen,
			StoreDir: cfg.NATS.Embedded.StoreDir,
			Logger:   logger,
		})
		if err != nil {
			return fmt.Errorf("starting the embedded NATS server on %s: %w", cfg.NATS.Embedded.Listen, err)
		}
		defer srv.Shutdown()
		natsURL = srv.ClientURL()
		logger.Info("embedded NATS server with JetStream started", "url", natsURL)
	}
	connectCtx, cancel := context.WithTimeout(ctx, f.connectWait)
	js, err := alerting.ConnectJetStream(connectCtx, alerting.JetStreamOptions{
		URL:             natsURL,
		Prefix:          cfg.NATS.SubjectPrefix,
		Stream:          cfg.NATS.Stream,
		DuplicateWindow: cfg.NATS.DuplicateWindow,
		Logger:          logger,
		Metrics:         set,
	})
	cancel()
	if err != nil {
		return fmt.Errorf("connecting to NATS at %s: %w", natsURL, err)
	}
	defer func() {
		if err := js.Close(); err != nil {
			logger.Warn("draining the NATS connection", "err", err)
		}
	}()

	cfg.Source.HTTPClientConfig.SetDirectory(filepath.Dir(cfg.File))
	httpClient, err := config.NewClientFromConfig(cfg.Source.HTTPClientConfig, "inferwatch")
	if err != nil {
		return fmt.Errorf("%s: source: %w", cfg.File, err)
	}
	client, err := ingest.NewClient(ingest.ClientOptions{
		URL:        cfg.Source.URL,
		HTTPClient: httpClient,
		Timeout:    cfg.Source.Timeout,
		UsePOST:    cfg.Source.UsePOST,
		Metrics:    set,
		Logger:     logger,
	})
	if err != nil {
		return err
	}
	engine, err := alerting.NewEngine(alerting.EngineOptions{
		Groups:          cfg.Groups,
		Querier:         client,
		Output:          js,
		Events:          js,
		EventPrefix:     cfg.NATS.SubjectPrefix,
		EvaluationDelay: cfg.Source.EvaluationDelay,
		Backfill:        f.backfill.d,
		Logger:          logger,
		Metrics:         set,
	})
	if err != nil {
		return err
	}
	logger.Info("inferwatch started", "config", cfg.File, "source", redact(cfg.Source.URL),
		"groups", len(cfg.Groups), "once", f.once)
	if f.once {
		if err := engine.RunOnce(ctx); err != nil {
			return fmt.Errorf("evaluating once: %w", err)
		}
		logger.Info("evaluated every group once")
		return nil
	}
	engine.Run(ctx)
	logger.Info("stopping: the evaluations in flight have finished")
	return nil
}

// serveWeb serves /metrics and /healthz and returns a function that stops
// the listener.
func serveWeb(addr string, set *metrics.Set, logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--web.listen-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		set.WritePrometheus(w)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP listener failed", "addr", addr, "err", err)
		}
	}()
	logger.Info("serving /metrics and /healthz", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

// redact hides the password of a URL's user information.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}
