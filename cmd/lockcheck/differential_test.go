package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// Differential runs (--client redisson,go): lockcheck's clients alternate between the real Redisson
// (c1, c3, ...) and the Go emulation (c2, c4, ...) on the same locks. The wake-ups between the two are
// tested in wakeup_test.go; the full matrix of primitives and topologies is `make differential`
// (TestDifferentialMatrix, with LOCKCHECK_DIFFERENTIAL=1).

// differentialLocks are the primitives of the suite with the topologies each supports, for the matrix.
var differentialLocks = map[string][]string{
	"reentrant": {"single", "sentinel", "cluster"}, "fair": {"single", "sentinel", "cluster"},
	"fenced": {"single", "sentinel", "cluster"}, "multi": {"single", "sentinel", "cluster"},
	"rwlock": {"single", "sentinel", "cluster"}, "semaphore": {"single", "sentinel", "cluster"},
	"expirable-semaphore": {"single", "sentinel", "cluster"}, "latch": {"single", "sentinel", "cluster"},
	"redlock": {"redlock"},
}

// mixedResults is what a differential run's results.json says about its two sides.
type mixedResults struct {
	Versions map[string]string `json:"versions"`
	Notes    []string          `json:"notes"`
}

// checkMixedRun runs a differential run that must be valid and checks that both sides took part and
// that the results name both: the worker's library and version and the Go emulation's. It returns the
// run directory.
func checkMixedRun(t *testing.T, lock, topo string, extra ...string) string {
	t.Helper()
	clients := "4"
	if lock == "latch" {
		clients = "6" // a setter, 3 countDowns and awaiters
	}
	args := append([]string{"run", "--client", "redisson,go", "--lock", lock, "--topology", topo, "--time", "5s",
		"--quiet", "1s", "--clients", clients, "--seed", "1"}, extra...)
	code, dir := run(t, args...)
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r mixedResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Versions["client"], "redisson ") || !strings.HasPrefix(r.Versions["client-go"], "lockcheck-go ") ||
		!strings.Contains(r.Versions["client-go"], "Redisson 4.7") {
		t.Fatalf("results name the clients %q and %q: want redisson and lockcheck-go, each with its version",
			r.Versions["client"], r.Versions["client-go"])
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "differential run: c1, c3") }) {
		t.Fatalf("no note saying who ran what: %q", r.Notes)
	}
	return dir
}

// bothSidesTookPart checks that a worker client and a Go client each completed calls (granted or
// refused: Redis answered both sides on the same locks). Grants are not required: the RLock is not fair,
// and an in-process Go client that releases and tries again beats a woken JVM's retry, so under load the
// worker clients of a short run may get none.
func bothSidesTookPart(t *testing.T, dir string) {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]int{}
	for _, o := range h.Ops {
		if o.Invoke.Src == "" && o.Complete != nil && o.Complete.Type != history.Unknown {
			done[o.Invoke.Client]++
		}
	}
	if done["c1"]+done["c3"] == 0 || done["c2"]+done["c4"] == 0 {
		t.Fatalf("completed calls per client %v: want both the worker clients (c1, c3) and the Go clients (c2, c4) (%s)", done, dir)
	}
}

