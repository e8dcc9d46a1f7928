package docs

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/internal/testbin"
)

// root is the repository's root, seen from this package's directory.
const root = ".."

// manual returns the pages of the manual: README.md and every .md file
// under docs/, by their paths from the root.
func manual(t *testing.T) []*page {
	t.Helper()
	paths := []string{"README.md"}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			paths = append(paths, path.Join("docs", filepath.ToSlash(p)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pages []*page
	for _, p := range paths {
		pg, err := readPage(p)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, pg)
	}
	return pages
}

func readPage(p string) (*page, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		return nil, err
	}
	return parsePage(p, string(b))
}

// TestLinks: every relative link of the manual names a file or directory
// of the repository, and every #anchor a heading (or an <a id>) of the
// page it points at.
func TestLinks(t *testing.T) {
	pages := manual(t)
	byPath := map[string]*page{}
	for _, p := range pages {
		byPath[p.path] = p
	}
	n := 0
	for _, p := range pages {
		for _, l := range p.links {
			n++
			if err := checkLink(p, l.target, byPath); err != nil {
				t.Errorf("%s:%d: link %q: %v", p.path, l.line, l.target, err)
			}
		}
	}
	t.Logf("%d links in %d pages", n, len(pages))
	if n < 50 {
		t.Errorf("found %d links in %d pages; the parser is missing some", n, len(pages))
	}
}

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// checkLink checks one link target of page from.
func checkLink(from *page, target string, pages map[string]*page) error {
	if schemeRE.MatchString(target) {
		return nil // a URL: not checked here
	}
	file, frag, _ := strings.Cut(target, "#")
	file, err := url.PathUnescape(file)
	if err != nil {
		return err
	}
	to := from.path
	if file != "" {
		if strings.HasPrefix(file, "/") {
			return fmt.Errorf("an absolute path does not resolve on GitHub; write it relative to %s", from.path)
		}
		to = path.Join(path.Dir(from.path), file)
		if to == ".." || strings.HasPrefix(to, "../") {
			return fmt.Errorf("points outside the repository (%s)", to)
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(to))); err != nil {
			return fmt.Errorf("no such file: %s", to)
		}
	}
	if frag == "" {
		return nil
	}
	if !strings.HasSuffix(to, ".md") {
		return fmt.Errorf("an anchor into %s, which is not a Markdown page", to)
	}
	p := pages[to]
	if p == nil {
		if p, err = readPage(to); err != nil {
			return err
		}
		pages[to] = p
	}
	if !p.anchors[frag] {
		return fmt.Errorf("%s has no heading with anchor #%s (it has %s)", to, frag, strings.Join(sortedKeys(p.anchors), ", "))
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// bin is the inferwatch binary the tests run.
var bin testbin.Binary

// TestMain removes the inferwatch binary the tests build.
func TestMain(m *testing.M) {
	code := m.Run()
	bin.Remove()
	os.Exit(code)
}

// inferwatchBinary is the inferwatch binary, built once per test run.
func inferwatchBinary(t *testing.T) string { return bin.Path(t) }

// commandSpec is what a command's --help says of it: the flags it
// defines (and whether each takes a value), and whether it takes
// arguments besides its flags.
type commandSpec struct {
	flags    map[string]bool // name → takes a value
	takesArg bool
}

var (
	flagLineRE  = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9._-]*)(?: (\S+))?$`)
	shortBoolRE = regexp.MustCompile(`^  -([A-Za-z0-9])\t`)
	// An argument in a usage line: a word in capitals after a bracketed
	// or parenthesised flag, not the value of a flag.
	usageArgRE = regexp.MustCompile(`[\])] [A-Z][A-Z_]*\b`)
)

// specOf runs inferwatch CMD --help and reads the flags it prints, as
// flag.PrintDefaults prints them. A command the binary does not have
// answers with an error and a non-zero exit.
func specOf(bin string, cmd []string) (*commandSpec, error) {
	c := exec.Command(bin, append(append([]string{}, cmd...), "--help")...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()+stdout.String()), "\n")
		return nil, fmt.Errorf("not a command of the binary: inferwatch %s --help: %v: %s", strings.Join(cmd, " "), err, first)
	}
	s := &commandSpec{flags: map[string]bool{}}
	lines := strings.Split(stdout.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Usage:") {
			s.takesArg = usageArgRE.MatchString(l)
		}
		if m := shortBoolRE.FindStringSubmatch(l); m != nil {
			s.flags[m[1]] = false
			continue
		}
		// A flag's line is followed by its usage, indented by four
		// spaces and a tab.
		if m := flagLineRE.FindStringSubmatch(l); m != nil && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    \t") {
			s.flags[m[1]] = m[2] != ""
		}
	}
	return s, nil
}

// checkArgs parses args as Go's flag package would with spec's flags and
// says what it would refuse: an unknown flag, a flag without its value, an
// argument to a command that takes none, or a flag after an argument (not
// parsed as a flag).
func checkArgs(spec *commandSpec, args []string) error {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return fmt.Errorf("bad flag syntax: %s", a)
		}
		name, _, hasValue := strings.Cut(name, "=")
		if name == "help" || name == "h" {
			continue
		}
		takesValue, ok := spec.flags[name]
		if !ok {
			return fmt.Errorf("flag provided but not defined: -%s (the command defines %s)", name, strings.Join(sortedFlags(spec), ", "))
		}
		if takesValue && !hasValue {
			if i+1 >= len(args) {
				return fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
		}
	}
	rest := args[i:]
	if len(rest) > 0 && !spec.takesArg {
		return fmt.Errorf("unexpected argument %q: the command takes only flags", rest[0])
	}
	for _, a := range rest {
		if len(a) > 1 && a[0] == '-' {
			return fmt.Errorf("%s comes after the argument %q, so it is read as an argument, not a flag", a, rest[0])
		}
	}
	return nil
}

func sortedFlags(s *commandSpec) []string {
	var out []string
	for f := range s.flags {
		out = append(out, "-"+f)
	}
	sort.Strings(out)
	return out
}

// TestCommands: every inferwatch command of the manual's code blocks
// names a command of the binary and only flags that command defines, as
// its own flag set parses them. The values are not checked: FILE or URL
// stand for what the reader gives.
func TestCommands(t *testing.T) {
	bin := inferwatchBinary(t)
	specs := map[string]*commandSpec{}
	n := 0
	for _, p := range manual(t) {
		vars := map[string]string{}
		for _, b := range p.blocks {
			switch b.info {
			case "", "sh", "bash", "shell", "console", "text":
			default:
				continue
			}
			cmds, err := shellCommands(b, vars)
			if err != nil {
				t.Errorf("%s:%d: %v", p.path, b.line, err)
				continue
			}
			for _, c := range cmds {
				args, ok := inferwatchArgs(c.words)
				if !ok {
					continue
				}
				n++
				if err := checkCommand(bin, specs, args); err != nil {
					t.Errorf("%s:%d: inferwatch %s: %v", p.path, c.line, strings.Join(args, " "), err)
				}
			}
		}
	}
	// The synopses and commands shown in code spans, in prose and in
	// tables: the command, and every --flag they name.
	spans := 0
	for _, p := range manual(t) {
		for _, sp := range p.spans {
			words := strings.Fields(strings.ReplaceAll(sp.target, `\|`, "|"))
			if len(words) < 2 || words[0] != "inferwatch" {
				continue
			}
			spans++
			if err := checkSynopsis(bin, specs, words[1:]); err != nil {
				t.Errorf("%s:%d: `%s`: %v", p.path, sp.line, sp.target, err)
			}
		}
	}
	t.Logf("%d inferwatch commands in code blocks and %d in code spans, %d commands and subcommands", n, spans, len(specs))
	if n < 40 {
		t.Errorf("found %d inferwatch commands in the manual's code blocks; the parser is missing some", n)
	}
}

// checkCommand checks one command line's arguments (what follows
// inferwatch) against the command's --help.
func checkCommand(bin string, specs map[string]*commandSpec, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command")
	}
	cmd, rest := args[:1], args[1:]
	if args[0] == "backtest" && len(args) > 1 {
		cmd, rest = args[:2], args[2:]
	}
	key := strings.Join(cmd, " ")
	spec, ok := specs[key]
	if !ok {
		var err error
		if spec, err = specOf(bin, cmd); err != nil {
			return err
		}
		specs[key] = spec
	}
	return checkArgs(spec, rest)
}

var synopsisFlagRE = regexp.MustCompile(`(?:^|[\s\[(|])--?([A-Za-z][A-Za-z0-9._-]*)`)

// checkSynopsis checks a command shown in a code span, such as
// "detect --input FILE [--detector NAME]": the command exists and every
// flag it names is one the command defines. Its arguments are not
// parsed, since a synopsis writes alternatives and optional parts.
func checkSynopsis(bin string, specs map[string]*commandSpec, words []string) error {
	cmd := words[:1]
	if words[0] == "backtest" && len(words) > 1 && !strings.HasPrefix(words[1], "-") {
		cmd = words[:2]
	}
	key := strings.Join(cmd, " ")
	spec, ok := specs[key]
	if !ok {
		var err error
		if spec, err = specOf(bin, cmd); err != nil {
			return err
		}
		specs[key] = spec
	}
	for _, m := range synopsisFlagRE.FindAllStringSubmatch(strings.Join(words[len(cmd):], " "), -1) {
		if name := m[1]; name != "help" && name != "h" {
			if _, ok := spec.flags[name]; !ok {
				return fmt.Errorf("inferwatch %s defines no flag -%s", key, name)
			}
		}
	}
	return nil
}

var topKeyRE = regexp.MustCompile(`(?m)^([a-z_]+):`)

// configuration is a complete configuration of the manual: a YAML block
// with source and groups.
type configuration struct {
	page string // its page, from the repository's root
	line int    // of its opening fence
	text string
}

// isConfiguration says whether a YAML text is a complete configuration:
// one with source and groups.
func isConfiguration(text string) bool {
	keys := map[string]bool{}
	for _, m := range topKeyRE.FindAllStringSubmatch(text, -1) {
		keys[m[1]] = true
	}
	return keys["source"] && keys["groups"]
}

// configurations returns the complete configurations of the manual, in
// the order of the pages and of the blocks in each.
func configurations(t *testing.T) []configuration {
	t.Helper()
	var out []configuration
	for _, p := range manual(t) {
		for _, b := range p.blocks {
			if b.info != "yaml" && b.info != "yml" {
				continue
			}
			text := strings.Join(b.lines, "\n") + "\n"
			if isConfiguration(text) {
				out = append(out, configuration{page: p.path, line: b.line, text: text})
			}
		}
	}
	return out
}

// TestConfigurations: every complete configuration of the manual (a YAML
// block with source and groups) passes inferwatch check.
func TestConfigurations(t *testing.T) {
	bin := inferwatchBinary(t)
	dir := t.TempDir()
	cs := configurations(t)
	for i, c := range cs {
		file := filepath.Join(dir, fmt.Sprintf("config-%d.yml", i+1))
		if err := os.WriteFile(file, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "check", file).CombinedOutput(); err != nil {
			t.Errorf("%s:%d: the configuration does not pass inferwatch check: %v\n%s", c.page, c.line, err, out)
		}
	}
	t.Logf("%d configurations", len(cs))
	if len(cs) == 0 {
		t.Error("no complete configuration (source and groups) in the manual")
	}
}
