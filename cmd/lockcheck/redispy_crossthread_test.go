package main

import (
	"testing"
)

// redis-py's Lock has owned() and locked(), and its release() by an owner without the token raises
// LockError or LockNotOwnedError: the worker lists reads and thread-bound (no force-unlock: redis-py has
// none), so lockcheck sends held, is_locked and stray releases from three threads per client, in the sync
// flavour (one OS thread per protocol thread) and the asyncio one (one task each): valid fault-free, each
// kind of request is in the history, and stray releases were refused (error 40, a failed unlock with
// value -1). Without the caps none is sent.
func TestRedisPyCrossThread(t *testing.T) {
	t.Parallel() // fault-free valid runs
	useWorkerCache(t)
	for _, flavour := range []string{"false", "true"} {
		t.Run("asyncio="+flavour, func(t *testing.T) {
			t.Parallel()
			code, dir := run(t, "run", "--client", "redis-py", "--client-option", "asyncio="+flavour, "--keys", "3",
				"--threads", "3", "--clients", "3", "--cross-thread", "0.2", "--time", "6s", "--quiet", "1s",
				"--seed", "1")
			if code != exitValid {
				t.Fatalf("exit %d, want %d (valid): %+v (%s)", code, exitValid, readResults(t, dir).Checkers, dir)
			}
			seen := crossThreadCounts(t, dir)
			t.Logf("requests: %v", seen)
			for _, f := range []string{"held", "is_locked", "stray unlock", "stray unlock refused"} {
				if seen[f] == 0 {
					t.Errorf("no %s in the history: %v", f, seen)
				}
			}
			if seen["force_release"] != 0 {
				t.Errorf("force-unlocks sent to a worker without force-unlock: %v", seen)
			}
		})
	}
}
