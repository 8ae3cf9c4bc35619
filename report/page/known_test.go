package page

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// The summary page carries, under the story, the known-or-new line, what ran, and a schedule run's steps.
func TestPageSaysKnownWhatRanAndSteps(t *testing.T) {
	r := &report.Results{Valid: checker.Invalid, Story: &report.Story{Text: "Two owners."}, Ran: "the steps of the schedule x.yaml.",
		Known: &report.Known{Text: "known: `kleppmann-pause`, a design limit of every lease lock; mitigation: fencing tokens"},
		Steps: []report.StepOutcome{{Step: "other", Text: "other: c2/1's acquire refused after 3.000s"}}}
	var b strings.Builder
	if err := Render(&b, Input{Results: r, History: &history.History{}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"known: `kleppmann-pause`", "the steps of the schedule x.yaml.", "other: c2/1's acquire refused after 3.000s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
