package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 9 item 17: when the history can no longer be written (a full disk), the run stops at once, heals and
// tears down, and exits 255 naming the write error; no empty results are left, and the prefix on disk is
// checkable (unknown: it has no end record). The small disk is a tmpfs, so this needs root.
func TestFullDiskStopsTheRun(t *testing.T) {
	// Sequential: mounts a tmpfs (root).
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	bin := buildBinary(t)
	root := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", root).CombinedOutput(); err != nil {
		t.Skipf("no tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", root).Run() })
	start := time.Now()
	cmd := exec.Command(bin, "run", "--time", "120s", "--hold", "1ms-3ms", "--seed", "6", "--results", root)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the run went on with a full disk; stderr:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitHarness || !strings.Contains(stderr.String(), "no space left on device") {
		t.Fatalf("exit %d after %s, want %d naming the write error; stderr:\n%s", code, time.Since(start), exitHarness, stderr.String())
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if fi, err := os.Stat(filepath.Join(dir, "results.json")); err == nil && fi.Size() == 0 {
		t.Fatal("an empty results.json was left")
	}
	hist, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(cp, hist, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := execute(context.Background(), []string{"check", cp}); code != exitUnknown && code != exitInvalid {
		t.Fatalf("check of the prefix: exit %d", code)
	}
}
