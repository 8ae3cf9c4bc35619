//go:build linux

package docker

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Without an engine: a watched directory's files are made private, one there before the watch and one that
// a server writes afterwards the way Sentinel rewrites its config (a new file, chmod 0644, renamed over).
func TestPrivateCatchesARewrite(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte("requirepass x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(conf, 0o644); err != nil { // whatever the test's umask
		t.Fatal(err)
	}
	p, err := newPrivate()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.watch(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(conf); fi.Mode().Perm() != 0o600 {
		t.Fatalf("a file there before the watch is %o, want 600", fi.Mode().Perm())
	}
	tmp, err := os.CreateTemp(dir, "redis.conf.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.WriteString("requirepass x\nsentinel myid 1\n"); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), conf); err != nil {
		t.Fatal(err)
	}
	// The chmod follows the rename by a few milliseconds: wait for it, 10 s at most.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		fi, err := os.Stat(conf)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() == 0o600 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rewritten config is still %o after 10 s", fi.Mode().Perm())
		}
	}
}
