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
// paused holder is still writing when the next one enters, while the libraries' commands stay legal.
// redis-py's holder has no validity window, so exclusion flags it; node-redlock reports one (Redlock's
// validity), and exclusion counts a section only up to it, so that overlap is the application's, not the
// lock's: the run is valid, and the overlap is in the recorded sections.
func TestThirdPartyClientsExtendAndPause(t *testing.T) {
	useWorkerCache(t)
	for _, tc := range []struct {
		client   string
		validity bool
	}{{"redis-py", false}, {"node-redlock@4.2.0", true}} {
		t.Run(tc.client, func(t *testing.T) {
			code, dir := run(t, "run", "--client", tc.client, "--lease", "600ms", "--hold", "1s-1500ms", "--time", "5s",
				"--quiet", "1s", "--clients", "3", "--seed", "1")
			if code != exitValid {
				t.Fatalf("fault-free: exit %d, want %d: %v (%s)", code, exitValid, verdicts(t, dir), dir)
			}
			code, dir = run(t, "run", "--client", tc.client, "--nemesis", "client-pause", "--nemesis-targets", "all",
				"--lease", "600ms", "--hold", "50ms-150ms", "--nemesis-interval", "1s", "--nemesis-duration", "2s",
				"--time", "5s", "--quiet", "1s", "--clients", "3", "--seed", "1")
			v := verdicts(t, dir)
			want := exitInvalid
			if tc.validity {
				want = exitValid
			}
			if code != want || v["porcupine"] != "valid" || strings.HasPrefix(v["mutual-exclusion"], "invalid") == tc.validity {
				t.Fatalf("client-pause: exit %d, want %d with legal commands: %v (%s)", code, want, v, dir)
			}
			h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range h.Sections {
				for _, b := range h.Sections[i+1:] {
					if a.Key == b.Key && a.Owner != b.Owner && a.Enter < b.Exit && b.Enter < a.Exit {
						return
					}
				}
			}
			t.Fatal("no two owners were inside at once under a pause beyond the lease")
		})
	}
}
