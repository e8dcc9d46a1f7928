package writeback_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/common/config"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/writeback"
)

// A daemon writes each evaluation's scores and forecasts back to the store
// it reads from and, when it stops, gives the queue a bounded time to
// empty.
func ExampleWriter() {
	hc := config.DefaultHTTPClientConfig
	hc.BasicAuth = &config.BasicAuth{Username: "inferwatch", PasswordFile: "/etc/inferwatch/vm-password"}
	w, err := writeback.New(writeback.Options{
		URL:              "http://victoria-metrics:8428", // /api/v1/import is appended
		Protocol:         writeback.VMImport,
		HTTPClientConfig: &hc,
		Rules:            []string{"latency/*", "capacity/request_rate"},
		Horizons:         []time.Duration{10 * time.Minute, time.Hour},
		Logger:           slog.Default(),
		Metrics:          metrics.NewSet(),
	})
	if err != nil {
		slog.Error("writeback", "err", err)
		return
	}

	// On every evaluation (as a rules.Sink): returns at once.
	var b alerting.Batch // what the rule manager produced
	w.Send(context.Background(), b)

	// At shutdown.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if left, err := w.Close(ctx); err != nil {
		slog.Warn("samples left unwritten", "samples", left, "err", err)
	}
}
