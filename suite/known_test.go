package suite

import (
	"strings"
	"testing"
)

// A suite's progress line carries an invalid run's known-or-new line under its story (the Action reads it).
func TestPrintOutcomeSaysKnown(t *testing.T) {
	var b strings.Builder
	PrintOutcome(&b, Outcome{Case: Case{ID: "x/1"}, Verdict: "invalid", Story: "Two owners.",
		Known: "known: `kleppmann-pause`, a design limit of every lease lock; mitigation: fencing tokens"})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[1] != "  "+StoryPrefix+"Two owners." || !strings.HasPrefix(lines[2], "  known: `kleppmann-pause`") {
		t.Fatalf("printed:\n%s", b.String())
	}
}

// The suite page's cell for an invalid run says, with its story, whether the catalog knows it.
func TestSuitePageSaysKnown(t *testing.T) {
	rows := Table(&Report{Outcomes: []Outcome{{Case: Case{ID: "a/single/none/1", Seed: 1}, Verdict: "invalid", Violation: "Two owners.",
		Known: "known: `kleppmann-pause`, a design limit of every lease lock; mitigation: fencing tokens"}}})
	if len(rows) != 1 || len(rows[0].Cells) != 1 || !strings.Contains(rows[0].Cells[0].Title, "Two owners. (known: `kleppmann-pause`") {
		t.Fatalf("rows %+v", rows)
	}
}
