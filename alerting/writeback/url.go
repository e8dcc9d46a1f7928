package writeback

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Default paths, appended to a URL that has none.
const (
	ImportPath      = "/api/v1/import"
	RemoteWritePath = "/api/v1/write"
)

// ValidateURL checks the write URL: http or https, a host, no credentials
// (they belong in the HTTP client settings, basic_auth or authorization, so
// that they are never logged) and no fragment. A query string is allowed
// (VictoriaMetrics' extra_label=..., a tenant) but never shown.
func ValidateURL(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return errors.New("writeback URL is empty; want e.g. http://127.0.0.1:8428 (VictoriaMetrics) or http://127.0.0.1:9090/api/v1/write (Prometheus)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the input, which may hold a password.
		return fmt.Errorf("writeback URL is not a URL (%s); want e.g. http://127.0.0.1:8428", parseReason(err))
	}
	shown := redactURL(u)
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

// redactURL shows u with any password masked and its query string and
// fragment left out.
func redactURL(u *url.URL) string {
	v := *u
	v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = "", false, "", ""
	if v.User != nil {
		if _, ok := v.User.Password(); !ok {
			v.User = url.User("xxxxx") // a lone user part may be a token
		}
	}
	return v.Redacted()
}

// redactString is redactURL for a string; one that does not parse is not
// shown at all.
func redactString(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return redactURL(u)
}

// parseReason is the cause of a url.Parse error without the input it quotes.
func parseReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "unparsable"
}
