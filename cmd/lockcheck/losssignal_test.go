package main

import (
	"testing"
)

// The silent-renewal control (the naive worker whose extend and release answer ok on a lock it lost) is
// flagged by told-of-loss on every seed, and its honest twin (the same, saying when the lock is lost) is
// valid: both with their registered run, a holder frozen right after its grant for longer than its lease
// while the others take the lock. Sequential: whether a loss happens in the run is a matter of timing.
func TestSilentRenewalControl(t *testing.T) {
	useWorkerCache(t)
	for _, seed := range []string{"1", "2", "3", "4", "5"} {
		for _, c := range []string{"naive-silent-renew", "naive-honest-renew"} {
			t.Run(c+"/seed"+seed, func(t *testing.T) {
				code, dir := run(t, "run", "--client", c, "--time", "6s", "--quiet", "1s", "--clients", "3", "--seed", seed)
				verdict := map[string]any{}
				for _, r := range readResults(t, dir).Checkers {
					verdict[r.Checker] = r.Valid
				}
				switch {
				case c == "naive-silent-renew" && verdict["told-of-loss"] != false:
					t.Fatalf("the silent control was not flagged by told-of-loss (exit %d): %v (%s)", code, verdict, dir)
				case c == "naive-honest-renew" && (code != exitValid || verdict["told-of-loss"] != true):
					t.Fatalf("the honest twin: exit %d, want %d: %v (%s)", code, exitValid, verdict, dir)
				}
			})
		}
	}
}
