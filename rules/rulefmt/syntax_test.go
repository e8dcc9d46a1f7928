package rulefmt

import (
	"strings"
	"testing"
	"unicode/utf16"
)

func init() {
	badFiles["empty.bad.yaml"] = []string{
		`empty.bad.yaml:1:1: the configuration is empty (it holds only comments); it needs at least source.url and one group`,
	}
	badFiles["latin1.bad.yaml"] = []string{
		`latin1.bad.yaml:9:17: invalid UTF-8: byte 0xe9 is not part of a UTF-8 character; save the file as UTF-8`,
	}
}

// parseOneError parses text and returns its only error line.
func parseOneError(t *testing.T, name, text string) string {
	t.Helper()
	_, err := Parse([]byte(text), "c.yaml")
	if err == nil {
		t.Errorf("%s: no error", name)
		return ""
	}
	got := err.Error()
	if strings.Contains(got, "\n") {
		t.Errorf("%s: more than one error:\n%s", name, got)
	}
	return got
}

// TestTextErrors checks the errors of files that are not YAML text, or
// hold nothing: each has a position.
func TestTextErrors(t *testing.T) {
	f := func(name, text, want string) {
		t.Helper()
		if got := parseOneError(t, name, text); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", name, got, want)
		}
	}
	const empty = "the configuration is empty; it needs at least source.url and one group"
	f("empty", "", "c.yaml:1:1: "+empty)
	f("white space", "  \n\n \n", "c.yaml:1:1: "+empty)
	f("byte-order mark only", "\ufeff", "c.yaml:1:1: "+empty)
	f("comments only", "# source:\n#   url: http://h\n", "c.yaml:1:1: the configuration is empty (it holds only comments); it needs at least source.url and one group")
	f("document marker only", "---\n", "c.yaml:2:1: "+empty)
	const nul = "the configuration holds a NUL byte (0x00): it is a binary file, or UTF-16 text without a byte-order mark, not YAML; save it as UTF-8 text"
	f("NUL", "source:\n  url: http://h\x00\n", "c.yaml:2:16: "+nul)
	f("binary", "\x7fELF\x02\x01\x01\x00\x00", "c.yaml:1:1: control character U+007F is not allowed in YAML; remove it (inside a double-quoted string, write it as \\x7F)")
	f("UTF-16 without a byte-order mark", string(utf16LE("source:\n")), "c.yaml:1:2: "+nul)
	f("invalid UTF-8", "source:\n  url: http://h\ngroups:\n  - name: \"d\u00e9j\xe0 vu\"\n",
		"c.yaml:4:15: invalid UTF-8: byte 0xe0 is not part of a UTF-8 character; save the file as UTF-8")
	f("UTF-16 surrogate in UTF-8", "a: \xed\xa0\x80\n", "c.yaml:1:4: invalid UTF-8: byte 0xed is not part of a UTF-8 character; save the file as UTF-8")
	f("control character", "a: 1\r\nb: x\x1b[0m\n", "c.yaml:2:5: control character U+001B is not allowed in YAML; remove it (inside a double-quoted string, write it as \\x1B)")
	f("C1 control character", "a: \u0080\n", "c.yaml:1:4: control character U+0080 is not allowed in YAML; remove it (inside a double-quoted string, write it as \\x80)")

	// UTF-16 with a byte-order mark is YAML, which yaml.v3 reads.
	cfg, err := Parse(utf16LE("\ufeffsource: {url: 'http://h'}\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n"), "c.yaml")
	if err != nil || cfg.Source.URL != "http://h" {
		t.Errorf("UTF-16 with a byte-order mark: %v", err)
	}
}

func utf16LE(s string) []byte {
	var b []byte
	for _, c := range utf16.Encode([]rune(s)) {
		b = append(b, byte(c), byte(c>>8))
	}
	return b
}
