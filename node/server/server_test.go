package server

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParse(t *testing.T) {
	for arg, want := range map[string]string{"": "redis", "redis": "redis", "valkey": "valkey@8.1.8",
		"valkey@8.1.8": "valkey@8.1.8", "redis@6.2.14": "redis@6.2.14"} {
		c, err := Parse(arg, "")
		if err != nil || c.String() != want || c.Default() != (want == Host) {
			t.Errorf("Parse(%q) = %v, %v; want %s", arg, c, err, want)
		}
	}
	for _, arg := range []string{"valkey@8.1", "keydb", "redis@7.9.9"} {
		if _, err := Parse(arg, ""); err == nil {
			t.Errorf("Parse(%q) accepted", arg)
		}
	}
}

// A link in the cache, even to the right binary, is never taken for the release: the digest is of a regular
// file reached through no link.
func TestDigestRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	file, link := filepath.Join(dir, "valkey-server"), filepath.Join(dir, "link")
	if err := os.WriteFile(file, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if digest(file) == "" || digest(link) != "" || digest(dir) != "" {
		t.Fatalf("digest: file %q, link %q, dir %q", digest(file), digest(link), digest(dir))
	}
}
