package nemesis_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/redis/go-redis/v9"
)

// realEnv runs the faults against a started topology.
func realEnv(t *testing.T, kind string) (*topology.Topology, *nemesis.Env) {
	t.Helper()
	topo, err := topology.Start(context.Background(), topology.Spec{Kind: kind, Clients: []string{"c1", "c2"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(topo.Stop)
	env := runner.FaultEnv(topo, []string{"c1", "c2"}, nemesis.Params{Duration: 9 * time.Second})
	return topo, env
}

// newPrimary waits up to 30 s for shard's primary to be another node than old, and returns it.
func newPrimary(topo *topology.Topology, shard int, old string) string {
	primary := old
	for deadline := time.Now().Add(30 * time.Second); (primary == old || primary == "") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		primary, _ = topo.Primary(context.Background(), shard)
	}
	return primary
}

func admin(topo *topology.Topology, name string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: topo.Node(name).Addr(), Password: topo.Password, MaxRetries: -1,
		Protocol: 2, DisableIdentity: true})
}

// isolatingFailover writes "before" (acknowledged by both replicas) on a Sentinel primary n1, starts
// fault on targets, writes "lost", which WAIT must see acknowledged by acks replicas, waits for the
// primary's isolation and returns the primary elected after it, which must lack "lost".
func isolatingFailover(t *testing.T, fault string, targets []nemesis.Target, acks int64) string {
	t.Helper()
	ctx := context.Background()
	topo, env := realEnv(t, topology.Sentinel)
	f := nemesis.Lookup(fault)
	steps := make(chan string, 1)
	env.Note = func(_ string, _ []nemesis.Target, detail string) { steps <- detail }
	n1 := admin(topo, "n1")
	defer n1.Close()
	if err := n1.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := n1.Do(ctx, "WAIT", 2, 5000).Int64(); n != 2 {
		t.Fatalf("%d replicas acknowledged the first write, want 2", n)
	}
	detail, heal, err := f.Start(ctx, env, targets)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(detail)
	defer func() { _ = heal(ctx) }()
	if err := n1.Set(ctx, "lost", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// 1.5 s for the acknowledgements (a loaded machine), well inside the 3 s before the isolation.
	if n, _ := n1.Do(ctx, "WAIT", 2, 1500).Int64(); n != acks {
		t.Fatalf("%d replicas acknowledged under %s, want %d", n, fault, acks)
	}
	select {
	case s := <-steps:
		t.Log(s)
	case <-time.After(10 * time.Second):
		t.Fatal("the primary was never isolated")
	}
	primary := newPrimary(topo, 0, "n1")
	if primary == "" || primary == "n1" {
		t.Fatalf("no new primary after %s", fault)
	}
	p := admin(topo, primary)
	defer p.Close()
	if p.Exists(ctx, "before").Val() != 1 || p.Exists(ctx, "lost").Val() != 0 {
		t.Fatalf("%s has before=%d lost=%d, want 1 and 0", primary, p.Exists(ctx, "before").Val(), p.Exists(ctx, "lost").Val())
	}
	return primary
}

// The lagging replica is promoted without a write that WAIT counted as replicated (by the other replica):
// Redisson #5256.
func TestLaggingReplicaIsPromoted(t *testing.T) {
	// replicas sorted: n2 lags, n3 acknowledges
	if primary := isolatingFailover(t, "lagging-failover", nemesis.ParseTargets([]string{"shard:0", "lagging-replica:0"}), 1); primary != "n2" {
		t.Fatalf("primary %q after the fault, want the lagging n2", primary)
	}
}

// partition-nodes on a cluster cuts a master off from its peers only: clients still reach it, and its
// replica takes over.
func TestPartitionNodesOnCluster(t *testing.T) {
	ctx := context.Background()
	topo, env := realEnv(t, topology.Cluster)
	f := nemesis.Lookup("partition-nodes")
	_, heal, err := f.Start(ctx, env, []nemesis.Target{nemesis.NameTarget("n3")})
	if err != nil {
		t.Fatal(err)
	}
	if primary := newPrimary(topo, 2, "n3"); primary != "n6" {
		t.Fatalf("shard 2 primary %q with n3 cut off, want n6", primary)
	}
	n3 := admin(topo, "n3")
	defer n3.Close()
	if err := n3.Ping(ctx).Err(); err != nil {
		t.Fatalf("n3 unreachable by clients: %v", err)
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	// Healed: n3 rejoins as n6's replica.
	role := ""
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(role, "role:slave") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		role = n3.Info(ctx, "replication").Val()
	}
	if !strings.Contains(role, "role:slave") {
		t.Fatal("n3 did not rejoin as a replica after the heal")
	}
}

// linkClient is client name's connection to n1 through its link (so a fault on the link reaches it), with
// no retries and a read timeout longer than any fault here; closed when the test ends.
func linkClient(t *testing.T, topo *topology.Topology, name string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: topo.Link(name, "n1").Addr(), Password: topo.Password,
		MaxRetries: -1, ReadTimeout: 20 * time.Second, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

// everyLinkFault is fault on a single node with two clients, and the targets it draws: every client's link.
func everyLinkFault(t *testing.T, fault string) (*topology.Topology, *nemesis.Env, nemesis.Fault, []nemesis.Target) {
	t.Helper()
	topo, env := realEnv(t, topology.Single)
	f := nemesis.Lookup(fault)
	targets := f.Targets(rand.New(rand.NewPCG(1, 1)), env)
	if !reflect.DeepEqual(nemesis.TargetStrings(targets), []string{"c1->n1", "c2->n1"}) {
		t.Fatalf("targets %v, want every client's link to the one node", targets)
	}
	return topo, env, f, targets
}
