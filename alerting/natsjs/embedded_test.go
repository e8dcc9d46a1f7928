package natsjs_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

func TestEmbedded(t *testing.T) {
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	if !strings.HasPrefix(srv.ClientURL(), "nats://127.0.0.1:") || strings.HasSuffix(srv.ClientURL(), ":0") {
		t.Errorf("ClientURL = %q, want nats://127.0.0.1:<random port>", srv.ClientURL())
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	resp, err := nc.Request("$JS.API.INFO", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("JetStream account info: %v", err)
	}
	if body := string(resp.Data); !strings.Contains(body, `"type":"io.nats.jetstream.api.v1.account_info_response"`) ||
		strings.Contains(body, `"error"`) {
		t.Fatalf("JetStream is not enabled: %s", body)
	}

	// The temporary store is used, then removed at Shutdown.
	store := srv.StoreDir()
	if _, err := os.Stat(store + "/jetstream"); err != nil {
		t.Errorf("JetStream store not under %s: %v", store, err)
	}
	srv.Shutdown()
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("temporary store %s still exists after Shutdown (%v)", store, err)
	}
	srv.Shutdown() // a second Shutdown is harmless
}

func TestEmbeddedKeepsGivenStore(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	if _, err := os.Stat(dir + "/jetstream"); err != nil {
		t.Errorf("given store %s was not kept: %v", dir, err)
	}
}

func TestEmbeddedErrors(t *testing.T) {
	taken := natstest.Start(t)
	for _, tc := range []struct {
		listen, wantErr string
	}{
		{"localhost", `listen address "localhost": want host:port`},
		{"127.0.0.1:http", `port "http" is not a number`},
		{"127.0.0.1:70000", `port "70000" is not a number from 0 to 65535`},
		{taken.Addr(), "did not accept clients within 1s"},
	} {
		e, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: tc.listen, StoreDir: t.TempDir(), ReadyTimeout: time.Second})
		if err == nil {
			e.Shutdown()
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Listen %q: err = %v, want it to contain %q", tc.listen, err, tc.wantErr)
		}
	}
}
