package outbox

import (
	"path/filepath"
	"testing"
)

// TestStateDir: under $XDG_STATE_HOME, one directory per stream and
// server.
func TestStateDir(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	a := StateDir("INFERWATCH", "nats://nats-a:4222")
	if filepath.Dir(a) != filepath.Join(state, "inferwatch", "outbox") {
		t.Fatalf("StateDir = %s, want it under %s/inferwatch/outbox", a, state)
	}
	// The first 4 bytes of sha256("nats://nats-a:4222"), by Python's hashlib.
	if base := filepath.Base(a); base != "INFERWATCH-e3809157" {
		t.Errorf("StateDir = %s, want INFERWATCH-e3809157", a)
	}
	if a != StateDir("INFERWATCH", "nats://nats-a:4222") {
		t.Error("the same stream and server give another directory")
	}
	if b := StateDir("INFERWATCH", "nats://nats-b:4222"); b == a {
		t.Error("two servers share a directory")
	}
	if c := StateDir("OTHER", "nats://nats-a:4222"); c == a {
		t.Error("two streams share a directory")
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d := StateDir("S", "x"); filepath.Dir(d) != "/home/u/.local/state/inferwatch/outbox" {
		t.Errorf("without XDG_STATE_HOME: %s, want it under ~/.local/state", d)
	}
}
