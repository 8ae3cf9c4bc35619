package topology

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/network"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/topology/kind"
	"github.com/redis/go-redis/v9"
)

// clusterShards is the number of masters; each gets one replica.
const clusterShards = 3

// shard is one master's slot range.
type shard struct{ lo, hi int }

func init() { registerStart(kind.Cluster, (*Topology).startCluster) }

// startCluster brings up a Redis Cluster of three masters and three replicas. Every node announces a front
// proxy for its client port and another for its cluster bus, each in front of a tap, so replication,
// gossip and failover votes all cross them: the "bus" link of a node cuts what its peers send it and,
// at their bus taps, what it sends them, and clients follow MOVED replies to announced addresses through
// their own proxies (Dialer).
func (t *Topology) startCluster(ctx context.Context, s Spec) error {
	n := 2 * clusterShards
	ports, buses := make([]int, n), make([]int, n)
	var releases []func()
	release := func() { // held until every proxy and tap listens, so none is handed a node's port
		for _, r := range releases {
			r()
		}
		releases = nil
	}
	defer release()
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		for _, p := range []*int{&ports[i], &buses[i]} {
			port, r, err := node.ReservePort()
			if err != nil {
				return err
			}
			*p, releases = port, append(releases, r)
		}
		front, tap, err := t.addFront("*", name, ports[i], network.ReplicaTag)
		if err != nil {
			return err
		}
		t.taps[name] = tap
		if _, t.busTaps[name], err = t.addFront("bus", name, buses[i], network.BusTag); err != nil {
			return err
		}
		t.nodeAt[front.Addr()] = name
	}
	per := 16384 / clusterShards
	for i := range clusterShards {
		hi := (i+1)*per - 1
		if i == clusterShards-1 {
			hi = 16383
		}
		t.shards = append(t.shards, shard{lo: i * per, hi: hi})
	}
	release()
	if err := t.startNodes(ctx, n, func(i int, name string) node.Config {
		fport, bport := t.portOf("*", name), t.portOf("bus", name)
		cfg := s.node(name, t.Password)
		cfg.Port, cfg.Extra = ports[i], []string{
			"cluster-enabled yes",
			"cluster-config-file nodes.conf",
			"cluster-node-timeout 1000",
			"cluster-port " + strconv.Itoa(buses[i]),
			"cluster-announce-ip 127.0.0.1",
			"cluster-announce-port " + fport,
			"cluster-announce-bus-port " + bport,
			"replica-announce-ip 127.0.0.1",
			"replica-announce-port " + fport,
			"cluster-allow-replica-migration no",
		}
		return cfg
	}); err != nil {
		return err
	}
	if err := t.formCluster(ctx); err != nil {
		return err
	}
	return t.clientLinks(s.Clients, s.Front)
}

func (t *Topology) portOf(client, name string) string {
	a := t.links[[2]string{client, name}].Addr()
	return a[strings.LastIndex(a, ":")+1:]
}

// formCluster does what redis-cli --cluster create does: slots to the masters, distinct config epochs,
// MEET through the announced proxies, then each replica follows its master.
func (t *Topology) formCluster(ctx context.Context) error {
	admins := make([]*redis.Client, len(t.Nodes))
	for i, nd := range t.Nodes {
		admins[i] = t.admin(nd.Addr())
		defer admins[i].Close()
	}
	ids := make([]string, len(t.Nodes))
	for i, c := range admins {
		id, err := c.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("cluster myid %s: %w", t.Nodes[i].Name(), err)
		}
		ids[i] = id
		if err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("cluster set-config-epoch %s: %w", t.Nodes[i].Name(), err)
		}
	}
	for i, sh := range t.shards {
		if err := admins[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", sh.lo, sh.hi).Err(); err != nil {
			return fmt.Errorf("cluster addslotsrange %s: %w", t.Nodes[i].Name(), err)
		}
	}
	first := t.Nodes[0].Name()
	for i := 1; i < len(admins); i++ {
		if err := admins[i].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", t.portOf("*", first), t.portOf("bus", first)).Err(); err != nil {
			return fmt.Errorf("cluster meet %s: %w", t.Nodes[i].Name(), err)
		}
	}
	for i := range admins {
		if err := t.waitFor(ctx, t.Nodes[i].Addr(), func(c *redis.Client) bool {
			nodes := c.ClusterNodes(ctx).Val()
			return strings.Count(nodes, "\n") >= len(t.Nodes) && !strings.Contains(nodes, "handshake") &&
				!strings.Contains(nodes, "noaddr")
		}); err != nil {
			return fmt.Errorf("%s never met every node: %w", t.Nodes[i].Name(), err)
		}
	}
	for i := clusterShards; i < len(admins); i++ {
		if err := admins[i].Do(ctx, "CLUSTER", "REPLICATE", ids[i-clusterShards]).Err(); err != nil {
			return fmt.Errorf("cluster replicate %s: %w", t.Nodes[i].Name(), err)
		}
	}
	for i := range admins {
		if err := t.waitFor(ctx, t.Nodes[i].Addr(), func(c *redis.Client) bool {
			if !strings.Contains(c.ClusterInfo(ctx).Val(), "cluster_state:ok") {
				return false
			}
			nodes := c.ClusterNodes(ctx).Val()
			return strings.Count(nodes, "slave") == clusterShards && !strings.Contains(nodes, "fail")
		}); err != nil {
			return fmt.Errorf("%s never saw the cluster ok with %d replicas: %w", t.Nodes[i].Name(), clusterShards, err)
		}
	}
	for i := range clusterShards {
		if err := t.waitFor(ctx, t.Nodes[i].Addr(), func(c *redis.Client) bool {
			return strings.Contains(c.Info(ctx, "replication").Val(), "state=online")
		}); err != nil {
			return fmt.Errorf("%s's replica never came online: %w", t.Nodes[i].Name(), err)
		}
	}
	return nil
}

