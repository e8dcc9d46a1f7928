package rulefmt

// Finding mistakes in the text of a configuration where they are.
//
// yaml.v3 reports a syntax error with at most one line number, often that
// of the block or flow collection the mistake is in rather than the line
// holding it, and never with a column. When it fails, the text is read
// again here, line by line, following its structure the way YAML does
// (indentation, lists and mappings, block text, quoted strings and flow
// collections spanning lines), to find the first place where that
// structure breaks and to say how to mend it.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxYAMLDepth is how deep yaml.v3 lets lists and mappings nest.
const maxYAMLDepth = 10000

// A textProblem is a mistake in the text of a configuration: where it is
// (1-based line and column, the column counting characters) and what is
// wrong.
type textProblem struct {
	line, col int
	msg       string
	// from is the first line of what the mistake is in: the text before
	// it must read as YAML for the finding to be trusted.
	from int
}

// checkText finds what makes data unreadable as YAML text: a NUL byte,
// invalid UTF-8 or a character YAML does not allow. Text starting with a
// UTF-16 byte-order mark is left to yaml.v3, which reads it.
func checkText(data []byte) (textProblem, bool) {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return textProblem{}, false
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return textProblem{line: line, col: col, msg: fmt.Sprintf(
				"invalid UTF-8: byte 0x%02x is not part of a UTF-8 character; save the file as UTF-8", data[i])}, true
		case r == 0:
			return textProblem{line: line, col: col, msg: "the configuration holds a NUL byte (0x00): it is a binary file, " +
				"or UTF-16 text without a byte-order mark, not YAML; save it as UTF-8 text"}, true
		case !yamlPrintable(r):
			return textProblem{line: line, col: col, msg: fmt.Sprintf(
				"control character U+%04X is not allowed in YAML; remove it (inside a double-quoted string, write it as \\x%02X)", r, r)}, true
		}
		if r == '\n' {
			line, col = line+1, 1
		} else if r != '\r' || i+1 == len(data) || data[i+1] != '\n' {
			col++
		}
		i += size
	}
	return textProblem{}, false
}

// yamlPrintable reports whether YAML (and yaml.v3's reader) allows r.
func yamlPrintable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0x7e) || r == 0x85 ||
		(r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || (r >= 0x10000 && r <= 0x10ffff)
}

var unknownAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// findSyntaxError locates err, yaml.v3's error reading data, and says what
// is wrong. When the text shows nothing it can be sure of, it falls back to
// yaml.v3's message at yaml.v3's line.
func findSyntaxError(data []byte, err error) textProblem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if strings.HasPrefix(msg, "did not find expected key") || strings.HasPrefix(msg, "did not find expected '-'") ||
			strings.HasPrefix(msg, "did not find expected ','") || strings.HasPrefix(msg, "did not find expected node") ||
			strings.HasPrefix(msg, "did not find expected <") {
			line++ // the parser counts lines from 0
		}
	}
	lines := splitLines(data)
	if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil {
		if pr, ok := findAlias(lines, m[1]); ok {
			return pr
		}
	}
	if pr, ok := scanText(lines); ok && readsAsYAML(lines[:max(pr.from, 1)-1]) {
		return pr
	}
	line = max(1, min(line, len(lines)))
	col := 1
	if line <= len(lines) {
		col += len(lines[line-1]) - len(strings.TrimLeft(lines[line-1], " "))
	}
	return textProblem{line: line, col: col, msg: "YAML syntax error: " + msg}
}

