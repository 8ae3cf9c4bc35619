package locks_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/network"
)

// holdElsewhere makes another owner hold name for a minute.
func (f *fixture) holdElsewhere(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	if err := f.admin.HSet(ctx, name, "someone-else:1", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.admin.PExpire(ctx, name, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

// A wait that cannot subscribe (Redis refuses the pub/sub connection: no client slot left) gives up at once
// with a SubscribeError, which is definite, and the call's history says why; before, it returned a silent
// refusal, and a client looping on it spun without a trace of the cause.
func TestSubscribeFailureIsAnError(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.client(t, "c1", fast())
	// The client's pool connection exists before Redis is full: only the pub/sub dial is refused.
	if ok, err := r.Lock("warm-up", 1).TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("warm-up: %v %v", ok, err)
	}
	f.holdElsewhere(t, "orders")
	if err := f.admin.ConfigSet(ctx, "maxclients", "2").Err(); err != nil { // the admin and c1's pool
		t.Fatal(err)
	}
	defer f.admin.ConfigSet(ctx, "maxclients", "10000")
	begin := time.Now()
	ok, err := r.Lock("orders", 1).TryLock(ctx, 5*time.Second, 0)
	var serr *locks.SubscribeError
	if ok || !errors.As(err, &serr) || serr.Channel != "redisson_lock__channel:{orders}" {
		t.Fatalf("TryLock = %v, %v; want a SubscribeError on the lock's channel", ok, err)
	}
	if !locks.Definite(err) {
		t.Fatal("a call that gave up without subscribing is not definite")
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("gave up after %v, not at once", took)
	}
	acquires := 0
	for _, o := range f.history(t).Ops {
		if o.Invoke.Key == "orders" && o.Invoke.F == "acquire" {
			acquires++
			if o.Outcome() != history.Fail {
				t.Fatalf("the refused acquire is %v", o.Outcome())
			}
		}
	}
	if acquires != 1 {
		t.Fatalf("%d acquires recorded, want the one refused attempt", acquires)
	}
}

// Close returns in bounded time while a subscription hangs on a link that accepts and never answers (here
// a cut proxy; under descriptor exhaustion, a proxy that stopped accepting). Before, Close waited for the
// subscription's lock, as long as the command timeout per redial.
func TestCloseIsBoundedWhileSubscribing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	px := network.New()
	t.Cleanup(px.Close)
	good, err := px.Add("good", f.node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cut, err := px.Add("cut", f.node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := cut.Cut(); err != nil {
		t.Fatal(err)
	}
	// The first connection (the pool's) goes through the good link, every later one (the pub/sub) through
	// the cut one.
	var dials atomic.Int32
	redialed := make(chan struct{})
	dialer := func(ctx context.Context, network, _ string) (net.Conn, error) {
		addr := good.Addr()
		n := dials.Add(1)
		if n > 1 {
			addr = cut.Addr()
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if n == 2 {
			close(redialed)
		}
		return c, err
	}
	s, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := locks.DefaultRedissonConfig()
	cfg.Timeout = 6 * time.Second
	r := locks.NewRedisson("c1", locks.ClientConfig{Addr: f.node.Addr(), Password: f.node.Password(), Dialer: dialer}, cfg, s, f.rec)
	if ok, err := r.Lock("warm-up", 1).TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("warm-up: %v %v", ok, err)
	}
	f.holdElsewhere(t, "orders")
	done := make(chan error, 1)
	go func() {
		_, err := r.Lock("orders", 1).TryLock(ctx, 20*time.Second, 0)
		done <- err
	}()
	select {
	case <-redialed:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait never dialed its pub/sub connection")
	}
	begin := time.Now()
	r.Close()
	if took := time.Since(begin); took > 4*time.Second {
		t.Fatalf("Close took %v while the subscription hung", took)
	}
	select {
	case err := <-done:
		var serr *locks.SubscribeError
		if !errors.As(err, &serr) {
			t.Fatalf("the hung wait ended with %v, want a SubscribeError", err)
		}
		if !strings.Contains(err.Error(), "subscribe redisson_lock__channel:{orders}") {
			t.Fatalf("error %q does not say what failed", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the wait did not end within its subscription's timeout")
	}
}
