package alertmanager

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/inferwatch/inferwatch/internal/httpclient"
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
	u, err := httpclient.CheckURL(raw, "alertmanager URL", "http://127.0.0.1:9093", redactURL)
	if err != nil {
		return err
	}
	shown := redactURL(u)
	if u.RawQuery != "" || u.ForceQuery {
		return fmt.Errorf("alertmanager URL %s has a query string; remove it: alerts are posted to <url>%s, which takes no parameters", shown, alertsPath)
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
