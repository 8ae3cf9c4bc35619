package explore

import (
	"context"
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// TestTrimCutsWhatTheFailureDoesWithout: the shape of rw-read-unlock-drops-write. c1 writes, reads inside
// its write and lets the read go, and c2's write, asked meanwhile, is the failure (the twin's read unlock
// dropped c1's write). c3's read and the client-pause on c3 reached transitions on the way and play no part;
// c1's read re-entry is the bug itself. The fake oracle fails while c1's re-entry and c2's write are
// there: Trim cuts c3 with its leave and the fault aimed at it alone, and keeps the re-entry and c2.
func TestTrimCutsWhatTheFailureDoesWithout(t *testing.T) {
	s, err := schedule.Parse([]byte(`lock: rwlock
steps:
  - {name: s1, client: c1, acquire: write, lease: 10s, wait: 0s}
  - {name: s2, after: s1, delay: 20ms, client: c1, acquire: read, lease: 3s, wait: 0s}
  - {name: s3, after: s2, delay: 100ms, client: c1, release: true}
  - {name: s4, after: s3, delay: 20ms, client: c2, acquire: write, lease: 1s, wait: 2s}
  - {name: s5, after: s4, delay: 50ms, client: c2, release: true}
  - {name: s6, after: s1, delay: 20ms, client: c3, acquire: read, lease: 1s, wait: 2s}
  - {name: s7, after: s6, delay: 50ms, client: c3, leave: true}
  - {name: s8, after: s7, delay: 50ms, client: c3, release: true}
  - {name: s9, after: s2, fault: client-pause, for: 200ms, targets: [c3]}
  - {name: s10, after: s3, delay: 500ms, client: c1, release: true}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	g := FromSchedule(s, nil)
	if err := g.Check(rwCaps); err != nil {
		t.Fatal(err)
	}
	has := func(g *Genome, name string) bool {
		return slices.ContainsFunc(g.Schedule.Steps, func(st schedule.Step) bool { return st.Name == name })
	}
	var asked int
	got, kept := Trim(context.Background(), rwCaps, g, 20, func(_ context.Context, m *Genome) bool {
		asked++
		if err := m.Check(rwCaps); err != nil {
			t.Errorf("Trim ran a schedule Check refuses: %v", err)
		}
		return has(m, "s2") && has(m, "s3") && has(m, "s4")
	})
	var cuts []string
	for _, k := range kept {
		cuts = append(cuts, k.String())
	}
	if want := []string{"actor c3 (4 steps)"}; !slices.Equal(cuts, want) {
		t.Errorf("kept %q, want %q", cuts, want)
	}
	var left []string
	for _, st := range got.Schedule.Steps {
		left = append(left, st.Name)
	}
	if want := []string{"s1", "s2", "s3", "s4", "s5", "s10"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	// s4 followed s3 and still does; s10 still follows s3
	if st := got.step("s10"); st.After != "s3" {
		t.Errorf("s10 after %q", st.After)
	}
	if asked < 3 {
		t.Errorf("asked %d times: c1's and c2's cuts, the re-entry's, must have been tried too", asked)
	}
	if g.Origin == got.Origin || len(g.Schedule.Steps) != 10 {
		t.Error("Trim changed the genome it was given")
	}
}
