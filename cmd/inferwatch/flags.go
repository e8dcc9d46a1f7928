package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// newOfflineFlagSet returns a flag set whose usage prints help, then the
// flags.
func newOfflineFlagSet(name, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), help)
		fs.PrintDefaults()
	}
	return fs
}

// parseOfflineFlags parses the flags of a command that takes no
// arguments besides them (see parseFlags).
func parseOfflineFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	return parseFlags(fs, args, stdout, stderr, false)
}

// parseFlags parses args. done is true when the command must stop with
// code: 0 after --help (the help goes to stdout), 2 on a usage error (the
// error and the help go to stderr), including arguments after the flags
// unless withArgs.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, withArgs bool) (code int, done bool) {
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		stdout.Write(buf.Bytes())
		return 0, true
	case err != nil:
		stderr.Write(buf.Bytes())
		return 2, true
	case fs.NArg() > 0 && !withArgs:
		return usageError(stderr, fs, fmt.Sprintf("unexpected argument %q (every input is given with a flag)", fs.Arg(0))), true
	}
	return 0, false
}

// usageError reports a usage error and returns exit code 2.
func usageError(stderr io.Writer, fs *flag.FlagSet, msg string) int {
	fmt.Fprintf(stderr, "%s: %s\nRun \"%s --help\" for the flags.\n", fs.Name(), msg, fs.Name())
	return 2
}

// writeJSON prints v as indented JSON on stdout.
func writeJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch: encoding the result:", err)
		return 1
	}
	b = append(b, '\n')
	if _, err := stdout.Write(b); err != nil {
		fmt.Fprintln(stderr, "inferwatch: writing the result:", err)
		return 1
	}
	return 0
}

// natsAuth is how the daemon authenticates to NATS with the nats section
// n: with n's credentials to the server at n.url, else with the embedded
// server's own; where names them for an error message.
func natsAuth(n rulefmt.NATS, file string) (a natsjs.Auth, where string) {
	c := n.Auth
	where = "the nats section of " + file
	if n.URL == "" {
		em := n.Embedded
		c = rulefmt.NATSAuth{User: em.User, Password: em.Password, Token: em.Token}
		where = "nats.embedded in " + file
	}
	return natsjs.Auth{CredsFile: c.CredsFile, NKeySeedFile: c.NKeySeedFile, Token: string(c.Token),
		User: c.User, Password: string(c.Password)}, where
}
