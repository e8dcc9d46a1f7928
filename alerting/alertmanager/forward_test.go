package alertmanager

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
)

// A forwarder that lost a group to another replica stops re-sending the
// group's firing alerts; those of its other groups go on.
func TestForwarderForgetsALostGroup(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []string // inferwatch_group of each alert received
		seen = make(chan struct{}, 16)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var as []Alert
		json.NewDecoder(r.Body).Decode(&as)
		mu.Lock()
		for _, a := range as {
			got = append(got, a.Labels["inferwatch_group"])
		}
		mu.Unlock()
		seen <- struct{}{}
	}))
	defer srv.Close()
	n, err := New(Options{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f, err := NewForwarder(ForwarderOptions{Notifier: n, ResendDelay: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	fired := now.Add(-time.Hour)
	firing := func(group string) alerting.AlertData {
		return alerting.AlertData{Status: alerting.StatusFiring, Group: group, Rule: "r", Series: `up{pod="p"}`,
			Labels: map[string]string{"pod": "p"}, Severity: "warning", FiredAt: &fired}
	}
	f.Seed([]alerting.AlertData{firing("kept"), firing("lost")})
	f.Forget("lost")
	f.Send(context.Background(), alerting.Batch{Group: "kept", At: now})
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached the Alertmanager")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []string{"kept"}) {
		t.Errorf("re-sent the alerts of groups %v, want only kept", got)
	}
}
