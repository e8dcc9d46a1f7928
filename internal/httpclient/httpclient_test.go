package httpclient

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/common/config"
)

func TestNew(t *testing.T) {
	given := &http.Client{}
	if hc, err := New(given, nil, "x", "writeback"); hc != given || err != nil {
		t.Errorf("a given client: %v, %v; want it back", hc, err)
	}
	if hc, err := New(nil, nil, "x", "writeback"); hc == nil || err != nil {
		t.Errorf("the defaults: %v, %v", hc, err)
	}
	bad := config.HTTPClientConfig{BearerToken: "a", BearerTokenFile: "b"}
	if _, err := New(nil, &bad, "x", "writeback"); err == nil || !strings.HasPrefix(err.Error(), "writeback HTTP client settings: ") {
		t.Errorf("two bearer tokens: %v", err)
	}
}

func TestCheckURL(t *testing.T) {
	shown := func(u *url.URL) string { return u.Redacted() }
	for _, tc := range []struct{ raw, want string }{
		{"http://127.0.0.1:8428/x?a=1", ""},
		{"http://[::1", `peer URL is not a URL (missing ']' in host); want e.g. http://h:1`},
		{"ftp://h:1", `peer URL ftp://h:1: scheme "ftp" is not http or https`},
		{"http:///x", "peer URL http:///x has no host; want e.g. http://h:1"},
		{"http://u:secret@h:1", "peer URL http://u:xxxxx@h:1 holds credentials"},
		{"http://h:1/#top", "peer URL http://h:1/#top has a fragment (#...); remove it"},
	} {
		_, err := CheckURL(tc.raw, "peer URL", "http://h:1", shown)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.raw, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.raw, err, tc.want)
		}
	}
}
