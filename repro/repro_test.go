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

// A caught run of the buggy side that the catalog does not know as its entry fails the side: the entry's
// rule (package known) must describe what its own buggy side finds.
func TestTallyKnowsItsOwnRuns(t *testing.T) {
	out := func(as string) suite.Outcome {
		return suite.Outcome{Case: suite.Case{Entry: "buggy"}, Verdict: "invalid", FirstNs: 1e9, KnownAs: as,
			Known: "known: `" + as + "`"}
	}
	rep := &suite.Report{Name: "kleppmann-pause", Outcomes: []suite.Outcome{out("kleppmann-pause"), out("kleppmann-pause")}}
	if s := Tally(rep); !s[0].Passed || s[0].Strays != 0 {
		t.Fatalf("known as itself: %+v", s[0])
	}
	rep.Outcomes[1] = out("")
	s := Tally(rep)
	var b strings.Builder
	Print(&b, s, true)
	if s[0].Passed || s[0].Strays != 1 || !strings.Contains(b.String(), "not known as this entry") {
		t.Fatalf("a stray: %+v\n%s", s[0], b.String())
	}
	// A variant is known as the entry it plays.
	rep = &suite.Report{Name: "design-stale-release-steps", Outcomes: []suite.Outcome{out("design-unconditional-unlock")}}
	if s := Tally(rep); !s[0].Passed {
		t.Fatalf("a variant: %+v", s[0])
	}
}
