package main

import (
	"strings"
	"testing"
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
