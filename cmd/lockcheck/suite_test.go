package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/kinds"
)

// Every lock of the suite passes every checker on a fault-free run.
func TestEveryLockIsValidWithoutFaults(t *testing.T) {
	// Sequential: iterates the kinds registry, which earlier in-process lock-spec runs extend.
	for _, name := range kinds.KindNames() {
		k, _ := kinds.Lookup(name)
		if k.Broken != "" || k.WorkerOnly { // a library's own lock runs through its worker (worker tests)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, dir := run(t, "run", "--lock", name, "--time", "4s", "--quiet", "1s", "--seed", "11")
			r := readResults(t, dir)
			for _, c := range r.Checkers {
				if c.Valid != true {
					t.Errorf("%s: %v %s", c.Checker, c.Valid, c.Violation)
				}
			}
			if code != exitValid {
				t.Fatalf("exit %d", code)
			}
		})
	}
}

// Every negative control is flagged on its own fault-free run, for every seed tried, with the violation in
// words in results.json.
func TestEveryControlIsFlagged(t *testing.T) {
	for _, name := range kinds.KindNames() {
		k, _ := kinds.Lookup(name)
		if k.Broken == "" || name == "naive" {
			continue
		}
		for _, seed := range []string{"1", "2"} {
			t.Run(name+"/seed"+seed, func(t *testing.T) {
				t.Parallel()
				code, dir := run(t, "run", "--lock", name, "--time", "4s", "--quiet", "1s", "--seed", seed)
				if code != exitInvalid {
					t.Fatalf("exit %d, want %d", code, exitInvalid)
				}
				r := readResults(t, dir)
				explained := false
				for _, c := range r.Checkers {
					if c.Valid == false && strings.TrimSpace(c.Violation) != "" {
						explained = true
					}
				}
				if !explained {
					t.Fatalf("flagged without a violation in words: %+v", r.Checkers)
				}
				html, err := os.ReadFile(filepath.Join(dir, "history.html"))
				if err != nil || !strings.Contains(string(html), "violation: ") {
					t.Fatalf("the HTML does not mark the violation (%v)", err)
				}
			})
		}
	}
}

func TestSuiteOptionsAreValidated(t *testing.T) {
	t.Parallel() // bad input: nothing starts
	for _, args := range [][]string{
		{"run", "--lock", "semaphore", "--permits", "0"},
		{"run", "--lock", "multi", "--group", "0"},
		{"run", "--lock", "multi", "--group", "3", "--keys", "2"},
		{"run", "--lock", "latch", "--count", "0"},
		{"run", "--lock", "latch", "--count", "8", "--clients", "4"},
		{"run", "--lock", "rwlock", "--readers", "lots"},
		{"run", "--lock", "rwlock", "--readers", "0:0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if code, _ := run(t, args...); code != exitUsage {
				t.Fatalf("exit %d, want %d", code, exitUsage)
			}
		})
	}
}