// ClusterAddrs lists the nodes' announced addresses: a cluster client's seeds (reached through its
// Dialer).
func (t *Topology) ClusterAddrs() []string {
	var out []string
	for _, nd := range t.Nodes {
		out = append(out, t.links[[2]string{"*", nd.Name()}].Addr())
	}
	return out
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, name, master string
	primary, failed  bool
	slots            []string
}

// clusterView reads CLUSTER NODES from the first node that sees the cluster ok (an isolated node's view
// is stale), straight from each node rather than through a proxy.
func (t *Topology) clusterView(ctx context.Context) ([]clusterNode, error) {
	var errs []error
	for _, nd := range t.Nodes {
		if !nd.Running() {
			continue
		}
		c := t.admin(nd.Addr())
		info, err := c.ClusterInfo(ctx).Result()
		var text string
		if err == nil {
			text, err = c.ClusterNodes(ctx).Result()
		}
		c.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", nd.Name(), err))
			continue
		}
		if !strings.Contains(info, "cluster_state:ok") {
			errs = append(errs, fmt.Errorf("%s: cluster state not ok", nd.Name()))
			continue
		}
		var out []clusterNode
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			cn := clusterNode{id: f[0], name: t.nodeAt[addr], master: f[3], slots: f[8:],
				primary: strings.Contains(f[2], "master"), failed: strings.Contains(f[2], "fail")}
			out = append(out, cn)
		}
		return out, nil
	}
	return nil, fmt.Errorf("no node sees the cluster ok: %w", errors.Join(errs...))
}

// clusterShard names the master serving shard's first slot and its replicas.
func (t *Topology) clusterShard(ctx context.Context, k int) (string, []string, error) {
	if k < 0 || k >= len(t.shards) {
		return "", nil, fmt.Errorf("no shard %d", k)
	}
	view, err := t.clusterView(ctx)
	if err != nil {
		return "", nil, err
	}
	want := t.shards[k].lo
	for _, cn := range view {
		if !cn.primary || cn.failed || !servesSlot(cn.slots, want) {
			continue
		}
		var replicas []string
		for _, r := range view {
			if r.master == cn.id {
				replicas = append(replicas, r.name)
			}
		}
		slices.Sort(replicas)
		return cn.name, replicas, nil
	}
	return "", nil, fmt.Errorf("no master serves slot %d", want)
}

func servesSlot(ranges []string, slot int) bool {
	for _, r := range ranges {
		lo, hi, found := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue // a migrating-slot marker
		}
		b := a
		if found {
			b, _ = strconv.Atoi(hi)
		}
		if slot >= a && slot <= b {
			return true
		}
	}
	return false
}

// clusterFailover sends CLUSTER FAILOVER [FORCE|TAKEOVER] to the shard's first replica and waits up to 15 s
// for it to become the master.
func (t *Topology) clusterFailover(ctx context.Context, k int, mode string) (string, error) {
	before, replicas, err := t.clusterShard(ctx, k)
	if err != nil {
		return "", err
	}
	if len(replicas) == 0 {
		return "", fmt.Errorf("shard %d has no replica", k)
	}
	args := []any{"CLUSTER", "FAILOVER"}
	switch mode {
	case "", "default":
	case "force", "takeover":
		args = append(args, strings.ToUpper(mode))
	default:
		return "", fmt.Errorf("unknown CLUSTER FAILOVER mode %q", mode)
	}
	c := t.admin(t.Node(replicas[0]).Addr())
	err = c.Do(ctx, args...).Err()
	c.Close()
	if err != nil {
		return "", fmt.Errorf("CLUSTER FAILOVER %s on %s: %w", strings.ToUpper(mode), replicas[0], err)
	}
	what := fmt.Sprintf("CLUSTER FAILOVER %s on %s", strings.ToUpper(mode), replicas[0])
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		if now, _, err := t.clusterShard(ctx, k); err == nil && now != before {
			return fmt.Sprintf("%s: shard %d primary %s -> %s", what, k, before, now), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Sprintf("%s accepted; shard %d primary still %s after 15s", what, k, before), nil
}
