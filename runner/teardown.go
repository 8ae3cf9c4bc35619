package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/lockcheck/lockcheck/internal/bounded"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/lockcheck/lockcheck/topology"
)

// clientsWait bounds closing the clients, all at once: each stops its watchdog (a renewal in flight
// takes at most --timeout + 1 s) and closes its connections (its pub/sub at most 2 s).
const clientsWait = 10 * time.Second

// closeClients closes every client in parallel, waiting at most clientsWait, so that a run always ends and
// writes its results; a client still closing after that is named and left behind.
func closeClients(clients []locks.Client, stderr io.Writer) {
	steps := make([]func(), len(clients))
	for i, c := range clients {
		steps[i] = func() { _ = c.Close() }
	}
	if left := bounded.All(clientsWait, steps...); left > 0 {
		fmt.Fprintf(stderr, "lockcheck: teardown: %d of %d clients still closing after %s; going on\n", left, len(clients), clientsWait)
	}
}

// stopTopology stops the topology, each step bounded (topology.StopWait), and says so when it took longer
// than all its steps should.
func stopTopology(topo *topology.Topology, stderr io.Writer) {
	begin := time.Now()
	topo.Stop()
	if took := time.Since(begin); took >= topology.StopWait {
		fmt.Fprintf(stderr, "lockcheck: teardown: stopping the topology took %s; steps still running after %s were left behind\n", took.Round(time.Second), topology.StopWait)
	}
}

// closeRuntime lets go of the container engine (removing the network the run made), bounded like a
// topology step: an engine that stopped answering must not keep the run from its results.
func closeRuntime(rt *docker.Runtime, stderr io.Writer) {
	if !bounded.Run(topology.StopWait, func() { _ = rt.Close() }) {
		fmt.Fprintf(stderr, "lockcheck: teardown: the container engine did not answer within %s; going on\n", topology.StopWait)
	}
}
