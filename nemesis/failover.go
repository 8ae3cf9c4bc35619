package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

func init() {
	Register("failover", &failover{cut: map[string][]string{}, ready: map[int]string{}})
	Register("failover-command", failoverCommand{})
	Register("lagging-failover", &lagging{name: "lagging-failover", runs: map[string]*lagRun{}})
	Register("stalled-failover", &lagging{name: "stalled-failover", all: true, runs: map[string]*lagRun{}})
	Register("partition-nodes", partitionNodes{})
}

// partitionNodes cuts one node (or the selected ones) off from the other data nodes, node to node:
// replication both ways and, on a cluster, gossip. Clients and Sentinels still reach it.
type partitionNodes struct{}

func (partitionNodes) Applies(env *Env) error { return needReplication("partition-nodes", env) }

func (partitionNodes) Targets(rng *rand.Rand, env *Env) []string { return pickNodes(rng, env, "one") }

func (partitionNodes) Start(ctx context.Context, env *Env, targets []string) (string, error) {
	return "cut off from the other data nodes (replication, cluster bus); clients still reach it",
		isolatePeers(ctx, env, targets, true)
}

func (partitionNodes) Stop(ctx context.Context, env *Env, targets []string) error {
	return isolatePeers(ctx, env, targets, false)
}

func isolatePeers(ctx context.Context, env *Env, nodes []string, on bool) error {
	var errs []error
	for _, n := range nodes {
		errs = append(errs, env.Replication.IsolatePeers(ctx, n, on))
	}
	return errors.Join(errs...)
}

// needReplication is the Applies of every failover fault.
func needReplication(name string, env *Env) error {
	if env.Replication == nil {
		return fmt.Errorf("%s needs primaries with replicas: use --topology sentinel or cluster (this is %s)", name, env.Topology)
	}
	return nil
}

// pickShard chooses the shard a failover hits: one holding the workload's keys.
func pickShard(rng *rand.Rand, env *Env) string {
	k := rng.IntN(env.Replication.Shards())
	if len(env.KeyShards) > 0 {
		k = env.KeyShards[rng.IntN(len(env.KeyShards))]
	}
	return "shard:" + strconv.Itoa(k)
}

// shardOf reads the "shard:K" target.
func shardOf(targets []string) int {
	for _, t := range targets {
		if s, ok := strings.CutPrefix(t, "shard:"); ok {
			k, _ := strconv.Atoi(s)
			return k
		}
	}
	return 0
}

// keptClients reads the "keep:cX" targets.
func keptClients(targets []string) map[string]bool {
	kept := map[string]bool{}
	for _, t := range targets {
		if c, ok := strings.CutPrefix(t, "keep:"); ok {
			kept[c] = true
		}
	}
	return kept
}

