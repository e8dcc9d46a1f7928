package alertmanager

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestValidateURL(t *testing.T) {
	good := []string{
		"http://127.0.0.1:9093",
		"http://127.0.0.1:9093/",
		"https://am.example.com/alertmanager",
		"http://[::1]:9093",
	}
	for _, u := range good {
		if err := ValidateURL(u); err != nil {
			t.Errorf("ValidateURL(%q) = %v, want nil", u, err)
		}
	}
	f := func(u string, fragments ...string) {
		t.Helper()
		err := ValidateURL(u)
		if err == nil {
			t.Fatalf("ValidateURL(%q) = nil, want an error", u)
		}
		for _, frag := range fragments {
			if !strings.Contains(err.Error(), frag) {
				t.Errorf("ValidateURL(%q) = %q, want it to mention %q", u, err, frag)
			}
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ValidateURL(%q) shows the password: %q", u, err)
		}
	}
	f("", "empty", "http://127.0.0.1:9093")
	f("   ", "empty")
	f("127.0.0.1:9093", "not a URL")
	f("am:9093", `scheme "am"`)
	f("ftp://am:21", `scheme "ftp"`, "http or https")
	f("http://", "no host")
	f("http:am", "no host")
	f("http://user:s3cret@am:9093", "credentials", "basic_auth", "xxxxx")
	f("http://s3cret@am:9093", "credentials", "xxxxx")
	f("http://am:9093?x=1", "query string", "/api/v2/alerts")
	f("http://am:9093/?", "query string")
	f("http://am:9093#top", "fragment")
	f("http://am:9093/api/v2/alerts", "API path /api/v2/alerts", "http://am:9093")
	f("http://am:9093/prefix/api/v1/alerts/", "/api/v1/alerts", "http://am:9093/prefix")
	f("http://am:9093/api/v2", "base URL")
	f("http://user:s3cret@am:bad", "not a URL")
}

func TestValidateURLs(t *testing.T) {
	if err := ValidateURLs([]string{"http://a:9093", "http://b:9093/"}); err != nil {
		t.Fatal(err)
	}
	if err := ValidateURLs(nil); err == nil || !strings.Contains(err.Error(), "at least one") {
		t.Fatalf("no URLs: %v", err)
	}
	err := ValidateURLs([]string{"http://a:9093", "ftp://b", "http://A:9093/", "http://c?q"})
	if err == nil {
		t.Fatal("want errors")
	}
	msg := err.Error()
	for _, frag := range []string{"alertmanager 2:", "ftp", "alertmanager 3:", "same as alertmanager 1", "alertmanager 4:", "query string"} {
		if !strings.Contains(msg, frag) {
			t.Errorf("error %q does not mention %q", msg, frag)
		}
	}
	if got := strings.Count(msg, "\n") + 1; got != 3 {
		t.Errorf("want the 3 problems on 3 lines, got %d: %q", got, msg)
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://a:9093":           "http://a:9093/api/v2/alerts",
		"http://a:9093/":          "http://a:9093/api/v2/alerts",
		"https://a/prefix//":      "https://a/prefix/api/v2/alerts",
		"http://a/p%20q":          "http://a/p%20q/api/v2/alerts",
		"HTTP://A.example:9093/x": "http://a.example:9093/x/api/v2/alerts",
	} {
		if got := endpoint(in); got != want {
			t.Errorf("endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAlertValidate(t *testing.T) {
	start := mustTime(t, "2026-01-02T03:04:05Z")
	ok := Alert{Labels: map[string]string{"alertname": "X"}, StartsAt: start}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	f := func(a Alert, fragment string) {
		t.Helper()
		err := a.Validate()
		if err == nil || !strings.Contains(err.Error(), fragment) {
			t.Errorf("Validate(%+v) = %v, want it to mention %q", a, err, fragment)
		}
	}
	f(Alert{}, "no label")
	f(Alert{Labels: map[string]string{"alertname": ""}}, "no label with a value")
	f(Alert{Labels: map[string]string{"": "v", "a": "b"}}, "empty name")
	f(Alert{Labels: map[string]string{"a": "\xff"}}, "not valid UTF-8")
	f(Alert{Labels: map[string]string{"\xff": "b"}}, "not valid UTF-8")
	f(Alert{Labels: map[string]string{"alertname": "X"}, Annotations: map[string]string{"d": "\xfe"}}, `alert "X": annotation "d"`)
	f(Alert{Labels: map[string]string{"alertname": "X"}, StartsAt: start, EndsAt: start.Add(-time.Second)}, "before it starts")
	f(Alert{Labels: map[string]string{"alertname": "X"}, EndsAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "years 0 to 9999")
}

func TestAlertJSON(t *testing.T) {
	// Zero times and empty fields are left out: Alertmanager reads a
	// missing startsAt as now and a missing endsAt as still firing.
	b, err := json.Marshal(Alert{Labels: map[string]string{"alertname": "X"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"labels":{"alertname":"X"}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	a := Alert{
		Labels:       map[string]string{"alertname": "X"},
		Annotations:  map[string]string{"summary": "s"},
		StartsAt:     mustTime(t, "2026-01-02T03:04:05.5Z"),
		EndsAt:       mustTime(t, "2026-01-02T04:04:05Z"),
		GeneratorURL: "http://inferwatch/rule",
	}
	b, err = json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"labels":{"alertname":"X"},"annotations":{"summary":"s"},"startsAt":"2026-01-02T03:04:05.5Z","endsAt":"2026-01-02T04:04:05Z","generatorURL":"http://inferwatch/rule"}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}
