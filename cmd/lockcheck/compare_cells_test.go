package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// cells runs compare over locks and scenarios on one seed and returns each cell's measured outcome by
// "lock/scenario"; the table is complete, so it exits 0.
func cells(t *testing.T, locks, scenarios string, extra ...string) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cmp")
	args := append([]string{"compare", "--locks", locks, "--scenarios", scenarios, "--seeds", "1", "--results", dir}, extra...)
	code, out, errs := runSuite(t, args...)
	if code != exitValid {
		t.Fatalf("exit %d, want 0 (a complete table)\n%s\n%s", code, out, errs)
	}
	var tab struct {
		Cells []struct{ Lock, Scenario, Measured string } `json:"cells"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil || json.Unmarshal(b, &tab) != nil {
		t.Fatalf("compare.json: %v", err)
	}
	got := map[string]string{}
	for _, c := range tab.Cells {
		got[c.Lock+"/"+c.Scenario] = c.Measured
	}
	t.Logf("%v\n%s", got, out)
	return got
}

// S2, replies held past the lease: a lock that takes a late grant at its word has two holders; spec
// Redlock measures the time its acquisition took and gives the grant up (the reference's prediction).
func TestCompareS2HoldReplies(t *testing.T) {
	t.Parallel() // child lockcheck processes
	got := cells(t, "naive,redlock-spec", "S2")
	if got["naive/S2"] != "violates" || got["redlock-spec/S2"] != "safe" {
		t.Fatalf("naive %s, redlock-spec %s; want violates and safe", got["naive/S2"], got["redlock-spec/S2"])
	}
}
