// Package redact keeps a run's secrets (its Redis password, or the deployment's) out of everything the run
// writes and serves. A worker is handed the password and may echo it anywhere: in an error, an event's
// text, its library or version, its stderr; a library may print it URL-encoded in a connection URL, and
// the history holds it JSON-escaped (issue 29, item 3). One Redactor knows the run's secrets and finds
// each in all those forms.
package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// Mark stands for a secret wherever one was.
const Mark = "REDACTED"

// Redactor replaces secrets in texts. A nil Redactor knows none: its methods return their input.
type Redactor struct {
	secrets []string
	first   [256]bool // the bytes a secret's form can start with: its raw first byte, or an escape's
}

// New is a Redactor for the given secrets (empty ones are ignored).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if s != "" {
			r.secrets = append(r.secrets, s)
			r.first[s[0]] = true
		}
	}
	if len(r.secrets) > 0 {
		for _, c := range "%+\\&" {
			r.first[c] = true
		}
	}
	return r
}

// Span is the longest text one secret can take in any of its forms (a byte as &#x00XX; at most): a stream
// must hold back Span()-1 bytes of a line it has not seen the end of.
func (r *Redactor) Span() int {
	n := 0
	if r != nil {
		for _, s := range r.secrets {
			n = max(n, (maxEntity+2)*len(s))
		}
	}
	return n
}

// text is what a secret is searched in.
type text interface{ ~string | ~[]byte }

// find is the first secret in t at or after from, as [start, end), or -1.
func find[T text](r *Redactor, t T, from int) (int, int) {
	if r == nil {
		return -1, -1
	}
	for i := from; i < len(t); i++ {
		if !r.first[t[i]] {
			continue
		}
		for _, s := range r.secrets {
			if e := match(t, i, s); e >= 0 {
				return i, e
			}
		}
	}
	return -1, -1
}

// match is the end of secret s in t from i, or -1. Each byte of s may stand as itself, percent-encoded
// (either case of hex, any subset of bytes: a path, query or userinfo escape), as '+' for a space (a query
// escape), JSON-escaped (\" \\ \/ \b \f \n \r \t, or \uXXXX for its whole rune), or as an HTML or XML
// character reference (a page, junit.xml).
func match[T text](t T, i int, s string) int {
	for len(s) > 0 {
		if i >= len(t) {
			return -1
		}
		c := s[0]
		switch t[i] {
		case '%':
			if i+2 < len(t) && unhex(t[i+1])<<4|unhex(t[i+2]) == int(c) {
				if c != '%' {
					i, s = i+3, s[1:]
					continue
				}
				if e := match(t, i+3, s[1:]); e >= 0 { // the longer form first; else the raw '%' alone
					return e
				}
			}
		case '&':
			if n, w := entity(t, i, s); n > 0 {
				if c != '&' {
					i, s = i+n, s[w:]
					continue
				}
				if e := match(t, i+n, s[w:]); e >= 0 { // the entity first; else the raw '&' alone
					return e
				}
			}
		case '+':
			if c == ' ' {
				i, s = i+1, s[1:]
				continue
			}
		case '\\':
			if i+1 < len(t) {
				if n, w := jsonEscape(t, i, s); n > 0 {
					if c != '\\' {
						i, s = i+n, s[w:]
						continue
					}
					if e := match(t, i+n, s[w:]); e >= 0 { // the escape first; else the raw backslash alone
						return e
					}
				}
			}
		}
		if t[i] != c {
			return -1
		}
		i, s = i+1, s[1:]
	}
	return i
}

// jsonEscape is the length of the JSON escape at t[i] (a backslash) and of the start of s it stands for,
// or 0, 0 when it stands for something else.
func jsonEscape[T text](t T, i int, s string) (int, int) {
	var c byte
	switch t[i+1] {
	case '"', '\\', '/':
		c = t[i+1]
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		if i+5 >= len(t) {
			return 0, 0
		}
		v := 0
		for _, h := range []byte{t[i+2], t[i+3], t[i+4], t[i+5]} {
			d := unhex(h)
			if d < 0 {
				return 0, 0
			}
			v = v<<4 | d
		}
		if r, w := utf8.DecodeRuneInString(s); w > 0 && int(r) == v && (r != utf8.RuneError || w > 1) {
			return 6, w
		}
		return 0, 0
	default:
		return 0, 0
	}
	if c == s[0] {
		return 2, 1
	}
	return 0, 0
}

