package main

import (
	"debug/macho"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A release archive's binary, built with -trimpath and copied alone into an empty directory with an empty
// worker cache, builds and runs the shipped workers from the sources inside it: no checkout, no
// LOCKCHECK_WORKERS (issue 25). redsync and redis-py are real fresh builds from the Go module proxy and PyPI.
func TestReleaseBinaryRunsWorkersAlone(t *testing.T) {
	t.Parallel() // the verdicts are fault-free ones
	dist := t.TempDir()
	archive := buildArchive(t, "linux", "amd64", dist)
	unpacked := t.TempDir()
	if out, err := exec.Command("tar", "-C", unpacked, "-xzf", archive).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	alone := t.TempDir()
	b, err := os.ReadFile(filepath.Join(unpacked, "lockcheck_v0.0.0-test_linux_amd64", "lockcheck"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(alone, "lockcheck")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// Only what a user's machine has: PATH, and Go's own caches so that module downloads are not repeated.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LOCKCHECK_CACHE=" + t.TempDir()}
	for _, k := range []string{"GOMODCACHE", "GOCACHE", "GOPATH", "GOFLAGS", "GOPROXY"} {
		if v, _ := exec.Command("go", "env", k).Output(); len(strings.TrimSpace(string(v))) > 0 {
			env = append(env, k+"="+strings.TrimSpace(string(v)))
		}
	}
	lockcheck := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = alone, env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := lockcheck("version"); code != 0 || !strings.Contains(out, "lockcheck v0.0.0-test") || !strings.Contains(out, "commit    c0ffee") {
		t.Fatalf("version: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"worker-check", "--client", "naive-safe"},
		{"run", "--client", "redsync", "--time", "3s", "--quiet", "1s", "--clients", "3", "--results", filepath.Join(alone, "results")},
		{"run", "--client", "redis-py", "--time", "3s", "--quiet", "1s", "--clients", "3", "--results", filepath.Join(alone, "results")},
	} {
		if code, out := lockcheck(args...); code != exitValid {
			t.Errorf("lockcheck %s: exit %d, want %d\n%s", strings.Join(args, " "), code, exitValid, out)
		}
	}
	if code, out := lockcheck("workers", "build", "redsync", "naive-safe"); code != 0 || strings.Count(out, "ready in") != 2 {
		t.Errorf("workers build: exit %d\n%s", code, out)
	}
	if code, out := lockcheck("workers", "build", "redsync@../x"); code != exitUsage || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("workers build of a bad version: exit %d, want %d, one line\n%s", code, exitUsage, out)
	}
}

// make release's other platforms build too: the darwin/arm64 archive holds an arm64 Mach-O lockcheck (the
// Linux-only parts, parent-death signals, the child subreaper and inotify, have stand-ins off Linux).
func TestReleaseArchiveForDarwin(t *testing.T) {
	t.Parallel()
	dist := t.TempDir()
	archive := buildArchive(t, "darwin", "arm64", dist)
	unpacked := t.TempDir()
	if out, err := exec.Command("tar", "-C", unpacked, "-xzf", archive).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	f, err := macho.Open(filepath.Join(unpacked, "lockcheck_v0.0.0-test_darwin_arm64", "lockcheck"))
	if err != nil {
		t.Fatalf("not a Mach-O binary: %v", err)
	}
	defer f.Close()
	if f.Cpu != macho.CpuArm64 {
		t.Fatalf("cpu %v, want arm64", f.Cpu)
	}
}

// buildArchive runs scripts/release/archive.sh and returns the archive's path, the last line of its stdout
// (go's own output, -v included when GOFLAGS asks for it, goes to stderr).
func buildArchive(t *testing.T, goos, goarch, dist string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "release", "archive.sh"), goos, goarch, "v0.0.0-test", "c0ffee", dist)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("archive.sh: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// make build stamps the version and commit as make release does: lockcheck version names the checkout's
// git describe and HEAD, not "dev" and "unknown".
func TestMakeBuildStamps(t *testing.T) {
	t.Parallel() // one go build
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Skipf("not a git checkout: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	describe, head := git("describe", "--tags", "--always", "--dirty"), git("rev-parse", "HEAD")
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("make", "-s", "-C", root, "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "lockcheck "+describe+"\n") || !strings.Contains(string(out), "commit    "+head) {
		t.Fatalf("version:\n%s\nwant lockcheck %s, commit %s", out, describe, head)
	}
}
