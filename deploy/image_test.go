package deploy

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/inferwatch/inferwatch/deploy/image"
)

// TestImage builds the image as make image does, for amd64 and arm64,
// twice: the digests are equal. It validates the index and the images,
// writes the OCI layout and a docker load tarball and reads both back,
// checks the configuration and every file's mode, owner and time, then
// unpacks the file system and runs the binary in it, as uid 65532,
// chrooted and without a network: version, and check of the chart's
// default configuration.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the binary for two architectures")
	}
	const version, commit = "v0.0.0-imagetest", "0123456789abcdef0123456789abcdef01234567"
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	opts := image.Options{
		Binaries: map[string][]byte{}, Version: version, Revision: commit,
		Source: "https://github.com/inferwatch/inferwatch", Licenses: "Apache-2.0", Created: created,
	}
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, "inferwatch-"+arch)
		if err := image.CompileBinary("..", arch, version, commit, bin); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		opts.Binaries[arch] = b
	}
	idx, images, err := image.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("validate index: %v", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := image.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Digest(); d != digest {
		t.Errorf("the same binaries and time make a different index: %s, then %s", digest, d)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.String())
	}
	if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
		t.Errorf("platforms: want linux/amd64 linux/arm64, got %v", platforms)
	}

	// The OCI layout and the docker load tarball read back as the same.
	p, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	top, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	topm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topm.Manifests) != 1 || topm.Manifests[0].Digest != digest {
		t.Errorf("the OCI layout's index.json: want the index %s, got %+v", digest, topm.Manifests)
	}
	img := images[runtime.GOARCH]
	if img == nil {
		t.Skipf("no image for this machine's architecture %s", runtime.GOARCH)
	}
	tag, err := name.NewTag("ghcr.io/inferwatch/inferwatch:" + version)
	if err != nil {
		t.Fatal(err)
	}
	tarFile := filepath.Join(dir, "image.tar")
	if err := tarball.WriteToFile(tarFile, tag, img); err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(tarFile, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(loaded); err != nil {
		t.Fatalf("validate the docker load tarball's image: %v", err)
	}
	// docker load's format holds the manifest in Docker's media types:
	// the configuration and the layer are what must be the same.
	want, _ := img.ConfigName()
	if got, _ := loaded.ConfigName(); got != want {
		t.Errorf("the tarball's image configuration is %s, the index's %s", got, want)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checkImageConfig(t, cf, version, commit, created)
	root := filepath.Join(dir, "rootfs")
	unpack(t, img, root, created)

	// The chart's default configuration, where the chart mounts it.
	files, err := renderChart(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := decodeAll(t, files).configMap.Data["inferwatch.yml"]
	if err := os.WriteFile(filepath.Join(root, "etc/inferwatch/inferwatch.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runInImage(t, root, "version")
	if !strings.Contains(out, version) || !strings.Contains(out, commit) {
		t.Errorf("inferwatch version in the image: want %s and %s, got %q", version, commit, out)
	}
	runInImage(t, root, "check", "/etc/inferwatch/inferwatch.yml")
}

func checkImageConfig(t *testing.T, cf *v1.ConfigFile, version, commit string, created time.Time) {
	t.Helper()
	c := cf.Config
	if strings.Join(c.Entrypoint, " ") != image.BinaryPath {
		t.Errorf("entrypoint: want %s, got %v", image.BinaryPath, c.Entrypoint)
	}
	if c.User != "65532:65532" {
		t.Errorf("user: want 65532:65532, got %q", c.User)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.source":   "https://github.com/inferwatch/inferwatch",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": commit,
		"org.opencontainers.image.licenses": "Apache-2.0",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s: want %q, got %q", k, v, c.Labels[k])
		}
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("created: want %v, got %v", created, cf.Created.Time)
	}
	for _, h := range cf.History {
		if !h.Created.Time.Equal(created) {
			t.Errorf("history created: want %v, got %v", created, h.Created.Time)
		}
	}
}

// unpack writes the image's file system under root with the modes and
// owners of the layer, and checks them.
func unpack(t *testing.T, img v1.Image, root string, created time.Time) {
	t.Helper()
	want := map[string]struct {
		mode int64
		uid  int
	}{
		"etc/passwd": {0o644, 0}, "etc/group": {0o644, 0}, "tmp": {0o1777, 0},
		image.BinaryPath[1:]: {0o755, 0}, "var/lib/inferwatch": {0o755, image.UID},
		"home/nonroot": {0o700, image.UID},
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(created) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, created)
		}
		if w, ok := want[strings.TrimSuffix(h.Name, "/")]; ok {
			seen[strings.TrimSuffix(h.Name, "/")] = true
			if h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.uid {
				t.Errorf("%s: mode %o uid %d gid %d, want mode %o owner %d", h.Name, h.Mode, h.Uid, h.Gid, w.mode, w.uid)
			}
		}
		path := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		default:
			t.Fatalf("%s: unexpected type %c in the layer", h.Name, h.Typeflag)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(path, os.FileMode(h.Mode&0o777)|modeBits(h.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("the image has no %s", k)
		}
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", passwd)
	}
}

// modeBits maps tar's sticky, setuid and setgid bits to Go's.
func modeBits(m int64) os.FileMode {
	var fm os.FileMode
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	if m&0o2000 != 0 {
		fm |= os.ModeSetgid
	}
	if m&0o4000 != 0 {
		fm |= os.ModeSetuid
	}
	return fm
}

// runInImage runs the image's binary with args as the container would: its
// root the image's file system, as uid and gid 65532, in a network
// namespace of its own (no network). That needs root (chroot, a new
// network namespace); without it the test fails rather than run the binary
// outside the image.
func runInImage(t *testing.T, root string, args ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("running the image's binary needs root for chroot and a network namespace (euid %d)", os.Geteuid())
	}
	cmd := exec.Command(image.BinaryPath, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin", "HOME=/home/nonroot"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: image.UID, Gid: image.UID},
		Cloneflags: syscall.CLONE_NEWNET,
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inferwatch %s in the image (chroot, uid 65532, no network): %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
