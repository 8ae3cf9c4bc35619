package nemesis_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/topology"
)

// hold-replies (S2) on a real node: every client's links are held; a held client's SET applies at once, its
// reply comes only after the fault ends.
func TestHoldRepliesOnARealNode(t *testing.T) {
	ctx := context.Background()
	topo, env, f, targets := everyLinkFault(t, "hold-replies")
	held := linkClient(t, topo, "c1")
	direct := admin(topo, "n1")
	defer direct.Close()
	_, heal, err := f.Start(ctx, env, targets)
	if err != nil {
		t.Fatal(err)
	}
	replied := make(chan error, 1)
	go func() { replied <- held.Set(ctx, "lock", "held-client", 0).Err() }()
	deadline := time.Now().Add(5 * time.Second)
	for v := ""; v != "held-client"; v, _ = direct.Get(ctx, "lock").Result() {
		if time.Now().After(deadline) {
			t.Fatal("the held client's SET never applied")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-replied:
		t.Fatalf("the held client heard back during the fault (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-replied:
		if err != nil {
			t.Fatalf("the held reply after the heal: %v, want OK", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held reply never came after the heal")
	}
}

// clock-drift (S8) on a real node: its clock runs fast, so a 2 s key ends early by a quarter of real time
// (1.6 s); the heal sets the clock back to the real time.
func TestClockDriftOnARealNode(t *testing.T) {
	ctx := context.Background()
	lib, err := clockshift.Library(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Start(ctx, topology.Spec{Kind: topology.Single, Clients: []string{"c1"}, Dir: t.TempDir(), ClockLib: lib})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(topo.Stop)
	env := runner.FaultEnv(topo, []string{"c1"}, nemesis.Params{})
	f := nemesis.Lookup("clock-drift")
	targets := f.Targets(rand.New(rand.NewPCG(1, 1)), env)
	if len(targets) != 1 || targets[0] != nemesis.NameTarget("n1") {
		t.Fatalf("targets %v, want the majority of one node", targets)
	}
	c := admin(topo, "n1")
	defer c.Close()
	_, heal, err := f.Start(ctx, env, targets)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "lease", "owner", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for c.Exists(ctx, "lease").Val() == 1 {
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(start); d > 1850*time.Millisecond || d < 1300*time.Millisecond {
		t.Fatalf("a 2 s key ended after %v of real time on a clock 25%% fast; want about 1.6 s", d)
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	if now, _ := c.Time(ctx).Result(); time.Until(now).Abs() > 200*time.Millisecond {
		t.Fatalf("after the heal the node's clock is %v off", time.Until(now))
	}
}
