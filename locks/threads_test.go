package locks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
)

// The threads of one Redisson instance share it as Redisson's do: an unlock from a thread that does not hold
// the lock is refused (IllegalMonitorStateException) and leaves the holder's lock alone; two waiting
// threads share the instance's one subscription to the lock's channel, and the holder's unlock wakes them
// (well before the 30 s lease would have let them in).
func TestThreadsShareOneInstance(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.client(t, "c1", fast())
	if ok, err := r.Lock("k", 1).TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("thread 1: %v %v", ok, err)
	}
	if err := r.Lock("k", 2).Unlock(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("unlock by thread 2, which does not hold: %v, want ErrNotHeld", err)
	}
	if n, err := f.admin.HGet(ctx, "k", r.ID+":1").Int64(); n != 1 || err != nil {
		t.Fatalf("thread 1's hold after thread 2's refused unlock: %d %v", n, err)
	}
	got := make(chan int64, 2)
	for _, th := range []int64{2, 3} {
		go func() {
			if ok, _ := r.Lock("k", th).TryLock(ctx, 5*time.Second, 0); ok {
				got <- th
				_ = r.Lock("k", th).Unlock(ctx)
			} else {
				got <- 0
			}
		}()
	}
	channel := "redisson_lock__channel:{k}"
	deadline := time.Now().Add(3 * time.Second)
	for {
		subs, err := f.admin.PubSubNumSub(ctx, channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if subs[channel] == 1 {
			break
		}
		if subs[channel] > 1 || time.Now().After(deadline) {
			t.Fatalf("%d subscriptions to %s from one instance's two waiting threads, want 1", subs[channel], channel)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // both threads waiting: the second joins the first's entry
	if subs, _ := f.admin.PubSubNumSub(ctx, channel).Result(); subs[channel] != 1 {
		t.Fatalf("%d subscriptions, want 1", subs[channel])
	}
	released := time.Now()
	if err := r.Lock("k", 1).Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if th := <-got; th == 0 {
			t.Fatal("a waiting thread was not granted the lock")
		}
	}
	if d := time.Since(released); d > 3*time.Second {
		t.Fatalf("the waiting threads were granted %s after the unlock: not woken by it", d)
	}
}
