// Package web is the daemon's HTTP listener: /metrics (a metrics set and
// the process' own metrics), /healthz, /readyz from named checks, and the
// handlers the daemon adds (KEDA's metrics API, profiles).
package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/internal/metricname"
	"github.com/inferwatch/inferwatch/internal/process"
)

// Paths are what the listener always serves.
func Paths() []string { return []string{"/metrics", "/healthz", "/readyz"} }

// Options configure Serve.
type Options struct {
	// Addr is the host:port to listen on.
	Addr string
	// Metrics is written on /metrics, before the process' own metrics.
	Metrics *metrics.Set
	// Handlers are served besides Paths, by path pattern.
	Handlers map[string]http.Handler
	// Ready answers /readyz.
	Ready http.Handler
	// Logger receives a line when the listener starts or fails; nil
	// discards them.
	Logger *slog.Logger
}

// Server is a listener started by Serve.
type Server struct {
	srv  *http.Server
	addr string
}

// Addr is the address the server listens on (the port chosen, when
// Options.Addr asked for port 0).
func (s *Server) Addr() string { return s.addr }

// Stop stops the listener, waiting at most 5 seconds for the requests in
// flight.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// Serve listens on o.Addr and serves Paths and o.Handlers until Stop.
// The error is the listener's, as net.Listen gives it.
func Serve(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		metricname.WritePrometheus(w, o.Metrics)
		process.WriteMetrics(w, started)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	ready := o.Ready
	if ready == nil {
		ready = NewReadiness()
	}
	mux.Handle("/readyz", ready)
	paths := Paths()
	for pattern, h := range o.Handlers {
		mux.Handle(pattern, h)
		paths = append(paths, pattern)
	}
	slices.Sort(paths)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("HTTP listener failed", "addr", o.Addr, "err", err)
		}
	}()
	o.Logger.Info("serving HTTP", "addr", ln.Addr().String(), "paths", strings.Join(paths, " "))
	return &Server{srv: srv, addr: ln.Addr().String()}, nil
}
