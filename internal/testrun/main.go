// Command testrun runs the module's tests for make test: go test's usual
// output, then one line per skipped test with its reason, so that a test
// that did not run is seen; and with TMPDIR set to a fresh directory, so
// that a test that leaves a file behind fails the run.
//
//	go run ./internal/testrun [-go GO] [-allowed-skips FILE] -- [go test flags] [packages]
//
// It runs go test -json with the arguments after --. Its exit status is
// go test's; when go test passed, it is 1 if anything is left in the
// temporary directory, or if a test skipped for a reason the
// -allowed-skips file does not allow (CI gives .ci/allowed-skips).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("testrun", flag.ContinueOnError)
	flags.SetOutput(stderr)
	goBin := flags.String("go", "go", "the go command")
	allowFile := flags.String("allowed-skips", "", "a file of allowed skips: one regular expression a line, matched against \"PACKAGE TEST: REASON\"; a skip none matches fails the run (default: every skip is allowed)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	var allow []*regexp.Regexp
	if *allowFile != "" {
		f, err := os.Open(*allowFile)
		if err != nil {
			fmt.Fprintln(stderr, "testrun:", err)
			return 2
		}
		allow, err = allowed(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "testrun: %s: %v\n", *allowFile, err)
			return 2
		}
	}
	module, err := exec.Command(*goBin, "list", "-m").Output()
	if err != nil {
		fmt.Fprintln(stderr, "testrun: go list -m:", err)
		return 2
	}
	tmp, err := os.MkdirTemp("", "inferwatch-test-")
	if err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 2
	}
	defer os.RemoveAll(tmp)

	p := newPrinter(stdout, strings.TrimSpace(string(module)))
	code, err := goTest(*goBin, tmp, flags.Args(), p, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 2
	}
	if len(p.skips) == 0 {
		fmt.Fprintln(stdout, "\nno test skipped")
	} else {
		fmt.Fprintf(stdout, "\n%d skipped:\n", len(p.skips))
		for _, s := range p.skips {
			fmt.Fprintln(stdout, "SKIP", s)
		}
	}
	if bad := notAllowed(p.skips, allow); *allowFile != "" && len(bad) > 0 {
		fmt.Fprintf(stdout, "\n%d skipped for a reason %s does not allow:\n", len(bad), *allowFile)
		for _, s := range bad {
			fmt.Fprintln(stdout, "SKIP", s)
		}
		code = max(code, 1)
	}
	left, err := leftovers(tmp)
	if err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return max(code, 1)
	}
	if len(left) > 0 {
		fmt.Fprintf(stdout, "\nthe tests left these in their temporary directory (TMPDIR=%s, now removed):\n", tmp)
		for _, l := range left {
			fmt.Fprintln(stdout, "  "+l)
		}
		code = max(code, 1)
	}
	return code
}

// goTest runs go test -json with args and TMPDIR=tmp, feeding its output
// to p, and returns its exit status. An interrupt or SIGTERM is passed on
// to it, and testrun waits for it to end, so that what it leaves is still
// checked and removed.
func goTest(goBin, tmp string, args []string, p *printer, stderr io.Writer) (int, error) {
	cmd := exec.Command(goBin, append([]string{"test", "-json"}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		p.line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		io.Copy(io.Discard, out) // let go test finish
		fmt.Fprintln(stderr, "testrun: reading go test's output:", err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return max(exit.ExitCode(), 1), nil
	}
	return 0, err
}

// leftovers lists the entries of dir, each with the bytes it holds.
func leftovers(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		var size int64
		filepath.WalkDir(filepath.Join(dir, e.Name()), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if info, err := d.Info(); err == nil {
					size += info.Size()
				}
			}
			return nil
		})
		out = append(out, fmt.Sprintf("%s (%s)", e.Name(), bytesString(size)))
	}
	slices.Sort(out)
	return out, nil
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
