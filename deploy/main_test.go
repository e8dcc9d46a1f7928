package deploy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The inferwatch binary, built once from the repository above this module.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	// Helm's template engine logs every fail it meets (the refusals the
	// tests provoke) on the default logger: the tests check the errors.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// inferwatchBinary builds cmd/inferwatch of the repository once per run.
func inferwatchBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the inferwatch binary and runs it")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "inferwatch-deploy-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "inferwatch")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/inferwatch")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/inferwatch: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// secretsDir is where the chart mounts the Secrets the configuration reads.
const secretsDir = "/etc/inferwatch/secrets/"

// checkConfig runs inferwatch check on a rendered configuration. The
// files it names under secretsDir are made under a temporary directory,
// and the paths moved there, since check reads them.
func checkConfig(t *testing.T, bin, cfg string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "secrets") + "/"
	cfg = strings.ReplaceAll(cfg, secretsDir, root)
	for _, line := range strings.Split(cfg, "\n") {
		i := strings.Index(line, root)
		if i < 0 {
			continue
		}
		path := strings.TrimSpace(line[i:])
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, secretFixture(t, path), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "inferwatch.yml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "check", file).CombinedOutput()
	return string(out), err
}

// secretFixture is what a Secret's file holds, by its name: a certificate
// and its key for TLS files (check loads them), a word otherwise.
func secretFixture(t *testing.T, path string) []byte {
	t.Helper()
	switch filepath.Ext(path) {
	case ".crt":
		cert, _ := selfSigned(t)
		return cert
	case ".key":
		_, key := selfSigned(t)
		return key
	}
	return []byte("fixture-" + filepath.Base(path) + "\n")
}

var (
	certOnce        sync.Once
	certPEM, keyPEM []byte
)

// selfSigned makes one self-signed certificate and its key per run.
func selfSigned(t *testing.T) (cert, key []byte) {
	t.Helper()
	certOnce.Do(func() {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "inferwatch-test"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(time.Hour),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		kd, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
	})
	return certPEM, keyPEM
}

// syncBuffer is a bytes.Buffer a process writes to while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
