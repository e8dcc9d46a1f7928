package rulefmt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

func init() {
	badFiles["syntax-dedented-rule.bad.yaml"] = []string{
		`syntax-dedented-rule.bad.yaml:38:6: YAML syntax error: the list item "- name: queue_depth" at column 6 lines up with no list item above it; indent it to column 7 like the rule at line 30, or to column 3 like the group at line 19`,
	}
	badFiles["syntax-key-too-far.bad.yaml"] = []string{
		`syntax-key-too-far.bad.yaml:8:10: YAML syntax error: the key "lookback" at column 10 is indented deeper than "expr" at line 7 (column 9), so YAML reads it as more of the value of "expr"; indent it to column 9`,
	}
	badFiles["syntax-tab.bad.yaml"] = []string{
		`syntax-tab.bad.yaml:7:1: YAML syntax error: a tab in the indentation; YAML indents with spaces only, so replace it with spaces (the entry above at line 6 starts at column 9)`,
	}
	badFiles["syntax-missing-colon.bad.yaml"] = []string{
		`syntax-missing-colon.bad.yaml:6:5: YAML syntax error: "rules" is not a key: value pair: is a colon missing? write rules:`,
	}
	badFiles["syntax-unclosed-quote.bad.yaml"] = []string{
		`syntax-unclosed-quote.bad.yaml:7:15: YAML syntax error: the string opened with " here is not closed on its line: YAML reads on to the " at line 10 column 15, then finds "sum(vllm:num_requests_running)\""; add the closing " on line 7`,
	}
	badFiles["syntax-unclosed-flow.bad.yaml"] = []string{
		`syntax-unclosed-flow.bad.yaml:1:9: YAML syntax error: this { is never closed: line 2 is back at the indentation of the block around it; close it with }`,
	}
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

// TestSyntaxErrors checks that YAML syntax errors are reported where the
// mistake is, with what to do about it.
func TestSyntaxErrors(t *testing.T) {
	f := func(name, text, want string) {
		t.Helper()
		if got := parseOneError(t, name, text); !strings.HasPrefix(got, want) {
			t.Errorf("%s:\ngot  %s\nwant %s", name, got, want)
		}
	}
	const head = "source:\n  url: http://h\ngroups:\n  - name: g\n    rules:\n      - name: a\n        expr: up\n"
	f("list item at a mapping's column", head+"      - name: b\n        expr: up\n    - name: c\n      expr: up\n",
		`c.yaml:10:5: YAML syntax error: the list item "- name: c" at column 5 is not in a list: column 5 holds the keys of a mapping here, such as "rules" at line 5; indent it to column 7 like the rule at line 8, or to column 3 like the group at line 4`)
	f("list item between columns", head+"     - name: c\n       expr: up\n",
		`c.yaml:8:6: YAML syntax error: the list item "- name: c" at column 6 lines up with no list item above it; indent it to column 7 like the rule at line 6, or to column 3 like the group at line 4`)
	f("key at a list's column", head+"      for: 5m\n",
		`c.yaml:8:7: YAML syntax error: the key "for" at column 7 is not in a mapping: column 7 holds the items of "rules" here, the latest at line 6; indent it to column 9 like "expr" at line 7, or to column 5 like "rules" at line 5`)
	f("key one column too far", "source:\n  url: http://h\n   timeout: 5s\n",
		`c.yaml:3:4: YAML syntax error: the key "timeout" at column 4 is indented deeper than "url" at line 2 (column 3), so YAML reads it as more of the value of "url"; indent it to column 3`)
	f("key deeper than a quoted value", "source:\n  url: \"http://h\"\n    timeout: 5s\n",
		`c.yaml:3:5: YAML syntax error: the key "timeout" at column 5 is indented deeper than "url" at line 2 (column 3), whose value is complete; indent it to column 3 like "url" at line 2`)
	f("tab", "source:\n\turl: http://h\n", `c.yaml:2:1: YAML syntax error: a tab in the indentation; YAML indents with spaces only`)
	f("tab after spaces", head+"    \tlookback: 1h\n", `c.yaml:8:5: YAML syntax error: a tab in the indentation`)
	f("line of only a tab", "source:\n  url: http://h\n\t\ngroups: []\n", `c.yaml:3:1: YAML syntax error: a tab in the indentation`)
	f("tab in block text's indentation", head+"        labels: {team: a}\n        detector: |\n          x\n\t\n          y\n", `c.yaml:11:1: YAML syntax error: a tab in the indentation`)
	f("missing colon before a sibling key", "source:\n  url http://h\n  timeout: 5s\n",
		`c.yaml:2:3: YAML syntax error: "url http://h" is not a key: value pair: is a colon missing? write url: http://h`)
	f("colon without a space", "source:\n  url: http://h\n  timeout:5s\n",
		`c.yaml:3:3: YAML syntax error: "timeout:5s" is not a key: value pair: a colon after a key needs a space after it; write timeout: 5s`)
	f("second colon", head+"      - name: b\n        expr: a: b\n",
		`c.yaml:9:15: YAML syntax error: "a:" after "expr:" reads as a second key on this line; if it is the value of "expr", quote it: expr: "a: b"`)
	f("list on its key's line", "groups: - name: g\n",
		`c.yaml:1:9: YAML syntax error: a list cannot start on the line of its key "groups"; put "- name: g" on the next line, indented`)
	f("unclosed quote", "source:\n  url: 'http://h\ngroups: []\n",
		`c.yaml:2:8: YAML syntax error: the string opened with ' here is never closed; add the closing '`)
	f("comma missing in a flow mapping", "source: {url: http://h timeout: 5s}\n",
		`c.yaml:1:24: YAML syntax error: a comma is missing before "timeout": the entries of the mapping opened with { at line 1 column 9 are separated by commas`)
	f("unclosed flow list and mapping", "source: {url: http://h}\ngroups: [{name: g, rules: [{name: r, expr: up}]\nnats:\n  url: nats://n:4222\n",
		`c.yaml:2:10: YAML syntax error: this { is never closed, nor the [ at line 2 column 9: line 3 is back at the indentation of the block around them; close them with }]`)
	f("second colon in a flow entry", "source: {url: http://h, timeout: : 5s}\n",
		`c.yaml:1:34: YAML syntax error: a second colon in one entry of the mapping opened with { at line 1 column 9; remove it, or end the entry with a comma`)
	f("wrong closer", "source: {url: 'http://h']\n", `c.yaml:1:25: YAML syntax error: this ] does not close the { at line 1 column 9; write }`)
	f("block text dedented", head+"      - name: b\n        expr: |\n            up\n          + 1\n",
		`c.yaml:11:11: YAML syntax error: "+ 1" at column 11 is indented less than the block text of "expr" (line 9) above it, and more than the keys around it; indent it to column 13 to continue that text, or to column 9 like "expr" at line 9`)
	f("unknown alias", "source: {url: 'http://h'}\ngroups: [{name: g, rules: [*r]}]\n",
		`c.yaml:2:28: YAML syntax error: the alias *r refers to no anchor; define &r before it`)
	f("reserved first character", "source: {url: @h}\n", `c.yaml:1:15: YAML syntax error: a value cannot start with @; put it in quotes`)
	f("CRLF lines", strings.ReplaceAll(head+"     - name: c\n", "\n", "\r\n"), `c.yaml:8:6: YAML syntax error: the list item "- name: c" at column 6`)
	f("in a second document", "source: {url: 'http://h'}\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n---\na:\n  b: 1\n c: 2\n",
		`c.yaml:6:2: YAML syntax error: the key "c" at column 2 lines up with no key above it; indent it to column 3 like "b" at line 5, or to column 1 like "a" at line 4`)

	// Nesting: yaml.v3 gives "line 1: did not find expected node
	// content" or "exceeded max depth of 10000", without a position.
	f("10000 [ never closed", strings.Repeat("[", 10000),
		`c.yaml:1:10000: YAML syntax error: this [ is never closed, nor the 9999 [ and { around it (the first at line 1 column 1): the file ends inside them`)
	f("10000 { never closed", "source: "+strings.Repeat("{", 10000),
		`c.yaml:1:10008: YAML syntax error: this { is never closed, nor the 9999 [ and { around it (the first at line 1 column 9): the file ends inside them`)
	f("10001 [ closed", strings.Repeat("[", 10001)+strings.Repeat("]", 10001),
		`c.yaml:1:10001: YAML syntax error: lists and mappings are nested more than 10000 levels deep here`)
	f("10001 block lists", strings.Repeat("- ", 10001),
		`c.yaml:1:20001: YAML syntax error: lists and mappings are nested more than 10000 levels deep here`)
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
	f("document marker only", "---\n", "c.yaml:1:1: "+empty)
	f("document marker without a line break", "---", "c.yaml:1:1: "+empty)
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

// TestScanTextAcceptsYAML checks that the scanner finding syntax errors
// finds none in YAML that yaml.v3 reads: a wrong finding would hide
// yaml.v3's own message.
func TestScanTextAcceptsYAML(t *testing.T) {
	texts := []string{
		"a:\n- 1\n- 2\nb: 3\n",
		"a:\n  - b: 1\n    c: 2\n  -\n    d: 3\n  - - x\n    - y\n",
		"a: |\n  text\n\n   more\n  \tinside\nb: >-\n    folded\n    text\nc: |2\n   x\n",
		"a: [1,\n2, {b: c,\n  d: [e]}]\nf: {\"g\": 1, 'h': 2}\n",
		"a: \"one\n  two\\\" three\"\nb: 'it''s\n  here'\n",
		"a: plain\n  text over\n  lines\nb: 1\n",
		"? complex\n: key\n",
		"base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\nlist: &l\n  - 1\nagain: *l\n",
		"- &a\n  name: x\n- !!str tagged\n- *a\n",
		"%YAML 1.1\n---\na: 1\n...\n---\nb: 2\n",
		"a: 1 # comment: with colon\n# b:\n   # indented comment\nc: http://h:1/x#y\n",
		"\"quoted key\": 1\n'single': 2\nkey with spaces: 3\n",
		"a:\t1\nb: [1,\t2]\n",
		"a:\n\n  b: 1\n\n\nc: 2\n",
		"  a: 1\n  b: 2\n",
		"expr: sum by (le) (rate(x{a=\"b\"}[5m])) > 0\n",
	}
	files, err := filepath.Glob(filepath.Join(configDir, "*.good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(data))
	}
	for _, text := range texts {
		lines := splitLines([]byte(text))
		if !readsAsYAML(lines) {
			t.Errorf("yaml.v3 does not read %q", text)
			continue
		}
		if pr, ok := scanText(lines); ok {
			t.Errorf("found %d:%d: %s\nin %q", pr.line, pr.col, pr.msg, text)
		}
	}
}
