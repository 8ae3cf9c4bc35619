package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// hostileScript is a test worker script's absolute path.
func hostileScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "workers", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// uniqueMark is an argument for sleep that no other process has: the test finds its worker's processes by it.
func uniqueMark() string {
	return fmt.Sprintf("1000.%d%06d", os.Getpid(), time.Now().UnixNano()%1e6)
}

// killLeft kills, at the end of a test, whatever carries mark (the test fails first if anything did).
func killLeft(t *testing.T, mark string) {
	t.Cleanup(func() {
		for _, p := range processesMatching(mark) {
			var pid int
			if _, err := fmt.Sscanf(p, "%d:", &pid); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// A worker version is a name: --client NAME@VERSION with a path is one line and 254, and neither the
// folder it points at nor the cache's other builds are touched. Before, Build removed the folder the path
// led to (here ROOT/victim, and with @.. every cached build) before and after running build.sh.
func TestWorkerVersionPathRefused(t *testing.T) {
	// Sequential: t.Setenv; swaps os.Stderr (stderrOf).
	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	t.Setenv("LOCKCHECK_CACHE", cache)
	victim := filepath.Join(root, "victim")       // cache/workers/redis-py/../../../victim
	other := filepath.Join(cache, "workers", "x") // another worker's cached builds: cache/workers/redis-py/..
	for _, d := range []string{victim, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "keep"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"run", "--client", "redis-py@../../../victim", "--time", "2s", "--quiet", "1s"},
		{"run", "--client", "redis-py@..", "--time", "2s", "--quiet", "1s"},
		{"run", "--client", "redis-py@../../../victim,go", "--time", "2s", "--quiet", "1s"},
		{"worker-check", "--client", "redis-py@../../../victim", "--results", root},
	} {
		code, stderr := stderrOf(t, args...)
		msg := strings.TrimSpace(stderr)
		if code != exitUsage || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "not a name") {
			t.Errorf("%v: exit %d, want %d with one line saying the version is not a name; stderr:\n%s", args, code, exitUsage, stderr)
		}
		for _, d := range []string{victim, other} {
			if _, err := os.Stat(filepath.Join(d, "keep")); err != nil {
				t.Fatalf("%v: %s was touched: %v", args, d, err)
			}
		}
	}
}

// startMarked starts a naive run of runFor with two workers running script, their processes marked with
// MARK (killed, if left, at the end of the test), and returns it with the mark.
func startMarked(t *testing.T, script, runFor string) (*started, string) {
	t.Helper()
	mark := uniqueMark()
	killLeft(t, mark)
	return start(t, exec.Command(buildBinary(t), "run", "--client-cmd", "env MARK="+mark+" "+hostileScript(t, script), "--lock", "naive",
		"--clients", "2", "--time", runFor, "--results", t.TempDir())), mark
}

// Ctrl-C while the workers start (one never answers init) stops the run at once with 130, as the README
// promises, and leaves no worker process. Before, the run waited for init's bound (70 s).
func TestMuteWorkerInterrupted(t *testing.T) {
	// Sequential: SIGINT must end it within 10 s.
	p, mark := startMarked(t, "mute.sh", "30s")
	for deadline := time.Now().Add(30 * time.Second); len(processesMatching("sleep "+mark)) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the workers never started; stderr:\n%s", p.stderr)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.exited(t, 10*time.Second, "SIGINT while the workers start"); code != exitInterrupted {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInterrupted, p.stderr)
	}
	if left := processesMatching("sleep " + mark); len(left) > 0 {
		t.Fatalf("worker processes left: %v", left)
	}
}

// A worker that floods stdout with one endless line ends the run at once with the documented reason, on
// stderr and in the history's end record, exit 255. Before, the reader waited for the worker (blocked on
// the full pipe) and the request's bound killed it much later, as "unanswered".
func TestFloodingWorker(t *testing.T) {
	// Sequential: must end within 40 s while a worker floods.
	bin := buildBinary(t)
	results := t.TempDir()
	p := start(t, exec.Command(bin, "run", "--client-cmd", hostileScript(t, "flood.sh"), "--lock", "naive", "--lease", "1s",
		"--clients", "1", "--time", "60s", "--results", results))
	code := p.exited(t, 40*time.Second, "a run whose worker floods stdout")
	if code != exitHarness || !strings.Contains(p.stderr.String(), "client c1: worker printed a line longer than 1 MiB") {
		t.Fatalf("exit %d, want %d with the reason; stderr:\n%s", code, exitHarness, p.stderr)
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(results, "latest"))
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Ended == nil || h.Ended.F != string(history.EndFailed) || !strings.Contains(h.Ended.Error, "longer than 1 MiB") {
		t.Fatalf("end record %+v, want failed with the reason", h.Ended)
	}
	if strings.Contains(string(mustRead(t, filepath.Join(dir, "history.jsonl"))), "unanswered") {
		t.Fatal("the history says a request was unanswered: the worker was not stopped by its line")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A worker whose child leaves its group and session (setsid), ignores SIGTERM and holds the worker's
// stdout leaves nothing running after the run, and the teardown does not wait for it. Before, the teardown
// said "still closing after 10s" and the child was left running under pid 1.
func TestEscapingWorkerLeavesNothing(t *testing.T) {
	// Sequential: a 3 s run must end within 20 s.
	bin := buildBinary(t)
	mark := uniqueMark()
	killLeft(t, mark)
	begin := time.Now()
	p := start(t, exec.Command(bin, "run", "--client-cmd", "env MARK="+mark+" "+hostileScript(t, "escape.sh"), "--lock", "naive",
		"--clients", "2", "--hold", "10ms", "--time", "3s", "--quiet", "1s", "--results", t.TempDir()))
	code := p.exited(t, 40*time.Second, "a run whose workers' children escape")
	if code == exitHarness || code == exitUsage {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "still closing") {
		t.Fatalf("the teardown waited for the workers:\n%s", p.stderr)
	}
	if took := time.Since(begin); took > 20*time.Second {
		t.Fatalf("a 3 s run took %s", took)
	}
	if left := processesMatching("sleep " + mark); len(left) > 0 {
		t.Fatalf("processes left running: %v", left)
	}
}

// Replies the driver cannot take: a field of the wrong type is named with the type it should have (not
// "not a JSON object"), and an acquire_ok without granted is a protocol error naming the field (before, a
// silent refusal: the run went on and judged thousands of them). Each is one line and 255.
func TestMalformedWorkerReplies(t *testing.T) {
	// Sequential: swaps os.Stderr (stderrOf).
	for _, tc := range []struct{ answer, says string }{
		{`{"type":"acquire_ok","in_reply_to":%s,"granted":"yes"}`, `worker printed a message whose "granted" is a string, not a boolean`},
		{`{"type":"acquire_ok","in_reply_to":%s}`, `with acquire_ok without "granted", which the protocol requires`},
	} {
		cmd := "env 'ANSWER=" + tc.answer + "' LIB=reply " + hostileScript(t, "reply.sh")
		code, stderr := stderrOf(t, "run", "--client-cmd", cmd, "--lock", "naive", "--clients", "1", "--time", "5s",
			"--quiet", "1s", "--results", t.TempDir())
		var lines []string
		for _, l := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(l, "lockcheck: client c") {
				lines = append(lines, l)
			}
		}
		if code != exitHarness || len(lines) != 1 || !strings.Contains(lines[0], tc.says) || strings.Contains(stderr, "not a JSON object") {
			t.Errorf("%s: exit %d, want %d and one line saying %q; stderr:\n%s", tc.answer, code, exitHarness, tc.says, stderr)
		}
	}
}

// A worker's library name reaches the terminal with its control characters escaped: no ANSI sequence of
// the worker's is written to the user's terminal.
func TestWorkerLibraryIsPrintable(t *testing.T) {
	// Sequential: swaps os.Stderr (stderrOf).
	cmd := `env 'LIB=evil\u001b[2J\u001b[31m' 'ANSWER={"type":"acquire_ok","in_reply_to":%s,"granted":false}' ` + hostileScript(t, "reply.sh")
	code, stderr := stderrOf(t, "run", "--client-cmd", cmd, "--lock", "naive", "--clients", "1", "--time", "2s",
		"--quiet", "1s", "--results", t.TempDir())
	if code == exitHarness || code == exitUsage || strings.ContainsRune(stderr, 0x1b) || !strings.Contains(stderr, `workers (evil\x1b[2J\x1b[31m 0)`) {
		t.Fatalf("exit %d; stderr:\n%q", code, stderr)
	}
}

// A --client-cmd that cannot be run is bad input: one line and 254, before anything starts when it is not
// there at all. Before, 255. An executable the kernel cannot run (a script without #!) is found when the
// workers start: 254 too.
func TestClientCmdMissing(t *testing.T) {
	// Sequential: swaps os.Stderr (stderrOf).
	for _, tc := range []struct {
		cmd, says string
		before    bool // refused before anything starts
	}{
		{"/nonexistent/worker", "--client-cmd \"/nonexistent/worker\": stat /nonexistent/worker: no such file or directory", true},
		{"no-such-worker-command-xyz --flag", "executable file not found in $PATH", true},
		{hostileScript(t, "handshake.sh"), "exec format error", false},
	} {
		root := t.TempDir()
		code, stderr := stderrOf(t, "run", "--client-cmd", tc.cmd, "--lock", "naive", "--time", "2s", "--quiet", "1s", "--results", root)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != exitUsage || tc.before && len(lines) != 1 || !strings.Contains(lines[len(lines)-1], tc.says) {
			t.Errorf("%s: exit %d, want %d with a last line saying %q; stderr:\n%s", tc.cmd, code, exitUsage, tc.says, stderr)
		}
		if entries, _ := os.ReadDir(root); tc.before && len(entries) != 0 {
			t.Errorf("%s: a refused run left %d entries in the results directory", tc.cmd, len(entries))
		}
	}
}

// Issue 36 item 5: a worker that answers init and then nothing (a hung library call) is declared hung once
// a request goes unanswered past the bound (here wait 1 s + lease 0 + 4 × timeout 1 s + 5 s = 10 s; with the
// defaults it is 22 s, and such a --time 5s run ends in about 23 s), killed, and the run says so: the run
// ends within the 25 s with room for a loaded machine. Before, the workload waited for the
// request's old bound (45 s here, 57 s with the defaults: the watchdog's 30 s counted as a lease), and the
// run said nothing of it.
func TestSilentWorkerDeclaredHung(t *testing.T) {
	// Sequential: must end within 25 s (the bar).
	p := start(t, exec.Command(buildBinary(t), "run", "--client-cmd", hostileScript(t, "silent.sh"), "--lock", "naive",
		"--clients", "2", "--time", "5s", "--wait", "1s", "--timeout", "1s", "--results", t.TempDir()))
	code := p.exited(t, 25*time.Second, "a run whose worker never answers")
	if msg := p.stderr.String(); code != exitHarness || !strings.Contains(msg, "worker hung") ||
		!strings.Contains(msg, "wait 1s + lease 0s + 4 × timeout 1s + 5s") {
		t.Fatalf("exit %d, want %d with a line saying the worker hung and its bound; stderr:\n%s", code, exitHarness, msg)
	}
}

// Issue 36 item 5: SIGINT ends a run within 2 s whatever its workers do, with a history `check` judges: a
// worker that answers nothing, and one that floods events and never reads its stdin again (the writes
// of its requests block on the full pipe). Before, both held the run until their requests' bound (57 s),
// and the flooding one did not end 30 s after SIGINT.
func TestHungWorkersInterrupted(t *testing.T) {
	// Sequential: SIGINT must end each run within 2 s.
	bin := buildBinary(t)
	for _, cmd := range []string{hostileScript(t, "silent.sh"), eventsCmd(t, "EARLY=0 FLOOD=renewed NOREAD=1")} {
		r := startRun(t, bin, "--client-cmd", cmd, "--lock", "naive", "--clients", "2", "--time", "60s")
		var dir string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			dir, _ = filepath.EvalSymlinks(filepath.Join(r.root, "latest"))
			if hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl")); strings.Count(string(hist), `"invoke"`) >= 4 {
				break // every thread has a request out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the run never sent its requests; stderr:\n%s", cmd, r.all)
			}
		}
		time.Sleep(time.Second) // the pipe of the worker that never reads fills
		if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := r.wait(t, 2*time.Second); code != exitUnknown {
			t.Fatalf("%s: exit %d after SIGINT, want %d (unknown); stderr:\n%s", cmd, code, exitUnknown, r.all)
		}
		checkable(t, dir)
	}
}
