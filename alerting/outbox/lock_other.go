//go:build !unix

package outbox

import (
	"errors"
	"os"
)

var errNoFlock = errors.New("the outbox locks its directory with flock(2), which this system does not have; run inferwatch without an outbox here")

func lockFile(*os.File) error   { return errNoFlock }
func unlockFile(*os.File) error { return nil }
func syncDir(string) error      { return errNoFlock }
