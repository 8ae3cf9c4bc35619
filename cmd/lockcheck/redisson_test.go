package main

import (
	"os/exec"
	"strings"
	"testing"
)

// needJava skips where no JDK and Maven are installed (CI installs them: .ci/run); the Redisson worker is
// built from Maven Central on first use.
func needJava(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the Redisson worker needs Java 17 and Maven (.ci/run installs them)", tool)
		}
	}
}

// clientOf reads the worker's library and version from a run's results.
func clientOf(t *testing.T, dir string) string {
	t.Helper()
	return versionOf(t, dir, "client")
}

// The real Redisson, through its worker, drives every lock of the suite on a fault-free run: each is
// valid, and the results name the library and its version. make test runs the same nine primitives with
// the real Redisson on half the clients (TestDifferentialEveryLockIsValid); this all-Redisson form is
// make differential's.
func TestRedissonEveryLockIsValid(t *testing.T) {
	// Sequential: make differential only (skipped in make test).
	differentialOnly(t, "make test runs the same primitives half real Redisson")
	needJava(t)
	useWorkerCache(t)
	for _, lock := range []string{"reentrant", "fair", "fenced", "multi", "rwlock", "semaphore",
		"expirable-semaphore", "latch", "redlock"} {
		t.Run(lock, func(t *testing.T) {
			clients := "4"
			if lock == "latch" {
				clients = "6" // a setter, 3 countDowns and awaiters
			}
			code, dir := run(t, "run", "--client", "redisson", "--lock", lock, "--time", "6s", "--quiet", "1s",
				"--clients", clients, "--seed", "1")
			if code != exitValid {
				t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
			}
			if c := clientOf(t, dir); !strings.HasPrefix(c, "redisson ") {
				t.Fatalf("results name the client %q, want redisson and its version", c)
			}
		})
	}
}

// Redisson's RLock on Sentinel (with its NAT mapper pointing at the client's own proxies) and on Cluster.
func TestRedissonReplicatedTopologies(t *testing.T) {
	t.Parallel() // its subtests are fault-free valid runs
	needJava(t)
	useWorkerCache(t)
	for _, topo := range []string{"sentinel", "cluster"} {
		t.Run(topo, func(t *testing.T) {
			t.Parallel() // fault-free 6 s runs that mostly wait: both at once
			code, dir := run(t, "run", "--client", "redisson", "--lock", "reentrant", "--topology", topo,
				"--time", "6s", "--quiet", "1s", "--clients", "4", "--seed", "1")
			if code != exitValid {
				t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
			}
		})
	}
}

// A frozen JVM's watchdog stops renewing: Redisson's RLock held across a client pause longer than the
// watchdog timeout is taken by another client while the frozen one is still inside; RFencedLock under the
// same pause keeps the resource safe, its stale writes refused.
func TestRedissonClientPause(t *testing.T) {
	// Sequential: client pause: the frozen JVM's lock must be taken.
	needJava(t)
	useWorkerCache(t)
	args := []string{"--client", "redisson", "--nemesis", "client-pause", "--watchdog", "1s", "--nemesis-interval", "1s",
		"--nemesis-duration", "5s", "--time", "14s", "--quiet", "2s", "--clients", "4", "--seed", "3"}
	code, dir := run(t, append([]string{"run", "--lock", "reentrant"}, args...)...)
	if code != exitInvalid {
		t.Fatalf("reentrant: exit %d, want %d (%s)", code, exitInvalid, dir)
	}
	overlap := false
	for _, c := range readResults(t, dir).Checkers {
		overlap = overlap || c.Checker == "mutual-exclusion" && c.Valid == false
	}
	if !overlap {
		t.Fatalf("reentrant: no overlapping critical sections found (%s)", dir)
	}
	code, dir = run(t, append([]string{"run", "--lock", "fenced"}, args...)...)
	if code != exitValid {
		t.Fatalf("fenced: exit %d, want %d (%s)", code, exitValid, dir)
	}
}
