package image

import (
	"fmt"
	"os"
	"os/exec"
)

// CompileBinary builds cmd/inferwatch of the repository at repo for
// linux/arch into out: static (no cgo), without file system paths, with
// the version and commit stamped as make build stamps them.
func CompileBinary(repo, arch, version, commit, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", fmt.Sprintf("-s -w -buildid= -X main.version=%s -X main.commit=%s", version, commit),
		"-o", out, "./cmd/inferwatch")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/inferwatch for linux/%s: %v\n%s", arch, err, b)
	}
	return nil
}
