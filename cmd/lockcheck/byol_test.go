package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/history"
)

// A version the registry does not have, or that is no version of the library, is bad input: one line
// naming the library and the version, exit 254, and nothing of it left in the cache but its lock file.
// It used to be a failed build (255). An unknown library is one line too.
func TestUnknownClientVersion(t *testing.T) {
	t.Parallel() // builds and fault-free runs: not timing-sensitive
	useWorkerCache(t)
	for _, tc := range []struct{ client, says string }{
		{"redsync@v9.9.9", "the registry has no redsync v9.9.9"},              // not a v4 version: refused before asking
		{"redsync@v4.99.0", "the registry has no redsync v4.99.0"},            // the Go module proxy's answer
		{"redis-py@0.0.1", "the registry has no redis-py 0.0.1"},              // PyPI's
		{"node-redlock@99.0.0", "the registry has no node-redlock 99.0.0"},    // npm's
		{"nosuch@1.0", "--client nosuch: no such worker"},                     // no such library
		{"redsync-nosuch", "--client redsync-nosuch: no such worker (have: "}, // the names it has
	} {
		t.Run(tc.client, func(t *testing.T) {
			// The binary, not run(): this test is parallel, and capturing os.Stderr would take in others' output.
			code, _, out := runBinary(t, buildBinary(t), "run", "--client", tc.client, "--time", "2s", "--quiet", "1s",
				"--clients", "1", "--results", t.TempDir())
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.HasPrefix(l, "lockcheck: building worker ") { // the progress line before a build
					lines = append(lines, l)
				}
			}
			if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.says) {
				t.Fatalf("exit %d, want %d and one line saying %q; stderr:\n%s", code, exitUsage, tc.says, out)
			}
			name, version, _ := strings.Cut(tc.client, "@")
			left, _ := filepath.Glob(filepath.Join(workerCache, "workers", name, version+"*"))
			for _, f := range left {
				if !strings.HasSuffix(f, ".lock") {
					t.Fatalf("an unknown version left %s in the cache", f)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(workerCache, "workers", "redsync", "v4.99.0")); err == nil {
		t.Fatal("the unknown version's build folder was kept")
	}
}

// exclusionFlagged says whether the run's mutual-exclusion checker found two holders inside at once.
func exclusionFlagged(t *testing.T, dir string) bool {
	t.Helper()
	return strings.HasPrefix(verdicts(t, dir)["mutual-exclusion"], "invalid")
}

// redsync's Redlock trusts the masters' clocks: a jump on a majority expires a held lock early there, and
// another client takes it while the first still holds it (Kleppmann's case b), on every seed. Without
// faults the same run is valid.
func TestRedsyncRedlockClockJump(t *testing.T) {
	// Sequential: clock faults: two holders within a 10 s run.
	useWorkerCache(t)
	args := []string{"run", "--client", "redsync", "--topology", "redlock", "--lease", "2s", "--hold", "1s-1500ms",
		"--nemesis-interval", "1s", "--nemesis-duration", "2s", "--time", "10s", "--quiet", "1s", "--clients", "4"}
	for _, seed := range chaosSeeds("1", "2", "3") {
		code, dir := run(t, append(args, "--nemesis", "clock", "--nemesis-targets", "majority", "--seed", seed)...)
		if code != exitInvalid || !exclusionFlagged(t, dir) {
			t.Fatalf("clock, seed %s: exit %d, want %d with two holders: %v (%s)", seed, code, exitInvalid, verdicts(t, dir), dir)
		}
	}
	code, dir := run(t, append(args, "--nemesis", "none", "--seed", "1")...)
	if code != exitValid {
		t.Fatalf("fault-free: exit %d, want %d: %v (%s)", code, exitValid, verdicts(t, dir), dir)
	}
}

// bsm/redislock on Sentinel: replication is asynchronous, so a failover can promote a replica that never
// saw a grant, and another client takes the lock while the first holds it, on every seed. Fault-free the
// same run is valid. Each failover isolates the primary with one client kept on it; two holders need the
// others to reach the promoted replica while that client still holds the lock on the old primary, which
// some windows miss (seed 2 overlapped only in its second window at 9 s): 14 s gives each seed three.
func TestRedislockSentinelFailover(t *testing.T) {
	// Sequential: failover windows must overlap a hold.
	useWorkerCache(t)
	args := []string{"run", "--client", "redislock", "--topology", "sentinel", "--lease", "2s", "--hold", "300ms-600ms",
		"--nemesis-interval", "1s", "--nemesis-duration", "3s", "--time", "14s", "--quiet", "1s", "--clients", "4"}
	for _, seed := range chaosSeeds("1", "2", "3") {
		code, dir := run(t, append(args, "--nemesis", "failover", "--seed", seed)...)
		if code != exitInvalid || !exclusionFlagged(t, dir) {
			t.Fatalf("failover, seed %s: exit %d, want %d with two holders: %v (%s)", seed, code, exitInvalid, verdicts(t, dir), dir)
		}
	}
	code, dir := run(t, append(args, "--nemesis", "none", "--seed", "1")...)
	if code != exitValid {
		t.Fatalf("fault-free: exit %d, want %d: %v (%s)", code, exitValid, verdicts(t, dir), dir)
	}
}

// The Go libraries' workers are Go binaries, which read the clock without libc: client-clock cannot
// shift them and is refused before anything is built or started (254), while the same fault on a worker
// whose runtime reads time through libc goes ahead (TestClientClockShiftsWorker shows it shifting).
func TestClientClockRefusedForGoWorkers(t *testing.T) {
	// Sequential: swaps os.Stderr (captureStderr).
	useWorkerCache(t)
	for _, client := range []string{"redsync", "redislock", "redsync@v4.0.3"} {
		stderr := captureStderr(t)
		code, _ := run(t, "run", "--client", client, "--nemesis", "client-clock", "--time", "11s", "--quiet", "1s", "--clients", "1")
		out := stderr()
		name, _, _ := strings.Cut(client, "@")
		if code != exitUsage || !strings.Contains(out, "cannot shift the clock of worker "+name+" (go:") ||
			strings.Contains(out, "building worker") {
			t.Fatalf("%s: exit %d, want %d refused before a build; stderr:\n%s", client, code, exitUsage, out)
		}
	}
	// The built binaries really are Go ones: the registry's flag is not a guess.
	for _, name := range []string{"redsync", "redislock"} {
		s, version, err := worker.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		argv, err := worker.Build(t.Context(), s, version, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(filepath.Dir(argv[0]), "worker")
		if ok, why := worker.Shiftable([]string{bin}); ok || !strings.Contains(why, "Go binary") {
			t.Fatalf("%s: Shiftable(%s) = %v, %q", name, bin, ok, why)
		}
	}
}

// The example spec's broken twin (unconditional DEL) is flagged on every seed 1-5 with its control flags,
// by exclusion and porcupine, well within the 15 s its README line gives.
func TestLockSpecBrokenTwinEverySeed(t *testing.T) {
	// Sequential: 4 s negative controls must be flagged on every seed.
	spec := filepath.Join("..", "..", "examples", "locks", "setnx-broken.yaml")
	for _, seed := range []string{"1", "2", "3", "4", "5"} {
		code, dir := run(t, "run", "--lock-spec", spec, "--time", "4s", "--quiet", "1s", "--clients", "4", "--seed", seed)
		v := verdicts(t, dir)
		if code != exitInvalid || !strings.HasPrefix(v["mutual-exclusion"], "invalid") || !strings.HasPrefix(v["porcupine"], "invalid") {
			t.Fatalf("seed %s: exit %d, want %d flagged by exclusion and porcupine: %v (%s)", seed, code, exitInvalid, v, dir)
		}
	}
}

// workerCheck runs `lockcheck worker-check ARGS` and returns its exit code and what it printed. It runs the
// binary, not execute: its callers run in parallel, and capturing the process's os.Stdout would mix their
// outputs.
func workerCheck(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, _ := runBinary(t, buildBinary(t), append([]string{"worker-check", "--time", "4s", "--seed", "1", "--results", t.TempDir()}, args...)...)
	return code, out
}

// worker-check passes every reference worker on every item (handshake, fault-free run, client pause, and
// for the libraries that leave renewal to their application the holds past the lease, with and without
// extend), each built once into the test binary's worker cache; naive-safe is TestWorkerCheck's. The
// workers are checked side by side, as TestWorkerCheckExtend's two are: one after another they took 125 s
// with every worker built, 73 s side by side at -parallel 2 (go test -json, load 12-17).
func TestWorkerCheckReferenceWorkers(t *testing.T) {
	t.Parallel() // builds and fault-free runs: not timing-sensitive
	useWorkerCache(t)
	for _, client := range []string{"redsync", "redislock", "node-redlock", "redis-py", "pottery", "redisson"} {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			if client == "redisson" {
				needJava(t)
			}
			code, out := workerCheck(t, "--client", client)
			if code != exitValid || strings.Count(out, "✓") < 3 || strings.Contains(out, "✗") {
				t.Fatalf("exit %d, want %d with every item ✓:\n%s", code, exitValid, out)
			}
		})
	}
}

// The libraries issue 39 added pass worker-check on their default (latest) version and on an older one, each
// built once into the test binary's worker cache (a first venv or npm install takes 10-60 s, a Maven build of
// the Spring worker 50-80 s). aioredlock's
// lease item may fail, and only as its finding: its release (and extend) answers ok to a holder whose key
// expired and was taken and released by another owner meanwhile (docs/findings.md).
func TestWorkerCheckAddedLibraries(t *testing.T) {
	t.Parallel() // builds and fault-free runs: not timing-sensitive
	useWorkerCache(t)
	const told = "✗ lease: holds of 2s-3s on a 1s lease, never extended: the library answered ok to a holder that had lost the lock"
	for _, client := range []string{"python-redis-lock", "python-redis-lock@3.7.0", "aioredlock", "aioredlock@0.7.2",
		"redis-semaphore", "redis-semaphore@5.0.0", "spring-integration", "spring-integration@6.5.10"} {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			if strings.HasPrefix(client, "spring-integration") {
				needJava(t)
			}
			code, out := workerCheck(t, "--client", client)
			if strings.HasPrefix(client, "aioredlock") && strings.Contains(out, told) {
				out = strings.Replace(out, told, "✓ (the library's finding)", 1)
				code = exitValid
			}
			items := 5 // and lease and extend, for a library without a watchdog
			if strings.HasPrefix(client, "redis-semaphore") {
				items = 3 // its refresh is a watchdog: no lease items
			}
			if code != exitValid || strings.Count(out, "✓") < items || strings.Contains(out, "✗") {
				t.Fatalf("exit %d, want %d with %d items, every one ✓:\n%s", code, exitValid, items, out)
			}
		})
	}
}

