package suite

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// CheckJUnit refuses, at once and in one line, a --junit the report could not be written to, and
// accepts (leaving nothing behind) one it could, also under directories a suite or merge makes first.
func TestCheckJUnit(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	must(t, os.WriteFile(file, []byte("old report"), 0o644))
	fifo := filepath.Join(dir, "fifo.xml")
	must(t, syscall.Mkfifo(fifo, 0o644))
	for _, p := range []string{dir, fifo, filepath.Join(file, "j.xml"), filepath.Join(file, "x", "j.xml"), "/proc/lockcheck-j.xml", "/dev/zero"} {
		if err := CheckJUnit(p); err == nil || !strings.HasPrefix(err.Error(), "--junit "+p+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want a one-line refusal", p, err)
		}
	}
	for _, p := range []string{file, filepath.Join(dir, "new.xml"), filepath.Join(dir, "out", "shard-1", "junit.xml")} {
		if err := CheckJUnit(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "old report" {
		t.Errorf("an existing report was changed by the check: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("the check left %d entries in the directory, want the 2 there before", len(ents))
	}
	r := &Report{Name: "x"}
	if err := WriteJUnit(filepath.Join(dir, "out", "shard-1", "junit.xml"), r); err != nil {
		t.Fatalf("a report under directories not made yet: %v", err)
	}
}