// isolation lists the links that cut primary off from the other nodes (its front and, on a cluster, its
// bus) and from every client that is not kept.
func isolation(env *Env, primary string, kept map[string]bool) []string {
	links := []string{"*->" + primary}
	if env.Link("bus", primary) != nil {
		links = append(links, "bus->"+primary)
	}
	for _, c := range env.Clients {
		if !kept[c] {
			links = append(links, c+"->"+primary)
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
	cut   map[string][]string // targets key -> links cut at start
	ready map[int]string      // shard -> its primary, looked up before a trigger fires (prepare)
}

// prepare looks the shard's primary up before a trigger fires, so that the start, in the recording
// goroutine, cuts at once: a Sentinel round trip there lets a waiting client take a just-released lock first.
func (f *failover) prepare(ctx context.Context, env *Env, targets []string) {
	if p, err := env.Replication.Primary(ctx, shardOf(targets)); err == nil {
		f.mu.Lock()
		f.ready[shardOf(targets)] = p
		f.mu.Unlock()
	}
}

func (f *failover) Applies(env *Env) error { return needReplication("failover", env) }

// Targets are the shard and the clients that keep reaching its old primary.
func (f *failover) Targets(rng *rand.Rand, env *Env) []string {
	out := []string{pickShard(rng, env)}
	for _, c := range pickClients(rng, env, "minority") {
		out = append(out, "keep:"+c)
	}
	if len(env.Clients) == 1 { // one client: keeping it would leave nobody to see the new primary
		out = out[:1]
	}
	return out
}

func (f *failover) Start(ctx context.Context, env *Env, targets []string) (string, error) {
	f.mu.Lock()
	primary, ok := f.ready[shardOf(targets)]
	delete(f.ready, shardOf(targets))
	f.mu.Unlock()
	if !ok {
		var err error
		if primary, err = env.Replication.Primary(ctx, shardOf(targets)); err != nil {
			return "", err
		}
	}
	links := isolation(env, primary, keptClients(targets))
	f.mu.Lock()
	f.cut[strings.Join(targets, ",")] = links
	f.mu.Unlock()
	return fmt.Sprintf("primary %s isolated from its replicas, peers and all clients but %s", primary,
		strings.Join(targets[1:], " ")), eachLink(env, links, Link.Cut)
}

func (f *failover) Stop(_ context.Context, env *Env, targets []string) error {
	f.mu.Lock()
	links := f.cut[strings.Join(targets, ",")]
	delete(f.cut, strings.Join(targets, ","))
	f.mu.Unlock()
	return eachLink(env, links, Link.Heal)
}

// failoverCommand asks the deployment to fail a shard over with nothing broken: SENTINEL FAILOVER, or
// CLUSTER FAILOVER (plain, FORCE or TAKEOVER) on a replica. The old primary becomes a replica; writes it
// accepted but had not replicated are lost. Nothing needs healing: the new layout stays.
type failoverCommand struct{}

func (failoverCommand) Applies(env *Env) error { return needReplication("failover-command", env) }

func (failoverCommand) Targets(rng *rand.Rand, env *Env) []string {
	modes := env.Replication.PromoteModes()
	return []string{pickShard(rng, env), "mode:" + modes[rng.IntN(len(modes))]}
}

func (failoverCommand) Start(ctx context.Context, env *Env, targets []string) (string, error) {
	mode := ""
	for _, t := range targets {
		if m, ok := strings.CutPrefix(t, "mode:"); ok {
			mode = m
		}
	}
	return env.Replication.Promote(ctx, shardOf(targets), mode)
}

func (failoverCommand) Stop(context.Context, *Env, []string) error { return nil }

// lagging reproduces Redisson #5256: a replica's replication stream is held (it lags, while the other
// replica keeps acknowledging writes, so WAIT still counts one), the other replicas are made unpromotable
// (replica-priority 0), and after a third of the fault the primary is isolated: the lagging replica is the
// one promoted, without the writes it never received. With all set (stalled-failover, Redisson #3994)
// every replica is held, so WAIT counts none, and whichever replica Sentinel picks lacks the writes.
type lagging struct {
	name string
	all  bool
	mu   sync.Mutex
	runs map[string]*lagRun
}

type lagRun struct {
	primary string
	laggers []string
	others  []string
	links   []string
	cancel  context.CancelFunc
	done    chan struct{}
}

func (l *lagging) Applies(env *Env) error { return needReplication(l.name, env) }

// Targets are the shard and which of its replicas (by rank) lags.
func (l *lagging) Targets(rng *rand.Rand, env *Env) []string {
	if l.all {
		return []string{pickShard(rng, env), "lagging-replica:all"}
	}
	return []string{pickShard(rng, env), "lagging-replica:" + strconv.Itoa(rng.IntN(2))}
}

func (l *lagging) Start(ctx context.Context, env *Env, targets []string) (string, error) {
	r := env.Replication
	shard := shardOf(targets)
	primary, err := r.Primary(ctx, shard)
	if err != nil {
		return "", err
	}
	replicas, err := r.Replicas(ctx, shard)
	if err != nil || len(replicas) == 0 {
		return "", errors.Join(err, fmt.Errorf("shard %d has no replica", shard))
	}
	rank := 0
	for _, t := range targets {
		if s, ok := strings.CutPrefix(t, "lagging-replica:"); ok {
			rank, _ = strconv.Atoi(s)
		}
	}
	run := &lagRun{primary: primary, done: make(chan struct{})}
	for i, n := range replicas {
		if l.all || i == rank%len(replicas) {
			run.laggers = append(run.laggers, n)
		} else {
			run.others = append(run.others, n)
		}
	}
	run.links = isolation(env, primary, nil)
	l.mu.Lock()
	l.runs[strings.Join(targets, ",")] = run
	l.mu.Unlock()
	for _, n := range run.laggers {
		if err := r.StallReplication(n, true); err != nil {
			close(run.done)
			return "", err
		}
	}
	lagger := strings.Join(run.laggers, " and ")
	for _, n := range run.others {
		if err := r.SetReplicaPriority(ctx, n, 0); err != nil {
			close(run.done)
			return "", err
		}
	}
	lag := max(env.Params.Duration/3, 500*time.Millisecond)
	bg, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	isolate := func(why string) {
		err := eachLink(env, run.links, Link.Cut)
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
		defer close(run.done)
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
	others := "no other replica"
	if len(run.others) > 0 {
		others = strings.Join(run.others, " ") + " made unpromotable (replica-priority 0)"
	}
	when := "in " + lag.String()
	if triggered {
		when = "right after the next grant"
	}
	return fmt.Sprintf("replication to %s held, %s; primary %s isolated %s", lagger, others, primary, when), nil
}

func (l *lagging) Stop(ctx context.Context, env *Env, targets []string) error {
	l.mu.Lock()
	run := l.runs[strings.Join(targets, ",")]
	delete(l.runs, strings.Join(targets, ","))
	l.mu.Unlock()
	if run == nil {
		return nil
	}
	if run.cancel != nil {
		run.cancel()
	}
	<-run.done
	r := env.Replication
	errs := []error{eachLink(env, run.links, Link.Heal)}
	for _, n := range run.laggers {
		errs = append(errs, r.StallReplication(n, false))
	}
	for _, n := range run.others {
		errs = append(errs, r.SetReplicaPriority(ctx, n, -1))
	}
	return errors.Join(errs...)
}
