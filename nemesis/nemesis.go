// Package nemesis injects faults on a seeded schedule: it plans every fault up front from the seed, applies
// and heals each one, records both in the history, and always heals everything at the end.
//
// Files by concern: the faults in link.go, process.go, clock.go, client.go and replication.go (a new fault
// is one more file or type, registered in its own init); what they hit in target.go (the one reader and
// writer of the target grammar) and selector.go (--nemesis-targets); the schedule in plan.go; lock events
// that fire faults in trigger.go and trigger_run.go.
package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Link is one proxied client-to-node link.
type Link interface {
	Cut() error
	DropReplies() error
	Delay(latencyMs, jitterMs int) error
	Heal() error
}

// Client is one lock client's pause gate and wall clock.
type Client interface {
	Arm()   // freeze at the next grant
	Pause() // freeze now (client-stall)
	Resume()
	SetClockOffset(time.Duration)
}

// Params tune the faults.
type Params struct {
	Latency, Jitter time.Duration // latency fault
	ClockBump       time.Duration // clock and client-clock faults: how far a clock jumps
	Duration        time.Duration // --nemesis-duration, for faults with phases
}

// Process is one node's process.
type Process interface {
	SetClockOffset(time.Duration) error
	Kill() error
	Restart(ctx context.Context) error
	Pause() error
	Resume() error
	Running() bool
}

// Env is what faults act on; names are stable across runs so the same seed gives the same plan.
type Env struct {
	Topology string
	Nodes    []string
	Clients  []string
	Link     func(client, node string) Link
	Node     func(name string) Process
	Client   func(name string) Client
	Params   Params
	// Replication is the primaries and replicas (sentinel, cluster); nil where nodes do not replicate.
	Replication Replication
	// KeyShards are the shards holding the workload's keys: failovers pick among them (all when empty).
	KeyShards []int
	// Targets narrows what faults hit (--nemesis-targets); the zero value lets each fault choose.
	Targets Selector
	// Note records a step inside a running fault (set by Plan.Run).
	Note func(fault string, targets []Target, detail string)

	// Triggers, when set, receives the lock's events: steps with a Trigger are fired by them.
	Triggers *Triggers

	phase *phaseArm // the step being started, when a trigger fires its decisive phase
	used  *usage    // set while checkTargets asks which part of Targets a fault reads
}

// phaseArm is a step whose decisive phase a trigger fires, and when it fired (one value, buffered).
type phaseArm struct {
	step  Step
	fired chan time.Time
}

// Replication is a deployment whose nodes replicate: one or more shards, each a primary and its replicas.
type Replication interface {
	Shards() int
	// Primary names shard's current primary; Replicas its other nodes, sorted.
	Primary(ctx context.Context, shard int) (string, error)
	Replicas(ctx context.Context, shard int) ([]string, error)
	// PromoteModes lists how Promote can fail a shard over by command ("sentinel", or "default", "force",
	// "takeover" for CLUSTER FAILOVER); Promote does it and says what happened.
	PromoteModes() []string
	Promote(ctx context.Context, shard int, mode string) (string, error)
	// StallReplication holds (on) or releases the stream of writes that replica receives from its primary.
	StallReplication(replica string, on bool) error
	// IsolatePeers cuts (or restores) node's links to the other data nodes: replication both ways and, on a
	// cluster, its bus; clients still reach it.
	IsolatePeers(ctx context.Context, node string, on bool) error
	// SetReplicaPriority sets a node's replica-priority (0: never promoted by Sentinel); negative restores
	// the default.
	SetReplicaPriority(ctx context.Context, node string, priority int) error
	// Restore undoes every stall, peer cut and priority change still in force (the final heal).
	Restore(ctx context.Context) error
}

// Fault is one kind of fault, registered by name (as toxiproxy registers toxics).
type Fault interface {
	// Needs is what the fault requires of the deployment; Parse refuses it where that is missing.
	Needs() Needs
	// Targets picks what one occurrence hits, using only rng and env's names.
	Targets(rng *rand.Rand, env *Env) []Target
	// Start applies the fault and returns what heals it (as etcd's failpoints and toxiproxy's stateful
	// toxics do: the fault's state lives in the heal, not in the fault). On an error, heal, when not nil,
	// undoes the part that applied. detail is recorded with the start.
	Start(ctx context.Context, env *Env, targets []Target) (detail string, heal Heal, err error)
}

// Heal undoes one started fault. Plan.Run calls it once, even after the run's context ended.
type Heal func(ctx context.Context) error

// Needs is what a fault requires beyond named nodes and clients.
type Needs uint16

const (
	NeedsReplication Needs = 1 << iota // primaries with replicas (sentinel, cluster)
	NeedsClients                       // control of the clients (freeze, clock, writes to the resource)
	NeedsProcess                       // control of the nodes' processes (kill, stop)
	NeedsClockLib                      // the clock library preloaded into the nodes: nodes lockcheck starts
	NeedsLinks                         // a proxy on every client-to-node link
	NeedsHeldReplies                   // a proxy that holds replies (lockcheck's own, not a toxiproxy server)
	NeedsFronts                        // every node's shared front proxy (what replicas and Sentinels use)
	NeedsPeerTaps                      // lockcheck's taps between the data nodes
)

// NeedsOf is what the fault registered as name needs (nothing for an unknown name).
func NeedsOf(name string) Needs {
	if f := registry[name]; f != nil {
		return f.Needs()
	}
	return 0
}

// check refuses a fault whose needs env cannot meet.
func (n Needs) check(name string, env *Env) error {
	if n&NeedsReplication != 0 && env.Replication == nil {
		return fmt.Errorf("%s needs primaries with replicas: use --topology sentinel or cluster (this is %s)", name, env.Topology)
	}
	if n&NeedsClients != 0 && env.Client == nil {
		return fmt.Errorf("no client controls in this environment")
	}
	return nil
}

var registry = map[string]Fault{}

// Register adds a fault kind.
func Register(name string, f Fault) { registry[name] = f }

// Windowed is a fault that does its work only in a window (--nemesis-duration) of at least MinDuration;
// why says what a shorter one misses.
type Windowed interface {
	MinDuration() (d time.Duration, why string)
}

// ShortWindows says, a line per fault, which of faults heal before they do their work in windows of d.
// A warning, not a refusal: the time a fault needs depends on the machine's load.
func ShortWindows(faults []string, d time.Duration) []string {
	var out []string
	for _, n := range faults {
		if w, ok := registry[n].(Windowed); ok {
			if least, why := w.MinDuration(); d < least {
				out = append(out, fmt.Sprintf("--nemesis-duration %s is short for %s: %s; give it %s or more", d, n, why, least))
			}
		}
	}
	return out
}

// Names lists the registered faults.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Parse reads a --nemesis value: "none" or a comma-separated list of fault names.
func Parse(s string, env *Env) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		f, ok := registry[n]
		if !ok {
			return nil, fmt.Errorf("unknown fault %q in --nemesis (have: none, %s)", n, strings.Join(Names(), ", "))
		}
		if env != nil {
			if err := f.Needs().check(n, env); err != nil {
				return nil, fmt.Errorf("--nemesis %s: %v", n, err)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// Lookup returns the fault registered as name, or nil.
func Lookup(name string) Fault { return registry[name] }
