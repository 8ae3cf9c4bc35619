package main

import (
	"path/filepath"
	"testing"

	"github.com/lockcheck/lockcheck/history"
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
			h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, o := range h.Ops {
				if o.Invoke.Src != "" {
					continue // the wire recorder's commands
				}
				f := o.Invoke.F
				if f == "unlock" && o.Invoke.Args["stray"] == 1 {
					f = "stray unlock"
					if o.Outcome() == history.Fail && o.Complete.Value != nil && *o.Complete.Value == -1 {
						seen["stray unlock refused"]++
					}
				}
				seen[f]++
			}
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
