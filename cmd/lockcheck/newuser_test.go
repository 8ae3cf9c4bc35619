package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// What a new user met (issue 23): a worker of their own, tried as the README and docs/protocol.md show.

// buildMyWorker builds testdata/myworker, a stand-in for a user's worker: a correct lock that drives only
// its library's own kind (my-lock, mutex), refuses an init for any other with error 10, and exits 2 on
// any argument. It returns the binary's path, in dir.
func buildMyWorker(t *testing.T, dir string) string {
	t.Helper()
	return buildTestCommand(t, "./testdata/myworker", filepath.Join(dir, "my-worker"))
}

// buildTestCommand builds the command of package pkg (./testdata/NAME) into bin, and returns bin.
func buildTestCommand(t *testing.T, pkg, bin string) string {
	t.Helper()
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// runMetas reads the meta record of every run under root.
func runMetas(t *testing.T, root string) []map[string]any {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(root, "*", "history.jsonl"))
	var out []map[string]any
	for _, p := range paths {
		if filepath.Base(filepath.Dir(p)) == "latest" { // a link to one of the others
			continue
		}
		h, err := history.ReadFile(p)
		if err != nil || h.Meta == nil {
			t.Fatalf("%s: %v", p, err)
		}
		var m map[string]any
		if err := json.Unmarshal(h.Meta.Data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// A worker that knows only its own kind is asked for its kinds: worker-check and run --client-cmd, given
// no --lock, drive the first kind it names that lockcheck knows (mutex), and say so. They used to try
// reentrant, which the worker refused.
//
// The worker lives in a folder whose name has a space and a quote: worker-check starts the command from its
// arguments as given (it used to join and split them again, dropping the quote), and --client-cmd takes it
// quoted as docs/protocol.md says.
func TestNewUserWorkerKinds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's mine")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildMyWorker(t, dir)
	root := t.TempDir() // not under dir: redis-server takes no quote in its paths
	stdout := capture(t, &os.Stdout)
	code := execute(t.Context(), []string{"worker-check", "--time", "2s", "--results", root, bin})
	out := stdout()
	if !strings.Contains(out, "✓ handshake: my-lock 0.1") || !strings.Contains(out, "lock mutex, the first kind it names that lockcheck knows") {
		t.Fatalf("worker-check: exit %d:\n%s", code, out)
	}
	for _, m := range runMetas(t, root) {
		if m["lock"] != "mutex" {
			t.Fatalf("worker-check ran lock %v", m["lock"])
		}
	}
	stderr := captureStderr(t)
	code, latest := run(t, "run", "--client-cmd", `"`+bin+`"`, "--time", "2s", "--quiet", "500ms", "--nemesis", "none")
	errs := stderr()
	if code == exitUsage || code == exitHarness || !strings.Contains(errs, "no --lock: the worker (my-lock 0.1) drives my-lock, mutex: lock mutex") {
		t.Fatalf("run --client-cmd: exit %d:\n%s", code, errs)
	}
	if m := runMetas(t, filepath.Dir(latest)); len(m) != 1 || m[0]["lock"] != "mutex" {
		t.Fatalf("run: %v", m)
	}
}

// worker-check's two runs last --time: the client pause is fitted into it (it ran 10 s whatever --time said).
func TestWorkerCheckHonoursTime(t *testing.T) {
	useWorkerCache(t)
	root := t.TempDir()
	stdout := capture(t, &os.Stdout)
	execute(t.Context(), []string{"worker-check", "--client", "naive-safe", "--time", "2s", "--results", root})
	out := stdout()
	metas := runMetas(t, root)
	if len(metas) != 2 {
		t.Fatalf("%d runs:\n%s", len(metas), out)
	}
	for _, m := range metas {
		if o, _ := m["options"].(map[string]any); o["time"] != "2s" {
			t.Errorf("a run of %v with --time 2s", o["time"])
		}
	}
	if !strings.Contains(out, "in a 2s run") {
		t.Errorf("the pause's timing is not said:\n%s", out)
	}
}

// worker-check's examples run as shown, with ./my-worker the stand-in: lockcheck's flags before the
// command, nothing after it that the worker does not take (the README's `./my-worker --verbose` handed
// --verbose to the worker, which refused it).
func TestWorkerCheckExamples(t *testing.T) {
	dir := t.TempDir()
	bin := buildMyWorker(t, dir) // for ./my-worker: lockcheck starts its processes from a thread of its own, whose directory t.Chdir does not move
	ran := 0
	for _, line := range strings.Split(newWorkerCheckCmd().Example, "\n") {
		line, _, _ = strings.Cut(line, " #")
		line = strings.TrimSpace(line)
		if !strings.Contains(line, "./my-worker") {
			continue // the --client examples are run by TestWorkerCheck
		}
		words := strings.Fields(line) // lockcheck worker-check FLAGS... ./my-worker ARGS...
		args := append([]string{words[1], "--results", filepath.Join(dir, "results")}, words[2:]...)
		for i, a := range args {
			if a == "./my-worker" {
				args[i] = bin
			}
		}
		stdout := capture(t, &os.Stdout)
		code := execute(t.Context(), args)
		if out := stdout(); code != exitValid || strings.Count(out, "✓") != 5 { // my-worker extends: lease and extend too
			t.Errorf("%s: exit %d:\n%s", line, code, out)
		}
		ran++
	}
	if ran == 0 {
		t.Fatal("no example names ./my-worker")
	}
}

// A worker that will not say its kinds (it answers the probe's init with an error) stops a run given no
// --lock in one line that says what was asked and where the worker's stderr is: bad input, 254.
func TestNewUserProbeRefused(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the probe's directory, kept for the user, goes there
	script := filepath.Join(t.TempDir(), "refuses.sh")
	body := "#!/bin/sh\nread -r line\necho 'no lock given' >&2\n" +
		`printf '{"type":"error","in_reply_to":1,"code":12,"text":"init needs a lock"}\n'` + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	stderr := captureStderr(t)
	code, _ := run(t, "run", "--client-cmd", script, "--time", "2s", "--quiet", "500ms", "--nemesis", "none")
	errs := strings.TrimSpace(stderr())
	if code != exitUsage || strings.Count(errs, "\n") != 0 || !strings.Contains(errs, "asked for its lock kinds (an init without lock)") ||
		!strings.Contains(errs, "init needs a lock") || !strings.Contains(errs, "name the kind with --lock") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	_, log, _ := strings.Cut(errs, "(its stderr: ")
	log, _, _ = strings.Cut(log, ")")
	if b, err := os.ReadFile(log); err != nil || !strings.Contains(string(b), "no lock given") {
		t.Fatalf("the worker's stderr %q: %q, %v", log, b, err)
	}
	if !strings.HasPrefix(log, tmp) {
		t.Fatalf("the probe's directory %s is not under TMPDIR", log)
	}
}
