package lockspec

import (
	"fmt"
	"strings"
)

// Placeholders are the names a template may use; a template is text with {{name}} in it.
var Placeholders = []string{"key", "tag", "owner", "token", "lease_ms", "lease_s", "now_ms", "permits", "n"}

func known(name string) bool {
	for _, p := range Placeholders {
		if p == name {
			return true
		}
	}
	return false
}

// template is one KEYS or ARGV entry, split into literal text and placeholders.
type template struct {
	src   string
	parts []part
}

type part struct {
	lit  string
	name string // a placeholder, when set
}

// parseTemplate splits s into its parts; an unknown placeholder or an unclosed {{ is an error.
func parseTemplate(s string) (template, error) {
	t := template{src: s}
	rest := s
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{lit: rest})
			}
			return t, nil
		}
		if i > 0 {
			t.parts = append(t.parts, part{lit: rest[:i]})
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return t, fmt.Errorf("template %q: {{ without }}", s)
		}
		name := strings.TrimSpace(rest[i+2 : i+2+j])
		if strings.HasPrefix(name, "{") {
			return t, fmt.Errorf("template %q: for the key as a hash tag write {{tag}} ({lock-0})", s)
		}
		if !known(name) {
			return t, fmt.Errorf("template %q: unknown placeholder {{%s}} (have: %s)", s, name, strings.Join(Placeholders, ", "))
		}
		t.parts = append(t.parts, part{name: name})
		rest = rest[i+2+j+2:]
	}
}

// uses reports whether the template has placeholder name.
func (t template) uses(name string) bool {
	for _, p := range t.parts {
		if p.name == name {
			return true
		}
	}
	return false
}

// expand fills the placeholders from vals (every placeholder has a value by then).
func (t template) expand(vals map[string]string) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.name != "" {
			b.WriteString(vals[p.name])
		} else {
			b.WriteString(p.lit)
		}
	}
	return b.String()
}
