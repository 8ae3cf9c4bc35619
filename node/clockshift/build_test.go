package clockshift

import (
	"os"
	"path/filepath"
	"testing"
)

// LD_PRELOAD resolves a relative path from the server's working directory, so the library path handed
// out is absolute even for a relative directory (a relative --results did exactly this, and the clock
// fault silently did nothing).
func TestLibraryPathIsAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	lib, err := Library(filepath.Join("results", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(lib) {
		t.Fatalf("library path %q is relative", lib)
	}
	if _, err := os.Stat(lib); err != nil {
		t.Fatal(err)
	}
}
