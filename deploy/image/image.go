// Package image assembles inferwatch's container image from static
// binaries, with go-containerregistry and no container runtime: an empty
// base and one layer holding the binary, /etc/passwd and /etc/group with
// the non-root user 65532, and /tmp. CA roots and time zones are built into
// the binary. Every time in the image is the one given (the commit's), so
// the same binaries make the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user, as distroless' nonroot.
const (
	UID  = 65532
	User = "nonroot"
)

// BinaryPath is where the binary lies in the image; PATH holds its directory.
const BinaryPath = "/usr/bin/inferwatch"

// Ports the daemon serves on in the image: /metrics, /healthz, /readyz and
// the KEDA metrics-api; the KEDA external scaler.
var Ports = []string{"9464/tcp", "9465/tcp"}

// Options describe the image.
type Options struct {
	// Binaries maps an architecture (amd64, arm64) to its static binary.
	Binaries map[string][]byte
	// Version and Revision are the release and the commit, for the labels.
	Version, Revision string
	// Source is the repository's URL, for the label.
	Source string
	// Licenses is an SPDX expression, for the label.
	Licenses string
	// Created is every time in the image: the files', the config's, the
	// history's. The commit's time makes a build reproducible.
	Created time.Time
}

// Labels are the OCI annotations the image configuration carries.
func (o Options) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.licenses": o.Licenses,
		"org.opencontainers.image.created":  o.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.title":    "inferwatch",
	}
}

// Build returns the multi-architecture index and its images by
// architecture, in the OCI media types.
func Build(o Options) (v1.ImageIndex, map[string]v1.Image, error) {
	if len(o.Binaries) == 0 {
		return nil, nil, fmt.Errorf("image: no binaries")
	}
	archs := make([]string, 0, len(o.Binaries))
	for a := range o.Binaries {
		archs = append(archs, a)
	}
	sort.Strings(archs)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	images := map[string]v1.Image{}
	for _, arch := range archs {
		img, err := buildImage(o, arch)
		if err != nil {
			return nil, nil, fmt.Errorf("image for linux/%s: %w", arch, err)
		}
		images[arch] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	ann := o.Labels()
	return mutate.Annotations(idx, ann).(v1.ImageIndex), images, nil
}

func buildImage(o Options, arch string) (v1.Image, error) {
	layerTar, err := RootFS(o.Binaries[arch], o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     plainLayer{layer},
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: o.Created},
			CreatedBy: "make image: the static inferwatch binary, /etc/passwd, /etc/group, /tmp",
			Comment:   "built from " + o.Revision,
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: o.Created}
	exposed := map[string]struct{}{}
	for _, p := range Ports {
		exposed[p] = struct{}{}
	}
	cf.Config = v1.Config{
		Entrypoint:   []string{BinaryPath},
		Env:          []string{"PATH=" + path.Dir(BinaryPath)},
		User:         fmt.Sprintf("%d:%d", UID, UID),
		WorkingDir:   "/",
		Labels:       o.Labels(),
		ExposedPorts: exposed,
	}
	return mutate.ConfigFile(img, cf)
}

// entry is one file of the root file system.
type entry struct {
	name     string
	mode     int64
	uid      int
	dir      bool
	contents []byte
}

// RootFS returns the image's one layer, an uncompressed tar: its entries
// in a fixed order, owned by root except the user's home and data
// directories, every time set to created.
func RootFS(binary []byte, created time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", User, UID, UID, User, User)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", User, UID)
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, contents: []byte(group)},
		{name: "etc/inferwatch/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, contents: []byte(passwd)},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/" + User + "/", mode: 0o700, uid: UID, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/bin/", mode: 0o755, dir: true},
		{name: BinaryPath[1:], mode: 0o755, contents: binary},
		{name: "var/", mode: 0o755, dir: true},
		{name: "var/lib/", mode: 0o755, dir: true},
		{name: "var/lib/inferwatch/", mode: 0o755, uid: UID, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: created,
			Format:  tar.FormatPAX,
		}
		if e.uid == UID {
			h.Uname, h.Gname = User, User
		} else {
			h.Uname, h.Gname = "root", "root"
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.contents))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.contents); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plainLayer describes a layer by its media type, size and digest alone:
// the tarball layer's own descriptor carries an empty annotation map that
// the manifest would not keep through a round trip of its JSON.
type plainLayer struct{ v1.Layer }

func (l plainLayer) Descriptor() (*v1.Descriptor, error) {
	mt, err := l.MediaType()
	if err != nil {
		return nil, err
	}
	size, err := l.Size()
	if err != nil {
		return nil, err
	}
	digest, err := l.Digest()
	if err != nil {
		return nil, err
	}
	return &v1.Descriptor{MediaType: mt, Size: size, Digest: digest}, nil
}
