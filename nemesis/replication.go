package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Faults on replication: failovers of several kinds, and partitions between the data nodes.
func init() {
	Register("failover", &failover{ready: map[int]string{}})
	// A failover right after a grant keeps the holder's lease on the promoted replica, so nobody can take
	// the lock there before the fault heals; right after a release the lock is free on both sides of it.
	RegisterTriggered("failover", "release", keepHolder)
	Register("failover-command", failoverCommand{})
	Register("lagging-failover", lagging{name: "lagging-failover"})
	Register("stalled-failover", lagging{name: "stalled-failover", all: true})
	for _, name := range []string{"lagging-failover", "stalled-failover"} {
		triggeredBy[name] = triggered{trigger: "grant", phase: true,
			aim: func(_ Event, planned []Target) []Target { return planned }}
	}
	Register("partition-nodes", partitionNodes{})
}

// partitionNodes cuts one node (or the selected ones) off from the other data nodes, node to node:
// replication both ways and, on a cluster, gossip. Clients and Sentinels still reach it.
type partitionNodes struct{}

func (partitionNodes) Needs() Needs { return NeedsReplication | NeedsPeerTaps }

func (partitionNodes) Targets(rng *rand.Rand, env *Env) []Target {
	return named(pickNodes(rng, env, "one"))
}

func (partitionNodes) Start(ctx context.Context, env *Env, targets []Target) (string, Heal, error) {
	heal := func(ctx context.Context) error { return isolatePeers(ctx, env, targets, false) }
	return "cut off from the other data nodes (replication, cluster bus); clients still reach it", heal,
		isolatePeers(ctx, env, targets, true)
}

func isolatePeers(ctx context.Context, env *Env, nodes []Target, on bool) error {
	var errs []error
	for _, n := range nodes {
		errs = append(errs, env.Replication.IsolatePeers(ctx, n.Name, on))
	}
	return errors.Join(errs...)
}

// pickShard chooses the shard a failover hits: one holding the workload's keys.
func pickShard(rng *rand.Rand, env *Env) Target {
	k := rng.IntN(env.Replication.Shards())
	if len(env.KeyShards) > 0 {
		k = env.KeyShards[rng.IntN(len(env.KeyShards))]
	}
	return ShardTarget(k)
}

// isolation lists the links that cut primary off from the other nodes (its front and, on a cluster, its
// bus) and from every client that is not kept.
func isolation(env *Env, primary string, kept []string) []Target {
	links := []Target{LinkTarget(Front, primary)}
	if env.Link(Bus, primary) != nil {
		links = append(links, LinkTarget(Bus, primary))
	}
	for _, c := range env.Clients {
		if !slices.Contains(kept, c) {
			links = append(links, LinkTarget(c, primary))
		}
	}
	return links
}

// failover isolates a shard's primary from its replicas and Sentinels (or cluster peers) and from every
// client but a random minority, which keep writing to it: a replica is promoted, and the kept clients and
// the rest see two primaries until the fault heals and the old primary rejoins as a replica (losing what
// only it had). Give it a --nemesis-duration longer than failure detection (1 s) plus an election.
type failover struct {
	mu    sync.Mutex
	ready map[int]string // shard -> its primary, looked up before a trigger fires (prepare)
}

func (*failover) Needs() Needs { return NeedsReplication | NeedsFronts }

// MinDuration: measured on Sentinel (issue 31, 2 cores at load 22), a replica was promoted 2.6-3.2 s after
// the isolation, so a 3 s window (the default) heals as the new primary appears, or before.
func (*failover) MinDuration() (time.Duration, string) {
	return 5 * time.Second, "a replica is promoted about 3 s after the isolation (1 s to detect it, then an election), so a shorter window heals as the new primary appears and two primaries barely coexist"
}

// prepare looks the shard's primary up before a trigger fires, so that the start, in the recording
// goroutine, cuts at once: a Sentinel round trip there lets a waiting client take a just-released lock first.
func (f *failover) prepare(ctx context.Context, env *Env, targets []Target) {
	if p, err := env.Replication.Primary(ctx, ShardOf(targets)); err == nil {
		f.mu.Lock()
		f.ready[ShardOf(targets)] = p
		f.mu.Unlock()
	}
}

// Targets are the shard and the clients that keep reaching its old primary.
func (f *failover) Targets(rng *rand.Rand, env *Env) []Target {
	out := []Target{pickShard(rng, env)}
	for _, c := range pickClients(rng, env, "minority") {
		out = append(out, KeepTarget(c))
	}
	if len(env.Clients) == 1 { // one client: keeping it would leave nobody to see the new primary
		out = out[:1]
	}
	return out
}

func (f *failover) Start(ctx context.Context, env *Env, targets []Target) (string, Heal, error) {
	shard := ShardOf(targets)
	f.mu.Lock()
	primary, ok := f.ready[shard]
	delete(f.ready, shard)
	f.mu.Unlock()
	if !ok {
		var err error
		if primary, err = env.Replication.Primary(ctx, shard); err != nil {
			return "", nil, err
		}
	}
	links := isolation(env, primary, KeptClients(targets))
	return fmt.Sprintf("primary %s isolated from its replicas, peers and all clients but %s", primary,
		strings.Join(TargetStrings(targets[1:]), " ")), healLinks(env, links), eachLink(env, links, Link.Cut)
}

