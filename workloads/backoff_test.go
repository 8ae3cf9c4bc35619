package workloads

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node"
)

// A client whose every tryLock fails at once (the lock is held elsewhere and Redis refuses its pub/sub
// connection, as when descriptors run out) backs off instead of spinning: each failure is recorded with
// its cause, and there are few of them. Before, the failures were silent refusals and the client looped
// thousands of times a second.
func TestFailingClientBacksOff(t *testing.T) {
	ctx := context.Background()
	n := redistest.Start(t, node.PersistNone)
	admin := redistest.Client(t, n.Addr(), n.Password())
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, history.NewClock())
	scripts, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	newClient := locks.RedissonClients(locks.VariantLock, false)
	cfg := locks.DefaultRedissonConfig()
	cfg.Timeout = time.Second
	c, err := newClient(locks.Env{Client: "c1", Addrs: []string{n.Addr()}, Password: n.Password(), Scripts: scripts,
		Redisson: cfg, Rec: rec, Gate: locks.NewGate()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The client's pool connection exists before Redis is full: only its pub/sub dial is refused.
	if ok, err := c.(locks.MutexClient).Mutex([]string{"warm-up"}, 1).TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("warm-up: %v %v", ok, err)
	}
	if err := admin.HSet(ctx, KeyName(0), "someone-else:1", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.PExpire(ctx, KeyName(0), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxclients", "2").Err(); err != nil { // the admin and c1's pool
		t.Fatal(err)
	}
	defer admin.ConfigSet(ctx, "maxclients", "10000")
	stop := make(chan struct{})
	time.AfterFunc(3*time.Second, func() { close(stop) })
	Mutex{Keys: 1, Group: 1, Wait: 5 * time.Second, Hold: Range{time.Millisecond, time.Millisecond}, Seed: 1}.
		Run(ctx, stop, []locks.Client{c}, rec, NewResource(rec))
	h, err := history.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, o := range h.Ops {
		if o.Invoke.F != "tryLock" {
			continue
		}
		calls++
		if o.Outcome() != history.Fail || o.Complete == nil || !strings.Contains(o.Complete.Error, "subscribe redisson_lock__channel:{lock-0}") {
			t.Fatalf("tryLock %+v: want a failure that names the subscription", o.Complete)
		}
	}
	// Delays of 25-50, 50-100, 100-200, 200-400, 400-800 ms and then 0.5-1 s: at most 9 calls in 3 s.
	if calls < 3 || calls > 12 {
		t.Fatalf("%d tryLock calls in 3 s: want a few, spaced by a growing delay", calls)
	}
}

// Latch rounds whose awaits fail at once (Redis refuses their pub/sub connection) back off too: a round
// with an error delays the next one.
func TestFailingLatchRoundsBackOff(t *testing.T) {
	ctx := context.Background()
	n := redistest.Start(t, node.PersistNone)
	admin := redistest.Client(t, n.Addr(), n.Password())
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, history.NewClock())
	scripts, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	newClient := locks.RedissonClients(locks.VariantLock, false)
	cfg := locks.DefaultRedissonConfig()
	cfg.Timeout = time.Second
	var clients []locks.Client
	for _, name := range []string{"c1", "c2", "c3"} {
		c, err := newClient(locks.Env{Client: name, Addrs: []string{n.Addr()}, Password: n.Password(), Scripts: scripts,
			Redisson: cfg, Rec: rec, Gate: locks.NewGate()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Each client's pool connection exists before Redis is full: only pub/sub dials are refused.
		if _, err := c.(locks.LatchClient).Latch("warm-up", 1).Await(ctx, 0); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	connected, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxclients", strconv.Itoa(strings.Count(connected, "\n"))).Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.ConfigSet(ctx, "maxclients", "10000")
	stop := make(chan struct{})
	time.AfterFunc(3*time.Second, func() { close(stop) })
	// The countDown comes 50 ms into each round, after the await has read a count of 1 and tried to
	// subscribe.
	Latch{Count: 1, Wait: 2 * time.Second, Hold: Range{50 * time.Millisecond, 50 * time.Millisecond}, Seed: 1}.
		Run(ctx, stop, clients, rec)
	h, err := history.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, o := range h.Ops {
		if o.Invoke.F == "await" && o.Outcome() == history.Fail {
			failed++
			if !strings.Contains(o.Complete.Error, "subscribe redisson_countdownlatch__channel__{latch-") {
				t.Fatalf("await failed with %q: want the subscription named", o.Complete.Error)
			}
		}
	}
	// Rounds 50 ms long would give about 60 in 3 s; backing off, a dozen at most.
	if failed < 3 || failed > 15 {
		t.Fatalf("%d failed awaits in 3 s: want a few, spaced by a growing delay", failed)
	}
}
