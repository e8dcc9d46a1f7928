package outbox

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// StateDir is where the outbox of a stream on an external server lives by
// default: under the user's state directory ($XDG_STATE_HOME, else
// ~/.local/state, else the temporary directory), named by the stream and
// a hash of the server's URL (give it with its credentials redacted), so
// that two servers never share one.
func StateDir(stream, server string) string {
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			state = os.TempDir()
		} else {
			state = filepath.Join(home, ".local", "state")
		}
	}
	h := sha256.Sum256([]byte(server))
	return filepath.Join(state, "inferwatch", "outbox", stream+"-"+hex.EncodeToString(h[:4]))
}