// worker-check names what a deliberately broken worker gets wrong, item by item.
func TestWorkerCheckNamesTheFlaw(t *testing.T) {
	t.Parallel() // builds and fault-free runs: not timing-sensitive
	useWorkerCache(t)
	abs := func(name string) string {
		p, _ := filepath.Abs(filepath.Join("testdata", "workers", name))
		return p
	}
	// A worker that exits under the pause: the naive-safe worker behind a shell that dies on SIGCONT.
	s, version, err := worker.Lookup("naive-safe")
	if err != nil {
		t.Fatal(err)
	}
	argv, err := worker.Build(t.Context(), s, version, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	dies := filepath.Join(t.TempDir(), "dies-on-resume.sh")
	script := "#!/bin/sh\n# Dies when lockcheck resumes it after a client pause.\ntrap 'kill $pid; exit 5' CONT\n" +
		"exec 3<&0\n" + strings.Join(quoteAll(argv), " ") + " <&3 &\npid=$!\nwait $pid\n"
	if err := os.WriteFile(dies, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		says []string // in order: what each item printed
	}{
		{"exits", []string{abs("exits.sh")}, []string{"✓ handshake: exits 0", "✗ fault-free run: client c", "worker exited (exit status 3)"}},
		{"grants-everything", []string{"--lock", "naive", abs("grant.sh")},
			[]string{"✓ handshake: grant 0", "✗ fault-free run: verdict invalid: ", "overlapping"}},
		{"dies-on-resume", []string{dies}, []string{"✓ handshake", "✓ fault-free run: valid", "✗ client pause: client c", "worker exited (exit status 5)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := workerCheck(t, tc.args...)
			rest := out
			for _, s := range tc.says {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("exit %d; want %q in order %q:\n%s", code, s, tc.says, out)
				}
				rest = rest[i+len(s):]
			}
			if code != exitInvalid {
				t.Fatalf("exit %d, want %d:\n%s", code, exitInvalid, out)
			}
		})
	}
}

