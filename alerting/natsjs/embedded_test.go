package natsjs_test

import (
	"context"
	"os"
	"path/filepath"
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
	// A store that cannot be made (under a file: not even root can) is
	// said at once.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(file, "store")}); err == nil ||
		!strings.Contains(err.Error(), "is not writable") || !strings.Contains(err.Error(), "set nats.embedded.store_dir") {
		t.Errorf("a store under a file: err = %v", err)
	}
}

// TestEmbeddedBeyondLoopbackWithAuthentication: with a user and password
// the server may listen on every address, and refuses a client without
// them.
func TestEmbeddedBeyondLoopbackWithAuthentication(t *testing.T) {
	e, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "0.0.0.0:0", StoreDir: t.TempDir(), User: "iw", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	port := e.Addr()[strings.LastIndex(e.Addr(), ":")+1:]
	if _, err := nats.Connect("nats://127.0.0.1:" + port); err == nil {
		t.Fatal("a client without credentials was let in")
	}
	nc, err := nats.Connect("nats://127.0.0.1:"+port, nats.UserInfo("iw", "s3cret"))
	if err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	nc.Close()
}

func TestEmbeddedErrors(t *testing.T) {
	taken := natstest.Start(t)
	for _, tc := range []struct {
		listen, wantErr string
	}{
		{"localhost", `listen address "localhost": want host:port`},
		{"127.0.0.1:http", `port "http" is not a number`},
		{"127.0.0.1:70000", `port "70000" is not a number from 0 to 65535`},
		// A port already taken is said at once, with what to do.
		{taken.Addr(), "embedded NATS cannot listen on " + taken.Addr() + ": listen tcp " + taken.Addr() + ": bind: address already in use: another process holds it (a NATS server already running?); set nats.embedded.listen"},
		// Beyond loopback only with authentication.
		{"0.0.0.0:0", "listens beyond loopback without authentication"},
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

// TestConnectWithCredentials: the output authenticates with a user and
// password or a token, and a wrong one fails with an error that does not
// print the secret.
func TestConnectWithCredentials(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  natsjs.EmbeddedOptions
		good natsjs.Auth
		bad  natsjs.Auth
	}{
		{"user and password", natsjs.EmbeddedOptions{User: "iw", Password: "hunter2-pass"},
			natsjs.Auth{User: "iw", Password: "hunter2-pass"}, natsjs.Auth{User: "iw", Password: "wrong-pass-4711"}},
		{"token", natsjs.EmbeddedOptions{Token: "s3cr3t-token"}, natsjs.Auth{Token: "s3cr3t-token"}, natsjs.Auth{Token: "wrong-token-4711"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.srv
			o.Listen, o.StoreDir = "127.0.0.1:0", t.TempDir()
			e, err := natsjs.StartEmbedded(o)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			j, err := natsjs.Connect(ctx, natsjs.Options{URL: e.ClientURL(), Auth: tc.good})
			if err != nil {
				t.Fatalf("with the right credentials: %v", err)
			}
			j.Close()
			short, cancel2 := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel2()
			_, err = natsjs.Connect(short, natsjs.Options{URL: e.ClientURL(), Auth: tc.bad, ConnectBackoffMax: 100 * time.Millisecond})
			if err == nil || strings.Contains(err.Error(), "4711") || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
				t.Fatalf("with wrong credentials: %v", err)
			}
		})
	}
}
