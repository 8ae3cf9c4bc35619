package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/topology"
)

// watchNodes records every node (and Sentinel) of topo that dies outside the fault plan — a kill -9 by
// hand, the OOM killer, `lockcheck clean` removing a live run's container — and says so on stderr, since
// the operations that went to it then tell nothing about the lock. The returned function stops watching;
// call it before the teardown stops the nodes.
func watchNodes(topo *topology.Topology, rec *history.Recorder, stderr io.Writer) (stop func()) {
	nodes := append(topo.Sentinels[:len(topo.Sentinels):len(topo.Sentinels)], topo.Nodes...)
	for _, nd := range nodes {
		name := nd.Name()
		nd.OnUnplannedExit(func(detail string) {
			rec.Fault(history.NodeDied, history.Unplanned, []string{name}, detail)
			fmt.Fprintf(stderr, "\nlockcheck: node %s died outside the fault plan at %s (%s): the verdict can be unknown at best\n",
				name, time.Duration(rec.Clock.Now()).Round(time.Millisecond), detail)
		})
	}
	return func() {
		for _, nd := range nodes {
			nd.OnUnplannedExit(nil)
		}
	}
}

// unplannedDeaths describes the unplanned node deaths a history records.
func unplannedDeaths(h *history.History) []string {
	var out []string
	for _, f := range h.Faults {
		if f.F == history.NodeDied && f.Phase == history.Unplanned {
			out = append(out, fmt.Sprintf("node %v died outside the fault plan at %s (%s)", joinTargets(f.Targets),
				time.Duration(f.Time).Round(time.Millisecond), f.Detail))
		}
	}
	return out
}

func joinTargets(ts []string) string {
	if len(ts) == 1 {
		return ts[0]
	}
	return fmt.Sprint(ts)
}
