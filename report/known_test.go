package report

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
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
