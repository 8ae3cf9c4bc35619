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
