package topology

import (
	"context"
	"testing"
	"time"
)

// Cutting the primary's front (its replicas and Sentinels lose it) makes the Sentinels promote a replica:
// the primary they report changes.
func TestSentinelFailoverChangesPrimary(t *testing.T) {
	ctx := context.Background()
	topo, err := Start(ctx, Spec{Kind: Sentinel, Clients: []string{"c1"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	before, err := topo.Primary(ctx, 0)
	if err != nil || before != "n1" {
		t.Fatalf("primary %q, %v; want n1", before, err)
	}
	if err := topo.Link("*", before).Cut(); err != nil {
		t.Fatal(err)
	}
	after := before
	for deadline := time.Now().Add(30 * time.Second); after == before && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		after, _ = topo.Primary(ctx, 0)
	}
	_ = topo.Link("*", before).Heal()
	if after == before {
		t.Fatal("the Sentinels never promoted a replica")
	}
	t.Logf("failover %s -> %s", before, after)
}
