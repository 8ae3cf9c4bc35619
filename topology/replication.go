package topology

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// The methods here are the failover faults' view of a replicated topology (sentinel, cluster): shards,
// each a primary and its replicas.

// Shards is how many primaries the topology has (0 where nodes do not replicate).
func (t *Topology) Shards() int {
	switch t.Kind {
	case Sentinel:
		return 1
	case Cluster:
		return len(t.shards)
	}
	return 0
}

// Primary names shard's current primary, as Sentinel or the cluster reports it.
func (t *Topology) Primary(ctx context.Context, shard int) (string, error) {
	switch t.Kind {
	case Sentinel:
		return t.sentinelPrimary(ctx)
	case Cluster:
		p, _, err := t.clusterShard(ctx, shard)
		return p, err
	}
	return "", fmt.Errorf("topology %s has no replication", t.Kind)
}

// Replicas names shard's nodes other than its primary, sorted.
func (t *Topology) Replicas(ctx context.Context, shard int) ([]string, error) {
	if t.Kind == Cluster {
		_, r, err := t.clusterShard(ctx, shard)
		return r, err
	}
	p, err := t.Primary(ctx, shard)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range t.NodeNames() {
		if n != p {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// PromoteModes lists the command-driven failovers the topology offers.
func (t *Topology) PromoteModes() []string {
	if t.Kind == Cluster {
		return []string{"default", "force", "takeover"}
	}
	return []string{"sentinel"}
}

// Promote fails shard over by command: SENTINEL FAILOVER, or CLUSTER FAILOVER [FORCE|TAKEOVER] sent to one
// of the shard's replicas.
func (t *Topology) Promote(ctx context.Context, shard int, mode string) (string, error) {
	switch t.Kind {
	case Sentinel:
		return t.sentinelFailover(ctx)
	case Cluster:
		return t.clusterFailover(ctx, shard, mode)
	}
	return "", fmt.Errorf("topology %s has no replication", t.Kind)
}

// StallReplication holds (or releases) what replica receives from any primary: its replication connection
// is found by the port it announces, at every node's tap.
func (t *Topology) StallReplication(replica string, on bool) error {
	if t.links[[2]string{"*", replica}] == nil || len(t.taps) == 0 {
		return fmt.Errorf("no node %q with a replication link lockcheck can hold", replica)
	}
	port := t.portOf("*", replica)
	t.mark(&t.stalled, replica, on)
	for _, tap := range t.taps {
		tap.Stall(port, on)
	}
	return nil
}

// IsolatePeers cuts (on) or restores node's links to the other data nodes: at every tap its replication
// connections are refused both ways (it as a replica, the others as its replicas) and, on a cluster, its
// bus is cut both ways. Clients and Sentinels still reach it.
func (t *Topology) IsolatePeers(_ context.Context, node string, on bool) error {
	if t.links[[2]string{"*", node}] == nil || len(t.taps) == 0 {
		return fmt.Errorf("no node %q with peers", node)
	}
	port := t.portOf("*", node)
	t.mark(&t.cutOff, node, on)
	for name, tap := range t.taps {
		if name != node {
			tap.Drop(port, on)
			continue
		}
		for other := range t.taps {
			if other != node {
				tap.Drop(t.portOf("*", other), on)
			}
		}
	}
	if bus := t.Fault("bus", node); bus != nil {
		if on {
			return bus.Cut()
		}
		return bus.Heal()
	}
	return nil
}

// SetReplicaPriority sets a node's replica-priority (Sentinel never promotes 0); negative restores 100,
// the default.
func (t *Topology) SetReplicaPriority(ctx context.Context, node string, priority int) error {
	nd := t.Node(node)
	if nd == nil {
		return fmt.Errorf("no node %q", node)
	}
	t.mark(&t.prioritized, node, priority >= 0)
	if priority < 0 {
		priority = 100
	}
	c := t.admin(nd.Addr())
	defer c.Close()
	return c.ConfigSet(ctx, "replica-priority", strconv.Itoa(priority)).Err()
}

// Shape is what a kind's replication looks like before it starts: its shards and the command failovers it
// offers (no shards where nodes do not replicate). Fault plans are made from it.
func Shape(kind string) (shards int, modes []string) {
	t := &Topology{Kind: kind, shards: make([]shard, clusterShards)}
	return t.Shards(), t.PromoteModes()
}

// NodeCount is how many data nodes a kind starts (masters for redlock).
func NodeCount(kind string, masters int) int { return KindNamed(kind).NodeCount(masters) }

// ShardOfSlot is the shard whose primary serves slot when a kind of topology starts (0 where there is one
// primary).
func ShardOfSlot(kind string, slot int) int {
	if kind != Cluster {
		return 0
	}
	return min(slot/(16384/clusterShards), clusterShards-1)
}

// mark records (on) or forgets that a fault changed node, for Restore.
func (t *Topology) mark(set *map[string]bool, node string, on bool) {
	t.changedMu.Lock()
	defer t.changedMu.Unlock()
	if *set == nil {
		*set = map[string]bool{}
	}
	if on {
		(*set)[node] = true
	} else {
		delete(*set, node)
	}
}

// Restore undoes every stall, peer cut and replica-priority change still in force: only what the faults
// changed, so an external deployment's own settings are left alone.
func (t *Topology) Restore(ctx context.Context) error {
	t.changedMu.Lock()
	stalled, cutOff, prioritized := keys(t.stalled), keys(t.cutOff), keys(t.prioritized)
	t.changedMu.Unlock()
	var errs []error
	for _, n := range stalled {
		errs = append(errs, t.StallReplication(n, false))
	}
	for _, n := range cutOff {
		errs = append(errs, t.IsolatePeers(ctx, n, false))
	}
	for _, n := range prioritized {
		errs = append(errs, t.SetReplicaPriority(ctx, n, -1))
	}
	return errors.Join(errs...)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
