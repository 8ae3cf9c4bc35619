package explore

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// A finding's schedule carries what the search piled up on the way: actors, faults and re-entries that
// reached a transition once and play no part in the violation. Before a finding is confirmed, Trim cuts
// them one at a time, as a test-case reducer does, and keeps a cut when the schedule still fails the same
// way (the caller says what counts: the same violation by the same checker, whatever faults were in
// force). The shrunk schedule then says the bug's steps and no others, and it is still chained by events
// (a step after another's grant or release), which replays a lining-up far more reliably than the caught
// run's timeline written with times.

// Trimming is one cut: a copy of the genome without some of its steps.
type Trimming struct {
	What   string // what was cut: "actor c3 (4 steps)", "fault s7 (drop-reply)", "re-entry s3", "leave s5"
	genome *Genome
}

func (t Trimming) String() string { return t.What }

// Trimmings are g's cuts, largest first, each passing Check: a whole actor (its acquires, releases and
// leaves, and the faults aimed at its client alone); a fault; a re-entry and its release; a leave (its
// release then comes when the work ends). At least two steps stay.
func Trimmings(c Caps, g *Genome) []Trimming {
	var out []Trimming
	try := func(what string, idx []int) {
		if len(idx) == 0 || len(g.Schedule.Steps)-len(idx) < 2 {
			return
		}
		m := g.clone()
		slices.Sort(idx)
		for _, i := range slices.Backward(idx) {
			m.drop(i)
		}
		if m.Check(c) == nil {
			out = append(out, Trimming{What: what, genome: m})
		}
	}
	steps := g.Schedule.Steps
	for _, a := range g.actors() {
		var idx []int
		for i, st := range steps {
			if st.Client != "" && (actor{st.Client, st.Thread}) == a ||
				st.Fault != "" && len(st.Targets) == 1 && st.Targets[0] == a.client && a.thread == 0 {
				idx = append(idx, i)
			}
		}
		try(fmt.Sprintf("actor %s (%d steps)", a, len(idx)), idx)
	}
	for i, st := range steps {
		if st.Fault != "" {
			try(fmt.Sprintf("fault %s (%s)", st.Name, st.Fault), []int{i})
		}
	}
	for i, st := range steps {
		if r, ok := reentryRelease(steps, i); ok {
			try("re-entry "+st.Name, []int{i, r})
		}
	}
	for i, st := range steps {
		if st.Leave {
			try("leave "+st.Name, []int{i})
		}
	}
	return out
}

// reentryRelease says whether acquire i is a re-entry (its actor holds the key already, by file order, as
// an actor plays its steps) and which release ends it.
func reentryRelease(steps []schedule.Step, i int) (int, bool) {
	a := steps[i]
	if a.Acquire == "" {
		return 0, false
	}
	mine := func(o schedule.Step) bool {
		return o.Client != "" && o.Actor() == a.Actor() && o.KeyName() == a.KeyName()
	}
	depth := 0
	for _, o := range steps[:i] {
		if mine(o) {
			depth += holdDelta(o)
		}
	}
	if depth <= 0 {
		return 0, false
	}
	depth = 0
	for k := i; k < len(steps); k++ {
		if mine(steps[k]) {
			if depth += holdDelta(steps[k]); depth == 0 {
				return k, true
			}
		}
	}
	return 0, false
}

func holdDelta(o schedule.Step) int {
	switch {
	case o.Acquire != "":
		return 1
	case o.Release:
		return -1
	}
	return 0
}

// String names an actor as its steps do: its client, and its thread where it has one.
func (a actor) String() string {
	if a.thread == 0 {
		return a.client
	}
	return fmt.Sprintf("%s thread %d", a.client, a.thread)
}

// Trim tries g's cuts one after another (at most tries of them), each on the genome kept so far, and keeps
// a cut when still says the cut schedule still fails the same way. It returns the genome kept (g itself
// when no cut was) and the cuts kept.
func Trim(ctx context.Context, c Caps, g *Genome, tries int, still func(context.Context, *Genome) bool) (*Genome, []Trimming) {
	return reduce(ctx, g, tries, " trimmed", func(g *Genome) []Trimming { return Trimmings(c, g) }, still)
}

func (t Trimming) key() string        { return t.What }
func (t Trimming) candidate() *Genome { return t.genome }
