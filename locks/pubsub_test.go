package locks_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/topology"
	"github.com/redis/go-redis/v9"
)

// On a Redis 7 cluster Redisson publishes with SPUBLISH and waits with SSUBSCRIBE (sharded pub/sub), so
// the emulation must too, or it and Java Redisson never hear each other's unlocks: a sharded listener
// hears the emulation's unlock, and a waiter wakes on a sharded unlock message long before its wait ends.
// Before, the emulation used PUBLISH and SUBSCRIBE, which neither reaches.
func TestClusterUsesShardedPubSub(t *testing.T) {
	ctx := context.Background()
	d := startDeployment(t, topology.Cluster)
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: d.topo.ClusterAddrs(), Password: d.topo.Password})
	defer admin.Close()
	r := d.client(t, quick())
	const key, channel = "ck", "redisson_lock__channel:{ck}"
	listener := admin.SSubscribe(ctx, channel)
	defer listener.Close()
	if _, err := listener.ReceiveTimeout(ctx, 5*time.Second); err != nil { // the confirmation
		t.Fatal(err)
	}
	l := r.Lock(key, 1)
	if ok, err := l.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	msg, err := listener.ReceiveTimeout(ctx, 5*time.Second)
	if m, ok := msg.(*redis.Message); err != nil || !ok || m.Payload != "0" {
		t.Fatalf("sharded listener got %v, %v; want the unlock message 0", msg, err)
	}

	// A waiter: its second refused attempt comes after its subscription was confirmed.
	if err := admin.HSet(ctx, key, "java-client:1", 1).Err(); err != nil {
		t.Fatal(err)
	}
	admin.PExpire(ctx, key, time.Minute)
	subscribed := make(chan struct{})
	refusals := 0
	d.buf.on = func(line []byte) {
		if bytes.Contains(line, []byte(`"type":"fail"`)) && bytes.Contains(line, []byte(`"key":"ck"`)) {
			if refusals++; refusals == 2 {
				close(subscribed)
			}
		}
	}
	got := make(chan error, 1)
	go func() {
		ok, err := r.Lock(key, 2).TryLock(ctx, 20*time.Second, 0)
		if err == nil && !ok {
			err = context.DeadlineExceeded
		}
		got <- err
	}()
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never retried after subscribing")
	}
	begin := time.Now()
	admin.Del(ctx, key)
	if err := admin.SPublish(ctx, channel, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("the waiter took %v: it did not hear the sharded unlock", took)
	}
}

// Redisson subscribes, waits for the confirmation and tries again at once: a lock freed between the
// first attempt and the subscription (its message went before anyone listened) is taken at once. Before,
// the emulation slept min(holder's pttl, wait) first and lost that wake-up.
func TestWaiterRetriesRightAfterSubscribing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.client(t, "c1", fast())
	f.holdElsewhere(t, "lw")
	// The holder lets go right after the waiter's first refusal, before it subscribed: no message it hears.
	freed := false
	f.buf.on = func(line []byte) {
		if !freed && bytes.Contains(line, []byte(`"type":"fail"`)) && bytes.Contains(line, []byte(`"key":"lw"`)) {
			freed = true
			f.admin.Del(ctx, "lw")
		}
	}
	begin := time.Now()
	ok, err := r.Lock("lw", 1).TryLock(ctx, 5*time.Second, 0)
	if !ok || err != nil {
		t.Fatalf("waiter: %v %v; want the lock freed before it subscribed", ok, err)
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("the waiter took %v: it waited before retrying", took)
	}
}
