// Package benchcmd holds what the benchmark commands (churnbench,
// fleetbench) share around their own run: the process' signals and exit
// codes, and the inferwatch binary they measure.
package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main runs run with the process' arguments, under a context that SIGINT
// and SIGTERM cancel, and exits: 0 when it succeeds or -help was asked
// for, 1 with the error, prefixed with name, on stderr.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// CheckBinary says when the inferwatch binary to measure is missing.
func CheckBinary(path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("the inferwatch binary %s is missing (run `make build` first): %w", path, err)
	}
	return nil
}
