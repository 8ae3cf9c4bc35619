package runner

import (
	"fmt"
	"io"
	"slices"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/node/server"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workloads"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// Test is one run composed, as Jepsen's test map is: the topology to start (or attach to), how to make the
// lock clients, the workload that drives them, the nemesis plan, and the checks its history is judged by.
// Prepare builds it from the options, finding every usage error before anything starts; Execute consumes it.
type Test struct {
	// Options are the options with every default applied: the lock's (topology, nodes of an external
	// deployment), a negative control's run flags, a spec lock's name.
	Options  Options
	Kind     *kinds.Kind // a spec lock's is its own, not registered
	Spec     topology.Spec
	External *topology.External // set on --backend external: Spec's topology is attached to, not started
	// Clients makes one lock client per name in Spec.Clients: the kind's Go clients, the spec lock's, or a
	// worker's (their clients must implement Kind.Family).
	Clients  ClientProvider
	Scripts  *locks.Scripts // the kind's script set, with --scripts applied; nil for none
	Workload kinds.Workload
	Params   kinds.Params // what the workload, the checks and the key count were made from
	// Schedule, when set (--schedule), is played instead of Workload, and its fault steps instead of Plan.
	Schedule *schedule.Schedule
	Faults   []string // the nemesis, parsed (a schedule's: the faults its steps use)
	Plan     nemesis.Plan
	// FaultParams tune the faults (latency, jitter, clock bump, a fault's length), for the plan and the run.
	FaultParams nemesis.Params
	Targets     nemesis.Selector
	// Checks are recorded in the history's meta record; the checkers are Kind.Family.Checkers(Checks), so a
	// history is judged the same way during the run and later by `lockcheck check`.
	Checks kinds.Checks
	// Server is the server binary the nodes run (--server, --server-bin), fetched and probed by Execute.
	Server server.Choice
	// Notes are what Prepare decided that the user should hear before the run (a negative control's flags).
	Notes []string

	fds string // the descriptors it needs and has, for the start line
}

// describe is the test's options as its meta record keeps them, a schedule's hash and about included:
// what report.WhatRan, and so results.json's "ran", the report, the page and compare, describe the run from.
func (t *Test) describe() history.Options {
	d := t.Options.describe()
	if t.Schedule != nil {
		d.ScheduleSHA256, d.ScheduleAbout = t.Schedule.SHA256, clipAbout(t.Schedule.About)
	}
	return d
}

// WriteNotes says what Prepare decided that the user should hear, one line each.
func (t *Test) WriteNotes(w io.Writer) {
	for _, n := range t.Notes {
		fmt.Fprintln(w, "lockcheck:", n)
	}
}

// keyShards lists the shards (of a kind of topology) that hold the workload's keys, for faults to aim at.
func keyShards(topo string, keys int) []int {
	var out []int
	for i := range keys {
		if s := topology.ShardOfSlot(topo, locks.Slot(workloads.KeyName(i))); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
