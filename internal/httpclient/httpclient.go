// Package httpclient makes the HTTP client of an output that posts to a
// peer (Alertmanager, the store's write-back) from its settings. It stands
// apart from httpretry so that the store client, which imports httpretry,
// does not pull in Prometheus' HTTP client configuration.
package httpclient

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/common/config"
)

// New returns hc when it is set, else a client made from cfg (nil:
// Prometheus' defaults) named name in its User-Agent; what names the
// output in errors ("alertmanager", "writeback").
func New(hc *http.Client, cfg *config.HTTPClientConfig, name, what string) (*http.Client, error) {
	if hc != nil {
		return hc, nil
	}
	c := config.DefaultHTTPClientConfig
	if cfg != nil {
		c = *cfg
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s HTTP client settings: %w", what, err)
	}
	hc, err := config.NewClientFromConfig(c, name)
	if err != nil {
		return nil, fmt.Errorf("%s HTTP client settings: %w", what, err)
	}
	return hc, nil
}

// CheckURL checks the URL of a peer an output posts to and returns it
// parsed: it parses, is http or https, names a host, and holds neither
// credentials (they belong in the HTTP client settings, basic_auth or
// authorization, so that they are never logged) nor a fragment. what names
// it in errors ("writeback URL"), example is one that passes, and an error
// shows the URL as shown writes it (with its secrets hidden).
func CheckURL(raw, what, example string, shown func(*url.URL) string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the input, which may hold a password.
		return nil, fmt.Errorf("%s is not a URL (%s); want e.g. %s", what, ParseReason(err), example)
	}
	s := shown(u)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%s %s: scheme %q is not http or https", what, s, u.Scheme)
	case u.Opaque != "" || u.Host == "":
		return nil, fmt.Errorf("%s %s has no host; want e.g. %s", what, s, example)
	case u.User != nil:
		return nil, fmt.Errorf("%s %s holds credentials; remove them from the URL and set basic_auth or authorization in the HTTP client settings instead, so they are not logged", what, s)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%s %s has a fragment (#...); remove it", what, s)
	}
	return u, nil
}

// ParseReason is the cause of a url.Parse error without the input it
// quotes.
func ParseReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "unparsable"
}
