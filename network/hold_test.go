package network_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

// Held replies: the commands apply at once, their caller hears nothing until the heal, and then reads
// its reply on the same connection.
func TestHoldRepliesDeliversAtHeal(t *testing.T) {
	ctx := context.Background()
	n, l, _ := proxied(t)
	c := redis.NewClient(&redis.Options{Addr: l.Addr(), Password: n.Password(), ReadTimeout: 20 * time.Second,
		PoolSize: 1, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.HoldReplies(); err != nil {
		t.Fatal(err)
	}
	if l.State() != "hold-replies" {
		t.Fatalf("state %q", l.State())
	}
	type res struct {
		v   int64
		err error
	}
	done := make(chan res, 1)
	go func() {
		v, err := c.Incr(ctx, "counter").Result()
		done <- res{v, err}
	}()
	direct := redistest.Client(t, n.Addr(), n.Password())
	// The commands apply while their replies are held: poll the node directly until they have.
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := direct.Get(ctx, "counter").Int()
		if err == nil && v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held link's commands never reached the node: %d, %v", v, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("a reply came through a held link: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.v != 1 {
			t.Fatalf("after the heal: %+v, want the INCR's own reply, 1", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held replies were not delivered at the heal")
	}
	if v, err := c.Incr(ctx, "counter").Result(); err != nil || v != 2 {
		t.Fatalf("after the heal the link carries on: %d, %v", v, err)
	}
}
