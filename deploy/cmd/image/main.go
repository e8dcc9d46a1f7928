// Command image builds inferwatch's container image without a container
// runtime: it cross-compiles the static binary for each architecture and
// writes a multi-architecture OCI layout and, per architecture, a tarball
// that docker load and podman load accept. make image runs it:
//
//	go run ./cmd/image -repo .. -version v1.2.3 -commit abc… -out ../bin/image
//
// SOURCE_DATE_EPOCH (make image: the commit's time) is every time in the
// image, so the same commit makes the same digest.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/inferwatch/inferwatch/deploy/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	repo := fs.String("repo", "..", "the inferwatch repository to build cmd/inferwatch from")
	version := fs.String("version", "", "the version stamped into the binary and the labels (required)")
	commit := fs.String("commit", "", "the commit stamped into the binary and the labels (required)")
	archs := fs.String("arch", "amd64,arm64", "the architectures, comma-separated")
	out := fs.String("out", "../bin/image", "the output directory: oci/ and one tarball per architecture")
	ref := fs.String("name", "ghcr.io/inferwatch/inferwatch", "the image's name in the tarballs")
	source := fs.String("source", "https://github.com/inferwatch/inferwatch", "the org.opencontainers.image.source label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *commit == "" {
		return fmt.Errorf("-version and -commit are required (make image sets them from git)")
	}
	epoch, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	opts := image.Options{
		Binaries: map[string][]byte{},
		Version:  *version, Revision: *commit, Source: *source,
		Licenses: "Apache-2.0", Created: epoch,
	}
	tmp, err := os.MkdirTemp("", "inferwatch-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, arch := range strings.Split(*archs, ",") {
		bin := filepath.Join(tmp, "inferwatch-"+arch)
		if err := image.CompileBinary(*repo, arch, *version, *commit, bin); err != nil {
			return err
		}
		if opts.Binaries[arch], err = os.ReadFile(bin); err != nil {
			return err
		}
	}
	idx, images, err := image.Build(opts)
	if err != nil {
		return err
	}
	ociDir := filepath.Join(*out, "oci")
	if err := os.RemoveAll(ociDir); err != nil {
		return err
	}
	p, err := layout.Write(ociDir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": *version,
	})); err != nil {
		return fmt.Errorf("writing %s: %w", ociDir, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s  %s (index)\n", digest, ociDir)
	tag, err := name.NewTag(*ref + ":" + tagOf(*version))
	if err != nil {
		return err
	}
	for arch, img := range images {
		file := filepath.Join(*out, fmt.Sprintf("inferwatch-%s-linux-%s.tar", tagOf(*version), arch))
		if err := tarball.WriteToFile(file, tag, img); err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s  %s (docker load -i / podman load -i: %s)\n", d, file, tag)
	}
	return nil
}

// tagOf makes a version a valid tag (git describe's + becomes _).
func tagOf(version string) string {
	return strings.ReplaceAll(version, "+", "_")
}

// sourceDateEpoch reads SOURCE_DATE_EPOCH, the reproducible-builds
// convention for the time a build stands for.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH is not set; make image sets it to the commit's time (git log -1 --format=%%ct)")
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970: %v", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
