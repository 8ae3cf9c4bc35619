package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// pauseArgs freeze every client at its next grant for 3 s, five times its 600 ms lease, while the
// application extends its 1-1.5 s holds before each write (every 200 ms). Every client is armed, so a
// grant lands in each window whichever client the lock favours.
var pauseArgs = []string{"--nemesis", "client-pause", "--nemesis-targets", "all", "--lease", "600ms",
	"--hold", "1s-1500ms", "--nemesis-interval", "1s", "--nemesis-duration", "3s", "--time", "6s", "--quiet", "1s",
	"--clients", "3"}

func verdicts(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range readResults(t, dir).Checkers {
		switch c.Valid {
		case true:
			out[c.Checker] = "valid"
		case false:
			out[c.Checker] = "invalid: " + c.Violation
		default:
			out[c.Checker] = "unknown"
		}
	}
	return out
}

// redsync up to v4.0.3 says "extended" on a lock it lost (its touch script's 0 was taken for success):
// after a client pause beyond the lease the holder's extend succeeds, so it keeps writing while another
// holds the lock, and porcupine finds the renewal illegal. v4.0.4, same seed and schedule, says the lock
// is lost, the application stops writing, and the run is valid.
func TestRedsyncExtendOnLostLock(t *testing.T) {
	// Sequential: client pause: its verdict depends on the pause outlasting the lease.
	useWorkerCache(t)
	t.Run("v4.0.3", func(t *testing.T) {
		code, dir := run(t, append([]string{"run", "--client", "redsync@v4.0.3", "--seed", "2"}, pauseArgs...)...)
		v := verdicts(t, dir)
		if code != exitInvalid || !strings.Contains(v["porcupine"], "renew → ok") {
			t.Fatalf("exit %d, want %d with porcupine flagging an extend: %v (%s)", code, exitInvalid, v, dir)
		}
	})
	t.Run("v4.0.4", func(t *testing.T) {
		code, dir := run(t, append([]string{"run", "--client", "redsync@v4.0.4", "--seed", "2"}, pauseArgs...)...)
		if code != exitValid {
			t.Fatalf("exit %d, want %d: %v (%s)", code, exitValid, verdicts(t, dir), dir)
		}
		h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		frozen := int64(-1)
		for _, f := range h.Faults {
			if f.Phase == "frozen" && frozen < 0 {
				frozen = f.Time
			}
		}
		for _, o := range h.Ops {
			if o.Invoke.F == "renew" && frozen >= 0 && o.Invoke.Time > frozen && o.Complete != nil &&
				o.Complete.Type == history.Fail && o.Complete.Value != nil && *o.Complete.Value == -1 {
				return // a paused holder's extend said the lock was lost
			}
		}
		t.Fatalf("no extend after a pause reported the lock lost (frozen at %d): the run proved nothing", frozen)
	})
}

// redis-py and node-redlock 4.2.0 with holds longer than the lease stay valid fault-free because the
// application extends them. Under a client pause inside short critical sections (nothing to extend) the
// paused holder is still writing when the next one enters, while the libraries' commands stay legal:
// exclusion flags both, on every seed. node-redlock reports Redlock's validity with each grant; it once
// ended the section there, which excused the paused holder's late write (valid on every seed) although
// the write really happened: no user of these libraries is told to stop writing at the validity.
func TestThirdPartyClientsExtendAndPause(t *testing.T) {
	// Sequential: client pause: a 5 s run must overlap a paused holder.
	useWorkerCache(t)
	for _, client := range []string{"redis-py", "node-redlock@4.2.0"} {
		t.Run(client, func(t *testing.T) {
			code, dir := run(t, "run", "--client", client, "--lease", "600ms", "--hold", "1s-1500ms", "--time", "5s",
				"--quiet", "1s", "--clients", "3", "--seed", "1")
			if code != exitValid {
				t.Fatalf("fault-free: exit %d, want %d: %v (%s)", code, exitValid, verdicts(t, dir), dir)
			}
			for _, seed := range chaosSeeds("1", "2", "3") {
				code, dir = run(t, "run", "--client", client, "--nemesis", "client-pause", "--nemesis-targets", "all",
					"--lease", "600ms", "--hold", "50ms-150ms", "--nemesis-interval", "1s", "--nemesis-duration", "2s",
					"--time", "5s", "--quiet", "1s", "--clients", "3", "--seed", seed)
				v := verdicts(t, dir)
				if code != exitInvalid || v["porcupine"] != "valid" || !strings.HasPrefix(v["mutual-exclusion"], "invalid") {
					t.Fatalf("client-pause, seed %s: exit %d, want %d, an overlap and legal commands: %v (%s)",
						seed, code, exitInvalid, v, dir)
				}
			}
		})
	}
}
