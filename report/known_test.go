package report

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// The verdict table says, under the story, whether the catalog knows the finding and how to confirm it.
func TestTableSaysKnown(t *testing.T) {
	r := &Results{Valid: checker.Invalid, Story: &Story{Kind: Overlap, Text: "Two owners."},
		Known: &Known{Text: "known: `kleppmann-pause`, a design limit of every lease lock; mitigation: fencing tokens",
			Confirm: "confirm with --client redisson@VERSION"}}
	var b strings.Builder
	r.Table(&b)
	out := b.String()
	i, j, k := strings.Index(out, "Two owners."), strings.Index(out, "known: `kleppmann-pause`"), strings.Index(out, "--client redisson@VERSION")
	if i < 0 || j < i || k < j {
		t.Fatalf("table:\n%s", out)
	}
}

// A schedule run's steps each say what they did, in order, and the story of its overlap names the step
// that set it up (the re-entry with the shorter lease), not the second owner's own acquire.
func TestStepsAndTheStepThatSetItUp(t *testing.T) {
	hold := grant("c1", 1, "lock-0", 0, sec/100)
	hold.Invoke.ID, hold.Invoke.Args = 1, map[string]int64{"lease_ms": 10000}
	re := grant("c1", 1, "lock-0", sec/5, sec/5+sec/100)
	re.Invoke.ID, re.Invoke.Args = 2, map[string]int64{"lease_ms": 500, "nested": 1}
	other := grant("c2", 1, "lock-0", 1190*sec/1000, 1200*sec/1000)
	other.Invoke.ID, other.Invoke.Args = 3, map[string]int64{"lease_ms": 2000}
	refused := call("c3", 1, "lock-0", "tryLock", 1300*sec/1000, history.Fail)
	refused.Invoke.ID = 4
	h := &history.History{Ops: []history.Operation{hold, re, other, refused},
		Steps: map[int64]string{1: "hold", 2: "reenter", 3: "other", 4: "third"}}
	steps := StepsOf(h)
	want := []string{"hold: c1/1's acquire granted at 0.010s, lease 10s", "reenter: c1/1's re-entry granted at 0.210s, lease 500ms",
		"other: c2/1's acquire granted at 1.200s, lease 2s", "third: c3/1's acquire refused after 0.010s"}
	if len(steps) != len(want) {
		t.Fatalf("steps: %+v", steps)
	}
	for i, s := range steps {
		if s.Text != want[i] {
			t.Errorf("step %d: %q, want %q", i, s.Text, want[i])
		}
	}
	o := checker.Overlap{Key: "lock-0", Holder: "c1/1", Intruder: "c2/1", HeldFrom: sec / 50, HeldTo: 1800 * sec / 1000,
		Entered: 1200 * sec / 1000, IntruderOut: 2 * sec}
	r := &Results{Valid: checker.Invalid, Checkers: []checker.Result{valid("porcupine"),
		{Checker: "mutual-exclusion", Valid: checker.Invalid, At: o.Entered, Violation: o.String(), Details: map[string]any{"first": o}}}}
	s := TellStory(h, r, "redisson")
	if len(s.SetUpBy) != 1 || s.SetUpBy[0] != want[1] || !strings.Contains(s.Text, "set up by the step reenter") {
		t.Fatalf("set up by %q: %s", s.SetUpBy, s.Text)
	}
}
