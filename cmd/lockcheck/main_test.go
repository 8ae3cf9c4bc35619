package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// run executes the CLI in-process with results under a temp dir and returns the exit code and run dir.
func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := t.TempDir()
	if args[0] == "run" {
		args = append(args, "--results", root)
	}
	code := execute(context.Background(), args)
	latest, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	return code, latest
}

type results struct {
	Valid    any `json:"valid"`
	Checkers []struct {
		Checker   string `json:"checker"`
		Valid     any    `json:"valid"`
		Violation string `json:"violation"`
		Summary   string `json:"summary"`
	} `json:"checkers"`
	Story struct {
		Text string `json:"text"`
	} `json:"story"`
	Notes []string `json:"notes"`
}

func readResults(t *testing.T, dir string) results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// The naive lock with holds always longer than its lease is flagged, for every seed: a second client takes
// the lock the moment the lease runs out, while the first is still inside.
func TestNaiveLockIsFlagged(t *testing.T) {
	// Sequential: 3 s negative controls must be flagged.
	for _, seed := range []string{"1", "2", "3"} {
		t.Run("seed"+seed, func(t *testing.T) {
			code, dir := run(t, "run", "--lock", "naive", "--lease", "300ms", "--hold", "400ms-1s", "--time", "3s",
				"--quiet", "1s", "--clients", "4", "--seed", seed)
			if code != exitInvalid {
				t.Fatalf("exit %d, want %d", code, exitInvalid)
			}
			r := readResults(t, dir)
			if r.Valid != false {
				t.Fatalf("results.json valid = %v", r.Valid)
			}
			for _, c := range r.Checkers {
				if c.Checker == "mutual-exclusion" && (c.Valid != false || !strings.Contains(c.Violation, "entered at")) {
					t.Fatalf("exclusion checker: %+v", c)
				}
			}
		})
	}
}

// With holds always longer than the lease, only the watchdog keeps the reentrant lock safe.
func TestWatchdogKeepsReentrantLockSafe(t *testing.T) {
	// Sequential: a 600 ms watchdog must renew within 700 ms holds.
	code, dir := run(t, "run", "--lock", "reentrant", "--watchdog", "600ms", "--hold", "700ms-1200ms",
		"--time", "4s", "--quiet", "1s", "--clients", "4", "--seed", "7")
	if code != exitValid {
		t.Fatalf("exit %d; results: %+v", code, readResults(t, dir))
	}
	for _, c := range readResults(t, dir).Checkers {
		if c.Valid != true {
			t.Fatalf("%s: %v", c.Checker, c.Valid)
		}
	}
	renewals := 0
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range h.Ops {
		if o.Invoke.F == "renew" && o.Outcome() == history.Ok {
			renewals++
		}
	}
	if renewals == 0 {
		t.Fatal("no watchdog renewal recorded")
	}
}

// Runs under every fault end healed, with every fault window closed in the history and drawn in the HTML.
func TestFaultRunsHeal(t *testing.T) {
	t.Parallel() // its subtests are valid faulted runs of a safe lock
	for _, nem := range []string{"partition", "partition-node", "partition-halves", "partition-ring", "kill", "latency",
		"drop-reply", "pause", "client-pause", "client-clock"} {
		t.Run(nem, func(t *testing.T) {
			t.Parallel() // 6 s runs that mostly wait: two at a time
			code, dir := run(t, "run", "--lock", "reentrant", "--nemesis", nem, "--nemesis-interval", "1s",
				"--nemesis-duration", "1s", "--time", "6s", "--quiet", "2s", "--persistence", "always", "--seed", "5")
			if code != exitValid {
				t.Fatalf("exit %d; results: %+v", code, readResults(t, dir))
			}
			h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			w := h.Windows()
			if len(w) < 1 {
				t.Fatal("no fault window recorded")
			}
			for _, x := range w {
				if x.Kind == nem && !x.Healed {
					t.Fatalf("fault %+v never healed", x)
				}
			}
			last := h.Faults[len(h.Faults)-1]
			if last.F != "heal" || last.Phase != "final" {
				t.Fatalf("last fault record %+v is not the final heal", last)
			}
			html, err := os.ReadFile(filepath.Join(dir, "history.html"))
			if err != nil || !strings.Contains(string(html), nem+" ") {
				t.Fatalf("HTML lacks the %s window (%v)", nem, err)
			}
		})
	}
}

