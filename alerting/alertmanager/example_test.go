package alertmanager_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/common/config"

	"github.com/inferwatch/inferwatch/alerting/alertmanager"
)

// A daemon forwards the alerts of each evaluation and, when it stops, gives
// the queues a bounded time to empty.
func ExampleNotifier() {
	hc := config.DefaultHTTPClientConfig
	hc.BasicAuth = &config.BasicAuth{Username: "inferwatch", PasswordFile: "/etc/inferwatch/am-password"}
	n, err := alertmanager.New(alertmanager.Options{
		URLs:             []string{"http://am-0:9093", "http://am-1:9093"},
		HTTPClientConfig: &hc,
		Logger:           slog.Default(),
		Metrics:          metrics.NewSet(),
	})
	if err != nil {
		slog.Error("alertmanager output", "err", err)
		return
	}

	// On every evaluation: the firing alerts again, and those that stopped
	// firing with their end.
	now := time.Now()
	n.Send(
		alertmanager.Alert{
			Labels:       map[string]string{"alertname": "TTFTRegression", "model": "llama-3-70b"},
			Annotations:  map[string]string{"summary": "p99 time to first token 4.2σ above baseline"},
			StartsAt:     now.Add(-5 * time.Minute),
			GeneratorURL: "http://inferwatch:9500/rules",
		},
		alertmanager.Alert{
			Labels:   map[string]string{"alertname": "KVCacheSaturation", "model": "llama-3-70b"},
			StartsAt: now.Add(-time.Hour),
			EndsAt:   now,
		},
	)

	// At shutdown.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if left, err := n.Close(ctx); err != nil {
		slog.Warn("alerts left undelivered", "alerts", left, "err", err)
	}
}
