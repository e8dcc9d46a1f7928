package docs

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// shellCommand is one simple command of a code block, split into words as
// the shell splits it, with the variables the page set before expanded.
type shellCommand struct {
	line  int
	words []string
}

var (
	assignRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	varRE     = regexp.MustCompile(`\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)
	mentionRE = regexp.MustCompile(`(^|[\s;&|/])inferwatch(\s|$)`)
)

// shellCommands returns the commands of a code block that may run
// inferwatch. vars holds the variables set so far on the page (NAME=value
// commands), and is updated. Lines that do not name inferwatch are read
// only for their assignments, so that the output a block shows is not
// taken for commands; in a block that is not marked as shell (sh, bash,
// console), a line that does not split as the shell splits is output too.
func shellCommands(b codeBlock, vars map[string]string) ([]shellCommand, error) {
	strict := b.info == "sh" || b.info == "bash" || b.info == "shell" || b.info == "console"
	var out []shellCommand
	for i := 0; i < len(b.lines); i++ {
		at := b.line + 1 + i
		l := b.lines[i]
		for strings.HasSuffix(l, `\`) && i+1 < len(b.lines) {
			i++
			l = strings.TrimSuffix(l, `\`) + " " + b.lines[i]
		}
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "$ ")
		l = expand(l, vars)
		mentions := mentionRE.MatchString(l)
		if !mentions && !assignRE.MatchString(l) {
			continue
		}
		cmds, err := splitShell(l)
		if err != nil {
			if !mentions || !strict {
				continue
			}
			return nil, fmt.Errorf("line %d: %v", at, err)
		}
		for _, words := range cmds {
			if allAssignments(words) {
				for _, w := range words {
					name, value, _ := strings.Cut(w, "=")
					vars[name] = value
				}
				continue
			}
			out = append(out, shellCommand{line: at, words: words})
		}
	}
	return out, nil
}

func allAssignments(words []string) bool {
	for _, w := range words {
		if !assignRE.MatchString(w) {
			return false
		}
	}
	return len(words) > 0
}

// expand replaces $NAME and ${NAME} outside single quotes by the value of
// a variable the page set; others are left as written.
func expand(l string, vars map[string]string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(l); {
		c := l[i]
		if c == '\'' {
			quoted = !quoted
		}
		if c == '$' && !quoted {
			if m := varRE.FindStringSubmatchIndex(l[i:]); m != nil && m[0] == 0 {
				name := ""
				if m[2] >= 0 {
					name = l[i+m[2] : i+m[3]]
				} else {
					name = l[i+m[4] : i+m[5]]
				}
				if v, ok := vars[name]; ok {
					b.WriteString(v)
					i += m[1]
					continue
				}
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// splitShell splits a line into simple commands (at ;, &&, ||, | and &)
// and each into words: quotes removed, backslashes applied, $(…) kept
// whole, redirections and their targets and a trailing # comment left
// out, and the keywords that open a loop's or an if's body dropped.
func splitShell(l string) ([][]string, error) {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord := false
	skipNext := false // the word after a redirection is its target
	endWord := func() {
		if !inWord {
			return
		}
		if skipNext {
			skipNext = false
		} else {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	endCmd := func() {
		endWord()
		for len(words) > 0 && (words[0] == "do" || words[0] == "then" || words[0] == "else" || words[0] == "{" || words[0] == "!") {
			words = words[1:]
		}
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			i = len(l)
		case c == ';' || c == '|' || c == '&':
			if c == '&' && i+1 < len(l) && l[i+1] == '>' { // &> FILE
				endWord()
				skipNext = true
				i++
				continue
			}
			endCmd()
			if i+1 < len(l) && l[i+1] == c {
				i++
			}
		case c == '>' || c == '<':
			// 2> and 2>&1: the digit is the redirection's, not a word.
			if inWord && !skipNext && w.Len() == 1 && w.String() >= "0" && w.String() <= "9" {
				w.Reset()
				inWord = false
			}
			endWord()
			if i+1 < len(l) && l[i+1] == c {
				i++
			}
			if i+1 < len(l) && l[i+1] == '&' { // >&2
				i += 2
				for i+1 < len(l) && l[i+1] >= '0' && l[i+1] <= '9' {
					i++
				}
				continue
			}
			skipNext = true
		case c == '\'':
			j := strings.IndexByte(l[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", l)
			}
			w.WriteString(l[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(l) && l[i] != '"'; i++ {
				if l[i] == '\\' && i+1 < len(l) && strings.IndexByte(`"\$`+"`", l[i+1]) >= 0 {
					i++
				}
				w.WriteByte(l[i])
			}
			if i >= len(l) {
				return nil, fmt.Errorf(`unclosed " in %q`, l)
			}
		case c == '\\' && i+1 < len(l):
			i++
			w.WriteByte(l[i])
			inWord = true
		case c == '$' && i+1 < len(l) && l[i+1] == '(':
			depth := 0
			j := i + 1
			for ; j < len(l); j++ {
				if l[j] == '(' {
					depth++
				} else if l[j] == ')' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if j >= len(l) {
				return nil, fmt.Errorf("unclosed $( in %q", l)
			}
			w.WriteString(l[i : j+1])
			inWord = true
			i = j
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
	return cmds, nil
}

// inferwatchArgs returns the arguments of a command that runs inferwatch
// (bin/inferwatch, ./inferwatch, inferwatch or go run ./cmd/inferwatch,
// after environment assignments and a time or env wrapper), and false for
// any other command.
func inferwatchArgs(words []string) ([]string, bool) {
	i := 0
	for i < len(words) {
		switch w := words[i]; {
		case assignRE.MatchString(w):
			i++
		case w == "env" || w == "nohup" || w == "exec":
			i++
		case w == "time" || w == "/usr/bin/time":
			i++
			for i < len(words) && strings.HasPrefix(words[i], "-") {
				if words[i] == "-f" || words[i] == "-o" || words[i] == "--format" || words[i] == "--output" {
					i++
				}
				i++
			}
		default:
			if w == "go" && i+2 < len(words) && words[i+1] == "run" && path.Clean(words[i+2]) == "cmd/inferwatch" {
				return words[i+3:], true
			}
			if w == "inferwatch" || w == "./inferwatch" || strings.HasSuffix(w, "bin/inferwatch") {
				return words[i+1:], true
			}
			return nil, false
		}
	}
	return nil, false
}
