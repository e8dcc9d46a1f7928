package rulefmt

// Finding mistakes in the text of a configuration where they are.

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// A textProblem is a mistake in the text of a configuration: where it is
// (1-based line and column, the column counting characters) and what is
// wrong.
type textProblem struct {
	line, col int
	msg       string
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
