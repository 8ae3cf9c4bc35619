package textfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLastLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"a\nb\n", "b"},
		{"a\n  b  \n\n\n", "b"},
		{"", ""},
		{strings.Repeat("x\n", 100000) + "end", "end"},
	} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := LastLine(p); got != c.want {
			t.Errorf("LastLine(%.20q) = %q, want %q", c.text, got, c.want)
		}
	}
	if got := LastLine(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing file: %q", got)
	}
}
