package localvm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStartImportStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vm, err := Start(ctx, Options{})
	if errors.Is(err, ErrNoTool) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := vm.dataDir
	t.Cleanup(func() { vm.Stop() })
	if !strings.HasPrefix(vm.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on 127.0.0.1", vm.URL())
	}
	line := `{"metric":{"__name__":"localvm_test","k":"v"},"values":[1,2],"timestamps":[1600000000000,1600000015000]}` + "\n"
	if err := vm.Import(ctx, strings.NewReader(line)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(vm.URL() + "/api/v1/export?match[]=localvm_test")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(b.String()); got != strings.TrimSpace(line) {
		t.Fatalf("export returned %s\nwant %s", got, line)
	}
	if err := vm.Stop(); err != nil {
		t.Fatal(err)
	}
	// Importing into a stopped server names the URL.
	if err := vm.Import(ctx, strings.NewReader(line)); err == nil || !strings.Contains(err.Error(), vm.URL()+"/api/v1/import") {
		t.Fatalf("import after Stop: got %v", err)
	}
	if err := vm.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir %s still there: %v", dir, err)
	}
	if _, err := http.Get(vm.URL() + "/health"); err == nil {
		t.Fatal("VictoriaMetrics still answers after Stop")
	}
}

func TestStartReportsBadFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	_, err := Start(ctx, Options{DataDir: dir, ExtraFlags: []string{"-noSuchFlag"}})
	if errors.Is(err, ErrNoTool) {
		t.Skip(err)
	}
	if err == nil || !strings.Contains(err.Error(), "exited before becoming healthy") || !strings.Contains(err.Error(), "noSuchFlag") {
		t.Fatalf("want an early-exit error quoting stderr, got %v", err)
	}
}

func TestBinaryFromEnv(t *testing.T) {
	t.Setenv(EnvBinary, filepath.Join(t.TempDir(), "missing"))
	_, err := Start(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), EnvBinary) {
		t.Fatalf("want an error naming %s, got %v", EnvBinary, err)
	}
}
