package node_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// A config that a server rewrote with its own umask (CONFIG REWRITE in a container, umask 022: 0644) is
// private again when the node restarts: lockcheck writes it anew, its mode included.
func TestRestartMakesConfigPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	n := redistest.StartConfig(t, node.Config{Dir: dir, Persistence: node.PersistNone})
	conf := filepath.Join(dir, "redis.conf")
	if err := os.Chmod(conf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(conf)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("after the restart redis.conf is %o, want 600", fi.Mode().Perm())
	}
}
