// Package redact hides secrets in URLs before they reach a log line, an
// error, the output of inferwatch check or /metrics: the password of the
// user information (the user name too when there is no password: it may
// be a token) and the values of query parameters whose names suggest a
// secret.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces what is hidden.
const Mask = "xxxxx"

// secretParam matches the names of query parameters that carry secrets.
var secretParam = regexp.MustCompile(`(?i)(pass|pwd|secret|token|key|auth|sig|credential|session|bearer|jwt|cookie|private)`)

// userInfo matches scheme://user[:password]@ in text that is not a
// parsable URL.
var userInfo = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^/@\s]+@`)

// URL returns raw with its secrets hidden. raw may be a comma-separated
// list of URLs (as nats.url is). Text that does not parse as a URL has its
// user information hidden all the same.
func URL(raw string) string {
	if strings.Contains(raw, ",") {
		parts := strings.Split(raw, ",")
		for i, p := range parts {
			parts[i] = URL(p)
		}
		return strings.Join(parts, ",")
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return userInfo.ReplaceAllString(raw, "${1}"+Mask+"@")
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else {
			u.User = url.User(Mask)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for name := range q {
			if secretParam.MatchString(name) {
				q[name] = []string{Mask}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// Text replaces each occurrence of the URL raw in s by its redacted form,
// and hides any user information left: for error messages that quote a
// URL (url.Parse's own do).
func Text(s, raw string) string {
	if raw != "" {
		s = strings.ReplaceAll(s, raw, URL(raw))
	}
	return userInfo.ReplaceAllString(s, "${1}"+Mask+"@")
}
