package network_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A held command type: a PEXPIRE (plain, or a script whose first call is pexpire) waits at the proxy and
// applies only at the heal, with its reply; other commands, on other connections, pass meanwhile.
func TestHoldCommandDelaysOnlyThatCommand(t *testing.T) {
	ctx := context.Background()
	n, l, _ := proxied(t)
	conn := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: l.Addr(), Password: n.Password(), ReadTimeout: 20 * time.Second,
			PoolSize: 1, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
		t.Cleanup(func() { c.Close() })
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	plain, script, other := conn(), conn(), conn()
	direct := redistest.Client(t, n.Addr(), n.Password())
	for _, k := range []string{"a", "b"} {
		if err := direct.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.HoldCommand("pexpire"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- plain.PExpire(ctx, "a", time.Hour).Err() }()
	go func() {
		done <- script.Eval(ctx, "return redis.call('pexpire', KEYS[1], ARGV[1])", []string{"b"}, 3600000).Err()
	}()
	// The other connection's commands, a script whose first call is not pexpire among them, pass at once.
	if err := other.Set(ctx, "c", "v", 0).Err(); err != nil {
		t.Fatalf("another command through the held link: %v", err)
	}
	if v, err := other.Eval(ctx, "redis.call('get', KEYS[1]); return redis.call('pexpire', KEYS[1], 5000)",
		[]string{"c"}).Int(); err != nil || v != 1 {
		t.Fatalf("a script whose first call is GET: %d, %v", v, err)
	}
	select {
	case err := <-done:
		t.Fatalf("a held PEXPIRE was answered during the fault (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	for _, k := range []string{"a", "b"} {
		if d, err := direct.PTTL(ctx, k).Result(); err != nil || d != -1 {
			t.Fatalf("%s: pttl %v, %v during the fault: the held PEXPIRE reached the node", k, d, err)
		}
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("a held PEXPIRE after the heal: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the held PEXPIREs were not delivered at the heal")
		}
	}
	for _, k := range []string{"a", "b"} {
		if d, err := direct.PTTL(ctx, k).Result(); err != nil || d < 1000 {
			t.Fatalf("%s: pttl %v, %v after the heal, want the delivered PEXPIRE's hour", k, d, err)
		}
	}
	if err := plain.Set(ctx, "d", "v", 0).Err(); err != nil {
		t.Fatalf("after the heal the link carries on: %v", err)
	}
}
