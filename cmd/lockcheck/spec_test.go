package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// runBinary runs the built binary and returns its exit code, stdout and stderr.
func runBinary(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// writeSpec copies an example spec (and its script files) into a temp dir, editing its text.
func writeSpec(t *testing.T, example string, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", "locks")
	b, err := os.ReadFile(filepath.Join(src, example))
	if err != nil {
		t.Fatal(err)
	}
	lua, _ := filepath.Glob(filepath.Join(src, "*.lua"))
	for _, f := range lua {
		s, _ := os.ReadFile(f)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), s, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, example)
	if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The example setnx lock, with its watchdog every 200 ms, is valid with holds longer than its lease: only
// the watchdog's compare-and-pexpire keeps it, and its renewals are recorded.
func TestLockSpecSetnxValid(t *testing.T) {
	// Sequential: a 600 ms watchdog must renew within 700 ms holds.
	bin := buildBinary(t)
	spec := writeSpec(t, "setnx.yaml", func(s string) string { return strings.Replace(s, "every: 10s", "every: 200ms", 1) })
	root := t.TempDir()
	code, out, errs := runBinary(t, bin, "run", "--lock-spec", spec, "--watchdog", "600ms", "--hold", "700ms-1200ms",
		"--time", "5s", "--quiet", "1s", "--clients", "4", "--seed", "1", "--results", root)
	if code != exitValid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	for _, c := range readResults(t, dir).Checkers {
		if c.Valid != true {
			t.Fatalf("%s: %v", c.Checker, c.Valid)
		}
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	renewals, releases := 0, 0
	for _, o := range h.Ops {
		switch {
		case o.Invoke.F == "renew" && o.Outcome() == history.Ok:
			renewals++
		case o.Invoke.F == "release" && o.Outcome() == history.Ok && *o.Complete.Value == 1:
			releases++
		}
	}
	if renewals == 0 || releases == 0 {
		t.Fatalf("%d renewals and %d releases recorded", renewals, releases)
	}
}

// Its broken twin (unconditional DEL) is flagged on its control flags: porcupine finds a release of
// another owner's lock.
func TestLockSpecBrokenTwinFlagged(t *testing.T) {
	// Sequential: a 4 s negative control must be flagged.
	bin := buildBinary(t)
	root := t.TempDir()
	code, out, errs := runBinary(t, bin, "run", "--lock-spec", filepath.Join("..", "..", "examples", "locks", "setnx-broken.yaml"),
		"--time", "4s", "--quiet", "1s", "--clients", "4", "--seed", "1", "--results", root)
	if code != exitInvalid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "setnx-broken is a negative control") {
		t.Fatalf("stderr does not announce the control:\n%s", errs)
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	for _, c := range readResults(t, dir).Checkers {
		if c.Checker == "porcupine" && (c.Valid != false || !strings.Contains(c.Violation, "release → 1")) {
			t.Fatalf("porcupine: %+v", c)
		}
	}
}

// A bad spec is refused before anything starts: exit 254 and one line naming the file and operation.
func TestLockSpecBadSpec(t *testing.T) {
	t.Parallel() // bad input: nothing starts
	bin := buildBinary(t)
	spec := writeSpec(t, "setnx.yaml", func(s string) string {
		return strings.Replace(s, `"{{token}}", "{{lease_ms}}"`, `"{{tokn}}", "{{lease_ms}}"`, 1)
	})
	root := t.TempDir()
	code, out, errs := runBinary(t, bin, "run", "--lock-spec", spec, "--time", "3s", "--quiet", "1s", "--results", root)
	if code != exitUsage {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	want := "lockcheck: " + spec + ": operation acquire: argv[1]: template \"{{tokn}}\": unknown placeholder {{tokn}}"
	if lines := strings.Split(strings.TrimSpace(errs), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) || out != "" {
		t.Fatalf("stdout %q, stderr:\n%s\nwant one line starting %q", out, errs, want)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("a run directory was made for a bad spec: %v", entries)
	}
}

// A script that does not compile stops the run right after start-up: exit 254, one line naming the
// operation, the file and Redis's message, and no redis-server left behind.
func TestLockSpecScriptSyntaxError(t *testing.T) {
	t.Parallel() // bad input: refused at start
	bin := buildBinary(t)
	spec := writeSpec(t, "setnx.yaml", func(s string) string { return s })
	lua := filepath.Join(filepath.Dir(spec), "setnx-release.lua")
	if err := os.WriteFile(lua, []byte("if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nreturn 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	code, out, errs := runBinary(t, bin, "run", "--lock-spec", spec, "--time", "3s", "--quiet", "1s", "--results", root)
	if code != exitUsage {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != 1 {
		t.Fatalf("stderr has %d lines, want one:\n%s", len(lines), errs)
	}
	last := lines[0]
	for _, want := range []string{spec + ": operation release: script " + lua + " does not compile:",
		"Error compiling script", "'end' expected"} {
		if !strings.Contains(last, want) {
			t.Fatalf("last stderr line %q lacks %q\nstdout: %q", last, want, out)
		}
	}
	if out != "" {
		t.Fatalf("stdout %q: no verdict table for a run that never started", out)
	}
	// A refused start leaves no process started under the run, and results/latest does not point at it
	// (its directory stays only for the node's log).
	if left := processesUnder(root); len(left) > 0 {
		t.Fatalf("processes outlived the refused run: %v", left)
	}
	if _, err := os.Lstat(filepath.Join(root, "latest")); err == nil {
		t.Fatal("results/latest points at a run that never started")
	}
}

// `lockcheck locks --lock-spec FILE` lists the spec's lock with its family; a bad spec is bad input.
func TestLocksListsASpecLock(t *testing.T) {
	// Sequential: registers a spec kind in the process-wide registry.
	if err := listLockSpec(filepath.Join("..", "..", "examples", "locks", "rwlock.yaml")); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writeLocks(&b); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "rwlock-zset" {
			found = f[1] == "rwlock"
		}
	}
	if !found {
		t.Fatalf("rwlock-zset is not listed as an rwlock:\n%s", b.String())
	}
	if err := listLockSpec("nope.yaml"); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("a missing spec: %v", err)
	}
	if code := execute(t.Context(), []string{"locks", "--lock-spec", "nope.yaml"}); code != exitUsage {
		t.Fatalf("exit %d", code)
	}
}

// The example read-write lock and semaphore are valid fault-free, judged by their families' models.
func TestLockSpecRWAndSemaphoreValid(t *testing.T) {
	// Sequential: its in-process runs register spec kinds, which TestEveryLockIsValidWithoutFaults iterates.
	for _, ex := range []string{"rwlock.yaml", "semaphore.yaml"} {
		t.Run(ex, func(t *testing.T) {
			code, dir := run(t, "run", "--lock-spec", filepath.Join("..", "..", "examples", "locks", ex), "--time", "4s",
				"--quiet", "1s", "--clients", "4", "--seed", "1")
			r := readResults(t, dir)
			if code != exitValid {
				t.Fatalf("exit %d: %+v", code, r)
			}
			if len(r.Checkers) < 3 {
				t.Fatalf("checkers %+v", r.Checkers)
			}
			for _, c := range r.Checkers {
				if c.Valid != true {
					t.Fatalf("%s: %v", c.Checker, c.Valid)
				}
			}
		})
	}
}
