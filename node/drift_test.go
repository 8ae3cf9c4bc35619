package node_test

import (
	"context"
	"testing"
	"time"
)

// A drifting clock runs at a rate: at +100% a node's TIME advances twice as fast as the real clock, and a
// key's PX lease ends in half the real time; the reset brings the clock back.
func TestClockDriftRunsFast(t *testing.T) {
	ctx := context.Background()
	n, c := clockNode(t)
	if err := n.SetClockDrift(1_000_000); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "lease", "owner", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	realStart := time.Now()
	t0, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Poll until the 2 s key is gone: about 1 s of real time at double speed.
	for c.Exists(ctx, "lease").Val() == 1 {
		if time.Since(realStart) > 1900*time.Millisecond {
			t.Fatal("a 2 s key outlived 1.9 s of real time on a clock running twice as fast")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(realStart); d < 700*time.Millisecond {
		t.Fatalf("the 2 s key ended after %v of real time: a jump, not a rate of 2x", d)
	}
	t1, _ := c.Time(ctx).Result()
	real := time.Since(realStart)
	if node := t1.Sub(t0); node < real*3/2 || node > real*5/2 {
		t.Fatalf("the node's clock advanced %v in %v of real time; want about twice", node, real)
	}
	if err := n.SetClockOffset(0); err != nil {
		t.Fatal(err)
	}
	if now, _ := c.Time(ctx).Result(); time.Until(now) > 200*time.Millisecond || time.Until(now) < -200*time.Millisecond {
		t.Fatalf("after the reset the clock is %v off", time.Until(now))
	}
}
