// Package testbin builds the inferwatch binary once for the tests of a
// package that run it as a process, and removes it when they are done.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Binary is the inferwatch binary of one test run; the zero value is ready.
type Binary struct {
	once      sync.Once
	dir, path string
	err       error
}

// Path builds github.com/inferwatch/inferwatch/cmd/inferwatch the first
// time it is called and returns the binary's path. It skips the test in
// -short mode and fails it when the build fails.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the inferwatch binary and runs it")
	}
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "inferwatch-bin-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "inferwatch")
		if out, err := exec.Command("go", "build", "-o", b.path, "github.com/inferwatch/inferwatch/cmd/inferwatch").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the binary (some 50 MB), if it was built; TestMain calls
// it once the tests are done.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
