package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// porcupineRow reads results.json's porcupine row: its verdict and how many keys each level judged.
func porcupineRow(t *testing.T, dir string) (valid any, levels map[string]int, summary string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Checkers []struct {
			Checker string         `json:"checker"`
			Valid   any            `json:"valid"`
			Summary string         `json:"summary"`
			Levels  map[string]int `json:"levels"`
		} `json:"checkers"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checkers {
		if c.Checker == "porcupine" {
			return c.Valid, c.Levels, c.Summary
		}
	}
	t.Fatalf("no porcupine row in %s", b)
	return nil, nil, ""
}

// The control of API-level judging: an expirable semaphore whose release_permit says released for a
// permit whose lease ran out (holds longer than the lease). The wire recorder maps none of its scripts, so
// only its replies judged by the model catch it: porcupine flags it on every seed, at the API level.
func TestLyingPermitsWorkerIsFlagged(t *testing.T) {
	useWorkerCache(t)
	for _, seed := range []string{"1", "2", "3", "4", "5"} {
		t.Run("seed"+seed, func(t *testing.T) {
			code, dir := run(t, "run", "--client", "lying-permits", "--lock", "expirable-semaphore", "--lease", "300ms",
				"--hold", "400ms-1s", "--time", "3s", "--quiet", "1s", "--clients", "4", "--seed", seed)
			valid, levels, summary := porcupineRow(t, dir)
			if code != exitInvalid || valid != false || levels["api"] != 1 || len(levels) != 1 {
				t.Fatalf("exit %d, porcupine %v (%s), levels %v: want invalid at the API level", code, valid, summary, levels)
			}
		})
	}
}

// Its honest twin (released=false for a lapsed permit), with the same holds longer than the lease, is
// valid: the API-level judging is no false alarm for a lapsed permit's release.
func TestHonestPermitsWorkerIsValid(t *testing.T) {
	t.Parallel() // fault-free valid runs, no timing edge
	bin := filepath.Join(t.TempDir(), "run")
	if out, err := exec.Command("go", "build", "-o", bin, "../../workers/lying-permits").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, seed := range []string{"1", "2"} {
		code, dir := run(t, "run", "--client-cmd", bin+" --honest", "--lock", "expirable-semaphore", "--lease", "300ms",
			"--hold", "400ms-1s", "--time", "3s", "--quiet", "1s", "--clients", "4", "--seed", seed)
		valid, levels, summary := porcupineRow(t, dir)
		if code != exitValid || valid != true || levels["api"] != 1 || len(levels) != 1 {
			t.Fatalf("seed %s: exit %d, porcupine %v (%s), levels %v: want valid at the API level", seed, code, valid, summary, levels)
		}
	}
}

// The semaphore workload lets a hold outlive its lease when --hold says so (a lapsed permit's release is
// what the models judge), and a permit granted after a wait longer than its lease is no holder forever:
// lockcheck's own emulation, correct, is valid fault-free with holds longer than the lease.
func TestExpirableHoldsOutliveLease(t *testing.T) {
	code, dir := run(t, "run", "--lock", "expirable-semaphore", "--lease", "300ms", "--hold", "400ms-1s", "--time", "4s",
		"--quiet", "1s", "--clients", "4", "--seed", "1")
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	longer := 0
	for _, s := range h.Sections {
		if s.Exit-s.Enter > int64(300*time.Millisecond) {
			longer++
		}
		if s.Until > 0 && s.Until <= s.Enter {
			t.Fatalf("a section whose validity ends at %d, before it entered at %d: %+v", s.Until, s.Enter, s)
		}
	}
	if longer == 0 {
		t.Fatalf("no hold outlived the 300ms lease among %d sections", len(h.Sections))
	}
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
	}
}

// Through the real Redisson, whose semaphore, permit-expirable semaphore and latch scripts the wire
// recorder does not map, porcupine judges every key from the worker's replies (the API level), and a
// fault-free run is valid, the expirable semaphore's with holds longer than the lease.
func TestRedissonCountsJudgedAtAPILevel(t *testing.T) {
	t.Parallel() // fault-free valid runs, no timing edge (36 s of a shard's sequential time before)
	needJava(t)
	useWorkerCache(t)
	for _, tc := range [][]string{
		{"--lock", "semaphore"},
		{"--lock", "expirable-semaphore", "--lease", "300ms", "--hold", "400ms-1s"},
		{"--lock", "latch"},
	} {
		args := append([]string{"run", "--client", "redisson", "--time", "6s", "--quiet", "1s", "--clients", "4", "--seed", "1"}, tc...)
		code, dir := run(t, args...)
		valid, levels, summary := porcupineRow(t, dir)
		if code != exitValid || valid != true || levels["api"] == 0 || len(levels) != 1 {
			t.Fatalf("%v: exit %d, porcupine %v (%s), keys by level %v: want valid, every key at the API level", tc, code,
				valid, summary, levels)
		}
	}
}
