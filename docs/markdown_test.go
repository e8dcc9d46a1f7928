package docs

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// page is one Markdown file of the manual, read the way GitHub renders it
// as far as links, headings and fenced code blocks go.
type page struct {
	path    string // relative to the repository's root, with forward slashes
	anchors map[string]bool
	links   []link
	blocks  []codeBlock
	spans   []link // code spans outside code blocks, as written
}

// link is a link or image target as written, and where.
type link struct {
	line   int
	target string
}

// codeBlock is a fenced code block: its info string (the language) and
// its lines, the fence's indentation removed.
type codeBlock struct {
	line  int // of the opening fence
	info  string
	lines []string
}

var (
	fenceRE   = regexp.MustCompile("^(\\s*)(`{3,}|~{3,})\\s*([^`\\s]*)")
	atxRE     = regexp.MustCompile(`^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$`)
	setextRE  = regexp.MustCompile(`^ {0,3}(=+|-+)\s*$`)
	linkRE    = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE  = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	htmlIDRE  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	inlineRE  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	listOrTbl = regexp.MustCompile(`^\s*([-*+|>]|\d+[.)])`)
)

// parsePage reads the headings (as anchors), the links and the fenced code
// blocks of a Markdown text.
func parsePage(path, text string) (*page, error) {
	p := &page{path: path, anchors: map[string]bool{}}
	seen := map[string]int{}
	addHeading := func(title string) {
		slug := anchor(title)
		if n := seen[slug]; n > 0 {
			seen[slug]++
			slug = fmt.Sprintf("%s-%d", slug, n)
		} else {
			seen[slug] = 1
		}
		p.anchors[slug] = true
	}
	lines := strings.Split(text, "\n")
	var para []string // the lines of the paragraph being read
	paraLine := 0
	flush := func() {
		if len(para) > 0 {
			p.links = append(p.links, paragraphLinks(paraLine, strings.Join(para, "\n"))...)
			p.spans = append(p.spans, codeSpans(paraLine, strings.Join(para, "\n"))...)
			for _, m := range htmlIDRE.FindAllStringSubmatch(strings.Join(para, "\n"), -1) {
				p.anchors[m[1]] = true
			}
		}
		para = para[:0]
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			flush()
			indent, fence := len(m[1]), m[2]
			b := codeBlock{line: i + 1, info: strings.ToLower(m[3])}
			closed := false
			for i++; i < len(lines); i++ {
				body := lines[i]
				if t := strings.TrimSpace(body); strings.HasPrefix(t, fence[:1]) && strings.Trim(t, fence[:1]) == "" && len(t) >= len(fence) {
					closed = true
					break
				}
				// Remove up to the fence's indentation.
				k := 0
				for k < indent && k < len(body) && body[k] == ' ' {
					k++
				}
				b.lines = append(b.lines, body[k:])
			}
			if !closed {
				return nil, fmt.Errorf("%s:%d: code block not closed", path, b.line)
			}
			p.blocks = append(p.blocks, b)
			continue
		}
		if m := atxRE.FindStringSubmatch(l); m != nil {
			flush()
			addHeading(m[2])
			continue
		}
		if setextRE.MatchString(l) && len(para) == 1 && !listOrTbl.MatchString(para[0]) {
			title := para[0]
			para = para[:0]
			addHeading(strings.TrimSpace(title))
			continue
		}
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		if len(para) == 0 {
			paraLine = i + 1
		}
		para = append(para, l)
	}
	flush()
	return p, nil
}

// paragraphLinks returns the link targets of a paragraph (or a table, or
// a list) that starts at line first, leaving out what is inside code spans.
func paragraphLinks(first int, text string) []link {
	text = blankCodeSpans(text)
	var out []link
	add := func(at int, target string) {
		out = append(out, link{line: first + strings.Count(text[:at], "\n"), target: target})
	}
	for _, m := range linkRE.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], text[m[2]:m[3]])
	}
	for _, m := range refDefRE.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], text[m[2]:m[3]])
	}
	return out
}

// codeSpans returns the code spans of a paragraph that starts at line
// first, their line breaks read as spaces.
func codeSpans(first int, text string) []link {
	blank := blankCodeSpans(text)
	var out []link
	for i := 0; i < len(text); {
		if text[i] == '`' && blank[i] == ' ' {
			n := 0
			for i+n < len(text) && text[i+n] == '`' {
				n++
			}
			j := i + n
			for j < len(text) && !(text[j] == '`' && blank[j] == ' ') {
				j++
			}
			body := strings.TrimSpace(strings.ReplaceAll(text[i+n:j], "\n", " "))
			out = append(out, link{line: first + strings.Count(text[:i], "\n"), target: body})
			for j < len(text) && text[j] == '`' {
				j++
			}
			i = j
			continue
		}
		i++
	}
	return out
}

// blankCodeSpans replaces what code spans hold (and their backticks) with
// spaces, keeping line breaks, so that brackets in code are not read as
// links. A run of backticks without a closing run of the same length is
// literal.
func blankCodeSpans(s string) string {
	b := []byte(s)
	run := func(i int) int {
		j := i
		for j < len(b) && b[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(i)
		end := -1
		for j := i + n; j < len(b); {
			if b[j] == '`' {
				m := run(j)
				if m == n {
					end = j + m
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end
	}
	return string(b)
}

// anchor is the id GitHub gives a heading: its text as rendered (links
// reduced to their text, code spans to their content), lower-cased, spaces
// turned into '-', and every other character but letters, digits, '-' and
// '_' dropped.
func anchor(title string) string {
	title = inlineRE.ReplaceAllString(title, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
