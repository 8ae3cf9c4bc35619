package topology

import (
	"context"
	"testing"
	"time"
)

// A cluster comes up with three shards, each a master and one replica; isolating a shard's master (its
// front and bus proxies) makes the cluster promote the replica.
func TestClusterFailoverPromotesReplica(t *testing.T) {
	ctx := context.Background()
	topo, err := Start(ctx, Spec{Kind: Cluster, Clients: []string{"c1"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	t.Logf("cluster ready in %s", topo.Startup)
	if topo.Shards() != 3 {
		t.Fatalf("%d shards", topo.Shards())
	}
	before, replicas, err := topo.clusterShard(ctx, 1)
	if err != nil || before != "n2" || len(replicas) != 1 || replicas[0] != "n5" {
		t.Fatalf("shard 1: primary %q replicas %v, %v; want n2 with n5", before, replicas, err)
	}
	for _, l := range []string{"*", "bus"} {
		if err := topo.Fault(l, before).Cut(); err != nil {
			t.Fatal(err)
		}
	}
	after := before
	for deadline := time.Now().Add(30 * time.Second); (after == before || after == "") && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		after, _, _ = topo.clusterShard(ctx, 1)
	}
	for _, l := range []string{"*", "bus"} {
		_ = topo.Fault(l, before).Heal()
	}
	if after != "n5" {
		t.Fatalf("shard 1 primary %q after isolating n2; want n5", after)
	}
}

// CLUSTER FAILOVER on a replica swaps it with its master, with nothing broken.
func TestClusterCommandFailover(t *testing.T) {
	ctx := context.Background()
	topo, err := Start(ctx, Spec{Kind: Cluster, Clients: []string{"c1"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	got, err := topo.Promote(ctx, 0, "default")
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := topo.Primary(ctx, 0); now != "n4" {
		t.Fatalf("%s; shard 0 primary %q, want n4", got, now)
	}
	t.Log(got)
}
