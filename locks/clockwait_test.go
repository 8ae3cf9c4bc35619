package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/topology"
)

// Redisson's tryLock spends its wait by System.currentTimeMillis() differences, so a waiter whose wall clock
// jumps a minute ahead while it waits finds its wait spent when the unlock wakes it, and gives up (H2's fair
// half on the real library). The emulation spent it by the monotonic clock and took the lock.
func TestWaitIsSpentByClientWallClock(t *testing.T) {
	ctx := context.Background()
	d := startDeployment(t, topology.Single)
	hcfg, wcfg := quick(), quick()
	hcfg.Gate, wcfg.Gate = locks.NewGate(), locks.NewGate()
	holder, waiter := d.client(t, hcfg).FairLock("fw", 1, false), d.client(t, wcfg).FairLock("fw", 1, false)
	if ok, err := holder.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("holder: %v %v", ok, err)
	}
	type res struct {
		ok    bool
		err   error
		after time.Duration
	}
	done := make(chan res, 1)
	start := time.Now()
	go func() {
		ok, err := waiter.TryLock(ctx, 20*time.Second, 0)
		done <- res{ok, err, time.Since(start)}
	}()
	n1 := d.topo.Node("n1")
	admin := redistest.Client(t, n1.Addr(), n1.Password())
	for admin.ZCard(ctx, "redisson_lock_timeout:{fw}").Val() != 1 {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the waiter never queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	wcfg.Gate.SetClockOffset(time.Minute)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.ok || r.err != nil || r.after > 10*time.Second {
		t.Fatalf("waiter: granted %v, %v after %s; want a refusal as soon as the unlock woke it", r.ok, r.err, r.after)
	}
	if q := admin.LLen(ctx, "redisson_lock_queue:{fw}").Val(); q != 0 {
		t.Fatalf("%d left in the queue; want the waiter gone (acquireFailed)", q)
	}
}