func TestBadInputExits254(t *testing.T) {
	t.Parallel() // bad input: nothing starts
	garbage := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(garbage, []byte("{\"type\":\"meta\"}\nnot json\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--hold", "fast"},
		{"run", "--hold", "200ms-10ms"},
		{"run", "--clients", "0"},
		{"run", "--lock", "nope"},
		{"run", "--nemesis", "meteor"},
		{"run", "--keys", "0"},
		{"run", "--no-such-flag"},
		{"run", "extra-arg"},
		{"run", "--time", "soon"},
		{"check", filepath.Join(t.TempDir(), "missing.jsonl")},
		{"check", garbage},
		{"check"},
		{"nonsense"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if code, _ := run(t, args...); code != exitUsage {
				t.Fatalf("exit %d, want %d", code, exitUsage)
			}
		})
	}
}

// kill -9 of lockcheck takes its redis-server with it, and the partial history still gets a verdict, never valid.
func TestKill9LeavesNoRedisAndPartialHistoryChecks(t *testing.T) {
	// Sequential: redis-server must be gone within 5 s of kill -9.
	bin := buildBinary(t)
	root := t.TempDir()
	cmd := exec.Command(bin, "run", "--time", "60s", "--nemesis", "partition", "--nemesis-interval", "1s",
		"--results", root, "--seed", "3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Wait until the run is under way: a node is up and operations are being recorded.
	var dir string
	port := ""
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		dir, _ = filepath.EvalSymlinks(filepath.Join(root, "latest"))
		conf, _ := os.ReadFile(filepath.Join(dir, "nodes", "n1", "redis.conf"))
		hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
		for _, line := range strings.Split(string(conf), "\n") {
			if p, ok := strings.CutPrefix(line, "port "); ok {
				port = p
			}
		}
		if port != "" && strings.Count(string(hist), `"type":"ok"`) > 20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if port == "" {
		t.Fatal("the run never started")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	gone := false
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 100*time.Millisecond)
		if err != nil {
			gone = true
			break
		}
		c.Close()
	}
	if !gone {
		t.Fatalf("redis-server on port %s outlived lockcheck", port)
	}
	// A killed run wrote no end record: its prefix is checked, and valid is only unknown (issue 9 item 1).
	code := execute(context.Background(), []string{"check", dir})
	if code != exitUnknown {
		t.Fatalf("check of the partial history: exit %d, want %d", code, exitUnknown)
	}
	if r := readJSON(t, filepath.Join(dir, "history.check.json")); r.Valid != "unknown" ||
		!strings.Contains(strings.Join(r.Notes, "\n"), "no end record") {
		t.Fatalf("partial history verdict %+v", r)
	}
	fmt.Fprintln(os.Stderr, "partial history checked in", dir)
}