// The example specs keep their README verdicts under faults, in short runs of the README's flags: the
// correct setnx lock is valid under partition,kill (with AOF always, seeds 1 and 2) and the read-write
// lock under partition. The faults must have happened and holds been taken for that to mean anything.
// (The semaphore's partition,kill run is left to the README: porcupine takes half a minute on it.)
func TestLockSpecExamplesUnderFaults(t *testing.T) {
	// Sequential: its in-process runs register spec kinds, which TestEveryLockIsValidWithoutFaults iterates.
	for _, tc := range []struct{ spec, nemesis, seed string }{
		{"setnx.yaml", "partition,kill", "1"}, {"setnx.yaml", "partition,kill", "2"}, {"rwlock.yaml", "partition", "1"},
	} {
		t.Run(tc.spec+"/"+tc.nemesis+"/"+tc.seed, func(t *testing.T) {
			t.Parallel() // 10 s runs that mostly wait: two at a time
			args := []string{"run", "--lock-spec", filepath.Join("..", "..", "examples", "locks", tc.spec),
				"--nemesis", tc.nemesis, "--nemesis-interval", "2s", "--nemesis-duration", "1s",
				"--time", "10s", "--quiet", "2s", "--seed", tc.seed}
			if strings.Contains(tc.nemesis, "kill") { // as Redis's docs advise for locks
				args = append(args, "--persistence", "always")
			}
			code, dir := run(t, args...)
			if code != exitValid {
				t.Fatalf("exit %d, want %d: %v (%s)", code, exitValid, verdicts(t, dir), dir)
			}
			h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			applied := 0
			for _, w := range h.Windows() {
				if w.Healed {
					applied++
				}
			}
			if applied == 0 || len(h.Sections) == 0 {
				t.Fatalf("%d faults healed and %d holds: the run tested nothing (%s)", applied, len(h.Sections), dir)
			}
		})
	}
}