// failoverCommand asks the deployment to fail a shard over with nothing broken: SENTINEL FAILOVER, or
// CLUSTER FAILOVER (plain, FORCE or TAKEOVER) on a replica. The old primary becomes a replica; writes it
// accepted but had not replicated are lost. Nothing needs healing: the new layout stays.
type failoverCommand struct{}

func (failoverCommand) Needs() Needs { return NeedsReplication }

func (failoverCommand) Targets(rng *rand.Rand, env *Env) []Target {
	modes := env.Replication.PromoteModes()
	return []Target{pickShard(rng, env), ModeTarget(modes[rng.IntN(len(modes))])}
}

func (failoverCommand) Start(ctx context.Context, env *Env, targets []Target) (string, Heal, error) {
	mode := ""
	for _, t := range targets {
		if t.Kind == Mode {
			mode = t.Mode
		}
	}
	detail, err := env.Replication.Promote(ctx, ShardOf(targets), mode)
	return detail, nil, err
}

// lagging reproduces Redisson #5256: a replica's replication stream is held (it lags, while the other
// replica keeps acknowledging writes, so WAIT still counts one), the other replicas are made unpromotable
// (replica-priority 0), and after a third of the fault the primary is isolated: the lagging replica is the
// one promoted, without the writes it never received. With all set (stalled-failover, Redisson #3994)
// every replica is held, so WAIT counts none, and whichever replica Sentinel picks lacks the writes.
type lagging struct {
	name string
	all  bool
}

func (lagging) Needs() Needs { return NeedsReplication | NeedsPeerTaps }

// Targets are the shard and which of its replicas (by rank) lags.
func (l lagging) Targets(rng *rand.Rand, env *Env) []Target {
	if l.all {
		return []Target{pickShard(rng, env), LaggingTarget(AllReplicas)}
	}
	return []Target{pickShard(rng, env), LaggingTarget(rng.IntN(2))}
}

func (l lagging) Start(ctx context.Context, env *Env, targets []Target) (string, Heal, error) {
	r := env.Replication
	shard := ShardOf(targets)
	primary, err := r.Primary(ctx, shard)
	if err != nil {
		return "", nil, err
	}
	replicas, err := r.Replicas(ctx, shard)
	if err != nil || len(replicas) == 0 {
		return "", nil, errors.Join(err, fmt.Errorf("shard %d has no replica", shard))
	}
	rank := 0
	for _, t := range targets {
		if t.Kind == Lagging && t.Rank >= 0 {
			rank = t.Rank
		}
	}
	var laggers, others []string
	for i, n := range replicas {
		if l.all || i == rank%len(replicas) {
			laggers = append(laggers, n)
		} else {
			others = append(others, n)
		}
	}
	links := isolation(env, primary, nil)
	bg, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	heal := func(ctx context.Context) error {
		cancel()
		<-done
		errs := []error{eachLink(env, links, Link.Heal)}
		for _, n := range laggers {
			errs = append(errs, r.StallReplication(n, false))
		}
		for _, n := range others {
			errs = append(errs, r.SetReplicaPriority(ctx, n, -1))
		}
		return errors.Join(errs...)
	}
	for _, n := range laggers {
		if err := r.StallReplication(n, true); err != nil {
			close(done)
			return "", heal, err
		}
	}
	lagger := strings.Join(laggers, " and ")
	for _, n := range others {
		if err := r.SetReplicaPriority(ctx, n, 0); err != nil {
			close(done)
			return "", heal, err
		}
	}
	lag := max(env.Params.Duration/3, 500*time.Millisecond)
	isolate := func(why string) {
		err := eachLink(env, links, Link.Cut)
		detail := fmt.Sprintf("primary %s isolated%s: %s, lagging, the only promotable replicas", primary, why, lagger)
		if err != nil {
			detail += "; cut failed: " + err.Error()
		}
		if env.Note != nil {
			env.Note(l.name, targets, detail)
		}
	}
	// Under a trigger the primary is isolated right after the next grant: a lock the lagging replica
	// surely lacks, with its holder still inside.
	wait, triggered := awaitPhase(env, func(ev Event) { isolate(" right after " + describe(ev)) })
	go func() {
		defer close(done)
		if triggered {
			wait(bg.Done())
			return
		}
		select {
		case <-bg.Done():
			return
		case <-time.After(lag):
		}
		isolate("")
	}()
	otherText := "no other replica"
	if len(others) > 0 {
		otherText = strings.Join(others, " ") + " made unpromotable (replica-priority 0)"
	}
	when := "in " + lag.String()
	if triggered {
		when = "right after the next grant"
	}
	return fmt.Sprintf("replication to %s held, %s; primary %s isolated %s", lagger, otherText, primary, when), heal, nil
}

// keepHolder keeps the event's client (the one that just released) on the old primary, in place of one
// planned kept client: it takes the lock again there while the others take it on the promoted replica.
func keepHolder(ev Event, planned []Target) []Target {
	out := []Target{}
	var kept []string
	for _, t := range planned {
		if t.Kind == Kept {
			kept = append(kept, t.Name)
		} else {
			out = append(out, t)
		}
	}
	// With no kept client planned (one client in all) nobody would be left to see the new primary.
	if ev.Client != "" && len(kept) > 0 && !slices.Contains(kept, ev.Client) {
		kept = append([]string{ev.Client}, kept[1:]...)
	}
	for _, c := range kept {
		out = append(out, KeepTarget(c))
	}
	return out
}
