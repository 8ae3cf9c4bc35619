package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadRefusesWhatIsNotASmallRegularFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(ok, []byte("lock: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(ok, 100); err != nil || string(b) != "lock: x\n" {
		t.Fatalf("regular file: %q %v", b, err)
	}
	if _, err := Read(ok, 3); err == nil || !strings.Contains(err.Error(), "more than the 3 bytes") {
		t.Fatalf("over the bound: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device", link: "a character device", dir: "a directory"} {
		done := make(chan error, 1)
		go func() { _, err := Read(path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Read blocked", path)
		}
	}
}

func TestReadInStaysInsideItsRoot(t *testing.T) {
	dir := t.TempDir()
	inner := filepath.Join(dir, "store")
	if err := os.MkdirAll(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.json"), []byte(`{"p":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret.json", filepath.Join(inner, "results.json")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(inner)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"results.json", "../secret.json"} {
		if _, err := ReadIn(root, name, 1<<20); err == nil {
			t.Errorf("%s: read outside the root", name)
		}
	}
}

func TestName(t *testing.T) {
	for _, s := range []string{"3.17.0", "v9.1.0", "main", "redis-py_5.0.1", "1.0.0+build.7", "git@abc"} {
		if err := Name("version", s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", ".", "..", "../x", "a/b", `a\b`, ".hidden", "-rf", "a b", "x;id", "\x1b[31m", strings.Repeat("a", 129), "é"} {
		if err := Name("version", s); !errors.Is(err, ErrName) {
			t.Errorf("%q accepted", s)
		}
	}
}
