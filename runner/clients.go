package runner

import (
	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/locks"
)

// ClientSource says where a test's lock clients come from.
type ClientSource int

const (
	GoClients     ClientSource = iota // lockcheck's own Go clients of a registered kind
	SpecClients                       // a lock spec's clients (lockspec), loaded from Options.LockSpec
	WorkerClients                     // out-of-process workers speaking docs/protocol.md (--client, --client-cmd)
)

func (s ClientSource) String() string {
	switch s {
	case SpecClients:
		return "spec"
	case WorkerClients:
		return "worker"
	}
	return "go"
}

// ClientProvider is where a test's lock clients come from, as Prepare resolved it: lockcheck's Go clients,
// a spec lock's, or a worker's. A worker is only planned here (which one, its version or command, its
// library's options); Execute builds it if it is not cached, starts one per client and makes the run's
// clients through it. Every client of a run is made through the test's provider: there is no other seam.
type ClientProvider struct {
	Source ClientSource
	// Name is the kind (Go), the spec's lock (spec), or the registered worker's name ("cmd" for --client-cmd).
	Name    string
	Version string   // a registered worker's version
	Command []string // --client-cmd's command line, as it is started (a registered worker's is known once built)
	Mixed   bool     // the Go clients run beside the worker (--client NAME,go)
	// New makes one in-process client: the kind's Go client or the spec's; beside a worker, the Go side's.
	// Each must implement the kind's family.
	New locks.ClientFactory

	spec    worker.Spec       // a registered worker's
	libOpts map[string]string // --client-option
}
