package alertmanager_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/common/config"

	"github.com/inferwatch/inferwatch/alerting/alertmanager"
)

var (
	promConfigWithBearer = func() config.HTTPClientConfig {
		c := config.DefaultHTTPClientConfig
		c.Authorization = &config.Authorization{Type: "Bearer", Credentials: "t0ken"}
		return c
	}()
	basicAuth = &config.BasicAuth{Username: "u", Password: "p"}
)

func TestHTTPClientConfigAuth(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Authorization") + " " + r.UserAgent():
		default:
		}
	}))
	t.Cleanup(srv.Close)
	cfg := promConfigWithBearer
	n, _, _ := setup(t, alertmanager.Options{URLs: []string{srv.URL}, HTTPClientConfig: &cfg})
	n.Send(alert("A"))
	closeAll(t, n, 0)
	if h := <-got; h != "Bearer t0ken inferwatch" {
		t.Fatalf("Authorization and User-Agent %q, want the bearer token and inferwatch", h)
	}
}
