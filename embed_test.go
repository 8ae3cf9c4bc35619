package lockcheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every file of a shipped worker travels in the binary: a file the embed patterns miss (a new kind of file,
// a new folder, a symlink, which embed skips) would break the worker only where lockcheck runs alone.
func TestEveryWorkerFileIsEmbedded(t *testing.T) {
	err := filepath.WalkDir("workers", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			switch {
			case name == "node_modules" || name == "target" || name == "testdata" || name == "venv" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"):
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil // embed leaves these out, and no build needs them
		}
		if d.Type()&fs.ModeSymlink != 0 {
			t.Errorf("%s is a symlink: embed skips it, so a binary alone would lack it", p)
			return nil
		}
		want, _ := os.ReadFile(p)
		got, err := fs.ReadFile(Sources, filepath.ToSlash(p))
		if err != nil {
			t.Errorf("%s is not embedded: add its pattern to embed.go", p)
		} else if string(got) != string(want) {
			t.Errorf("%s: embedded copy differs", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