// Fault-free differential runs of every primitive of the suite are valid. Porcupine judges the locks'
// commands as they reached Redis from both sides: the workers' wire records with the Go clients' own
// command records. The count primitives' scripts are not mapped from the wire (their Redisson calls are
// judged as in a pure Redisson run), so there it judges what it can see and says so.
func TestDifferentialEveryLockIsValid(t *testing.T) {
	t.Parallel() // fault-free valid runs (grants on either side not required)
	needJava(t)
	useWorkerCache(t)
	for _, lock := range []string{"reentrant", "fair", "fenced", "multi", "rwlock", "semaphore",
		"expirable-semaphore", "latch", "redlock"} {
		t.Run(lock, func(t *testing.T) {
			dir := checkMixedRun(t, lock, differentialLocks[lock][0])
			bothSidesTookPart(t, dir)
			valid, level := porcupineOf(t, dir)
			want := "wire+client"
			if lock == "semaphore" || lock == "expirable-semaphore" || lock == "latch" {
				want = "client"
			}
			if valid != true || level != want {
				t.Fatalf("porcupine %v on %q records, want valid on %q", valid, level, want)
			}
			if n, ev := wireOf(t, dir); want == "wire+client" && (n == 0 || !equal(ev.Targets, []string{"c1", "c3"})) {
				t.Fatalf("%d wire records, tapped %v: want the worker clients' links tapped (c1, c3)", n, ev.Targets)
			}
		})
	}
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// RLock across the two sides on the replicated topologies: through Sentinel, and on Cluster.
func TestDifferentialReplicatedTopologies(t *testing.T) {
	t.Parallel() // fault-free valid runs
	needJava(t)
	useWorkerCache(t)
	for _, topo := range []string{"sentinel", "cluster"} {
		t.Run(topo, func(t *testing.T) {
			dir := checkMixedRun(t, "reentrant", topo)
			if valid, level := porcupineOf(t, dir); valid != true || level != "wire+client" {
				t.Fatalf("porcupine %v on %q records, want valid on wire+client", valid, level)
			}
			bothSidesTookPart(t, dir)
		})
	}
}

// Under partitions and kill -9 (with AOF fsync always, so a restart keeps the lock) a mixed run gives the
// verdict each pure run gives with the same flags and seed: valid, for the Go emulation, for Redisson, and
// for both together.
func TestDifferentialSameVerdictUnderFaults(t *testing.T) {
	t.Parallel() // a safe lock valid under partition,kill: no timing edge
	needJava(t)
	useWorkerCache(t)
	args := []string{"run", "--lock", "reentrant", "--nemesis", "partition,kill", "--persistence", "always",
		"--nemesis-interval", "2s", "--nemesis-duration", "2s", "--time", "12s", "--quiet", "2s", "--clients", "4", "--seed", "1"}
	for _, client := range []string{"", "redisson", "redisson,go"} {
		name := client
		if name == "" {
			name = "go"
		}
		t.Run(name, func(t *testing.T) {
			a := args
			if client != "" {
				a = append(append([]string{}, args...), "--client", client)
			}
			code, dir := run(t, a...)
			if code != exitValid {
				t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
			}
			h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			faults := map[string]bool{}
			for _, f := range h.Faults {
				faults[f.F] = true
			}
			if !faults["partition"] || !faults["kill"] {
				t.Fatalf("faults %v: want a partition and a kill", faults)
			}
		})
	}
}

// A differential run needs a worker that the Go clients emulate, a lock with Go clients, and a client of
// each side; anything else is refused before anything starts.
func TestDifferentialRefusals(t *testing.T) {
	// Sequential: swaps os.Stderr (stderrOf).
	useWorkerCache(t)
	for _, tc := range []struct {
		args []string
		why  string
	}{
		{[]string{"--client", "redsync,go"}, "lockcheck's Go clients emulate redisson, not redsync"},
		{[]string{"--client", "redisson,java"}, "want NAME[@VERSION] or NAME[@VERSION],go"},
		{[]string{"--client", "go,redisson"}, "want NAME[@VERSION] or NAME[@VERSION],go"},
		{[]string{"--client", "redisson,go", "--clients", "1"}, "give --clients 2 or more"},
		{[]string{"--client", "redisson,go", "--lock", "mutex"}, "lock mutex has no Go client"},
		{[]string{"--client", "redisson,go", "--lock", "fair-broken"}, "lock fair-broken has no Go client"},
		{[]string{"--client", "redisson,go", "--client-cmd", "./nope"}, "give one"},
		{[]string{"--client", "nosuch,go"}, "--client nosuch: no such worker"},
	} {
		root := t.TempDir()
		code, stderr := stderrOf(t, append([]string{"run", "--time", "3s", "--quiet", "1s", "--results", root}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.why) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, %q: want %d and one line saying %q", tc.args, code, stderr, exitUsage, tc.why)
		}
	}
}

// The full matrix, for `make differential`: every primitive on every topology it supports.
func TestDifferentialMatrix(t *testing.T) {
	// Sequential: a campaign (make differential), skipped in make test.
	differentialOnly(t, "the full matrix takes minutes")
	needJava(t)
	useWorkerCache(t)
	for lock, topos := range differentialLocks {
		for _, topo := range topos {
			t.Run(lock+"/"+topo, func(t *testing.T) {
				bothSidesTookPart(t, checkMixedRun(t, lock, topo))
			})
		}
	}
}

// differentialOnly skips a test that only make differential runs (LOCKCHECK_DIFFERENTIAL=1), saying why.
func differentialOnly(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("LOCKCHECK_DIFFERENTIAL") == "" {
		t.Skip("make differential (LOCKCHECK_DIFFERENTIAL=1): " + why)
	}
}
