package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/coverage"
)

// A run's results.json carries its coverage of the lock's model and the transition at its first
// violation, `lockcheck check` prints the count, and the summary page lists the transitions: on the
// shipped reentry-lease schedule, the re-entry with a lease shorter than its hold had left, and the grant
// on the lock it let lapse under its holder, which broke exclusion.
func TestModelCoverageOfASchedule(t *testing.T) {
	// Sequential: swaps os.Stdout (stdoutOf).
	code, dir := run(t, "run", "--schedule", "../../examples/schedules/reentry-lease.yaml", "--quiet", "0s", "--seed", "1")
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d", code, exitInvalid)
	}
	r := readResultsStory(t, dir)
	reentry := coverage.Transition{Family: "mutex", Before: coverage.HeldOnce, Op: coverage.Reenter,
		Outcome: coverage.Granted, Lease: coverage.Shorter}
	if !r.ModelCoverage.Has(reentry) {
		t.Errorf("results.json's model coverage has no %s: %v", reentry, r.ModelCoverage.Transitions())
	}
	breaking := coverage.Transition{Family: "mutex", Before: coverage.Lapsed, Op: coverage.Acquire,
		Outcome: coverage.Granted, Lease: coverage.None}
	if r.Breaking == nil || *r.Breaking != breaking {
		t.Errorf("breaking transition %v, want %s", r.Breaking, breaking)
	}
	code, out := stdoutOf(t, "check", filepath.Join(dir, "history.jsonl"))
	if want := fmt.Sprintf("model coverage: %d distinct transitions", r.ModelCoverage.Len()); code != exitInvalid || !strings.Contains(out, want) {
		t.Errorf("lockcheck check: exit %d, want %d and a line %q:\n%s", code, exitInvalid, want, out)
	}
	dom := browse(t, "file://"+filepath.Join(dir, "index.html"), "summary-coverage.png")
	if attr(t, dom, "coverage-section", "hidden") != "" {
		t.Fatal("the summary page hides its model coverage")
	}
	rows := regexp.MustCompile(`(?s)<tbody id="coverage">(.*?)</tbody>`).FindStringSubmatch(dom)
	if rows == nil || strings.Count(rows[1], "<tr") != r.ModelCoverage.Len() ||
		!regexp.MustCompile(`<tr class="breaking"><td>lapsed</td><td>acquire</td><td>granted</td>`).MatchString(rows[1]) ||
		!strings.Contains(rows[1], "<td>held-once</td><td>reenter</td><td>granted</td><td>shorter</td>") {
		t.Errorf("the page's coverage table: %.2000s", rows)
	}
}

// Where the run recorded the wire, a transition names the script that answered and its reply's class: the
// naive-safe worker's SET NX grant, and its compare-and-delete answering c1's late release "not held" on
// c2's lock (examples/schedules/naive-stale-release.yaml).
func TestModelCoverageOnTheWire(t *testing.T) {
	t.Parallel()
	useWorkerCache(t)
	code, dir := run(t, "run", "--schedule", "../../examples/schedules/naive-stale-release.yaml", "--client", "naive-safe",
		"--quiet", "0s", "--seed", "1")
	if code != exitValid {
		t.Fatalf("exit %d, want %d", code, exitValid)
	}
	m := readResultsStory(t, dir).ModelCoverage
	for _, want := range []coverage.Transition{
		{Family: "mutex", Before: coverage.Free, Op: coverage.Acquire, Outcome: coverage.Granted, Lease: coverage.None,
			Script: "acquire→nil"},
		{Family: "mutex", Before: coverage.HeldOnce, Op: coverage.StrayRelease, Outcome: coverage.Refused,
			Lease: coverage.None, Script: "compare-delete→nil"},
	} {
		if !m.Has(want) {
			t.Errorf("no %s in %v", want, m.Transitions())
		}
	}
}
