package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// redis-semaphore's semaphores pass worker-check on its latest version and on 5.0.0: Semaphore in family
// semaphore (refreshed: the watchdog) and in family expirable-semaphore (a fixed lease per permit), and
// MultiSemaphore (two of its permits per lockcheck permit). Before the worker drove them, init refused any
// family but mutex; before the grant trigger counted a permit, the client pause found no grant to freeze.
func TestRedisSemaphoreSemaphoresWorkerCheck(t *testing.T) {
	t.Parallel() // builds and fault-free runs: not timing-sensitive
	useWorkerCache(t)
	for _, tc := range []struct {
		name, class string
		args        []string
	}{
		{"semaphore", "Semaphore", []string{"--client", "redis-semaphore", "--lock", "semaphore"}},
		{"multi", "MultiSemaphore", []string{"--client", "redis-semaphore", "--lock", "semaphore", "--client-option", "multi=2"}},
		{"expirable", "Semaphore", []string{"--client", "redis-semaphore", "--lock", "expirable-semaphore"}},
		{"semaphore@5.0.0", "Semaphore", []string{"--client", "redis-semaphore@5.0.0", "--lock", "semaphore"}},
		{"expirable@5.0.0", "Semaphore", []string{"--client", "redis-semaphore@5.0.0", "--lock", "expirable-semaphore"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := workerCheck(t, tc.args...)
			if code != exitValid || strings.Count(out, "✓") != 3 || strings.Contains(out, "✗") ||
				!strings.Contains(out, ", "+tc.class+"), kinds") || !strings.Contains(out, "permit holds") {
				t.Fatalf("exit %d, want %d with 3 items of %s's permits, every one ✓:\n%s", code, exitValid, tc.class, out)
			}
		})
	}
}

// RedlockSemaphore over 5 masters admits a permit on each master up to the limit and grants on a majority
// (3): k holders fit wherever k × 3 ≤ 5 × limit, so with a limit of 2 three owners hold permits at once,
// fault-free (docs/findings.md: 5 of 5 seeds with fixed-lease permits, 4 of 5 refreshed, in 5 s runs).
// With a limit of 1 no two majorities fit, and the same run is valid: the overcommit is the limit's, not
// the worker's.
func TestRedlockSemaphoreOvercommits(t *testing.T) {
	// Sequential: fault-free runs whose overlaps need the clients' grants to interleave.
	useWorkerCache(t)
	args := []string{"run", "--client", "redis-semaphore", "--lock", "expirable-semaphore", "--topology", "redlock", "--time", "5s", "--nemesis", "none"}
	for _, seed := range chaosSeeds("1", "2", "3", "4", "5") {
		code, dir := run(t, append(args, "--seed", seed)...)
		v := verdicts(t, dir)
		if code != exitInvalid || !strings.HasPrefix(v["mutual-exclusion"], "invalid: 3 holders of ") ||
			!strings.Contains(v["mutual-exclusion"], " with 2 permits") {
			t.Fatalf("seed %s: exit %d, want %d with 3 holders of 2 permits: %v (%s)", seed, code, exitInvalid, v, dir)
		}
	}
	code, dir := run(t, append(args, "--permits", "1", "--seed", "1")...)
	if code != exitValid {
		t.Fatalf("--permits 1: exit %d, want %d: %v (%s)", code, exitValid, verdicts(t, dir), dir)
	}
}

// Spring Integration's RedisLockRegistry on Sentinel: the worker asks the Sentinels for the master through
// Spring Data Redis's RedisSentinelConfiguration, and Lettuce dials the announced addresses through init's
// nat, so every lock command passes this client's own proxies (the taps count its scripts: the wire line).
// Before, init refused any topology but single.
func TestSpringIntegrationOnSentinel(t *testing.T) {
	t.Parallel() // a fault-free run of the binary
	needJava(t)
	useWorkerCache(t)
	results := t.TempDir()
	code, _, errs := runBinary(t, buildBinary(t), "run", "--client", "spring-integration", "--topology", "sentinel",
		"--clients", "2", "--time", "5s", "--quiet", "1s", "--seed", "1", "--results", results)
	dir, _ := filepath.EvalSymlinks(filepath.Join(results, "latest"))
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s):\n%s", code, exitValid, dir, errs)
	}
	if !strings.Contains(errs, "lockcheck: wire: calls of unknown lock scripts not recorded: ") {
		t.Fatalf("no wire line: the lock scripts did not pass the client's proxies (%s):\n%s", dir, errs)
	}
}
