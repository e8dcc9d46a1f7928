package httpclient

import (
	"net/http"
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
