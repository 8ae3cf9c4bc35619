package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/kinds"
)

// owners reads a run's history and returns the client/thread pairs of its user-level acquires.
func owners(t *testing.T, dir string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r struct {
			Type   string `json:"type"`
			F      string `json:"f"`
			Client string `json:"client"`
			Thread int64  `json:"thread"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Type == "invoke" && (r.F == "tryLock" || r.F == "tryAcquire" || r.F == "await" || r.F == "countDown") {
			out[fmt.Sprintf("%s/%d", r.Client, r.Thread)] = true
		}
	}
	return out
}

// Four threads on each of four Redisson instances: valid fault-free, and every one of the 16 is an owner.
func TestThreadsPerClientReentrant(t *testing.T) {
	t.Parallel()
	code, dir := run(t, "run", "--lock", "reentrant", "--threads", "4", "--clients", "4", "--time", "4s", "--quiet", "1s", "--seed", "1")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (valid): %+v", code, readResults(t, dir).Checkers)
	}
	got := owners(t, dir)
	for c := 1; c <= 4; c++ {
		for th := 1; th <= 4; th++ {
			if o := fmt.Sprintf("c%d/%d", c, th); !got[o] {
				t.Errorf("no acquire by %s in the history (have %v)", o, got)
			}
		}
	}
	if got["c1/5"] || got["c5/1"] {
		t.Errorf("owners beyond 4×4: %v", got)
	}
}

// Every family's default lock on the Go emulation stays valid fault-free with three threads per client.
func TestEveryFamilyValidWithThreads(t *testing.T) {
	for _, lock := range []string{"reentrant", "fair", "fenced", "multi", "rwlock", "semaphore", "expirable-semaphore", "latch", "redlock"} {
		t.Run(lock, func(t *testing.T) {
			t.Parallel()
			code, dir := run(t, "run", "--lock", lock, "--threads", "3", "--clients", "3", "--time", "3s", "--quiet", "1s", "--seed", "2")
			if code != 0 {
				t.Fatalf("exit %d, want 0 (valid): %+v", code, readResults(t, dir).Checkers)
			}
			if !owners(t, dir)["c3/3"] && lock != "latch" {
				t.Errorf("thread 3 of client 3 never acquired")
			}
		})
	}
	// Every family is covered: a new family must be added above.
	if n := len(kinds.Families()); n != 5 {
		t.Errorf("%d families, the test covers 5", n)
	}
}

// The shared-token control: one token per client shared by its threads. Two threads of one client both hold
// the lock, so it is flagged with --threads 2 on every seed and valid with --threads 1.
func TestSharedTokenControl(t *testing.T) {
	for seed := 1; seed <= 5; seed++ {
		for _, threads := range []string{"1", "2"} {
			t.Run(fmt.Sprintf("seed%d/threads%s", seed, threads), func(t *testing.T) {
				t.Parallel()
				code, dir := run(t, "run", "--lock", "shared-token", "--threads", threads, "--clients", "3", "--time", "3s",
					"--quiet", "1s", "--seed", fmt.Sprint(seed))
				want := exitInvalid
				if threads == "1" {
					want = 0
				}
				if code != want {
					t.Fatalf("exit %d, want %d: %+v", code, want, readResults(t, dir).Checkers)
				}
			})
		}
	}
}

// --threads and the ranges are refused with one line when out of bounds.
func TestThreadsAndRangesRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--threads", "0"}, {"--threads", "65"}, {"--clients", "100", "--threads", "64"},
		{"--lease", "10s-1s"}, {"--wait", "2s-1s"}, {"--lease", "1s-"}, {"--lease", "25h"},
	} {
		code, _ := run(t, append([]string{"run", "--lock", "reentrant", "--time", "2s"}, args...)...)
		if code != 254 {
			t.Errorf("%s: exit %d, want 254", strings.Join(args, " "), code)
		}
	}
}

// naiveCmd is the naive reference worker's command line (built once into the test's worker cache) with args.
func naiveCmd(t *testing.T, args ...string) string {
	t.Helper()
	useWorkerCache(t)
	s, version, err := worker.Lookup("naive-safe")
	if err != nil {
		t.Fatal(err)
	}
	argv, err := worker.Build(t.Context(), s, version, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(append(quoteAll(argv), args...), " ")
}

// A worker whose init_ok announces the single-thread cap is refused --threads above 1 with one line (254),
// and runs with --threads 1.
func TestSingleThreadWorkerRefusesThreads(t *testing.T) {
	cmd := naiveCmd(t, "--single-thread")
	code, _ := run(t, "run", "--client-cmd", cmd, "--lock", "naive", "--threads", "2", "--clients", "2", "--time", "2s", "--quiet", "1s")
	if code != 254 {
		t.Fatalf("--threads 2 on a single-thread worker: exit %d, want 254", code)
	}
	if left := ownWorkers("--single-thread"); len(left) > 0 { // the refused run's workers are stopped with it
		t.Errorf("workers left running after the refused run: %v", left)
	}
	if code, dir := run(t, "run", "--client-cmd", cmd, "--lock", "naive", "--threads", "1", "--clients", "2", "--time", "2s", "--quiet", "1s"); code != 0 {
		t.Fatalf("--threads 1: exit %d, want 0: %+v", code, readResults(t, dir).Checkers)
	}
}

// The shared-token control's worker twin: the naive reference worker with --shared-token (one token per
// worker process for all its threads), driven over the protocol: flagged with --threads 2 on every seed,
// valid with --threads 1.
func TestSharedTokenWorkerControl(t *testing.T) {
	cmd := naiveCmd(t, "--shared-token")
	for seed := 1; seed <= 5; seed++ {
		for _, threads := range []string{"1", "2"} {
			t.Run(fmt.Sprintf("seed%d/threads%s", seed, threads), func(t *testing.T) {
				t.Parallel()
				code, dir := run(t, "run", "--client-cmd", cmd, "--lock", "naive", "--threads", threads, "--clients", "3",
					"--time", "3s", "--quiet", "1s", "--seed", fmt.Sprint(seed))
				want := exitInvalid
				if threads == "1" {
					want = 0
				}
				if code != want {
					t.Fatalf("exit %d, want %d: %+v", code, want, readResults(t, dir).Checkers)
				}
			})
		}
	}
}
