package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// event is one line of go test -json (go doc cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // of build-output and build-fail
}

// skip is a skipped test and the reason it gave.
type skip struct {
	Package, Test, Reason string
}

// String is the skip's line in the summary: "PACKAGE TEST: REASON".
func (s skip) String() string { return s.Package + " " + s.Test + ": " + s.Reason }

// printer turns go test -json's events back into what go test prints
// without -v: a line per package, the whole output of each failed test
// and package, build errors. It keeps each skipped test with its reason.
type printer struct {
	w      io.Writer
	module string // the module path, shown as "."

	tests map[string][]string // output lines of each unfinished test, by package and test
	pkgs  map[string][]string // package-level output lines, by package
	skips []skip
}

func newPrinter(w io.Writer, module string) *printer {
	return &printer{w: w, module: module, tests: map[string][]string{}, pkgs: map[string][]string{}}
}

// line handles one line of go test -json's output. A line that is not an
// event (go test prints a few) is passed through.
func (p *printer) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	switch {
	case e.Action == "build-output":
		io.WriteString(p.w, e.Output)
	case e.Test != "":
		p.test(e)
	default:
		p.pkg(e)
	}
}

func (p *printer) test(e event) {
	key := e.Package + " " + e.Test
	switch e.Action {
	case "output":
		p.tests[key] = append(p.tests[key], e.Output)
	case "pass":
		delete(p.tests, key)
	case "skip":
		p.skips = append(p.skips, skip{p.short(e.Package), e.Test, skipReason(p.tests[key])})
		delete(p.tests, key)
	case "fail":
		p.flush(key)
	}
}

func (p *printer) pkg(e event) {
	switch e.Action {
	case "output":
		p.pkgs[e.Package] = append(p.pkgs[e.Package], e.Output)
	case "pass", "skip": // skip: no test files
		for _, l := range p.pkgs[e.Package] {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "? ") {
				io.WriteString(p.w, l)
			}
		}
		delete(p.pkgs, e.Package)
	case "fail":
		// Tests that never finished, cut off by a panic or the timeout.
		for key := range p.tests {
			if strings.HasPrefix(key, e.Package+" ") {
				p.flush(key)
			}
		}
		for _, l := range p.pkgs[e.Package] {
			io.WriteString(p.w, l)
		}
		delete(p.pkgs, e.Package)
	}
}

// flush prints a test's output but for the === RUN, PAUSE, CONT and NAME
// lines, which go test without -v does not print either.
func (p *printer) flush(key string) {
	for _, l := range p.tests[key] {
		if !strings.HasPrefix(l, "=== ") {
			io.WriteString(p.w, l)
		}
	}
	delete(p.tests, key)
}

// short names a package of the module as go test's pattern would: ./ingest.
func (p *printer) short(pkg string) string {
	if p.module == "" {
		return pkg
	}
	if pkg == p.module {
		return "."
	}
	if rest, ok := strings.CutPrefix(pkg, p.module+"/"); ok {
		return "./" + rest
	}
	return pkg
}

// logLine is the first line of a t.Log, t.Skip or t.Error message.
var logLine = regexp.MustCompile(`^\s+[^\s:]+\.go:\d+: `)

// skipReason returns the last message a skipped test logged, on one line:
// its t.Skip message with the file and line.
func skipReason(out []string) string {
	var msg []string
	for _, l := range out {
		switch {
		case strings.HasPrefix(l, "--- SKIP: "):
			// the result line
		case logLine.MatchString(l):
			msg = []string{strings.TrimSpace(l)}
		case msg != nil && strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "=== "):
			msg = append(msg, strings.TrimSpace(l)) // a continuation line
		}
	}
	if msg == nil {
		return "(no reason given)"
	}
	return strings.Join(msg, " ")
}

// allowed reads a list of allowed skips: one regular expression a line,
// matched against a skip's summary line; blank lines and lines starting
// with # are left out.
func allowed(r io.Reader) ([]*regexp.Regexp, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var res []*regexp.Regexp
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		re, err := regexp.Compile(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		res = append(res, re)
	}
	return res, nil
}

// notAllowed returns the skips no expression of allow matches.
func notAllowed(skips []skip, allow []*regexp.Regexp) []skip {
	var out []skip
	for _, s := range skips {
		ok := false
		for _, re := range allow {
			if re.MatchString(s.String()) {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, s)
		}
	}
	return out
}
