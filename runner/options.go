// Package runner composes one test, as Jepsen does: a topology, lock clients, a workload, a nemesis plan and
// checkers, run for a time and judged from the history on disk.
package runner

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workloads"
)

// UsageError is bad input from the user (exit 254).
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

func usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// IsUsage reports whether err is bad input (an external deployment not as described is too).
func IsUsage(err error) bool {
	var u UsageError
	return errors.As(err, &u) || topology.IsDeployment(err)
}

// Options is one test, as the CLI's flags give it.
type Options struct {
	Lock            string
	LockSpec        string // --lock-spec FILE: a lock of the user's own Lua scripts, instead of Lock (lockspec)
	Topology        string
	Nodes           int // redlock's masters; 0: the default (5)
	Nemesis         string
	NemesisInterval time.Duration
	NemesisDuration time.Duration
	NemesisTargets  string // --nemesis-targets: a size or named nodes/clients
	NemesisTrigger  bool   // --nemesis-trigger: faults fired by the lock's own events (nemesis/trigger.go)
	Quiet           time.Duration
	Time            time.Duration
	Clients         int
	Threads         int // application threads per client (--threads), each its own owner
	Keys            int
	Lease           time.Duration
	LeaseTo         time.Duration // with Lease: a range drawn per acquire (--lease 1s-10s); 0: Lease alone
	Watchdog        time.Duration
	Wait            time.Duration
	WaitTo          time.Duration // with Wait: a range drawn per acquire (--wait 0-2s); 0: Wait alone
	Timeout         time.Duration
	Hold            string
	Reentry         float64
	Seed            int64
	Results         string
	Persistence     string
	Scripts         string // a directory of .lua files replacing scripts of the lock's set
	CheckTimeout    time.Duration
	Check           string           // --check: extra checker groups (kinds.Checks.Ask), e.g. liveness
	Permits         int64            // semaphores
	Count           int64            // latch
	Readers         string           // read-write lock: readers:writers
	OnLost          workloads.OnLost // --on-lost: a critical section ends at the library's loss signal (stop)
	CrossThread     float64          // --cross-thread: chance of a stray release or a state read (workloads/crossthread.go)
	ForceUnlock     float64          // --force-unlock: chance per critical section of a forceUnlock of a random key
	Group           int              // multi lock: keys per acquisition
	Latency         time.Duration
	Jitter          time.Duration
	ClockBump       time.Duration
	Backend         string // process, docker or external
	DockerImage     string // the Redis image of the docker backend
	Server          string // --server NAME[@VERSION]: "" is the host's redis-server (node/server)
	ServerBin       string // --server-bin PATH: the user's own server binary
	External        string // the external backend's deployment file (YAML)
	// ExternalFlags describe the external deployment instead of a file.
	ExternalFlags topology.ExternalFlags
	Worker        WorkerOptions // an out-of-process client (runner/workers.go)
	// Schedule is --schedule FILE: the steps to play instead of the random workload (workloads/schedule).
	Schedule string
	Command  []string // the command line that reproduces the run (its seed included)
	// Given names the flags the user set (without "--") when the options come from a command line: Prepare
	// fills the others in with a negative control's own run flags. nil (a caller of the package) leaves
	// the options as they are.
	Given map[string]bool
	// NoExtend keeps the application from extending long holds (worker-check's hold past the lease); no
	// flag sets it.
	NoExtend bool
}

// Backends run the nodes.
const (
	BackendProcess  = "process"  // child processes (default)
	BackendDocker   = "docker"   // containers through testcontainers-go
	BackendExternal = "external" // a deployment lockcheck did not start
)

// Defaults are the CLI's defaults.
func Defaults() Options {
	return Options{Lock: "reentrant", Topology: "", Nemesis: "none", Permits: 2, Count: 3, Readers: "3:1", Group: 2,
		Latency: 200 * time.Millisecond, Jitter: 50 * time.Millisecond, ClockBump: time.Minute,
		NemesisInterval: 5 * time.Second, NemesisDuration: 3 * time.Second, Quiet: 3 * time.Second,
		Time: 30 * time.Second, Clients: 8, Threads: DefaultThreads, Keys: 0, Watchdog: 30 * time.Second, Wait: 5 * time.Second,
		Timeout: 3 * time.Second, Hold: "10ms-200ms", Reentry: 0.2, Results: "results",
		Persistence: node.PersistNone, CheckTimeout: 60 * time.Second, Backend: BackendProcess,
		DockerImage: docker.DefaultImage}
}

// DefaultThreads is --threads' default: two, so that a default run already has threads of one client
// instance contending (what they share is where a class of real bugs lives).
const DefaultThreads = 2

// MaxThreads bounds --threads: each thread is a goroutine and an owner porcupine must order.
const MaxThreads = 64

// MaxOwners bounds clients × threads: every owner is a goroutine, and porcupine orders them all per key.
const MaxOwners = 4096

// Leases is --lease as a range (a single value is a range of one).
func (o Options) Leases() workloads.Range { return workloads.Span(o.Lease, o.LeaseTo) }

// Waits is --wait as a range.
func (o Options) Waits() workloads.Range { return workloads.Span(o.Wait, o.WaitTo) }

// describe is the options as recorded in the history and results.json.
func (o Options) describe() history.Options {
	d := func(v time.Duration) history.Duration { return history.Duration(v) }
	return history.Options{Lock: o.Lock, Topology: o.Topology, Nodes: o.Nodes, Nemesis: o.Nemesis,
		NemesisInterval: d(o.NemesisInterval), NemesisDuration: d(o.NemesisDuration), NemesisTargets: o.NemesisTargets,
		NemesisTrigger: o.NemesisTrigger, Quiet: d(o.Quiet), Time: d(o.Time), Clients: o.Clients, Keys: o.Keys,
		Lease: o.Leases().Text(), Watchdog: d(o.Watchdog), Wait: o.Waits().Text(), Threads: o.Threads,
		Timeout: d(o.Timeout), Hold: o.Hold, Reentry: o.Reentry, Seed: o.Seed,
		Persistence: o.Persistence, Scripts: o.Scripts, CheckTimeout: d(o.CheckTimeout), Check: o.Check,
		Permits: o.Permits, Count: o.Count, Readers: o.Readers, Group: o.Group, OnLost: o.OnLost.String(),
		Latency: d(o.Latency), Jitter: d(o.Jitter), ClockBump: d(o.ClockBump),
		Backend: o.Backend, DockerImage: o.DockerImage, External: o.External, Server: o.Server, ServerBin: o.ServerBin,
		Client: o.Worker.Client, ClientCmd: o.Worker.Cmd, ClientOptions: o.Worker.Options,
		CrossThread: o.CrossThread, ForceUnlock: o.ForceUnlock, Schedule: o.Schedule}
}
