package repro

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/suite"
)

// A fixed side whose runs failed (no verdict: a worker that did not start) has shown nothing: it must not
// pass as valid, and the line says how many runs failed.
func TestTallyErrorsNeverPass(t *testing.T) {
	rep := &suite.Report{}
	for i, v := range []string{"invalid", "invalid", "invalid", "invalid", "error"} {
		rep.Outcomes = append(rep.Outcomes, suite.Outcome{Case: suite.Case{Entry: "buggy"}, Verdict: v, FirstNs: int64(i+1) * 1e9})
	}
	for _, v := range []string{"valid", "error", "error", "valid", "valid"} {
		rep.Outcomes = append(rep.Outcomes, suite.Outcome{Case: suite.Case{Entry: "fixed"}, Verdict: v})
	}
	sides := Tally(rep)
	if len(sides) != 2 || !sides[0].Passed || sides[0].Caught != 4 || sides[1].Passed || sides[1].Errors != 2 {
		t.Fatalf("tally %+v: want buggy passed (4/5 caught), fixed not passed with 2 errors", sides)
	}
	var b strings.Builder
	Print(&b, sides, true)
	if !strings.Contains(b.String(), "caught 0/5 (unknown 0, error 2)") || !strings.Contains(b.String(), "NOT as expected") {
		t.Fatalf("printed:\n%s", b.String())
	}
}

// A repro line is followed by the story of the side's first caught run, as suite's progress lines are.
func TestPrintTellsTheStory(t *testing.T) {
	story := "Two owners held lock-0 at once for 0.5s."
	rep := &suite.Report{Outcomes: []suite.Outcome{{Case: suite.Case{Entry: "buggy"}, Verdict: "valid"},
		{Case: suite.Case{Entry: "buggy"}, Verdict: "invalid", FirstNs: 1e9, Story: story}}}
	var b strings.Builder
	Print(&b, Tally(rep), true)
	if lines := strings.Split(b.String(), "\n"); len(lines) < 2 || strings.TrimSpace(lines[1]) != suite.StoryPrefix+story {
		t.Fatalf("printed:\n%s", b.String())
	}
}