func splitLines(data []byte) []string {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// readsAsYAML reports whether lines hold YAML documents yaml.v3 reads.
func readsAsYAML(lines []string) bool {
	dec := yaml.NewDecoder(strings.NewReader(strings.Join(lines, "\n")))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

// findAlias finds the first alias *name in lines.
func findAlias(lines []string, name string) (textProblem, bool) {
	re, err := regexp.Compile(`(?:^|[\s\[{,])(\*` + regexp.QuoteMeta(name) + `)(?:$|[\s\]},])`)
	if err != nil {
		return textProblem{}, false
	}
	for i, l := range lines {
		if m := re.FindStringSubmatchIndex(l); m != nil {
			return textProblem{line: i + 1, col: column(l, m[2]), from: i + 1, msg: fmt.Sprintf(
				"YAML syntax error: the alias *%s refers to no anchor; define &%s before it (an anchor comes before its aliases)", name, name)}, true
		}
	}
	return textProblem{}, false
}

// column is the 1-based column, in characters, of byte i of line.
func column(line string, i int) int {
	return utf8.RuneCountInString(line[:min(i, len(line))]) + 1
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func skipBlank(s string, i int) int {
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return i
}

// isDash reports whether a list item's dash is at byte i of s.
func isDash(s string, i int) bool {
	return i < len(s) && s[i] == '-' && (i+1 == len(s) || isBlank(s[i+1]))
}

func isDocMarker(s string) bool {
	return (strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...")) && (len(s) == 3 || isBlank(s[3]))
}

// keyAt reads a key (a plain or quoted scalar followed by a colon and a
// blank) at byte i of s, returning its name and where its value starts.
func keyAt(s string, i int) (name string, value int, ok bool) {
	for i < len(s) && (s[i] == '&' || s[i] == '!') { // properties
		for i < len(s) && !isBlank(s[i]) {
			i++
		}
		i = skipBlank(s, i)
	}
	if i >= len(s) {
		return "", 0, false
	}
	switch s[i] {
	case '"', '\'':
		j := scanQuote(s, i+1, s[i])
		if j < 0 {
			return "", 0, false
		}
		k := skipBlank(s, j)
		if k < len(s) && s[k] == ':' && (k+1 == len(s) || isBlank(s[k+1])) {
			return s[i+1 : j-1], k + 1, true
		}
		return "", 0, false
	case '[', '{', '|', '>', '#', '*', '%', '@', '`', ',', ']', '}':
		return "", 0, false
	}
	for j := i; j < len(s); j++ {
		switch s[j] {
		case ':':
			if j+1 == len(s) || isBlank(s[j+1]) {
				return strings.TrimRight(s[i:j], " \t"), j + 1, true
			}
		case '#':
			if j > i && isBlank(s[j-1]) {
				return "", 0, false
			}
		}
	}
	return "", 0, false
}

// scanQuote returns the index just after the quote q closing the string
// whose text starts at byte i of s, or -1 when s ends first.
func scanQuote(s string, i int, q byte) int {
	for i < len(s) {
		switch c := s[i]; {
		case q == '"' && c == '\\':
			i += 2
			continue
		case c == q:
			if q == '\'' && i+1 < len(s) && s[i+1] == '\'' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return -1
}

// What the value of the latest key or list item is, for the lines after.
type valState int

const (
	valOpen  valState = iota // none on its line: the lines indented below are it
	valPlain                 // plain text, which more indented lines continue
	valDone                  // complete: quoted, flow, alias or block text
)

// A block is a list or mapping written in block style.
type block struct {
	col     int // byte (= character) column, from 0, of its keys or dashes
	seq     bool
	compact bool   // a list at the column of the key it is the value of
	key     string // the key it is the value of, if any
	line    int    // the line of its latest entry
	lastKey string // a mapping's latest key
}

// States within a flow collection.
const (
	fsNode  = iota // expecting an entry (or the end)
	fsPlain        // in plain text
	fsAfter        // after a complete entry: a comma, a colon or the end must follow
)

type flowLevel struct {
	ch        byte // [ or {
	line, col int  // where it opens (col from 1)
	colons    int  // colons in its current entry
}

type textScanner struct {
	lines  []string
	ln     int  // the current line, from 1
	gaveUp bool // the text uses YAML this scanner does not follow
	stack  []block
	popped []block // the blocks the current line ends, innermost first

	val       valState
	owner     int    // column of the key or dash the value belongs to; -1 for a document
	ownerKey  string // that key, if it is one
	ownerDash bool
	ownerLine int
	plainLine int // where plain text began
	plainCol  int
	plainLast int // its latest line
	plainOwn  bool
	wasBlock  bool // the latest value is block text
	bsLine    int  // where block text began

	bs                 bool // in block text
	bsParent, bsIndent int

	quote               byte // in a quoted string opened with quote
	quoteLine, quoteCol int  // where (col from 1)

	flow       []flowLevel
	flowFrom   int // the line where the outermost flow collection opens
	flowIndent int // the column of the key or dash it belongs to
	fstate     int
	wordLine   int // where the latest word of plain text in a flow collection starts
	wordCol    int // (byte index)
}

// scanText reads lines as YAML and returns the first mistake in them.
func scanText(lines []string) (textProblem, bool) {
	s := &textScanner{lines: lines, owner: -1}
	for i, text := range lines {
		s.ln = i + 1
		if pr := s.line(text); pr != nil {
			return *pr, true
		}
		if s.gaveUp {
			return textProblem{}, false
		}
	}
	s.ln = len(lines)
	switch {
	case len(s.flow) > 0:
		return *s.unclosedFlow(0), true
	case s.quote != 0:
		return *s.unclosedQuote(), true
	}
	return textProblem{}, false
}

func (s *textScanner) problem(line int, text string, i int, format string, args ...any) *textProblem {
	return &textProblem{line: line, col: column(text, i), from: line, msg: "YAML syntax error: " + fmt.Sprintf(format, args...)}
}

func (s *textScanner) line(text string) *textProblem {
	if len(s.flow) > 0 {
		if isDocMarker(text) {
			return s.unclosedFlow(s.ln)
		}
		return s.flowText(text, 0)
	}
	if s.quote != 0 {
		if isDocMarker(text) {
			return s.unclosedQuote()
		}
		j := scanQuote(text, 0, s.quote)
		if j < 0 {
			return nil
		}
		s.quote = 0
		return s.rest(text, j, s.quoteLine)
	}
	ind := 0
	for ind < len(text) && text[ind] == ' ' {
		ind++
	}
	if s.bs {
		if ind < len(text) && text[ind] == '\t' && (s.bsIndent < 0 || ind < s.bsIndent) {
			return s.tab(text, ind) // a tab where block text is indented
		}
		if strings.TrimLeft(text, " \t") == "" {
			return nil
		}
		if s.bsIndent < 0 && ind > s.bsParent {
			s.bsIndent = ind
			return nil
		}
		if s.bsIndent >= 0 && ind >= s.bsIndent {
			return nil
		}
		s.bs = false
	}
	j := skipBlank(text, 0)
	if k := strings.IndexByte(text[:j], '\t'); k >= 0 {
		return s.tab(text, k)
	}
	if j == len(text) || text[j] == '#' {
		return nil
	}
	if ind == 0 && isDocMarker(text) {
		if k := skipBlank(text, 3); k < len(text) && text[k] != '#' {
			s.gaveUp = true
			return nil
		}
		s.stack, s.val, s.owner, s.ownerKey, s.ownerDash = nil, valOpen, -1, "", false
		return nil
	}
	if ind == 0 && text[0] == '%' && len(s.stack) == 0 && s.owner < 0 {
		return nil // a directive
	}
	return s.blockLine(text, ind)
}

func (s *textScanner) top() *block { return &s.stack[len(s.stack)-1] }

func (s *textScanner) push(b block) {
	b.line = s.ln
	s.stack = append(s.stack, b)
}

func (s *textScanner) open(col int, key string, dash bool) {
	s.val, s.owner, s.ownerKey, s.ownerDash, s.ownerLine = valOpen, col, key, dash, s.ln
}

// blockLine reads a line of block structure whose content starts at ind.
func (s *textScanner) blockLine(text string, ind int) *textProblem {
	if text[ind] == '?' && (ind+1 == len(text) || isBlank(text[ind+1])) {
		s.gaveUp = true // an explicit key
		return nil
	}
	dash := isDash(text, ind)
	if s.val == valPlain && ind > s.owner {
		if name, _, ok := keyAt(text, ind); ok && !dash {
			return s.keyInPlain(text, ind, name)
		}
		s.plainLast = s.ln
		return nil
	}
	if s.val == valOpen && (ind > s.owner || (ind == s.owner && dash && !s.ownerDash)) {
		_, _, key := keyAt(text, ind)
		switch {
		case dash:
			s.push(block{col: ind, seq: true, compact: ind == s.owner, key: s.ownerKey})
		case key:
			s.push(block{col: ind, key: s.ownerKey})
		default:
			return s.value(text, ind, s.owner, s.ownerKey, s.ownerDash, true)
		}
		if len(s.stack) > maxYAMLDepth {
			return s.tooDeep(text, ind)
		}
		return s.entry(text, ind)
	}
	s.popped = s.popped[:0]
	for len(s.stack) > 0 && s.top().col > ind {
		s.popped = append(s.popped, *s.top())
		s.stack = s.stack[:len(s.stack)-1]
	}
	if len(s.stack) > 0 && s.top().compact && s.top().col == ind && !dash {
		s.popped = append(s.popped, *s.top())
		s.stack = s.stack[:len(s.stack)-1]
	}
	switch {
	case len(s.stack) > 0 && s.top().col == ind && s.top().seq == dash:
		return s.entry(text, ind)
	case len(s.stack) > 0 && s.top().col == ind:
		return s.wrongKind(text, ind, dash)
	case len(s.stack) > 0 && len(s.popped) == 0:
		return s.deeper(text, ind, dash)
	}
	return s.misaligned(text, ind, dash)
}

// entry reads the list item or mapping entry at byte c of text, and the
// ones nested on its line (- - a, - name: a).
func (s *textScanner) entry(text string, c int) *textProblem {
	for {
		top := s.top()
		if isDash(text, c) {
			top.line = s.ln
			r := skipBlank(text, c+1)
			if r == len(text) || text[r] == '#' {
				s.open(c, "", true)
				return nil
			}
			seq := isDash(text, r)
			if _, _, key := keyAt(text, r); !seq && !key {
				return s.value(text, r, c, "", true, false)
			}
			s.push(block{col: r, seq: seq})
			if len(s.stack) > maxYAMLDepth {
				return s.tooDeep(text, r)
			}
			c = r
			continue
		}
		if text[c] == '?' && (c+1 == len(text) || isBlank(text[c+1])) {
			s.gaveUp = true
			return nil
		}
		name, v, ok := keyAt(text, c)
		if !ok {
			return s.missingColon(s.ln, text, c)
		}
		top.line, top.lastKey = s.ln, name
		r := skipBlank(text, v)
		if r == len(text) || text[r] == '#' {
			s.open(c, name, false)
			return nil
		}
		if isDash(text, r) {
			return s.problem(s.ln, text, r, "a list cannot start on the line of its key %q; put %q on the next line, indented", name, strings.TrimSpace(text[r:]))
		}
		if k, _, ok := keyAt(text, r); ok {
			return s.problem(s.ln, text, r, "%q after %q reads as a second key on this line; if it is the value of %q, quote it: %s: %q",
				k+":", name+":", name, name, strings.TrimSpace(stripComment(text[r:])))
		}
		return s.value(text, r, c, name, false, false)
	}
}

// value reads the value at byte r of text, belonging to the key or dash at
// column owner (ownLine: on a line of its own below it).
func (s *textScanner) value(text string, r, owner int, key string, dash, ownLine bool) *textProblem {
	for r < len(text) && (text[r] == '&' || text[r] == '!') { // properties
		for r < len(text) && !isBlank(text[r]) {
			r++
		}
		r = skipBlank(text, r)
	}
	if r == len(text) || text[r] == '#' {
		if !ownLine {
			s.open(owner, key, dash)
		}
		return nil
	}
	if !ownLine {
		s.owner, s.ownerKey, s.ownerDash, s.ownerLine = owner, key, dash, s.ln
	}
	s.val, s.wasBlock = valDone, false
	switch c := text[r]; c {
	case '|', '>':
		j := r + 1
		for j < len(text) && strings.IndexByte("+-0123456789", text[j]) >= 0 {
			j++
		}
		if k := skipBlank(text, j); k < len(text) && (text[k] != '#' || k == j) {
			s.gaveUp = true
			return nil
		}
		s.bs, s.bsParent, s.bsIndent, s.wasBlock, s.bsLine = true, s.owner, -1, true, s.ln
	case '"', '\'':
		s.quoteLine, s.quoteCol = s.ln, column(text, r)
		j := scanQuote(text, r+1, c)
		if j < 0 {
			s.quote = c
			return nil
		}
		return s.rest(text, j, s.ln)
	case '[', '{':
		s.flowFrom, s.flowIndent, s.fstate = s.ln, s.owner, fsNode
		return s.flowText(text, r)
	case '*':
		j := r
		for j < len(text) && !isBlank(text[j]) {
			j++
		}
		return s.rest(text, j, s.ln)
	case '@', '`', '%':
		return s.problem(s.ln, text, r, "a value cannot start with %c; put it in quotes: %q", c, strings.TrimSpace(stripComment(text[r:])))
	default:
		s.val, s.plainLine, s.plainLast, s.plainCol, s.plainOwn = valPlain, s.ln, s.ln, r, ownLine
	}
	return nil
}

// rest checks what follows a complete value ending at byte j of text, one
// that began on line from.
func (s *textScanner) rest(text string, j, from int) *textProblem {
	k := skipBlank(text, j)
	if k == len(text) || text[k] == '#' {
		return nil
	}
	if q := text[j-1]; (q == '"' || q == '\'') && from < s.ln {
		pr := s.problem(s.quoteLine, s.lines[s.quoteLine-1], 0,
			"the string opened with %c here is not closed on its line: YAML reads on to the %c at line %d column %d, then finds %q; add the closing %c on line %d",
			q, q, s.ln, column(text, j-1), strings.TrimSpace(stripComment(text[k:])), q, s.quoteLine)
		pr.col = s.quoteCol
		return pr
	}
	return s.problem(s.ln, text, k, "%q after the value that ends at column %d; remove it, or quote the whole value",
		strings.TrimSpace(stripComment(text[k:])), column(text, j-1))
}

// flowText reads text from byte i inside a flow collection.
func (s *textScanner) flowText(text string, i int) *textProblem {
	for i < len(text) {
		c := text[i]
		if s.quote != 0 {
			j := scanQuote(text, i, s.quote)
			if j < 0 {
				return nil
			}
			s.quote, s.fstate, i = 0, fsAfter, j
			continue
		}
		if isBlank(c) {
			i++
			continue
		}
		if c == '#' && (i == 0 || isBlank(text[i-1])) {
			return nil
		}
		next := byte(' ')
		if i+1 < len(text) {
			next = text[i+1]
		}
		isColon := c == ':' && (isBlank(next) || strings.IndexByte(",[]{}", next) >= 0)
		if s.fstate == fsAfter {
			switch {
			case c == ',', c == ']', c == '}':
			case c == ':':
				isColon = true
			default:
				return s.flowBroken(s.ln, i)
			}
		}
		switch {
		case c == ']' || c == '}':
			in := s.flow[len(s.flow)-1]
			if want := closer(in.ch); c != want {
				return s.problem(s.ln, text, i, "this %c does not close the %c at line %d column %d; write %c", c, in.ch, in.line, in.col, want)
			}
			s.flow = s.flow[:len(s.flow)-1]
			if len(s.flow) == 0 {
				return s.rest(text, i+1, s.ln)
			}
			s.fstate = fsAfter
		case c == ',':
			s.flow[len(s.flow)-1].colons = 0
			s.fstate, s.wordLine = fsNode, 0
		case isColon:
			in := &s.flow[len(s.flow)-1]
			if in.colons++; in.colons > 1 {
				if s.wordLine == 0 { // no plain text since the last colon
					pr := s.problem(s.ln, text, i, "a second colon in one entry of the %s opened with %c at line %d column %d; remove it, or end the entry with a comma",
						flowKind(in.ch), in.ch, in.line, in.col)
					pr.from = s.flowFrom
					return pr
				}
				return s.flowBroken(s.wordLine, s.wordCol)
			}
			s.fstate, s.wordLine = fsNode, 0
		case s.fstate == fsPlain:
			if c == '[' || c == '{' {
				return s.flowBroken(s.ln, i)
			}
			if i == 0 || isBlank(text[i-1]) {
				s.wordLine, s.wordCol = s.ln, i
			}
		case c == '[' || c == '{':
			s.flow = append(s.flow, flowLevel{ch: c, line: s.ln, col: column(text, i)})
			if len(s.flow) > maxYAMLDepth {
				return s.tooDeep(text, i)
			}
		case c == '"' || c == '\'':
			s.quote, s.quoteLine, s.quoteCol = c, s.ln, column(text, i)
		case c == '*' || c == '&' || c == '!':
			for i+1 < len(text) && !isBlank(text[i+1]) && strings.IndexByte(",[]{}", text[i+1]) < 0 {
				i++
			}
			if c == '*' {
				s.fstate = fsAfter
			}
		case c == '?' && isBlank(next):
		case c == '|' || c == '>':
			s.gaveUp = true
			return nil
		case c == '@' || c == '`' || c == '%':
			return s.problem(s.ln, text, i, "a value cannot start with %c; put it in quotes", c)
		default:
			s.fstate, s.wordLine, s.wordCol = fsPlain, s.ln, i
		}
		i++
	}
	return nil
}

func flowKind(open byte) string {
	if open == '[' {
		return "list"
	}
	return "mapping"
}

func closer(open byte) byte {
	if open == '[' {
		return ']'
	}
	return '}'
}

// flowBroken reports what is wrong at byte i of line ln inside a flow
// collection, where an entry must not start: a comma is missing, or the
// collection is not closed where the text goes back to block structure.
func (s *textScanner) flowBroken(ln, i int) *textProblem {
	text := s.lines[ln-1]
	in := s.flow[len(s.flow)-1]
	ind := len(text) - len(strings.TrimLeft(text, " "))
	if ln > in.line && i == ind && ind <= s.flowIndent {
		return s.unclosedFlow(-ln)
	}
	word := text[i:]
	if k := strings.IndexAny(word, " \t,:[]{}"); k >= 0 {
		word = word[:max(k, 1)]
	}
	pr := s.problem(ln, text, i, "a comma is missing before %q: the entries of the %s opened with %c at line %d column %d are separated by commas",
		word, flowKind(in.ch), in.ch, in.line, in.col)
	pr.from = s.flowFrom
	return pr
}

// unclosedFlow reports the innermost open flow collection, and the ones
// around it, as never closed: the file ends inside them (at 0), a document
// does (at line at > 0), or line -at goes back to block structure.
func (s *textScanner) unclosedFlow(at int) *textProblem {
	in := s.flow[len(s.flow)-1]
	it := "it"
	if len(s.flow) > 1 {
		it = "them"
	}
	why := "the file ends inside " + it
	switch {
	case at > 0:
		why = fmt.Sprintf("the document ends at line %d inside %s", at, it)
	case at < 0:
		why = fmt.Sprintf("line %d is back at the indentation of the block around %s", -at, it)
	}
	var closers []byte
	for i := len(s.flow) - 1; i >= 0 && len(closers) < 8; i-- {
		closers = append(closers, closer(s.flow[i].ch))
	}
	closeWith := fmt.Sprintf("close it with %c", closer(in.ch))
	if len(s.flow) <= 8 && len(s.flow) > 1 {
		closeWith = "close them with " + string(closers)
	}
	var msg string
	switch n := len(s.flow) - 1; {
	case n == 0:
		msg = fmt.Sprintf("this %c is never closed: %s; %s", in.ch, why, closeWith)
	case n == 1:
		out := s.flow[0]
		msg = fmt.Sprintf("this %c is never closed, nor the %c at line %d column %d: %s; %s", in.ch, out.ch, out.line, out.col, why, closeWith)
	default:
		out := s.flow[0]
		msg = fmt.Sprintf("this %c is never closed, nor the %d [ and { around it (the first at line %d column %d): %s", in.ch, n, out.line, out.col, why)
		if len(s.flow) <= 8 {
			msg += "; " + closeWith
		}
	}
	return &textProblem{line: in.line, col: in.col, from: s.flowFrom, msg: "YAML syntax error: " + msg}
}

func (s *textScanner) unclosedQuote() *textProblem {
	from := s.quoteLine
	if len(s.flow) > 0 {
		from = s.flowFrom
	}
	return &textProblem{line: s.quoteLine, col: s.quoteCol, from: from, msg: fmt.Sprintf(
		"YAML syntax error: the string opened with %c here is never closed; add the closing %c", s.quote, s.quote)}
}

func (s *textScanner) tooDeep(text string, i int) *textProblem {
	pr := s.problem(s.ln, text, i, "lists and mappings are nested more than %d levels deep here, deeper than the YAML parser reads", maxYAMLDepth)
	if len(s.flow) > 0 {
		pr.from = s.flowFrom
	}
	return pr
}

func (s *textScanner) tab(text string, k int) *textProblem {
	pr := s.problem(s.ln, text, k, "a tab in the indentation; YAML indents with spaces only, so replace it with spaces")
	if len(s.stack) > 0 {
		b := s.top()
		pr.msg += fmt.Sprintf(" (the entry above at line %d starts at column %d)", b.line, b.col+1)
	}
	return pr
}

func stripComment(s string) string {
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && isBlank(s[i-1]) {
			return strings.TrimRight(s[:i], " \t")
		}
	}
	return s
}

// describe names what starts at byte i of text, a list item if dash.
func describe(text string, i int, dash bool) string {
	if name, _, ok := keyAt(text, i); ok && !dash {
		return fmt.Sprintf("the key %q", name)
	}
	content := strings.TrimSpace(stripComment(text[i:]))
	if utf8.RuneCountInString(content) > 32 {
		content = string([]rune(content)[:31]) + "…"
	}
	if dash {
		return fmt.Sprintf("the list item %q", content)
	}
	return fmt.Sprintf("%q", content)
}

// itemNoun names the items of the lists of the configuration.
var itemNoun = map[string]string{"groups": "group", "rules": "rule"}

// ref names block b's latest entry for a message: the rule at line 8,
// "name" at line 6.
func ref(b *block) string {
	switch {
	case !b.seq:
		return fmt.Sprintf("%q at line %d", b.lastKey, b.line)
	case itemNoun[b.key] != "":
		return fmt.Sprintf("the %s at line %d", itemNoun[b.key], b.line)
	case b.key != "":
		return fmt.Sprintf("the item of %q at line %d", b.key, b.line)
	}
	return fmt.Sprintf("the list item at line %d", b.line)
}

// fix suggests where a line that is a list item (dash) or else a key may
// go: the nearest block of its kind the line ends and the nearest one
// still open.
func (s *textScanner) fix(dash bool, below int) string {
	var opts []string
	for i := len(s.popped) - 1; i >= 0; i-- {
		if b := &s.popped[i]; b.seq == dash {
			opts = append(opts, fmt.Sprintf("to column %d like %s", b.col+1, ref(b)))
			break
		}
	}
	for i := len(s.stack) - 1; i >= 0; i-- {
		if b := &s.stack[i]; b.seq == dash && b.col < below {
			opts = append(opts, fmt.Sprintf("to column %d like %s", b.col+1, ref(b)))
			break
		}
	}
	if len(opts) == 0 {
		return ""
	}
	return "; indent it " + strings.Join(opts, ", or ")
}

// misaligned reports a line indented to no open block's column.
func (s *textScanner) misaligned(text string, ind int, dash bool) *textProblem {
	what := "key"
	if dash {
		what = "list item"
	}
	return s.problem(s.ln, text, ind, "%s at column %d lines up with no %s above it%s", describe(text, ind, dash), ind+1, what, s.fix(dash, ind+1))
}

// wrongKind reports a list item among keys or a key among list items.
func (s *textScanner) wrongKind(text string, ind int, dash bool) *textProblem {
	b := s.top()
	var where string
	if dash {
		where = fmt.Sprintf("is not in a list: column %d holds the keys of a mapping here, such as %q at line %d", ind+1, b.lastKey, b.line)
	} else {
		items := "list items"
		if b.key != "" {
			items = fmt.Sprintf("items of %q", b.key)
		}
		where = fmt.Sprintf("is not in a mapping: column %d holds the %s here, the latest at line %d", ind+1, items, b.line)
	}
	return s.problem(s.ln, text, ind, "%s at column %d %s%s", describe(text, ind, dash), ind+1, where, s.fix(dash, ind))
}

// deeper reports a line indented more than the entry above it, whose value
// is complete.
func (s *textScanner) deeper(text string, ind int, dash bool) *textProblem {
	what := describe(text, ind, dash)
	if s.wasBlock && s.bsIndent > ind {
		msg := fmt.Sprintf("%s at column %d is indented less than the block text of %q (line %d) above it, and more than the keys around it; indent it to column %d to continue that text",
			what, ind+1, s.ownerKey, s.bsLine, s.bsIndent+1)
		if fix := s.fix(dash, ind); fix != "" {
			msg += ", or" + strings.TrimPrefix(fix, "; indent it")
		}
		return s.problem(s.ln, text, ind, "%s", msg)
	}
	owner := "the list item"
	if !s.ownerDash {
		owner = fmt.Sprintf("%q", s.ownerKey)
	}
	msg := fmt.Sprintf("%s at column %d is indented deeper than %s at line %d (column %d), whose value is complete", what, ind+1, owner, s.ownerLine, s.owner+1)
	if b := s.top(); b.seq == dash {
		msg += fmt.Sprintf("; indent it to column %d like %s", b.col+1, ref(b))
	}
	return s.problem(s.ln, text, ind, "%s", msg)
}

// keyInPlain reports a key on a line that continues plain text, where YAML
// takes it for more of that text and then finds its colon.
func (s *textScanner) keyInPlain(text string, ind int, name string) *textProblem {
	if s.plainLast == s.plainLine && (s.plainOwn || (s.ownerDash && s.plainLine == s.ownerLine && ind == s.plainCol)) {
		// One line of text, then a key below it: most likely that text
		// was meant as a key: value pair and lacks its colon.
		return s.missingColon(s.plainLine, s.lines[s.plainLine-1], s.plainCol)
	}
	if s.ownerDash {
		return s.problem(s.ln, text, ind, "the key %q at column %d is indented deeper than the list item at line %d (column %d), so YAML reads it as more of that item's text; to make the item a mapping, write its first line as \"- key: value\"",
			name, ind+1, s.ownerLine, s.owner+1)
	}
	return s.problem(s.ln, text, ind, "the key %q at column %d is indented deeper than %q at line %d (column %d), so YAML reads it as more of the value of %q; indent it to column %d",
		name, ind+1, s.ownerKey, s.ownerLine, s.owner+1, s.ownerKey, s.owner+1)
}

// missingColon reports text at byte c of line ln where a key: value pair
// (or a list item) must be.
func (s *textScanner) missingColon(ln int, text string, c int) *textProblem {
	content := strings.TrimSpace(stripComment(text[c:]))
	var write string
	if i := strings.IndexByte(content, ':'); i > 0 && !strings.ContainsAny(content[:i], " \t") {
		write = content[:i+1] + " " + content[i+1:]
		return s.problem(ln, text, c, "%q is not a key: value pair: a colon after a key needs a space after it; write %s", content, write)
	}
	if i := strings.IndexAny(content, " \t"); i > 0 {
		write = content[:i] + ":" + content[i:]
	} else {
		write = content + ":"
	}
	return s.problem(ln, text, c, "%q is not a key: value pair: is a colon missing? write %s", content, write)
}