// entity is the length of the HTML or XML character reference at t[i] (an ampersand: &amp; &lt; &gt;
// &quot; &apos; &#NN; &#xNN;) and of the start of s it stands for, or 0, 0.
func entity[T text](t T, i int, s string) (int, int) {
	end := -1
	for j := i + 1; j < len(t) && j <= i+maxEntity; j++ {
		if t[j] == ';' {
			end = j
			break
		}
	}
	if end < 0 {
		return 0, 0
	}
	name := string(t[i+1 : end])
	r := rune(-1)
	switch {
	case name == "amp":
		r = '&'
	case name == "lt":
		r = '<'
	case name == "gt":
		r = '>'
	case name == "quot":
		r = '"'
	case name == "apos":
		r = '\''
	case len(name) > 2 && (name[:2] == "#x" || name[:2] == "#X"):
		r = number(name[2:], 16)
	case len(name) > 1 && name[0] == '#':
		r = number(name[1:], 10)
	}
	if sr, w := utf8.DecodeRuneInString(s); r >= 0 && sr == r && (sr != utf8.RuneError || w > 1) {
		return end + 1 - i, w
	}
	return 0, 0
}

// maxEntity bounds the characters between an entity's & and ; (&#x10FFFF is 8).
const maxEntity = 9

// number is the rune the digits stand for in base, or -1.
func number(digits string, base int) rune {
	v := 0
	for i := 0; i < len(digits); i++ {
		d := unhex(digits[i])
		if d < 0 || d >= base || v > utf8.MaxRune {
			return -1
		}
		v = v*base + d
	}
	return rune(v)
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// Found reports whether t holds a secret in any form.
func Found[T text](r *Redactor, t T) bool {
	i, _ := find(r, t, 0)
	return i >= 0
}

// String is s with every secret in it, in any form, replaced by Mark. It allocates only when it replaces.
func (r *Redactor) String(s string) string {
	i, e := find(r, s, 0)
	if i < 0 {
		return s
	}
	var b []byte
	last := 0
	for ; i >= 0; i, e = find(r, s, e) {
		b = append(append(b, s[last:i]...), Mark...)
		last = e
	}
	return string(append(b, s[last:]...))
}

// Bytes is b with every secret replaced by Mark (b itself when it holds none).
func (r *Redactor) Bytes(b []byte) []byte {
	if !Found(r, b) {
		return b
	}
	return []byte(r.String(string(b)))
}

// JSON is the JSON document b with every secret in its strings (keys too) replaced by Mark, re-encoded
// only when it held one. A document that does not decode is replaced whole: it cannot be redacted in place.
func (r *Redactor) JSON(b []byte) []byte {
	if !Found(r, b) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keeps int64s (a seed) as they were written
	var v any
	if err := dec.Decode(&v); err != nil {
		out, _ := json.Marshal(Mark)
		return out
	}
	out, err := json.Marshal(r.value(v))
	if err != nil {
		out, _ = json.Marshal(Mark)
	}
	return out
}

func (r *Redactor) value(v any) any {
	switch v := v.(type) {
	case string:
		return r.String(v)
	case []any:
		for i := range v {
			v[i] = r.value(v[i])
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[r.String(k)] = r.value(x)
		}
		return out
	}
	return v
}

// Writer is w with every secret in each Write replaced: for writers whose Writes are whole messages (a
// line, a status), where a secret never spans two of them.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if r == nil || len(r.secrets) == 0 {
		return w
	}
	return writer{r, w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

func (w writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Err is err with the secrets replaced in its text; errors.Is and errors.As still see what it wraps.
func (r *Redactor) Err(err error) error {
	if err == nil || !Found(r, err.Error()) {
		return err
	}
	return redacted{r.String(err.Error()), err}
}

type redacted struct {
	text string
	err  error
}

func (e redacted) Error() string { return e.text }
func (e redacted) Unwrap() error { return e.err }

// Flags are lockcheck run's flags whose value is a secret, each with the environment variable a run reads
// it from when the flag is not given (which keeps it out of the process list): a command line is recorded
// and shown with REDACTED for the value, and a suite hands the value to its child runs in the environment.
var Flags = map[string]string{"external-password": "LOCKCHECK_EXTERNAL_PASSWORD"}
