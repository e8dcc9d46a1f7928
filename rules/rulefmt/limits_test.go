package rulefmt

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFileTooLarge(t *testing.T) {
	const msg = "the configuration is 32.0 MiB (33554433 bytes), more than the 32 MiB a configuration file may be; is it the right file?"
	path := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: Load must refuse it from its size, before reading.
	if err := f.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Load(path); err == nil || err.Error() != path+":1:1: "+msg {
		t.Errorf("Load: %v", err)
	}
	if _, err := Parse(make([]byte, MaxFileSize+1), "big.yaml"); err == nil || err.Error() != "big.yaml:1:1: "+msg {
		t.Errorf("Parse: %v", err)
	}
	// A file whose size is unknown is read up to the limit only.
	if _, err := os.Stat("/dev/zero"); err == nil {
		const want = "/dev/zero:1:1: the configuration is larger than 32 MiB, the most a configuration file may be; is it the right file?"
		if _, err := Load("/dev/zero"); err == nil || err.Error() != want {
			t.Errorf("Load(/dev/zero): %v", err)
		}
	}
}
