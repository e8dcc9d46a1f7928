package writeback

import (
	"errors"
	"net/url"
	"strings"

	"github.com/inferwatch/inferwatch/internal/httpclient"
	"github.com/inferwatch/inferwatch/internal/redact"
)

// Default paths, appended to a URL that has none.
const (
	ImportPath      = "/api/v1/import"
	RemoteWritePath = "/api/v1/write"
)

// ValidateURL checks the write URL: http or https, a host, no credentials
// (they belong in the HTTP client settings, basic_auth or authorization, so
// that they are never logged) and no fragment. A query string is allowed
// (VictoriaMetrics' extra_label=...); in logs and errors the values of its
// parameters that look secret are hidden (package internal/redact).
func ValidateURL(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return errors.New("writeback URL is empty; want e.g. http://127.0.0.1:8428 (VictoriaMetrics) or http://127.0.0.1:9090/api/v1/write (Prometheus)")
	}
	_, err := httpclient.CheckURL(raw, "writeback URL", "http://127.0.0.1:8428", func(*url.URL) string { return redact.URL(raw) })
	return err
}

// endpoint is the URL requests go to: raw as given, or with the protocol's
// default path when it has no path; raw has passed ValidateURL.
func endpoint(raw string, p Protocol) string {
	u, _ := url.Parse(raw)
	if strings.Trim(u.Path, "/") == "" {
		u.Path, u.RawPath = defaultPath(p), ""
	}
	return u.String()
}

func defaultPath(p Protocol) string {
	if p == RemoteWrite {
		return RemoteWritePath
	}
	return ImportPath
}
