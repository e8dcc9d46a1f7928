package alertmanager

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// alertsPath is appended to each Alertmanager's base URL.
const alertsPath = "/api/v2/alerts"

// ValidateURL checks the base URL of one Alertmanager, e.g.
// http://127.0.0.1:9093 or https://am.example.com/alertmanager: http or
// https, a host, no credentials (they belong in the HTTP client settings,
// basic_auth or authorization, so that they are never logged), no query
// string or fragment, and not already ending in the API path.
func ValidateURL(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return errors.New("alertmanager URL is empty; want a base URL such as http://127.0.0.1:9093")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the input, which may hold a password.
		return fmt.Errorf("alertmanager URL is not a URL (%s); want a base URL such as http://127.0.0.1:9093", parseReason(err))
	}
	shown := redactURL(u)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("alertmanager URL %s: scheme %q is not http or https", shown, u.Scheme)
	case u.Opaque != "" || u.Host == "":
		return fmt.Errorf("alertmanager URL %s has no host; want e.g. http://127.0.0.1:9093", shown)
	case u.User != nil:
		return fmt.Errorf("alertmanager URL %s holds credentials; remove them from the URL and set basic_auth or authorization in the HTTP client settings instead, so they are not logged", shown)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("alertmanager URL %s has a query string; remove it: alerts are posted to <url>%s, which takes no parameters", shown, alertsPath)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("alertmanager URL %s has a fragment (#...); remove it", shown)
	}
	p := strings.TrimRight(u.Path, "/")
	for _, api := range []string{"/api/v2/alerts", "/api/v1/alerts", "/api/v2", "/api/v1"} {
		if strings.HasSuffix(p, api) {
			return fmt.Errorf("alertmanager URL %s ends with the API path %s; give the base URL (%s) and %s is appended",
				shown, api, redactURL(&url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(p, api)}), alertsPath)
		}
	}
	return nil
}

// ValidateURLs checks every URL with ValidateURL and that none is given
// twice (each alert would be delivered twice to it). It reports all the
// problems at once, each with the URL's position in the list, counted from 1.
func ValidateURLs(urls []string) error {
	if len(urls) == 0 {
		return errors.New("no alertmanager URL; give at least one, e.g. http://127.0.0.1:9093")
	}
	var errs []error
	seen := make(map[string]int, len(urls))
	for i, raw := range urls {
		if err := ValidateURL(raw); err != nil {
			errs = append(errs, fmt.Errorf("alertmanager %d: %w", i+1, err))
			continue
		}
		key := endpoint(raw)
		if j, ok := seen[key]; ok {
			errs = append(errs, fmt.Errorf("alertmanager %d: URL %s is the same as alertmanager %d; list each Alertmanager once", i+1, redactString(raw), j+1))
			continue
		}
		seen[key] = i
	}
	return errors.Join(errs...)
}

// endpoint is the URL alerts are posted to; raw has passed ValidateURL.
func endpoint(raw string) string {
	u, _ := url.Parse(raw)
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimRight(u.Path, "/") + alertsPath
	u.RawPath = ""
	return u.String()
}

// redactURL shows u with any password masked, without query or fragment.
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
