package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/suite"
)

// The catalog lists its entries; an entry runs both sides on the same seeds and says each met its
// expectation (exit 0); bad names and a --version for an entry without a library are bad input.
func TestReproCatalog(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free or far from any timing edge
	code, out, errs := runSuite(t, "repro", "list")
	if code != exitValid || strings.Count(out, "\n") < 4 || !strings.Contains(out, "redsync-extend-lost-lock") {
		t.Fatalf("repro list: exit %d\n%s\n%s", code, out, errs)
	}
	// The quick subset (make test's share of the catalog): every entry marked quick, both sides, one seed.
	code, out, errs = runSuite(t, "repro", "--quick", "--seeds", "1", "--results", t.TempDir())
	if code != exitValid || !strings.Contains(out, "buggy  reentrant") || strings.Contains(out, "NOT as expected") {
		t.Fatalf("repro --quick: exit %d\n%s\n%s", code, out, errs)
	}
	for _, args := range [][]string{{"nosuch"}, {"kleppmann-pause", "--version", "1.0"}, {"kleppmann-pause", "--seeds", "0"}, {}, {"--all", "--quick"}} {
		code, _, errs := runSuite(t, append([]string{"repro", "--results", t.TempDir()}, args...)...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("repro %v: exit %d %q; want 254 and one line", args, code, errs)
		}
	}
}

// A repro keeps every run, the caught ones too (the evidence a user re-runs or shows), and each run's line
// names its directory, which holds the run's results.json; suite.json points at the same directories.
func TestReproKeepsEveryRun(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free
	dir := t.TempDir()
	code, out, errs := runSuite(t, "repro", "design-unconditional-unlock", "--seeds", "1", "--results", dir)
	if code != exitValid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	entry := filepath.Join(dir, "design-unconditional-unlock")
	var named []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 5 && f[1] == "seed" {
			named = append(named, f[4])
			if _, err := os.Stat(filepath.Join(f[4], "results.json")); err != nil {
				t.Errorf("line %q: its directory has no results.json: %v", l, err)
			}
		}
	}
	if len(named) != 2 || !strings.Contains(out, "kept in "+entry) {
		t.Fatalf("want a line per run (2) naming its directory, and where the entry is kept:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(entry, "suite.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep suite.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outcomes {
		if o.Dir == "" || !slices.Contains(named, filepath.Join(entry, o.Dir)) {
			t.Errorf("%s (%s, met %v): dir %q, not one of the lines' %q", o.ID, o.Verdict, o.Met, o.Dir, named)
		}
	}
}

// --version on a version the bug does not affect is good news, and reads as such: exit 0, the last line
// "not affected on 1 of 1 seeds", no "NOT as expected"; the run is kept. redis-py 5.3.1 is the worker
// cache's redis-py (no build); issue 621 was fixed in 3.0.0.
func TestReproVersionNotAffected(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free
	useWorkerCache(t)
	dir := t.TempDir()
	code, out, errs := runSuite(t, "repro", "redis-py-621-with-blocking-timeout", "--version", "5.3.1", "--seeds", "1", "--results", dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if code != exitValid || last != "redis-py at 5.3.1: not affected on 1 of 1 seeds" || strings.Contains(out, "NOT as expected") {
		t.Fatalf("exit %d, last line %q\n%s\n%s", code, last, out, errs)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "redis-py-621-with-blocking-timeout", "runs", "*", "*", "results.json"))
	runs = slices.DeleteFunc(runs, func(p string) bool { return strings.Contains(p, "/latest/") }) // a link to the run
	if len(runs) != 1 {
		t.Fatalf("runs kept: %v, want 1", runs)
	}
}
