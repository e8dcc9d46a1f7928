// Package httpclient makes the HTTP client of an output that posts to a
// peer (Alertmanager, the store's write-back) from its settings. It stands
// apart from httpretry so that the store client, which imports httpretry,
// does not pull in Prometheus' HTTP client configuration.
package httpclient

import (
	"fmt"
	"net/http"

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
