package rulefmt

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults of the export section: packages alerting/promexport's and
// alerting/keda's own (TestFileDefaultsAreTheOutputs in cmd/inferwatch
// keeps them equal).
const (
	DefaultMetricsMaxSeries = 10000
	DefaultMetricsExpiry    = 15 * time.Minute
	DefaultKEDAMaxTargets   = 10000
	DefaultKEDAForget       = time.Hour
	DefaultKEDAMaxStreams   = 256
)

// Export says what the daemon serves to other systems besides NATS: its
// results as Prometheus gauges, and its scale signals to KEDA.
type Export struct {
	Metrics MetricsExport
	KEDA    KEDAExport
}

// MetricsExport configures the gauges on /metrics (package promexport).
type MetricsExport struct {
	// Enabled (default true) exposes forecasts, scale signals and anomaly
	// scores on the /metrics of --web.listen-address.
	Enabled bool
	// MaxSeries caps the series of each family (default 10000).
	MaxSeries int
	// Expiry removes a series not updated for this long (default 15m).
	Expiry time.Duration
	// Leads are the forecast leads exposed (default: each forecast's
	// horizon).
	Leads []time.Duration
}

// KEDAExport configures what KEDA reads (package keda).
type KEDAExport struct {
	// MetricsAPI (default true) serves /keda/v1/ on --web.listen-address
	// for KEDA's metrics-api trigger.
	MetricsAPI bool
	// Listen is the host:port of the external scaler's gRPC server
	// (default "": not served).
	Listen string
	// MaxTargets, Grace, Forget and MaxStreams are keda.Options'.
	MaxTargets int
	Grace      time.Duration
	Forget     time.Duration
	MaxStreams int
}

func (p *parser) export(kv pair) Export {
	out := Export{
		Metrics: MetricsExport{Enabled: true, MaxSeries: DefaultMetricsMaxSeries, Expiry: DefaultMetricsExpiry},
		KEDA:    KEDAExport{MetricsAPI: true, MaxTargets: DefaultKEDAMaxTargets, Forget: DefaultKEDAForget, MaxStreams: DefaultKEDAMaxStreams},
	}
	if kv.v == nil || isNull(resolve(kv.v)) {
		return out
	}
	n := resolve(kv.v)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "export must be a mapping, got %s", kind(n))
		return out
	}
	f := p.fields(n, "export", []string{"metrics", "keda"}, nil)
	if e, ok := f["metrics"]; ok && !isNull(resolve(e.v)) {
		if m := resolve(e.v); m.Kind != yaml.MappingNode {
			p.errorf(m, "export.metrics must be a mapping, got %s", kind(m))
		} else {
			g := p.fields(m, "export.metrics", []string{"enabled", "max_series", "expiry", "leads"}, nil)
			if e, ok := g["enabled"]; ok {
				out.Metrics.Enabled, _ = p.boolean(e.v, "export.metrics.enabled")
			}
			if e, ok := g["max_series"]; ok {
				out.Metrics.MaxSeries = int(p.integer(e, "export.metrics.max_series", DefaultMetricsMaxSeries, 1, 1e7))
			}
			e, ok := g["expiry"]
			out.Metrics.Expiry, _ = p.positive(e, ok, "export.metrics.expiry", DefaultMetricsExpiry, false)
			if e, ok := g["leads"]; ok {
				out.Metrics.Leads = p.durations(e.v, "export.metrics.leads")
			}
		}
	}
	if e, ok := f["keda"]; ok && !isNull(resolve(e.v)) {
		if m := resolve(e.v); m.Kind != yaml.MappingNode {
			p.errorf(m, "export.keda must be a mapping, got %s", kind(m))
		} else {
			g := p.fields(m, "export.keda", []string{"metrics_api", "listen", "max_targets", "grace", "forget", "max_streams"}, nil)
			if e, ok := g["metrics_api"]; ok {
				out.KEDA.MetricsAPI, _ = p.boolean(e.v, "export.keda.metrics_api")
			}
			if e, ok := g["listen"]; ok {
				if s, ok := p.str(e.v, "export.keda.listen"); ok && s != "" {
					if msg := checkHostPort(s); msg != "" {
						p.errorf(resolve(e.v), "export.keda.listen %q %s", s, msg)
					} else {
						out.KEDA.Listen = s
					}
				}
			}
			if e, ok := g["max_targets"]; ok {
				out.KEDA.MaxTargets = int(p.integer(e, "export.keda.max_targets", DefaultKEDAMaxTargets, 1, 1e7))
			}
			if e, ok := g["max_streams"]; ok {
				out.KEDA.MaxStreams = int(p.integer(e, "export.keda.max_streams", DefaultKEDAMaxStreams, 1, 1e5))
			}
			e, ok := g["grace"]
			out.KEDA.Grace, _ = p.positive(e, ok, "export.keda.grace", 0, true)
			e, ok = g["forget"]
			out.KEDA.Forget, _ = p.positive(e, ok, "export.keda.forget", DefaultKEDAForget, false)
		}
	}
	return out
}

// durations reads a list of positive durations.
func (p *parser) durations(v *yaml.Node, name string) []time.Duration {
	v = resolve(v)
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "%s must be a list of durations, e.g. [5m, 10m], got %s", name, kind(v))
		return nil
	}
	var out []time.Duration
	for _, item := range v.Content {
		if d, ok := p.positive(pair{v: item}, true, name, 0, false); ok {
			out = append(out, d)
		}
	}
	return out
}
