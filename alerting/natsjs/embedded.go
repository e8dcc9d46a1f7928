package natsjs

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configure an in-process NATS server with JetStream.
type EmbeddedOptions struct {
	// Listen is host:port for clients, default 127.0.0.1:4222. An empty
	// host means 127.0.0.1; port 0 picks a free port.
	Listen string
	// StoreDir holds JetStream data. "" means a temporary directory that is
	// removed at Shutdown.
	StoreDir string
	// Logger receives the server's log lines; nil discards them.
	Logger *slog.Logger
	// ReadyTimeout bounds the wait for the server to accept clients,
	// default 10s.
	ReadyTimeout time.Duration
}

// Embedded is a NATS server with JetStream running in this process, for
// the demo, single-binary installs and tests.
type Embedded struct {
	srv      *server.Server
	storeDir string
	tempDir  string
}

// DefaultEmbeddedListen is where the embedded server listens by default.
const DefaultEmbeddedListen = "127.0.0.1:4222"

// StartEmbedded starts a NATS server with JetStream enabled and waits,
// bounded by o.ReadyTimeout, until it accepts clients. It never installs
// signal handlers: the daemon owns the signals.
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	if o.Listen == "" {
		o.Listen = DefaultEmbeddedListen
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 10 * time.Second
	}
	host, portStr, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS listen address %q: want host:port: %w", o.Listen, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("embedded NATS listen address %q: port %q is not a number from 0 to 65535", o.Listen, portStr)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	e := &Embedded{}
	storeDir := o.StoreDir
	if storeDir == "" {
		dir, err := os.MkdirTemp("", "inferwatch-nats-")
		if err != nil {
			return nil, fmt.Errorf("embedded NATS: creating a temporary JetStream store: %w", err)
		}
		e.tempDir, storeDir = dir, dir
	}
	sopts := &server.Options{
		ServerName: "inferwatch-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   storeDir,
		NoSigs:     true,
		NoLog:      o.Logger == nil,
		// No HTTP monitoring, cluster, gateway or leaf ports.
		HTTPPort: 0,
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		e.removeTemp()
		return nil, fmt.Errorf("embedded NATS on %s with store %s: %w", o.Listen, storeDir, err)
	}
	if o.Logger != nil {
		srv.SetLogger(slogNATSLogger{o.Logger.With("component", "nats-server")}, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(o.ReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		e.removeTemp()
		return nil, fmt.Errorf("embedded NATS on %s did not accept clients within %s (port taken? store %s not writable?)", o.Listen, o.ReadyTimeout, storeDir)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		e.removeTemp()
		return nil, fmt.Errorf("embedded NATS on %s: JetStream did not start (is the store %s writable and is there disk space?)", o.Listen, storeDir)
	}
	e.srv, e.storeDir = srv, storeDir
	return e, nil
}

// ClientURL is the nats:// URL clients connect to.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// Addr is the TCP address the server listens on for clients.
func (e *Embedded) Addr() string { return e.srv.Addr().String() }

// StoreDir is the directory holding the JetStream data.
func (e *Embedded) StoreDir() string { return e.storeDir }

// Shutdown stops the server, waits until it has stopped and removes the
// temporary store, if one was created. It is safe to call more than once.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.removeTemp()
}

func (e *Embedded) removeTemp() {
	if e.tempDir != "" {
		_ = os.RemoveAll(e.tempDir)
	}
}

// slogNATSLogger adapts slog to the nats-server logger.
type slogNATSLogger struct{ l *slog.Logger }

func (s slogNATSLogger) log(level slog.Level, format string, v []any) {
	if s.l.Enabled(context.Background(), level) {
		s.l.Log(context.Background(), level, fmt.Sprintf(format, v...))
	}
}

func (s slogNATSLogger) Noticef(format string, v ...any) { s.log(slog.LevelInfo, format, v) }
func (s slogNATSLogger) Warnf(format string, v ...any)   { s.log(slog.LevelWarn, format, v) }
func (s slogNATSLogger) Fatalf(format string, v ...any)  { s.log(slog.LevelError, format, v) }
func (s slogNATSLogger) Errorf(format string, v ...any)  { s.log(slog.LevelError, format, v) }
func (s slogNATSLogger) Debugf(format string, v ...any)  { s.log(slog.LevelDebug, format, v) }
func (s slogNATSLogger) Tracef(format string, v ...any)  { s.log(slog.LevelDebug-4, format, v) }

var _ server.Logger = slogNATSLogger{}
