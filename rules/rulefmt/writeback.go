package rulefmt

import (
	"time"

	"github.com/prometheus/common/config"
	"gopkg.in/yaml.v3"
)

// The values of writeback.protocol and writeback.forecast_time, as
// package alerting/writeback names them.
const (
	ProtocolVMImport    = "vm_import"
	ProtocolRemoteWrite = "remote_write"
	ForecastAtTarget    = "target"
	ForecastAtOrigin    = "origin"
)

// Defaults of the writeback section: package alerting/writeback's own
// (TestFileDefaultsAreTheOutputs in cmd/inferwatch keeps them equal).
const (
	DefaultWritebackTimeout           = 30 * time.Second
	DefaultWritebackBatchDeadline     = 5 * time.Second
	DefaultWritebackMaxBackoff        = 10 * time.Second
	DefaultWritebackFlushTimeout      = 10 * time.Second
	DefaultWritebackQueueCapacity     = 100_000
	DefaultWritebackMaxSamplesPerSend = 2000
)

// Writeback says where the rules' scores and forecasts are written back
// to, as vmanomaly writes its output (package alerting/writeback names the
// series).
type Writeback struct {
	// URL is the write endpoint; one without a path gets the protocol's
	// default path, /api/v1/import or /api/v1/write.
	URL string
	// Protocol is vm_import (the default) or remote_write.
	Protocol string
	// Rules select whose results are written: a rule's name, group/rule or
	// group/*, with wildcards; empty: every rule.
	Rules []string
	// Scores and Forecasts say what is written (default both).
	Scores    bool
	Forecasts bool
	// ForecastTime is where forecast samples lie; "": target for
	// vm_import, origin for remote_write.
	ForecastTime string
	// Horizons are the forecast leads written; empty: every lead.
	Horizons []time.Duration
	// Timeout bounds a request; BatchDeadline is how long a sample waits
	// for a request to fill; MaxBackoff caps the wait between retries;
	// FlushTimeout is how long a stop keeps writing what is queued.
	Timeout       time.Duration
	BatchDeadline time.Duration
	MaxBackoff    time.Duration
	FlushTimeout  time.Duration
	// QueueCapacity is how many samples may wait; MaxSamplesPerSend is the
	// most in one request.
	QueueCapacity     int
	MaxSamplesPerSend int
	// HTTPClientConfig holds basic auth, bearer token, TLS and headers.
	HTTPClientConfig config.HTTPClientConfig
}

var writebackKeys = []string{"url", "protocol", "rules", "scores", "forecasts", "forecast_time", "horizons",
	"timeout", "queue_capacity", "max_samples_per_send", "batch_deadline", "max_backoff", "flush_timeout"}

