package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// Issue 23, item 2, on real Redisson: for the kinds whose lock has isHeldByCurrentThread, isLocked and
// forceUnlock, the worker lists reads and force-unlock, and thread-bound where its unlock refuses every
// non-holder, so lockcheck sends held, is_locked, force_unlock and stray releases from three Java threads
// per RedissonClient: valid fault-free, each kind of request is in the history, and stray releases were
// refused (error 40, recorded as a failed unlock with value -1). Without the caps none is sent. Fair locks
// get no stray release: RFairLock.unlock() of a free lock succeeds. Three keys, so that a 6 s run makes
// about 190 tries, each drawing its cross-thread operations: on one key it makes about 80, and seed 1
// drew no force-unlock in some runs. A force-unlock per try 0.15: at 0.05, a run on a loaded machine
// (85 tries) drew none (about 1 run in 50).
func TestRedissonCrossThread(t *testing.T) {
	t.Parallel() // fault-free valid runs
	needJava(t)
	useWorkerCache(t)
	for _, tc := range []struct {
		lock   string
		seeds  []int
		strays bool // thread-bound: stray releases and force-unlocks are sent, strays refused
	}{
		{"reentrant", []int{1, 2}, true},
		{"fair", []int{1}, false},
		{"fenced", []int{1}, true},
	} {
		for _, seed := range tc.seeds {
			t.Run(fmt.Sprintf("%s seed %d", tc.lock, seed), func(t *testing.T) {
				t.Parallel()
				code, dir := run(t, "run", "--client", "redisson", "--lock", tc.lock, "--keys", "3", "--threads", "3",
					"--clients", "3", "--cross-thread", "0.2", "--force-unlock", "0.15", "--time", "6s", "--quiet", "1s",
					"--seed", fmt.Sprint(seed))
				if code != exitValid {
					t.Fatalf("exit %d, want %d (valid): %+v (%s)", code, exitValid, readResults(t, dir).Checkers, dir)
				}
				seen := crossThreadCounts(t, dir)
				want := []string{"held", "is_locked"}
				if tc.strays { // thread-bound kinds take stray releases and force-unlocks
					want = append(want, "force_release", "stray unlock", "stray unlock refused")
				} else if seen["stray unlock"] != 0 || seen["force_release"] != 0 {
					t.Errorf("stray releases or force-unlocks sent to a worker without thread-bound: %v", seen)
				}
				for _, f := range want {
					if seen[f] == 0 {
						t.Errorf("no %s in the history: %v", f, seen)
					}
				}
			})
		}
	}
}

// crossThreadCounts counts a run's client operations by kind, stray unlocks (and the refused ones, value
// -1) apart, leaving out the wire recorder's commands.
func crossThreadCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
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
	return seen
}
