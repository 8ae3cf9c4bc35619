package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/history"
)

var (
	workerCacheOnce sync.Once
	workerCache     string
	ownWorkerCache  bool // made here, not given by scripts/shards
	workerCacheErr  error
)

// TestMain points every test, and every lockcheck process a test starts, at one worker cache for this
// test binary before any test runs, so each worker (redisson, redis-py, node-redlock, redsync...) is built
// once per go test run, not once per test, and removes it and the built lockcheck at the end.
func TestMain(m *testing.M) {
	if err := setWorkerCache(); err != nil {
		fmt.Fprintln(os.Stderr, "worker cache:", err)
		os.Exit(1)
	}
	code := m.Run()
	if ownWorkerCache {
		_ = os.RemoveAll(workerCache)
	}
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// setWorkerCache sets LOCKCHECK_CACHE to a fresh directory (from this tree: a cache kept across test runs
// is keyed by worker version only, so it could hold an older build of a changed worker) and
// LOCKCHECK_WORKERS to this tree's workers, once, in the process's environment rather than per test
// (t.Setenv), so that the worker tests can run in parallel; the value is the same for every test. Builds
// into the shared cache are serialised by its lock files.
func setWorkerCache() error {
	workerCacheOnce.Do(func() {
		// scripts/shards gives its test processes one cache, which it removes.
		d := os.Getenv("LOCKCHECK_TEST_CACHE")
		if d == "" {
			var err error
			if d, err = os.MkdirTemp("", "lockcheck-worker-cache-"); err != nil {
				workerCacheErr = err
				return
			}
			ownWorkerCache = true
		}
		workerCache = d
		workers, err := filepath.Abs(filepath.Join("..", "..", "workers"))
		if err != nil {
			workerCacheErr = err
			return
		}
		os.Setenv("LOCKCHECK_CACHE", d)
		os.Setenv("LOCKCHECK_WORKERS", workers)
	})
	return workerCacheErr
}

// useWorkerCache says that a test builds or runs workers: into the cache TestMain set up.
func useWorkerCache(t *testing.T) {
	t.Helper()
	if err := setWorkerCache(); err != nil {
		t.Fatal(err)
	}
}

// chaosSeeds are the seeds a chaos test runs in make test: the first of those its verdict was shown on,
// or all of them with LOCKCHECK_SEEDS=all (make test-all-seeds), to keep make test under 25 minutes.
func chaosSeeds(all ...string) []string {
	if os.Getenv("LOCKCHECK_SEEDS") == "all" {
		return all
	}
	return all[:1]
}

// The protocol's negative control: the naive worker (SET NX PX, unconditional DEL) with holds longer than
// its lease is flagged on every seed, through the real worker processes, by the model and by exclusion.
func TestNaiveWorkerIsFlagged(t *testing.T) {
	// Sequential: 3 s negative controls must be flagged.
	useWorkerCache(t)
	for _, seed := range []string{"1", "2", "3"} {
		t.Run("seed"+seed, func(t *testing.T) {
			code, dir := run(t, "run", "--client", "naive", "--time", "3s", "--quiet", "1s", "--clients", "4", "--seed", seed)
			if code != exitInvalid {
				t.Fatalf("exit %d, want %d", code, exitInvalid)
			}
			flagged := map[string]bool{}
			for _, c := range readResults(t, dir).Checkers {
				flagged[c.Checker] = c.Valid == false
			}
			if !flagged["mutual-exclusion"] || !flagged["porcupine"] {
				t.Fatalf("want exclusion and porcupine invalid: %v", flagged)
			}
		})
	}
}

// Its safe twin (compare-and-delete), with a lease longer than the holds, is valid, also through
// Sentinel (the worker reaches the primary the Sentinels announce through init's nat, and authenticates
// to them); results.json names the library and version the worker gave in init_ok.
func TestNaiveSafeWorkerIsValid(t *testing.T) {
	t.Parallel() // fault-free valid runs
	useWorkerCache(t)
	for _, tc := range [][]string{{"--seed", "1"}, {"--seed", "2"}, {"--seed", "1", "--topology", "sentinel"}} {
		seed := strings.Join(tc, " ")
		code, dir := run(t, append([]string{"run", "--client", "naive-safe", "--time", "3s", "--quiet", "1s", "--clients", "4"}, tc...)...)
		if code != exitValid {
			t.Fatalf("seed %s: exit %d, want %d (%s)", seed, code, exitValid, dir)
		}
		b, err := os.ReadFile(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"client": "naive-safe 1"`) {
			t.Fatalf("results.json does not name the worker's library and version:\n%s", b)
		}
		if _, err := os.Stat(filepath.Join(dir, "clients", "c1", "stderr.log")); err != nil {
			t.Fatal(err)
		}
	}
}

// A worker frozen by client-pause (SIGSTOP right after a grant) for longer than its lease: the next
// holder overlaps it, and the frozen worker answers again after SIGCONT. The pause is fired by a grant
// (--nemesis-trigger): armed on a drawn client, it can wait out its window while another client, releasing
// and re-acquiring within a millisecond, keeps the lock from it (seen in CI: no window caught a holder).
func TestClientPauseOnWorker(t *testing.T) {
	// Sequential: client pause: a frozen worker must overlap the next holder.
	useWorkerCache(t)
	code, dir := run(t, "run", "--client", "naive-safe", "--nemesis", "client-pause", "--nemesis-trigger", "--lease", "500ms",
		"--hold", "50ms-100ms", "--nemesis-interval", "1s", "--nemesis-duration", "2s", "--time", "12s", "--quiet", "2s",
		"--clients", "3", "--seed", "3")
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d (%s)", code, exitInvalid, dir)
	}
	for _, c := range readResults(t, dir).Checkers {
		if c.Checker == "mutual-exclusion" && c.Valid != false {
			t.Fatalf("exclusion: %+v", c)
		}
		if c.Checker == "porcupine" && c.Valid != true {
			t.Fatalf("the safe twin's commands must stay legal under a client pause: %+v", c)
		}
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var frozen string
	var at int64
	for _, f := range h.Faults {
		if f.Phase == "frozen" && frozen == "" {
			frozen, at = f.Targets[0], f.Time
		}
	}
	if frozen == "" {
		t.Fatal("no worker was frozen after a grant")
	}
	for _, o := range h.Ops {
		if o.Invoke.Client == frozen && o.Invoke.Time > at+int64(2*time.Second) && o.Outcome() == history.Ok {
			return
		}
	}
	t.Fatalf("%s never completed an operation after its pause", frozen)
}

// A worker that exits, one that never answers and one that prints garbage each end the run with one
// clear line naming the client, exit 255, no process left, and a history that check judges.
func TestMisbehavingWorkers(t *testing.T) {
	// Sequential: swaps os.Stderr (captureStderr).
	for _, tc := range []struct{ script, says string }{
		{"exits.sh", "worker exited (exit status 3)"},
		{"garbage.sh", "worker printed a line that is not a JSON object"},
		{"silent.sh", "unanswered for"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			script, _ := filepath.Abs(filepath.Join("testdata", "workers", tc.script))
			stderr := captureStderr(t)
			code, dir := run(t, "run", "--client-cmd", script, "--lock", "naive", "--wait", "100ms", "--lease", "300ms",
				"--timeout", "200ms", "--time", "20s", "--quiet", "1s", "--clients", "2", "--seed", "1")
			out := stderr()
			if code != exitHarness {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitHarness, out)
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "worker") && strings.HasPrefix(l, "lockcheck: client c") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], tc.says) {
				t.Fatalf("want one error line saying %q, got %q; stderr:\n%s", tc.says, lines, out)
			}
			if left := ownWorkers(filepath.Dir(script)+"/", "600.123"); len(left) > 0 {
				t.Fatalf("worker processes left behind: %v", left)
			}
			if code := execute(t.Context(), []string{"check", dir}); code != exitValid && code != exitInvalid && code != exitUnknown {
				t.Fatalf("check of the kept history: exit %d", code)
			}
		})
	}
}

// captureStderr redirects os.Stderr until the returned function reads what was written.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	return capture(t, &os.Stderr)
}

// capture redirects *f (os.Stdout or os.Stderr) until the returned function reads what was written.
func capture(t *testing.T, f **os.File) func() string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := *f
	*f = w
	var buf strings.Builder
	done := make(chan struct{})
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			buf.Write(b[:n])
			if err != nil {
				close(done)
				return
			}
		}
	}()
	restore := func() { *f = old }
	t.Cleanup(restore)
	return func() string {
		restore()
		w.Close()
		<-done
		return buf.String()
	}
}

// ownWorkers are the live processes of workers this test process started whose command line holds one of
// subs: a worker and its descendants carry the tag LOCKCHECK_WORKER_TREE=PID.N (clients/worker/tree.go), PID
// this process's. Matching the command line alone also caught other shards' workers (a grant.sh of a
// parallel test in another process); the tag alone, an earlier test's worker still being stopped.
func ownWorkers(subs ...string) []string {
	tag := []byte("LOCKCHECK_WORKER_TREE=" + strconv.Itoa(os.Getpid()) + ".")
	return slices.DeleteFunc(processesMatching(subs...), func(p string) bool {
		pid, _, _ := strings.Cut(p, ":")
		env, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
		return err != nil || !bytes.Contains(env, tag)
	})
}

// processesMatching lists live processes whose command line contains any of the strings.
func processesMatching(subs ...string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		for _, s := range subs {
			if strings.Contains(cmd, s) {
				out = append(out, e.Name()+": "+cmd)
			}
		}
	}
	return out
}

// Bad worker input is one line and 254 before anything starts; a failed build is the harness's (255).
func TestWorkerInputErrors(t *testing.T) {
	// Sequential: t.Setenv, worker.Register; swaps os.Stderr (captureStderr).
	useWorkerCache(t)
	exits, _ := filepath.Abs(filepath.Join("testdata", "workers", "exits.sh"))
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--client", "nosuch"}, exitUsage, "no such worker"},
		{[]string{"--client", "naive@2"}, exitUsage, "no such version"},
		{[]string{"--client", "naive", "--nemesis", "client-clock", "--time", "11s"}, exitUsage, "cannot shift the clock of worker naive"},
		{[]string{"--client", "naive", "--client-option", "novalue"}, exitUsage, "want KEY=VALUE"},
		{[]string{"--client", "naive", "--scripts", "."}, exitUsage, "runs no scripts"},
		{[]string{"--lock", "mutex"}, exitUsage, "a library's own lock"},
		{[]string{"--client-cmd", exits, "--lock", "reentrant"}, exitUsage, "cannot drive lock reentrant"},
	} {
		stderr := captureStderr(t)
		code, _ := run(t, append([]string{"run", "--time", "2s", "--quiet", "1s", "--clients", "1"}, tc.args...)...)
		out := stderr()
		if code != tc.code || !strings.Contains(out, tc.says) {
			t.Fatalf("%v: exit %d, want %d saying %q; stderr:\n%s", tc.args, code, tc.code, tc.says, out)
		}
	}
	worker.Register(worker.Spec{Name: "test-failing", Folder: "failing", Language: "sh", DefaultVersion: "9.9"})
	t.Setenv("LOCKCHECK_WORKERS", filepath.Join("..", "..", "clients", "worker", "testdata", "workers"))
	stderr := captureStderr(t)
	code, _ := run(t, "run", "--client", "test-failing", "--time", "2s", "--quiet", "1s")
	if out := stderr(); code != exitHarness || !strings.Contains(out, "building worker test-failing@9.9 failed") {
		t.Fatalf("failed build: exit %d; stderr:\n%s", code, out)
	}
}

// worker-check passes a working worker on every item, and names what a broken one gets wrong.
func TestWorkerCheck(t *testing.T) {
	// Sequential: swaps os.Stdout (capture).
	useWorkerCache(t)
	root := t.TempDir()
	stdout := capture(t, &os.Stdout)
	code := execute(t.Context(), []string{"worker-check", "--client", "naive-safe", "--time", "4s", "--results", root})
	out := stdout()
	if code != exitValid || strings.Count(out, "✓") != 3 {
		t.Fatalf("naive-safe: exit %d:\n%s", code, out)
	}
	garbage, _ := filepath.Abs(filepath.Join("testdata", "workers", "garbage.sh"))
	stdout = capture(t, &os.Stdout)
	code = execute(t.Context(), []string{"worker-check", "--time", "4s", "--results", root, garbage})
	out = stdout()
	if code != exitInvalid || !strings.Contains(out, "✓ handshake: garbage 0") ||
		!strings.Contains(out, "✗ fault-free run: client c") || !strings.Contains(out, "not a JSON object") {
		t.Fatalf("garbage: exit %d:\n%s", code, out)
	}
}

// client-clock shifts a worker's wall clock through the clock library it was started with: a script
// worker that logs `date` sees the jump.
func TestClientClockShiftsWorker(t *testing.T) {
	// Sequential: clock faults: a shift must reach a 5 s run.
	script, _ := filepath.Abs(filepath.Join("testdata", "workers", "grant.sh"))
	start := time.Now().Unix()
	code, dir := run(t, "run", "--client-cmd", script, "--lock", "naive", "--nemesis", "client-clock", "--clock-bump", "1h",
		"--nemesis-interval", "1s", "--nemesis-duration", "2s", "--hold", "50ms",
		"--time", "5s", "--quiet", "1s", "--clients", "2", "--seed", "1")
	if code == exitHarness || code == exitUsage {
		t.Fatalf("exit %d", code)
	}
	var far int64 // the largest distance of a logged clock from the real one, in seconds
	var logs string
	for _, c := range []string{"c1", "c2"} {
		b, err := os.ReadFile(filepath.Join(dir, "clients", c, "stderr.log"))
		if err != nil {
			t.Fatal(err)
		}
		logs += string(b)
		for _, l := range strings.Split(string(b), "\n") {
			var v int64
			if _, err := fmt.Sscanf(l, "clock %d", &v); err == nil {
				far = max(far, v-start, start-v)
			}
		}
	}
	if d := time.Duration(far) * time.Second; d < 50*time.Minute || d > 70*time.Minute {
		t.Fatalf("the workers' clocks moved at most %s, want about an hour ahead or behind:\n%s", d, logs)
	}
}

// Read holds share: a worker's read release frees the lock only when it is the last reader of any
// client, which the run's count of read holds says; recorded as "freed" whenever its own client held no
// more, it made every read-write run with readers invalid. The set-up calls of the semaphore workload (its thread 0) go on a positive protocol thread.
func TestWorkerRecordsReadersAndSetup(t *testing.T) {
	t.Parallel() // fault-free runs of a granting script
	script, _ := filepath.Abs(filepath.Join("testdata", "workers", "grant.sh"))
	code, dir := run(t, "run", "--client-cmd", "env KINDS=rwlock "+script, "--lock", "rwlock", "--readers", "1:0",
		"--check-timeout", "10s", "--time", "3s", "--quiet", "1s", "--clients", "3", "--seed", "1")
	if code != exitValid {
		t.Fatalf("readers only: exit %d, want %d (%s)", code, exitValid, dir)
	}
	_, dir = run(t, "run", "--client-cmd", "env KINDS=semaphore "+script, "--lock", "semaphore",
		"--time", "2s", "--quiet", "1s", "--clients", "2", "--seed", "1")
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	set := false
	for _, o := range h.Ops {
		if o.Complete != nil && strings.Contains(o.Complete.Error, "thread") {
			t.Fatalf("%s: %s", o.Invoke.F, o.Complete.Error)
		}
		set = set || o.Invoke.F == "lcp_set_permits" && o.Outcome() == history.Ok
	}
	if !set {
		t.Fatal("no set_permits succeeded")
	}
}

// A worker whose start fails (it exits before answering init: a runtime that missed its start among several)
// is started once more, saying which client and why, and the run goes on with the second start: valid. A
// worker that fails both starts ends the run as before (TestMisbehavingWorkers' exits end after init).
func TestWorkerStartRetriedOnce(t *testing.T) {
	// Sequential: swaps os.Stderr (captureStderr).
	script := filepath.Join(t.TempDir(), "flaky.sh")
	body := "#!/bin/sh\n# Fails the first start of the run (it leaves a mark), then runs the naive-safe worker.\n" +
		"if mkdir \"$0.failed\" 2>/dev/null; then echo 'first start: giving up' >&2; exit 3; fi\nexec " + naiveCmd(t) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	stderr := captureStderr(t)
	code, _ := run(t, "run", "--client-cmd", script, "--lock", "naive", "--time", "2s", "--quiet", "1s", "--clients", "2", "--seed", "1")
	out := stderr()
	if code != exitValid {
		t.Fatalf("exit %d, want %d (the second start runs); stderr:\n%s", code, exitValid, out)
	}
	if n := strings.Count(out, "its worker failed to start"); n != 1 || !strings.Contains(out, "starting it once more") {
		t.Fatalf("want one line naming the client whose first start failed, got %d; stderr:\n%s", n, out)
	}
}
