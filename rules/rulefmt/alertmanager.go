package rulefmt

import (
	"net/url"
	"time"

	"github.com/prometheus/common/config"
	"gopkg.in/yaml.v3"

	"github.com/inferwatch/inferwatch/internal/redact"
)

// Defaults of the alertmanager section: package alerting/alertmanager's
// own (TestFileDefaultsAreTheOutputs in cmd/inferwatch keeps them equal).
const (
	DefaultAlertmanagerTimeout     = 10 * time.Second
	DefaultAlertmanagerResendDelay = time.Minute
)

// Alertmanager says where alerts are forwarded: one or more Alertmanagers'
// API v2, with Prometheus' HTTP client configuration (basic auth,
// authorization, TLS) for all of them.
type Alertmanager struct {
	// URLs are the Alertmanagers' base URLs, e.g. http://127.0.0.1:9093;
	// /api/v2/alerts is appended.
	URLs []string
	// Timeout bounds one request (default 10s).
	Timeout time.Duration
	// ResendDelay is how often firing alerts are sent again (default 1m).
	ResendDelay time.Duration
	// ExternalURL, when set, is the base of each alert's generatorURL.
	ExternalURL string
	// SendAlerts and SendIncidents say what is forwarded (the send key:
	// alerts, incidents, or both, the default).
	SendAlerts, SendIncidents bool
	HTTPClientConfig          config.HTTPClientConfig
}

var alertmanagerKeys = []string{"urls", "timeout", "resend_delay", "external_url", "send"}

func (p *parser) alertmanager(kv pair) *Alertmanager {
	am := &Alertmanager{Timeout: DefaultAlertmanagerTimeout, ResendDelay: DefaultAlertmanagerResendDelay,
		SendAlerts: true, SendIncidents: true, HTTPClientConfig: config.DefaultHTTPClientConfig}
	n := resolve(kv.v)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "alertmanager must be a mapping with urls, e.g. alertmanager: {urls: [http://127.0.0.1:9093]}, got %s", kind(n))
		return nil
	}
	f := p.fieldsWithHTTP(n, "alertmanager", alertmanagerKeys, &am.HTTPClientConfig)
	e, ok := f["urls"]
	switch {
	case !ok:
		p.errorf(n, "alertmanager needs urls: a list of Alertmanager base URLs, e.g. [http://127.0.0.1:9093]")
	case resolve(e.v).Kind != yaml.SequenceNode || len(resolve(e.v).Content) == 0:
		p.errorf(resolve(e.v), "alertmanager.urls must be a list of one or more URLs, got %s", kind(resolve(e.v)))
	default:
		for _, item := range resolve(e.v).Content {
			u, ok := p.str(item, "alertmanager.urls")
			if !ok {
				continue
			}
			if err := check(p.outputs.AlertmanagerURL, u); err != nil {
				p.errorf(resolve(item), "alertmanager.urls: %v", err)
				continue
			}
			am.URLs = append(am.URLs, u)
		}
		if err := check(p.outputs.AlertmanagerURLs, am.URLs); err != nil && len(am.URLs) > 1 {
			p.errorf(resolve(e.v), "alertmanager.urls: %v", err)
		}
	}
	e, ok = f["timeout"]
	am.Timeout, _ = p.positive(e, ok, "alertmanager.timeout", DefaultAlertmanagerTimeout, false)
	e, ok = f["resend_delay"]
	am.ResendDelay, _ = p.positive(e, ok, "alertmanager.resend_delay", DefaultAlertmanagerResendDelay, false)
	if e, ok := f["external_url"]; ok {
		am.ExternalURL, _ = p.str(e.v, "alertmanager.external_url")
		if am.ExternalURL != "" {
			p.checkHTTPURL(resolve(e.v), "alertmanager.external_url", am.ExternalURL)
		}
	}
	if e, ok := f["send"]; ok {
		p.alertmanagerSend(resolve(e.v), am)
	}
	if err := am.HTTPClientConfig.Validate(); err != nil {
		p.errorf(n, "alertmanager: %v", err)
	}
	return am
}

// alertmanagerSend reads send: a list of alerts and incidents.
func (p *parser) alertmanagerSend(v *yaml.Node, am *Alertmanager) {
	const want = "alertmanager.send must be a list of alerts and incidents, e.g. [incidents]"
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		p.errorf(v, "%s, got %s", want, kind(v))
		return
	}
	am.SendAlerts, am.SendIncidents = false, false
	for _, item := range v.Content {
		s, _ := p.str(item, "alertmanager.send")
		switch s {
		case "alerts":
			am.SendAlerts = true
		case "incidents":
			am.SendIncidents = true
		default:
			p.errorf(resolve(item), "%s; %q is neither", want, s)
			am.SendAlerts, am.SendIncidents = true, true
			return
		}
	}
}

// checkHTTPURL reports at n when raw is not an absolute http(s) URL
// without credentials.
func (p *parser) checkHTTPURL(n *yaml.Node, name, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		p.errorf(n, "%s is not a URL: %s", name, redact.Text(err.Error(), raw))
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		p.errorf(n, "%s %q must be an absolute http:// or https:// URL", name, redact.URL(raw))
	case u.User != nil:
		p.errorf(n, "%s must not hold credentials", name)
	}
}
