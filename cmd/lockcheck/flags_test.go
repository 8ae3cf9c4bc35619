package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// runCaptured runs the CLI in-process with results under root and returns the exit code and what it
// printed on stderr.
func runCaptured(t *testing.T, root string, args ...string) (int, string) {
	t.Helper()
	return runCapturedCtx(t, context.Background(), root, args...)
}

func runCapturedCtx(t *testing.T, ctx context.Context, root string, args ...string) (int, string) {
	t.Helper()
	if args[0] == "run" && !contains(args, "--results") {
		args = append(args, "--results", root)
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = f
	code := execute(ctx, args)
	os.Stderr = saved
	out, _ := os.ReadFile(f.Name())
	f.Close()
	return code, string(out)
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// Issue 9, items 2, 10, 15, 16 and 18: each input is refused with 254 and one line naming the problem,
// before anything starts or after a start that failed, and no run directory or results/latest is left.
func TestRefusedInputs(t *testing.T) {
	// Sequential: swaps os.Stderr (runCaptured).
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n := redistest.Start(t, node.PersistNone)
	for _, c := range []struct {
		item string
		args []string
		want string // in the one line
	}{
		// 2: a chaos run with no fault in it.
		{"2", []string{"--nemesis", "partition,kill,pause", "--time", "10s", "--quiet", "3s", "--seed", "1"}, "--time of at least 30.75s"},
		{"2", []string{"--topology", "cluster", "--nemesis", "lagging-failover", "--time", "5s", "--quiet", "3s"}, "--time of at least 12.25s"},
		{"2", []string{"--nemesis", "kill", "--time", "12s", "--quiet", "3s"}, "--time of at least 12.25s"},
		// 10: unbounded durations.
		{"10", []string{"--hold", "0s-2562047h47m16.854775807s"}, "--hold"},
		{"10", []string{"--hold", "1h-25h"}, "at most 24h"},
		{"10", []string{"--time", "25h"}, "--time must be at most 24h"},
		{"10", []string{"--time", "-1s"}, "--time must be positive"},
		{"10", []string{"--nemesis-interval", "25h"}, "--nemesis-interval must be at most"},
		{"10", []string{"--nemesis-interval", "0s"}, "--nemesis-interval must be positive"},
		{"10", []string{"--nemesis-duration", "-3s"}, "--nemesis-duration must be positive"},
		{"10", []string{"--quiet", "-1s"}, "--quiet"},
		{"10", []string{"--lease", "-1s"}, "--lease must not be negative"},
		{"10", []string{"--lease", "25h"}, "--lease must be at most"},
		{"10", []string{"--watchdog", "100h"}, "--watchdog must be at most"},
		{"10", []string{"--wait", "-1s"}, "--wait must not be negative"},
		{"10", []string{"--wait", "48h"}, "--wait must be at most"},
		{"10", []string{"--timeout", "48h"}, "--timeout must be at most"},
		{"10", []string{"--check-timeout", "-1s"}, "--check-timeout must be positive"},
		{"10", []string{"--check-timeout", "1000h"}, "--check-timeout must be at most"},
		// 15: silent nonsense.
		{"15", []string{"--latency", "-200ms"}, "--latency must not be negative"},
		{"15", []string{"--jitter", "-50ms"}, "--jitter must not be negative"},
		{"15", []string{"--latency", "2h"}, "--latency must be at most"},
		{"15", []string{"--latency", "500us"}, "--latency must be at least 1ms"},
		{"15", []string{"--nemesis", "latency", "--latency", "0s", "--jitter", "0s"}, "delays nothing"},
		{"15", []string{"--clock-bump", "0s"}, "--clock-bump must be positive"},
		{"15", []string{"--clock-bump", "-1m"}, "--clock-bump must be positive"},
		{"15", []string{"--watchdog", "1ns"}, "--watchdog must be at least 1ms"},
		{"15", []string{"--lease", "1ns"}, "--lease must be at least 1ms"},
		// Issue 36 item 4: a plan of 1 ns faults floods the history as a schedule's loop of them did.
		{"15", []string{"--nemesis", "client-pause", "--nemesis-duration", "1ns"}, "--nemesis-duration must be at least 10ms"},
		{"15", []string{"--nemesis", "client-pause", "--nemesis-interval", "1ms"}, "--nemesis-interval must be at least 10ms"},
		{"15", []string{"--topology", "sentinel", "--nodes", "7"}, "only --topology redlock takes it"},
		{"15", []string{"--nodes", "7"}, "only --topology redlock takes it"},
		{"15", []string{"--lock", "redlock", "--nodes", "0"}, "--nodes must be at least 1"},
		{"15", []string{"--lock", "redlock", "--nodes", "-2"}, "--nodes must be at least 1"},
		{"15", []string{"--backend", "external", "--external-addrs", n.Addr(), "--nodes", "3"}, "deployment's own 1 node"},
		{"15", []string{"--nemesis", "kill", "--nemesis-targets", "c1"}, "fault kill hits nodes"},
		{"15", []string{"--nemesis", "client-pause", "--nemesis-targets", "n1"}, "fault client-pause hits clients"},
		{"15", []string{"--nemesis", "kill", "--nemesis-targets", "n1,c2"}, "uses c2"},
		{"15", []string{"--nemesis-targets", "c1"}, "no fault to aim"},
		{"15", []string{"--check", "liveliness"}, `--check "liveliness": want one of liveness`},
		// 16: bad external deployments and --results, then (18) nothing is left behind.
		{"16", []string{"--backend", "external", "--topology", "redlock", "--external-addrs", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"},
			"does not answer as described (3 of 3)"},
		{"16", []string{"--backend", "external", "--external-addrs", n.Addr(), "--external-password", "wrong"},
			"WRONGPASS"},
		{"16", []string{"--backend", "external", "--external-addrs", n.Addr(), "--external-password", n.Password(),
			"--external-toxiproxy", "http://127.0.0.1:1"}, "toxiproxy server at http://127.0.0.1:1"},
		{"16", []string{"--results", file}, "--results " + file},
		{"16", []string{"--results", filepath.Join(file, "under")}, "not a directory"},
		{"16", []string{"--results", "/sys/lockcheck-results"}, "--results /sys/lockcheck-results"},
	} {
		t.Run(c.item+" "+strings.Join(c.args, " "), func(t *testing.T) {
			root := t.TempDir()
			previous := filepath.Join(root, "earlier-run")
			if err := os.Mkdir(previous, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("earlier-run", filepath.Join(root, "latest")); err != nil {
				t.Fatal(err)
			}
			code, stderr := runCaptured(t, root, append([]string{"run", "--time", "2s", "--quiet", "1s"}, c.args...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("stderr %q: want one line with %q", stderr, c.want)
			}
			if strings.Contains(stderr, "panic") {
				t.Fatalf("panicked: %s", stderr)
			}
			// Item 18: no new run directory, and latest still points at the earlier run.
			entries, _ := os.ReadDir(root)
			if len(entries) != 2 {
				t.Fatalf("results root holds %d entries after a refused run, want the 2 it had", len(entries))
			}
			if dest, err := os.Readlink(filepath.Join(root, "latest")); err != nil || dest != "earlier-run" {
				t.Fatalf("latest points at %q (%v)", dest, err)
			}
		})
	}
}

// Issue 9, item 10: lockcheck check bounds its --check-timeout too (0 searched without a bound).
func TestCheckTimeoutBounded(t *testing.T) {
	// Sequential: swaps os.Stderr (runCaptured).
	for _, d := range []string{"0s", "-1s", "25h"} {
		code, stderr := runCaptured(t, "", "check", "--check-timeout", d, filepath.Join(t.TempDir(), "history.jsonl"))
		if code != exitUsage || !strings.Contains(stderr, "--check-timeout") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("--check-timeout %s: exit %d, stderr %q", d, code, stderr)
		}
	}
}

// Issue 9, item 16: whatever error a command ends with, it is printed as one line.
func TestErrorsPrintOnOneLine(t *testing.T) {
	t.Parallel() // pure: no run
	err := errors.Join(errors.New("n1: connection refused"), errors.New("n2: connection refused\r\n"))
	if got := oneLine(err); got != "n1: connection refused; n2: connection refused" {
		t.Fatalf("%q", got)
	}
}

// The bounds still let the edges through: --time 24h would run a day, so only what is checked before a
// start is tried here, with a run that starts and passes for the smallest accepted values.
func TestAcceptedEdges(t *testing.T) {
	// Sequential: swaps os.Stderr (runCaptured).
	root := t.TempDir()
	code, stderr := runCaptured(t, root, "run", "--nemesis", "kill", "--nemesis-interval", "1s",
		"--nemesis-duration", "1s", "--time", "4.25s", "--quiet", "2s", "--watchdog", "1s", "--latency", "0s",
		"--hold", "1ms-24h", "--clock-bump", "1ms", "--lock", "redlock", "--nodes", "1", "--seed", "1",
		// Any verdict will do here. The bound stays: the commands in flight as the killed node restarts remain
		// unknown, how many depends on timing, and before the checker left out those that surely never ran,
		// the default minute was this test's whole time.
		"--check-timeout", "5s")
	if code != exitValid && code != exitInvalid && code != exitUnknown {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if err != nil {
		t.Fatalf("latest: %v", err)
	}
	hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if !strings.Contains(string(hist), `"f":"kill","phase":"start"`) {
		t.Fatal("the run at the minimum --time has no kill in it")
	}
}

// Issue 9, item 16: Ctrl-C during start-up stops every node already started (checked while lockcheck is
// still alive, so no death signal does it for us), exits 130 with one line and no verdict, and leaves no
// run directory and no latest.
func TestInterruptDuringStartup(t *testing.T) {
	// Sequential: swaps os.Stderr (runCapturedCtx); cancels within the start-up.
	for _, topo := range []string{"sentinel", "cluster"} {
		t.Run(topo, func(t *testing.T) {
			root := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			go func() { // Ctrl-C as soon as the first node has its config, long before the topology is ready
				defer close(started)
				for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					if m, _ := filepath.Glob(filepath.Join(root, "*", "nodes", "*", "redis.conf")); len(m) > 0 {
						cancel()
						return
					}
				}
			}()
			code, stderr := runCapturedCtx(t, ctx, root, "run", "--topology", topo, "--time", "5s")
			<-started
			if code != exitInterrupted {
				t.Fatalf("exit %d, want %d; stderr: %s", code, exitInterrupted, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "interrupted during start-up") {
				t.Fatalf("stderr %q: want one line saying it was interrupted during start-up", stderr)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Fatalf("results root holds %d entries, want none", len(entries))
			}
			if left := processesUnder(root); len(left) > 0 {
				t.Fatalf("still running after lockcheck returned: %v", left)
			}
		})
	}
}

// processesUnder lists the processes whose command line names a path under dir.
func processesUnder(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
