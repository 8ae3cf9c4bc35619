package redact

import (
	"encoding/json"
	"encoding/xml"
	"html"
	"html/template"
	"net/url"
	"strings"
	"testing"
)

// A secret is found in every form a worker, a library or a file may give it: raw, JSON-escaped (with and
// without HTML escapes, \u in either case), percent-encoded as a path, a query or a URL's userinfo (hex
// in either case), HTML- or XML-escaped, and nothing else is touched.
func TestRedactsEveryForm(t *testing.T) {
	secret := `p@ss/w:rd?#&<"\ é+%`
	r := New(secret, "")
	js, _ := json.Marshal(secret)
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(secret)
	userinfo := strings.TrimPrefix(url.UserPassword("", secret).String(), ":")
	forms := map[string]string{
		"raw":            secret,
		"json":           strings.Trim(string(js), `"`),
		"json plain":     strings.Trim(strings.TrimSpace(plain.String()), `"`),
		"json \\u lower": strings.ReplaceAll(strings.Trim(string(js), `"`), `\u003c`, `\u003C`),
		"path":           url.PathEscape(secret),
		"query":          url.QueryEscape(secret),
		"userinfo":       userinfo,
		"query lower":    strings.ToLower(url.QueryEscape(secret)),
		"json of query":  strings.Trim(mustJSON(url.QueryEscape(secret)), `"`),
		"html":           html.EscapeString(secret),
		"template":       template.HTMLEscapeString(secret),
		"xml":            xmlText(secret),
		"numeric":        strings.NewReplacer("@", "&#64;", "/", "&#x2f;", "é", "&#xE9;").Replace(secret),
	}
	for name, f := range forms {
		in := "before " + f + " between " + f + " after"
		if got, want := r.String(in), "before REDACTED between REDACTED after"; got != want {
			t.Errorf("%s form %q: got %q, want %q", name, f, got, want)
		}
		if !Found(r, []byte(f)) {
			t.Errorf("%s form %q not found in bytes", name, f)
		}
	}
	for _, s := range []string{"", "p@ss/w:rd", "p%40ss", "nothing here", secret[:len(secret)-1], "&amp; &#; &#x; &#99999999999;", "&"} {
		if got := r.String(s); got != s {
			t.Errorf("%q became %q", s, got)
		}
	}
	var nilR *Redactor
	if nilR.String(secret) != secret || nilR.Span() != 0 || Found(nilR, secret) {
		t.Error("a nil Redactor changed something")
	}
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A JSON document keeps its shape and its numbers (a seed above 2^53 too); only its strings, keys
// included, lose the secret.
func TestRedactsJSON(t *testing.T) {
	r := New("hunter2")
	in := []byte(`{"seed":9007199254740993,"client":{"library":"lib hunter2","versions":["1","hunter2"]},"hunter2":true}`)
	out := r.JSON(in)
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "9007199254740993") ||
		!strings.Contains(string(out), `"lib REDACTED"`) || v["REDACTED"] != true {
		t.Fatalf("got %s", out)
	}
	if clean := []byte(`{"a":1}`); &r.JSON(clean)[0] != &clean[0] {
		t.Error("a document without the secret was re-encoded")
	}
}
