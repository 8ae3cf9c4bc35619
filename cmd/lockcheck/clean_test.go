package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/dockertest"
)

// dockerRunWith starts a docker-backend run, calls during once it is recording operations, and returns the
// run's exit code, its directory and during's output.
func dockerRunWith(t *testing.T, during func() string) (int, string, string) {
	t.Helper()
	root := t.TempDir()
	done := make(chan int, 1)
	go func() {
		done <- execute(context.Background(), []string{"run", "--backend", "docker", "--lock", "reentrant", "--time", "8s",
			"--quiet", "2s", "--clients", "4", "--seed", "1", "--results", root})
	}()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(root, "latest", "history.jsonl"))
		if strings.Count(string(b), `"type":"ok"`) >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never got going")
		}
	}
	out := during()
	code := <-done
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	return code, dir, out
}

// `lockcheck clean` during a live docker run keeps that run's containers (it says so) and the run is
// untouched; `clean --force` removes them, and the run then reports the node's death and is not valid.
func TestCleanSparesLiveRun(t *testing.T) {
	// Sequential: docker: one engine for the machine.
	dockertest.Require(t)
	code, dir, out := dockerRunWith(t, func() string {
		c, out := stdoutOf(t, "clean")
		if c != exitValid {
			t.Errorf("clean: exit %d", c)
		}
		return out
	})
	if !strings.Contains(out, "kept container lockcheck-") || strings.Contains(out, "removed container") {
		t.Fatalf("clean during a live run said:\n%s", out)
	}
	if code != exitValid {
		t.Fatalf("the run beside clean: exit %d, want %d (%s)", code, exitValid, dir)
	}
	code, dir, out = dockerRunWith(t, func() string {
		_, out := stdoutOf(t, "clean", "--force")
		return out
	})
	if !strings.Contains(out, "removed container lockcheck-") {
		t.Fatalf("clean --force said:\n%s", out)
	}
	if code == exitValid {
		t.Fatalf("exit 0 (valid) after the run's container was removed under it (%s)", dir)
	}
	if res, _ := os.ReadFile(filepath.Join(dir, "results.json")); !strings.Contains(string(res), "n1 died outside the fault plan") {
		t.Fatalf("results.json does not name the node:\n%s", res)
	}
}
