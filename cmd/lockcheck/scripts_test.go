package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stderrOf runs the CLI in-process and returns its exit code and what it wrote to stderr.
func stderrOf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runCapturing(t, &os.Stderr, args...)
}

// stdoutOf runs the CLI in-process and returns its exit code and what it wrote to stdout.
func stdoutOf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runCapturing(t, &os.Stdout, args...)
}

func runCapturing(t *testing.T, f **os.File, args ...string) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := *f
	*f = w
	out := make(chan string)
	go func() { b, _ := io.ReadAll(r); out <- string(b) }()
	code := execute(context.Background(), args)
	*f = saved
	w.Close()
	return code, <-out
}

// A --scripts override Redis cannot compile is refused before the workload starts: 254, one line naming
// the file and carrying Redis's message, no history of operations, and no server left running.
func TestScriptSyntaxErrorIsRefused(t *testing.T) {
	// Sequential: swaps os.Stderr (stderrOf).
	scripts := t.TempDir()
	if err := os.WriteFile(filepath.Join(scripts, "acquire.lua"), []byte("return redis.call('pttl', KEYS[1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	code, stderr := stderrOf(t, "run", "--lock", "reentrant", "--scripts", scripts, "--time", "5s", "--results", root)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}
	var line string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "lockcheck: ") && strings.Contains(l, "acquire.lua") {
			line = l
		}
	}
	if !strings.Contains(line, filepath.Join(scripts, "acquire.lua")) || !strings.Contains(line, "Error compiling script") {
		t.Fatalf("no line naming the file with Redis's compile error; stderr:\n%s", stderr)
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if pids := serverPIDs(dir); len(pids) > 0 {
		t.Fatalf("servers left running: %v", pids)
	}
	if hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl")); strings.Contains(string(hist), `"type":"invoke"`) {
		t.Fatal("the workload ran with a script Redis cannot compile")
	}
}
