package suite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Subdir (a suite's runs/, repro's entry directories, bisect's versions) makes a missing directory and
// keeps a real one, but refuses a link or a file in its place with a DirError, changing nothing.
func TestSubdirRefusesLinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"link": "a symbolic link", "file": "not a directory", "new": "", "new ": ""} {
		name = strings.TrimSpace(name) // "new" twice: made, then found
		err := Subdir(dir, name)
		if want == "" {
			if fi, lerr := os.Lstat(filepath.Join(dir, name)); err != nil || lerr != nil || !fi.IsDir() {
				t.Fatalf("%s: %v %v", name, err, lerr)
			}
			continue
		}
		if !errors.As(err, new(DirError)) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v; want a DirError saying %q", name, err, want)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written through the link: %v", ents)
	}
}
