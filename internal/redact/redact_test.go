package redact

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8428", "http://127.0.0.1:8428"},
		{"http://u:hunter2@vm:8428/select/0", "http://u:xxxxx@vm:8428/select/0"},
		{"nats://s3cr3t-token@nats:4222", "nats://xxxxx@nats:4222"},
		{"https://vm/api?access_token=abc&step=1m", "https://vm/api?access_token=xxxxx&step=1m"},
		{"https://vm/api?X-Amz-Signature=abc&apiKey=k&tenant=t", "https://vm/api?X-Amz-Signature=xxxxx&apiKey=xxxxx&tenant=t"},
		{"nats://a:p1@h1:4222, nats://b:p2@h2:4222", "nats://a:xxxxx@h1:4222,nats://b:xxxxx@h2:4222"},
		{"http://u:p%zz@host", "http://xxxxx@host"}, // not a parsable URL
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"hunter2", "s3cr3t", "abc", "p1", "p2", "p%zz"} {
			if strings.Contains(got, secret) {
				t.Errorf("URL(%q) = %q keeps %q", tc.in, got, secret)
			}
		}
	}
}

func TestTextHidesAURLInAParseError(t *testing.T) {
	raw := "http://user:hunter2@host:99999999/x"
	_, err := url.Parse("http://user:hunter2@ho st")
	for _, msg := range []string{errors.New("GET " + raw + ": connection refused").Error(), err.Error()} {
		if got := Text(msg, raw); strings.Contains(got, "hunter2") {
			t.Errorf("Text(%q) = %q", msg, got)
		}
	}
}
