package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// pidIn finds the process whose working directory is dir (redis-server rewrites its command line).
func pidIn(t *testing.T, dir string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
				return pid
			}
		}
	}
	t.Fatalf("no process in %s", dir)
	return 0
}

// Kill (a planned fault) and Stop are lockcheck's own doing and are not reported; a kill -9 by hand of the
// restarted server is, once, with how it ended.
func TestUnplannedExitIsReported(t *testing.T) {
	dir := t.TempDir()
	n := redistest.StartConfig(t, node.Config{Dir: dir, Persistence: node.PersistNone})
	deaths := make(chan string, 4)
	n.OnUnplannedExit(func(detail string) { deaths <- detail })
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pidIn(t, dir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-deaths:
		if d != "signal: killed" {
			t.Fatalf("reported %q, want signal: killed", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a kill -9 by hand was not reported")
	}
	if err := n.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	select {
	case d := <-deaths:
		t.Fatalf("a second report (%q): the planned kill or the Stop was taken for a death", d)
	default:
	}
	// A callback set after the death hears of it at once.
	m := redistest.StartConfig(t, node.Config{Dir: t.TempDir(), Persistence: node.PersistNone})
	if err := syscall.Kill(pidIn(t, nodeDir(m)), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for m.Running() {
		time.Sleep(10 * time.Millisecond)
	}
	m.OnUnplannedExit(func(detail string) { deaths <- detail })
	select {
	case <-deaths:
	default:
		t.Fatal("a death before the callback was set was not told when it was set")
	}
}

func nodeDir(n *node.Node) string {
	return filepath.Dir(n.LogPath())
}
