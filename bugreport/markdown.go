package bugreport

import (
	"strings"
	"unicode"
)

// A report quotes what a run directory holds: a worker's library, version and runtime strings, a recorded
// command's words, the story and checkers' texts, key and fault names. Any of them may be hostile (a
// worker's init_ok, an edited results.json), and the report is pasted where Markdown is rendered: every
// such string goes through one of the helpers below, so none can mention someone, open HTML, make a link,
// start a heading or close a code block (issue 36, item 9).

// joiner is U+2060, which renders as nothing: put after '@' and in "://", it keeps the text readable and
// stops a renderer from making a mention or a link of it.
const joiner = "\u2060"

// md is s as Markdown text that renders as s on one line: whitespace runs (newlines too) become one space,
// control and bidi characters are dropped, the characters that make emphasis, code, links, images, HTML,
// entities, headings and table cells are escaped, and mentions and bare links are broken by an invisible
// joiner.
func md(s string) string {
	var b strings.Builder
	for _, r := range flat(s) {
		switch {
		case r == '@':
			b.WriteString("@" + joiner)
		case strings.ContainsRune("\\`*_[]<>!|~&#", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return strings.NewReplacer("://", ":"+joiner+"//", "www.", "www"+joiner+".").Replace(b.String())
}

// code is s as an inline code span on one line: its fence is longer than any run of backticks in s, so
// nothing in s closes it (a renderer makes no mention, link or HTML inside a code span).
func code(s string) string {
	s = flat(s)
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// block is text fenced as a code block of language lang: the fence is longer than any run of backticks
// in it, so no line of text closes the block early; control characters but newlines and tabs are dropped.
func block(lang, text string) string {
	text = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !hidden(r) {
			return r
		}
		return -1
	}, strings.TrimRight(text, "\n"))
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	return fence + lang + "\n" + text + "\n" + fence + "\n"
}

// flat is s on one line: whitespace runs become one space, control and bidi characters are dropped.
func flat(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if hidden(r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// hidden are characters a reader does not see but a terminal or renderer acts on: controls (ESC, BEL,
// NUL), bidi overrides and isolates, and other format characters.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// spans is s, a line lockcheck wrote with `code` spans in it (a known-or-new line) but read back from a
// file: the text between backticks as md, each span as code, so its spans survive and nothing else renders.
func spans(s string) string {
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 { // an unpaired backtick: not a line lockcheck wrote
		return md(s)
	}
	for i, p := range parts {
		if i%2 == 1 {
			parts[i] = code(p)
		} else { // md folds the spaces that join a part to its spans: kept
			parts[i] = md(p)
			if strings.HasPrefix(p, " ") && i > 0 {
				parts[i] = " " + parts[i]
			}
			if strings.HasSuffix(p, " ") && i < len(parts)-1 && parts[i] != " " {
				parts[i] += " "
			}
		}
	}
	return strings.Join(parts, "")
}
