package nemesis_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/topology"
)

// stalled-failover holds every replica, so WAIT counts none (what Redisson up to 3.16.6 ignored, #3994),
// and the replica promoted after the primary's isolation lacks the write.
func TestStalledReplicasArePromotedWithoutTheWrite(t *testing.T) {
	ctx := context.Background()
	topo, env := realEnv(t, topology.Sentinel)
	f := nemesis.Lookup("stalled-failover")
	targets := []string{"shard:0", "lagging-replica:all"}
	steps := make(chan string, 1)
	env.Note = func(_ string, _ []string, detail string) { steps <- detail }
	n1 := admin(topo, "n1")
	defer n1.Close()
	if err := n1.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := n1.Do(ctx, "WAIT", 2, 5000).Int64(); n != 2 {
		t.Fatalf("%d replicas acknowledged the first write, want 2", n)
	}
	detail, err := f.Start(ctx, env, targets)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(detail)
	defer func() { _ = f.Stop(ctx, env, targets) }()
	if err := n1.Set(ctx, "lost", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// 1.5 s for an acknowledgement that must not come, inside the 3 s before the isolation.
	if n, _ := n1.Do(ctx, "WAIT", 2, 1500).Int64(); n != 0 {
		t.Fatalf("%d replicas acknowledged while every replica is held, want 0", n)
	}
	select {
	case s := <-steps:
		t.Log(s)
	case <-time.After(10 * time.Second):
		t.Fatal("the primary was never isolated")
	}
	primary := newPrimary(topo, 0, "n1")
	if primary != "n2" && primary != "n3" {
		t.Fatalf("primary %q after the fault, want a stalled replica", primary)
	}
	p := admin(topo, primary)
	defer p.Close()
	if p.Exists(ctx, "before").Val() != 1 || p.Exists(ctx, "lost").Val() != 0 {
		t.Fatalf("%s has before=%d lost=%d, want 1 and 0", primary, p.Exists(ctx, "before").Val(), p.Exists(ctx, "lost").Val())
	}
}