// writeback reads the writeback section; groups are the file's, which
// writeback.rules selects from.
func (p *parser) writeback(kv pair, groups []Group) *Writeback {
	n := resolve(kv.v)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "writeback must be a mapping with at least url, e.g. writeback: {url: http://127.0.0.1:8428}, got %s", kind(n))
		return nil
	}
	w := &Writeback{
		Protocol: ProtocolVMImport, Scores: true, Forecasts: true,
		Timeout: DefaultWritebackTimeout, BatchDeadline: DefaultWritebackBatchDeadline,
		MaxBackoff: DefaultWritebackMaxBackoff, FlushTimeout: DefaultWritebackFlushTimeout,
		QueueCapacity: DefaultWritebackQueueCapacity, MaxSamplesPerSend: DefaultWritebackMaxSamplesPerSend,
		HTTPClientConfig: config.DefaultHTTPClientConfig,
	}
	f := p.fieldsWithHTTP(n, "writeback", writebackKeys, &w.HTTPClientConfig)
	if e, ok := f["url"]; ok {
		w.URL, _ = p.str(e.v, "writeback.url")
		if err := check(p.outputs.WritebackURL, w.URL); err != nil {
			p.errorf(resolve(e.v), "writeback.url: %v", err)
		}
	} else {
		p.errorf(n, "writeback needs url, e.g. http://127.0.0.1:8428 (VictoriaMetrics), or http://127.0.0.1:9090/api/v1/write with protocol: remote_write")
	}
	if e, ok := f["protocol"]; ok {
		s, _ := p.str(e.v, "writeback.protocol")
		switch s {
		case ProtocolVMImport, ProtocolRemoteWrite:
			w.Protocol = s
		default:
			p.errorf(resolve(e.v), "writeback.protocol %q is not vm_import or remote_write", s)
		}
	}
	if e, ok := f["rules"]; ok && !isNull(resolve(e.v)) {
		if v := resolve(e.v); v.Kind != yaml.SequenceNode {
			p.errorf(v, "writeback.rules must be a list of rules (rule, group/rule or group/*), got %s", kind(v))
		} else {
			for _, item := range v.Content {
				s, ok := p.str(item, "writeback.rules")
				if !ok {
					continue
				}
				if err := check(p.outputs.WritebackRules, []string{s}); err != nil {
					p.errorf(resolve(item), "%v", err)
					continue
				}
				if selects := p.outputs.WritebackSelects; selects != nil && !selectsAny(selects, s, groups) {
					p.errorf(resolve(item), "writeback.rules: %q selects no rule of this file; write a rule's name, group/rule or group/*", s)
				}
				w.Rules = append(w.Rules, s)
			}
		}
	}
	if e, ok := f["scores"]; ok {
		w.Scores, _ = p.boolean(e.v, "writeback.scores")
	}
	if e, ok := f["forecasts"]; ok {
		w.Forecasts, _ = p.boolean(e.v, "writeback.forecasts")
	}
	if !w.Scores && !w.Forecasts {
		p.errorf(n, "writeback: scores and forecasts are both false, so nothing would be written; set one to true or remove the section")
	}
	if e, ok := f["forecast_time"]; ok {
		s, _ := p.str(e.v, "writeback.forecast_time")
		switch s {
		case ForecastAtTarget, ForecastAtOrigin:
			w.ForecastTime = s
		default:
			p.errorf(resolve(e.v), "writeback.forecast_time %q is not target or origin", s)
		}
	}
	if e, ok := f["horizons"]; ok {
		w.Horizons = p.durations(e.v, "writeback.horizons")
	}
	e, ok := f["timeout"]
	w.Timeout, _ = p.positive(e, ok, "writeback.timeout", DefaultWritebackTimeout, false)
	e, ok = f["batch_deadline"]
	w.BatchDeadline, _ = p.positive(e, ok, "writeback.batch_deadline", DefaultWritebackBatchDeadline, false)
	e, ok = f["max_backoff"]
	w.MaxBackoff, _ = p.positive(e, ok, "writeback.max_backoff", DefaultWritebackMaxBackoff, false)
	e, ok = f["flush_timeout"]
	w.FlushTimeout, _ = p.positive(e, ok, "writeback.flush_timeout", DefaultWritebackFlushTimeout, false)
	if e, ok := f["queue_capacity"]; ok {
		w.QueueCapacity = int(p.integer(e, "writeback.queue_capacity", DefaultWritebackQueueCapacity, 1, 1e9))
	}
	if e, ok := f["max_samples_per_send"]; ok {
		w.MaxSamplesPerSend = int(p.integer(e, "writeback.max_samples_per_send", DefaultWritebackMaxSamplesPerSend, 1, 1e7))
	}
	if err := w.HTTPClientConfig.Validate(); err != nil {
		p.errorf(n, "writeback: %v", err)
	}
	return w
}

// selectsAny reports whether the writeback.rules entry sel selects a rule
// of groups: one that selects none is most likely a typo, which would
// write nothing.
func selectsAny(selects func(sel, group, rule string) bool, sel string, groups []Group) bool {
	for _, g := range groups {
		for _, r := range g.Rules {
			if selects(sel, g.Name, r.Name) {
				return true
			}
		}
	}
	return false
}
