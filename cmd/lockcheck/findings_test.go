package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/redis/go-redis/v9"
)

// The tests of docs/findings.md: the Redisson worker's API forms (library option api) and the hypotheses
// of the reference's §5 that one Redisson client on one real Redis settles, each asserting what Redisson
// 4.7.0 does today. Keys are set or deleted straight on the node to stand for what a fault does (another
// owner holding a member, a member lost in a failover).

// redissonOn starts one Redisson worker (the default version) for lock kind on a fresh single node, with
// the given library options and watchdog, and a client straight to the node.
func redissonOn(t *testing.T, ctx context.Context, kind string, libOpts map[string]string, watchdog time.Duration) (*worker.Client, *redis.Client) {
	t.Helper()
	w, topo := redissonOnTopology(t, ctx, topology.Single, kind, libOpts, watchdog)
	rdb := redis.NewClient(&redis.Options{Addr: topo.Nodes[0].Addr(), Password: topo.Password})
	t.Cleanup(func() { rdb.Close() })
	return w, rdb
}

// redissonOnTopology starts a fresh topology of topoKind and one Redisson worker on it as client c1.
func redissonOnTopology(t *testing.T, ctx context.Context, topoKind, kind string, libOpts map[string]string, watchdog time.Duration) (*worker.Client, *topology.Topology) {
	t.Helper()
	needJava(t)
	useWorkerCache(t)
	spec, version, err := worker.Lookup("redisson")
	if err != nil {
		t.Fatal(err)
	}
	argv, err := worker.Build(ctx, spec, version, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	topo, err := topology.Start(ctx, topology.Spec{Kind: topoKind, Clients: []string{"c1"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Stop() })
	k, err := kinds.Lookup(kind)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := history.Create(filepath.Join(dir, "history.jsonl"), history.NewClock())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	st := &sdk.Topology{Kind: topo.Kind, NAT: topo.NAT("c1")}
	for i, n := range topo.NodeNames() {
		st.Nodes = append(st.Nodes, sdk.Node{Name: n, Addr: topo.Addrs("c1")[i]})
	}
	if topo.Kind == topology.Sentinel {
		st.Sentinels, st.MasterName = topo.SentinelAddrs(), topo.MasterName()
	}
	init := sdk.Message{Client: "c1", Seed: 1, Password: topo.Password, Topology: st,
		Lock:           &sdk.Lock{Kind: k.Name, Family: k.Family.Name},
		Options:        &sdk.Options{WatchdogMs: watchdog.Milliseconds(), WaitMs: 5000, TimeoutMs: 3000},
		LibraryOptions: libOpts}
	w, err := worker.Start(worker.Config{Client: "c1", Argv: argv, Dir: dir, Init: init, Rec: rec,
		Readers: worker.NewReaders(), OnFail: func(err error) { t.Errorf("worker: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, topo
}

// Every API form grants, holds the key for the lease it was given in its unit, and releases.
func TestRedissonAPIForms(t *testing.T) {
	t.Parallel() // its own node and workers
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, api := range []string{"tryLock", "lock:SECONDS", "lockInterruptibly", "tryLockAsync:SECONDS"} {
		t.Run(api, func(t *testing.T) {
			w, rdb := redissonOn(t, ctx, "reentrant", map[string]string{"api": api}, 30*time.Second)
			m := w.Mutex([]string{"api-form"}, 1)
			ok, err := m.TryLock(ctx, 2*time.Second, 20*time.Second)
			if err != nil || !ok {
				t.Fatalf("acquire: %v, %v", ok, err)
			}
			if ttl := rdb.PTTL(ctx, "api-form").Val(); ttl <= 10*time.Second || ttl > 20*time.Second {
				t.Fatalf("the lock's ttl is %s after a 20 s lease", ttl)
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			if n := rdb.Exists(ctx, "api-form").Val(); n != 0 {
				t.Fatal("the lock is still there after release")
			}
			// A lease the unit cannot carry is refused, not rounded.
			if api == "lock:SECONDS" {
				if _, err := m.TryLock(ctx, time.Second, 1500*time.Millisecond); !isWorkerCode(err, sdk.CodeMalformed) {
					t.Fatalf("a 1500 ms lease in SECONDS: %v, want error %d", err, sdk.CodeMalformed)
				}
			}
		})
	}
}

func isWorkerCode(err error, code int) bool {
	var e *worker.Error
	return errors.As(err, &e) && e.Code == code
}

// An api the worker does not know, an option it has not, or a value of the wrong type is refused at init:
// bad input (exit 254), not a harness failure.
func TestRedissonAPIFormUnknown(t *testing.T) {
	t.Parallel() // bad input refused at the worker's init
	needJava(t)
	useWorkerCache(t)
	for _, opt := range []string{"api=lockSomehow", "noSuchSetter=1", "lockWatchdogTimeout=abc"} {
		code, _ := run(t, "run", "--client", "redisson", "--client-option", opt, "--time", "3s",
			"--quiet", "1s", "--clients", "1")
		if code != exitUsage {
			t.Errorf("--client-option %s: exit %d, want %d", opt, code, exitUsage)
		}
	}
}

// H4: RedissonMultiLock.lockInterruptibly(lease, unit) converts the lease to milliseconds again on every
// round, so a waiter whose first round failed holds the members for 1000 times the lease it asked for
// (lock(1, SECONDS) gives 1000 s). The same call in MILLISECONDS converts nothing and keeps 1 s.
func TestFindingH4MultiLockLeaseGrowsPerRound(t *testing.T) {
	t.Parallel() // its own node and workers
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range []struct {
		api      string
		min, max time.Duration
	}{{"lock:SECONDS", 100 * time.Second, 1000 * time.Second}, {"lock", 0, time.Second}} {
		t.Run(c.api, func(t *testing.T) {
			w, rdb := redissonOn(t, ctx, "multi", map[string]string{"api": c.api}, 30*time.Second)
			// Another owner holds the first member for longer than the first round's wait (at most the
			// lease, 1 s), so that round fails and the second takes the members once this one expires.
			if err := rdb.HSet(ctx, "h4-a", "someone-else:1", 1).Err(); err != nil {
				t.Fatal(err)
			}
			rdb.PExpire(ctx, "h4-a", 3*time.Second)
			m := w.Mutex([]string{"h4-a", "h4-b"}, 1)
			if ok, err := m.TryLock(ctx, 0, time.Second); err != nil || !ok {
				t.Fatalf("lock: %v, %v", ok, err)
			}
			for _, k := range []string{"h4-a", "h4-b"} {
				if ttl := rdb.PTTL(ctx, k).Val(); ttl <= c.min || ttl > c.max {
					t.Errorf("%s: ttl %s after lock(1 s), want in (%s, %s]", k, ttl, c.min, c.max)
				}
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatalf("unlock: %v", err)
			}
		})
	}
}

// H3: RedissonMultiLock.unlock() unlocks the members in order and stops at the first that throws. With a
// member gone (expired, or lost in a failover), the unlock says "not held" and leaves the members after it
// locked, and the watchdog keeps renewing them: a lock no one holds, for as long as the client lives.
func TestFindingH3MultiLockUnlockStopsAtLostMember(t *testing.T) {
	t.Parallel() // its own node and workers
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const watchdog = 2 * time.Second
	w, rdb := redissonOn(t, ctx, "multi", nil, watchdog)
	m := w.Mutex([]string{"h3-a", "h3-b"}, 1)
	if ok, err := m.TryLock(ctx, 2*time.Second, 0); err != nil || !ok {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	if err := rdb.Del(ctx, "h3-a").Err(); err != nil { // the first member is lost
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("unlock with the first member gone: %v, want not held", err)
	}
	// Three watchdog timeouts later the second member would have expired unless renewed.
	deadline := time.Now().Add(3 * watchdog)
	for time.Now().Before(deadline) {
		if rdb.Exists(ctx, "h3-b").Val() == 0 {
			t.Fatalf("the second member was released or expired: H3 does not hold")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ttl := rdb.PTTL(ctx, "h3-b").Val(); ttl <= 0 || ttl > watchdog {
		t.Fatalf("the second member's ttl is %s: not the watchdog's", ttl)
	}
}

// H10: RedissonFairLock's async tryLockAsync(wait, lease, unit) gives up through trySuccessFalse, which
// calls acquireFailedAsync(-1, null, ...): the followers' deadlines are cut by fairLockWaitTimeout (300 s)
// instead of the wait the waiter queued with, so they fall into the past and the next attempt of anyone
// purges them from the queue. The sync tryLock cuts them by the wait (the control).
func TestFindingH10AsyncFairGiveUpCutsFollowers(t *testing.T) {
	t.Parallel() // its own node and workers
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const key, wait = "h10", 2 * time.Second
	timeouts := "redisson_lock_timeout:{" + key + "}"
	for _, c := range []struct {
		api      string
		min, max time.Duration // how far the follower's deadline moves when the waiter before it gives up
	}{{"tryLockAsync", 250 * time.Second, 350 * time.Second}, {"tryLock", wait / 2, 2 * wait}} {
		t.Run(c.api, func(t *testing.T) {
			w, rdb := redissonOn(t, ctx, "fair", map[string]string{"api": c.api}, 30*time.Second)
			holder := w.Mutex([]string{key}, 1)
			if ok, err := holder.TryLock(ctx, 0, time.Minute); err != nil || !ok {
				t.Fatalf("holder: %v, %v", ok, err)
			}
			queued := func(n int64) {
				t.Helper()
				for rdb.ZCard(ctx, timeouts).Val() != n {
					if ctx.Err() != nil {
						t.Fatalf("the queue never reached %d waiters", n)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			gaveUp := make(chan error, 1)
			go func() {
				ok, err := w.Mutex([]string{key}, 2).TryLock(ctx, wait, time.Minute)
				if ok {
					err = errors.New("granted")
				}
				gaveUp <- err
			}()
			queued(1)
			go w.Mutex([]string{key}, 3).TryLock(ctx, time.Minute, time.Minute)
			queued(2)
			follower := rdb.ZRange(ctx, timeouts, 1, 1).Val()[0]
			before := rdb.ZScore(ctx, timeouts, follower).Val()
			if err := <-gaveUp; err != nil {
				t.Fatalf("the first waiter: %v, want a refusal after its wait", err)
			}
			queued(1)
			after := rdb.ZScore(ctx, timeouts, follower).Val()
			if d := time.Duration(before-after) * time.Millisecond; d < c.min || d > c.max {
				t.Fatalf("the follower's deadline moved by %s, want in [%s, %s]", d, c.min, c.max)
			}
			if c.api == "tryLockAsync" {
				// The follower, still waiting, is purged by the next attempt of anyone: it loses its place.
				if ok, _ := w.Mutex([]string{key}, 4).TryLock(ctx, 0, time.Minute); ok {
					t.Fatal("a newcomer was granted a held lock")
				}
				if err := rdb.ZScore(ctx, timeouts, follower).Err(); err != redis.Nil {
					t.Fatalf("the follower is still queued (%v): it was not purged", err)
				}
			}
			if err := holder.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// H8: the answers of Redisson 4.7.0 that an oracle must not read the obvious way. Each key is removed
// straight on the node, as an expiry or a failover removes it.
func TestFindingH8OracleTraps(t *testing.T) {
	t.Parallel() // its own node and workers
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A fair unlock of a lock that is gone succeeds: no IllegalMonitorStateException, unlike RLock.
	t.Run("fair-unlock-of-missing-key", func(t *testing.T) {
		w, rdb := redissonOn(t, ctx, "fair", nil, 30*time.Second)
		m := w.Mutex([]string{"h8-fair"}, 1)
		if ok, err := m.TryLock(ctx, time.Second, time.Minute); err != nil || !ok {
			t.Fatalf("acquire: %v, %v", ok, err)
		}
		rdb.Del(ctx, "h8-fair")
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("fair unlock of a missing lock: %v, want success", err)
		}
	})
	// A read unlock whose hash (and its mode) is gone says not held since 3.44.0: no trap on 4.7.0.
	t.Run("read-unlock-of-missing-key", func(t *testing.T) {
		w, rdb := redissonOn(t, ctx, "rwlock", nil, 30*time.Second)
		m := w.ReadLock("h8-rw", 1)
		if ok, err := m.TryLock(ctx, time.Second, time.Minute); err != nil || !ok {
			t.Fatalf("acquire: %v, %v", ok, err)
		}
		rdb.Del(ctx, "h8-rw")
		if err := m.Unlock(ctx); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("read unlock of a missing lock: %v, want not held", err)
		}
	})
	// tryRelease of an expired permit answers false, yet gives the permit back.
	t.Run("expired-permit-release", func(t *testing.T) {
		w, _ := redissonOn(t, ctx, "expirable-semaphore", nil, 30*time.Second)
		s := w.Expirable("h8-pes", 1)
		if ok, err := s.TrySetPermits(ctx, 1); err != nil || !ok {
			t.Fatalf("set permits: %v, %v", ok, err)
		}
		id, err := s.TryAcquire(ctx, time.Second, time.Second)
		if err != nil || id == "" {
			t.Fatalf("acquire: %q, %v", id, err)
		}
		time.Sleep(1500 * time.Millisecond) // past the permit's 1 s lease
		if ok, err := s.Release(ctx, id); err != nil || ok {
			t.Fatalf("release of an expired permit: %v, %v; want false", ok, err)
		}
		if n, err := s.Available(ctx); err != nil || n != 1 {
			t.Fatalf("available after it: %d, %v; want 1", n, err)
		}
	})
	// await on a latch whose key is gone returns at once: a missing count reads as zero, an open latch.
	t.Run("latch-await-on-missing-key", func(t *testing.T) {
		w, rdb := redissonOn(t, ctx, "latch", nil, 30*time.Second)
		l := w.Latch("h8-latch", 1)
		if ok, err := l.TrySetCount(ctx, 1); err != nil || !ok {
			t.Fatalf("set count: %v, %v", ok, err)
		}
		if done, err := l.Await(ctx, 200*time.Millisecond); err != nil || done {
			t.Fatalf("await on a count of 1: %v, %v; want false", done, err)
		}
		rdb.Del(ctx, "h8-latch")
		if done, err := l.Await(ctx, 10*time.Second); err != nil || !done {
			t.Fatalf("await on a missing latch: %v, %v; want true", done, err)
		}
	})
}

// H9: RCountDownLatch.countDown() is sent without WAIT, so it succeeds while no replica has it, and a
// failover then takes it back: the count goes up again after the client was told it went down. (A lock
// acquire in the same state fails with NoSyncedSlavesException, which is the WAIT the latch lacks.)
func TestFindingH9LatchCountDownRevertedByFailover(t *testing.T) {
	t.Parallel() // its own nodes and workers
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w, topo := redissonOnTopology(t, ctx, topology.Sentinel, "latch", nil, 30*time.Second)
	const key = "h9-latch"
	l := w.Latch(key, 1)
	if ok, err := l.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("set count: %v, %v", ok, err)
	}
	primary, err := topo.Primary(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := topo.Replicas(ctx, 0)
	if err != nil || len(replicas) == 0 {
		t.Fatalf("replicas: %v, %v", replicas, err)
	}
	count := func(node string) int64 {
		rdb := redis.NewClient(&redis.Options{Addr: topo.Node(node).Addr(), Password: topo.Password})
		defer rdb.Close()
		n, _ := rdb.Get(ctx, key).Int64()
		return n
	}
	for _, r := range replicas { // the count is on every replica before replication is held
		for count(r) != 2 {
			if ctx.Err() != nil {
				t.Fatalf("replica %s never got the count", r)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := topo.StallReplication(r, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatalf("countDown with no replica reached: %v; want success (no WAIT)", err)
	}
	if n := count(primary); n != 1 {
		t.Fatalf("the primary's count is %d after the countDown, want 1", n)
	}
	// Fail over while the replicas still lack it: Sentinel promotes one without waiting for it to catch up.
	said, err := topo.Promote(ctx, 0, "sentinel")
	if err != nil {
		t.Fatal(err)
	}
	promoted, err := topo.Primary(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		if err := topo.StallReplication(r, false); err != nil {
			t.Fatal(err)
		}
	}
	if promoted == primary {
		t.Fatalf("the failover kept %s as the primary (%s)", primary, said)
	}
	if n := count(promoted); n != 2 {
		t.Fatalf("the new primary %s has count %d: the countDown survived the failover", promoted, n)
	}
}