// A client frozen inside its critical section for longer than its lease (the watchdog frozen with it)
// overlaps the next holder: RLock is flagged, and RFencedLock is valid because the resource refuses the
// stale writer.
func TestClientPauseBeyondLease(t *testing.T) {
	// Sequential: client pause: a frozen holder must overlap the next one.
	args := []string{"--nemesis", "client-pause", "--watchdog", "1s", "--nemesis-interval", "1s",
		"--nemesis-duration", "5s", "--time", "14s", "--quiet", "2s", "--clients", "4", "--seed", "3"}
	code, dir := run(t, append([]string{"run", "--lock", "reentrant"}, args...)...)
	if code != exitInvalid {
		t.Fatalf("reentrant: exit %d, want %d", code, exitInvalid)
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	frozen := false
	for _, f := range h.Faults {
		frozen = frozen || f.Phase == "frozen"
	}
	if !frozen {
		t.Fatal("no client was frozen inside its critical section")
	}
	code, dir = run(t, append([]string{"run", "--lock", "fenced"}, args...)...)
	if code != exitValid {
		t.Fatalf("fenced: exit %d, want %d", code, exitValid)
	}
	for _, c := range readResults(t, dir).Checkers {
		if c.Checker == "mutual-exclusion" && c.Valid != true {
			t.Fatalf("fenced exclusion: %+v", c)
		}
	}
}

// Jumping the clocks of a majority of Redlock's masters lets a second client take the lock while the first
// still holds it within its validity: the spec Redlock is flagged.
func TestClockJumpBreaksSpecRedlock(t *testing.T) {
	// Sequential: clock faults: two holders within a 12 s run.
	code, dir := run(t, "run", "--lock", "redlock-spec", "--nemesis", "clock", "--nemesis-interval", "1s",
		"--nemesis-duration", "1s", "--time", "12s", "--quiet", "2s", "--seed", "2")
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d", code, exitInvalid)
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	bumped := false
	for _, w := range h.Windows() {
		bumped = bumped || (w.Kind == "clock" && w.Healed && len(w.Targets) == 3)
	}
	if !bumped {
		t.Fatalf("no healed clock jump on a majority (3 of 5) in %+v", h.Windows())
	}
}

// On Sentinel, Redisson's WAIT after each lock write keeps RLock safe through a failover that isolates the
// primary with some clients still on it: the run stays valid and the primary changes.
func TestReentrantSurvivesSentinelFailover(t *testing.T) {
	// Sequential: failover windows (Sentinel fails over on missed pings).
	code, dir := run(t, "run", "--lock", "reentrant", "--topology", "sentinel", "--nemesis", "failover",
		"--nemesis-interval", "2s", "--nemesis-duration", "10s", "--time", "20s", "--quiet", "5s", "--seed", "2")
	if code != exitValid {
		t.Fatalf("exit %d; %+v", code, readResults(t, dir).Checkers)
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var failovers []string
	for _, w := range h.Windows() {
		if w.Kind == "failover" && w.Healed {
			failovers = append(failovers, w.Detail)
		}
	}
	if len(failovers) == 0 {
		t.Fatal("no failover was applied and healed")
	}
}

func TestFailoverNeedsSentinel(t *testing.T) {
	t.Parallel() // bad input: nothing starts
	if code, _ := run(t, "run", "--nemesis", "failover"); code != exitUsage {
		t.Fatalf("failover on single: exit %d, want %d", code, exitUsage)
	}
	if code, _ := run(t, "run", "--lock", "redlock", "--topology", "single"); code != exitUsage {
		t.Fatalf("redlock on single: exit %d, want %d", code, exitUsage)
	}
}

// Redisson #5256: the lagging replica is promoted without a lock that WAIT counted as replicated (by the
// other replica), so the owner finds its lock gone (lost-lock) while its lease runs. Holds longer than a
// failover keep an owner inside its section across it. The primary is isolated right after a grant
// (--nemesis-trigger): on the clock, a run where no acquire was acknowledged between the held stream and
// the isolation lost nothing (lost-lock fired in 7 of 9 runs), since the Redisson-faithful resends and
// immediate retries shifted when clients take locks.
func TestLaggingFailoverLosesReentrantLock(t *testing.T) {
	// Sequential: a triggered lagging failover must lose a held lock.
	code, dir := run(t, "run", "--lock", "reentrant", "--topology", "sentinel", "--nemesis", "lagging-failover",
		"--nemesis-interval", "3s", "--nemesis-duration", "9s", "--keys", "4", "--hold", "2s-5s", "--time", "30s",
		"--check-timeout", "10s", "--nemesis-trigger", "--seed", "1")
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d (%s)", code, exitInvalid, dir)
	}
	for _, c := range readResults(t, dir).Checkers {
		if c.Checker == "lost-lock" && c.Valid != false {
			t.Fatalf("lost-lock: %+v", c)
		}
	}
}

// Redis Cluster end to end under CLUSTER FAILOVER (each mode): Redisson's lock with WAIT stays valid, and the
// failovers are recorded with the new primary. This was loosened once after "an acknowledged lock gone"
// (8 of seeds 1-30): a harness error, settled: FORCE and TAKEOVER demote the old primary while a lock
// script's WAIT blocks there, Redis answers that WAIT with UNBLOCKED, and the emulation recorded the script
// that ran as failed (internal/regress; now a WaitError, unknown); and the emulation kept the replica count
// per node address, so a new primary read before its replica re-attached got writes without WAIT for good
// (Redisson keeps the shard's count; now cached per slot). Seeds 1, 2, 6, 7, 9, 12, 14, 15, 24 and 25 valid.
func TestReentrantOnClusterCommandFailover(t *testing.T) {
	// Sequential: failover windows.
	code, dir := run(t, "run", "--lock", "reentrant", "--topology", "cluster", "--nemesis", "failover-command",
		"--nemesis-interval", "2s", "--nemesis-duration", "4s", "--time", "20s", "--seed", "1")
	if code != exitValid {
		t.Fatalf("exit %d, want valid; %+v (%s)", code, readResults(t, dir).Checkers, dir)
	}
	hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if !strings.Contains(string(hist), "CLUSTER FAILOVER") || !strings.Contains(string(hist), "primary n") {
		t.Fatal("no CLUSTER FAILOVER with its new primary in the history")
	}
}
