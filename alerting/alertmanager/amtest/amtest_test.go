package amtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Alertmanager")
	}
	url := Start(t)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on 127.0.0.1", url)
	}
	resp, err := http.Get(url + "/api/v2/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `receiver: nobody`) ||
		!strings.Contains(string(b), `"status":"disabled"`) {
		t.Fatalf("GET /api/v2/status: %s %s; want 200 with the configuration's receiver and clustering disabled", resp.Status, b)
	}
}

func TestStopTwiceAndGone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Alertmanager")
	}
	bin, err := Binary()
	if errors.Is(err, ErrNoBinary) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := startRetrying(ctx, bin, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := http.Get(p.URL + "/-/ready"); err == nil {
		t.Fatal("Alertmanager still answers after Stop")
	}
}

func TestStartReportsEarlyExit(t *testing.T) {
	// /bin/false stands for a binary that fails at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := start(ctx, "/bin/false", t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "exited before becoming ready") {
		t.Fatalf("want an early-exit error, got %v", err)
	}
}

func TestBinaryFromEnv(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv(EnvBinary, missing)
	_, err := Binary()
	if err == nil || errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), EnvBinary) {
		t.Fatalf("want an error naming %s that is not ErrNoBinary, got %v", EnvBinary, err)
	}
}

func TestBinaryAbsent(t *testing.T) {
	t.Setenv(EnvBinary, "")
	t.Setenv("PATH", t.TempDir())
	_, err := Binary()
	if !errors.Is(err, ErrNoBinary) {
		t.Fatalf("want ErrNoBinary with an empty PATH, got %v", err)
	}
}
