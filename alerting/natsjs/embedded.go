package natsjs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configure an in-process NATS server with JetStream.
type EmbeddedOptions struct {
	// Listen is host:port for clients, default DefaultEmbeddedListen. An
	// empty host means 127.0.0.1; port 0 picks a free port.
	Listen string
	// User and Password, or Token, are what clients must present. A server
	// that listens beyond loopback requires one of them.
	User, Password, Token string
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

// DefaultEmbeddedListen is where the embedded server listens by default:
// not NATS' standard 4222, which a NATS server already on the host holds.
const DefaultEmbeddedListen = "127.0.0.1:14222"

// IsLoopback reports whether host (a name or an address) is only reachable
// from this machine.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

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
	if !IsLoopback(host) && o.Token == "" && (o.User == "" || o.Password == "") {
		return nil, fmt.Errorf("embedded NATS on %s listens beyond loopback without authentication: anyone who reaches it could publish forged findings; set nats.embedded.user and password (or token), or listen on 127.0.0.1", o.Listen)
	}
	// Bind the port ourselves first, to say at once why it cannot be
	// had; the server binds it again right after.
	if port != 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, portStr))
		if err != nil {
			hint := "another process holds it (a NATS server already running?)"
			if !errors.Is(err, syscall.EADDRINUSE) {
				hint = "the address is not one of this machine's, or not allowed"
			}
			return nil, fmt.Errorf("embedded NATS cannot listen on %s: %v: %s; set nats.embedded.listen (or --nats.embedded.listen) to another address, or port 0 for a free one", o.Listen, err, hint)
		}
		ln.Close()
	} else {
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
	} else if err := writable(storeDir); err != nil {
		return nil, fmt.Errorf("embedded NATS: the JetStream store %s is not writable: %w; set nats.embedded.store_dir to a directory this user can write", storeDir, err)
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
		HTTPPort:      0,
		Username:      o.User,
		Password:      o.Password,
		Authorization: o.Token,
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
		return nil, fmt.Errorf("embedded NATS on %s did not accept clients within %s (its own log lines above, component=nats-server, say why)", o.Listen, o.ReadyTimeout)
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

// writable checks that dir exists (making it) and a file can be created
// in it.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".inferwatch-write-check-")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
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

// Noticef goes to debug: the server's start-up banner and notices are
// for NATS operators; the daemon says what matters in its own lines.
func (s slogNATSLogger) Noticef(format string, v ...any) { s.log(slog.LevelDebug, format, v) }
func (s slogNATSLogger) Warnf(format string, v ...any)   { s.log(slog.LevelWarn, format, v) }
func (s slogNATSLogger) Fatalf(format string, v ...any)  { s.log(slog.LevelError, format, v) }
func (s slogNATSLogger) Errorf(format string, v ...any)  { s.log(slog.LevelError, format, v) }
func (s slogNATSLogger) Debugf(format string, v ...any)  { s.log(slog.LevelDebug, format, v) }
func (s slogNATSLogger) Tracef(format string, v ...any)  { s.log(slog.LevelDebug-4, format, v) }

var _ server.Logger = slogNATSLogger{}
