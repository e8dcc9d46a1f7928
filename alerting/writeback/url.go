package writeback

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

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
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the input, which may hold a password.
		return fmt.Errorf("writeback URL is not a URL (%s); want e.g. http://127.0.0.1:8428", parseReason(err))
	}
	shown := redact.URL(raw)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("writeback URL %s: scheme %q is not http or https", shown, u.Scheme)
	case u.Opaque != "" || u.Host == "":
		return fmt.Errorf("writeback URL %s has no host; want e.g. http://127.0.0.1:8428", shown)
	case u.User != nil:
		return fmt.Errorf("writeback URL %s holds credentials; remove them from the URL and set basic_auth or authorization in the HTTP client settings instead, so they are not logged", shown)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("writeback URL %s has a fragment (#...); remove it", shown)
	}
	return nil
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

// parseReason is the cause of a url.Parse error without the input it quotes.
func parseReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "unparsable"
}
