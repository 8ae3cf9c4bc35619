package locks_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node"
	"github.com/redis/go-redis/v9"
)

type fixture struct {
	node  *node.Node
	admin *redis.Client
	buf   *hookWriter
	rec   *history.Recorder
}

func newFixture(t *testing.T, extra ...string) *fixture {
	n := redistest.Start(t, node.PersistNone, extra...)
	buf := &hookWriter{}
	return &fixture{node: n, admin: redistest.Client(t, n.Addr(), n.Password()), buf: buf,
		rec: history.NewRecorder(buf, history.NewClock())}
}

func (f *fixture) client(t *testing.T, name string, cfg locks.RedissonConfig) *locks.Redisson {
	s, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	r := locks.NewRedisson(name, locks.ClientConfig{Addr: f.node.Addr(), Password: f.node.Password()}, cfg, s, f.rec)
	t.Cleanup(func() { r.Close() })
	return r
}

func (f *fixture) history(t *testing.T) *history.History {
	h, err := history.Read(bytes.NewReader(f.buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func fast() locks.RedissonConfig {
	c := locks.DefaultRedissonConfig()
	c.Timeout = time.Second
	return c
}

func TestRLockLayoutAndReentry(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := f.client(t, "c1", fast()).Lock("orders", 7)
	if ok, err := a.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("first acquire: %v %v", ok, err)
	}
	if ok, err := a.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("re-entry: %v %v", ok, err)
	}
	// Redisson's layout: hash <name>, field <uuid>:<thread>, value the hold count.
	if n, err := f.admin.HGet(ctx, "orders", a.Owner()).Int(); err != nil || n != 2 {
		t.Fatalf("hold count %d, %v", n, err)
	}
	if pttl := f.admin.PTTL(ctx, "orders").Val(); pttl <= 25*time.Second {
		t.Fatalf("pttl %v, want the 30s watchdog lease", pttl)
	}
	b := f.client(t, "c2", fast()).Lock("orders", 7)
	if ok, err := b.TryLock(ctx, 0, 0); ok || err != nil {
		t.Fatalf("another owner got a held lock: %v %v", ok, err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("unlock by a non-owner: %v", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.admin.HGet(ctx, "orders", a.Owner()).Val(); n != "1" {
		t.Fatalf("after one unlock the count is %q", n)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if f.admin.Exists(ctx, "orders").Val() != 0 {
		t.Fatal("the lock still exists after the last unlock")
	}
	h := f.history(t)
	counts := map[string]int{}
	for _, o := range h.Ops {
		counts[o.Invoke.F+"/"+string(o.Outcome())]++
	}
	want := map[string]int{"acquire/ok": 2, "acquire/fail": 1, "release/ok": 2, "release/fail": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("recorded %v, want %v", counts, want)
	}
}

func TestWatchdogRenewsOnlyWithoutLease(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	cfg := fast()
	cfg.WatchdogTimeout = 300 * time.Millisecond
	r := f.client(t, "c1", cfg)
	wd := r.Lock("wd", 1)
	leased := r.Lock("leased", 1)
	if ok, _ := wd.TryLock(ctx, 0, 0); !ok {
		t.Fatal("acquire wd")
	}
	if ok, _ := leased.TryLock(ctx, 0, 300*time.Millisecond); !ok {
		t.Fatal("acquire leased")
	}
	// Poll until the fixed lease has run out; the watchdog's lock, with the same lease length, must outlive it.
	deadline := time.Now().Add(5 * time.Second)
	for f.admin.Exists(ctx, "leased").Val() == 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if f.admin.Exists(ctx, "leased").Val() == 1 {
		t.Fatal("a lock with a fixed lease was renewed")
	}
	time.Sleep(700 * time.Millisecond) // more than two watchdog timeouts past the first lease
	if f.admin.HExists(ctx, "wd", wd.Owner()).Val() != true {
		t.Fatal("the watchdog did not keep the lock")
	}
	if err := wd.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	renewals := 0
	for _, o := range f.history(t).Ops {
		if o.Invoke.F == "renew" && o.Outcome() == history.Ok {
			renewals++
		}
	}
	if renewals < 2 {
		t.Fatalf("%d renewals recorded", renewals)
	}
}

// A waiter wakes on the holder's unlock message, long before the holder's 30 s lease would have let it in.
func TestWaiterWakesOnUnlockMessage(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := f.client(t, "c1", fast()).Lock("pub", 1)
	b := f.client(t, "c2", fast()).Lock("pub", 1)
	if ok, _ := a.TryLock(ctx, 0, 30*time.Second); !ok {
		t.Fatal("acquire")
	}
	got := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		ok, err := b.TryLock(ctx, 20*time.Second, 0)
		if !ok || err != nil {
			got <- -1
			return
		}
		got <- time.Since(start)
	}()
	time.Sleep(200 * time.Millisecond)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d < 0 || d > 10*time.Second {
		t.Fatalf("waiter took %v (negative: did not get it)", d)
	}
}

// A repeated unlock request (same id) replays the first answer instead of releasing a second hold.
func TestUnlockLatchMakesRetriesIdempotent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	s, _ := locks.LoadScripts("redisson", "")
	r := f.client(t, "c1", fast())
	l := r.Lock("latch", 1)
	l.TryLock(ctx, 0, 0)
	l.TryLock(ctx, 0, 0)
	keys := []string{"latch", "redisson_lock__channel:{latch}", "redisson_unlock_latch:{latch}:req1"}
	args := []any{"0", 30000, l.Owner(), "publish", 10000}
	for i := 0; i < 2; i++ {
		if v, err := s.Get("release").Run(ctx, f.admin, keys, args...).Int(); err != nil || v != 0 {
			t.Fatalf("attempt %d: %d %v", i, v, err)
		}
	}
	if n := f.admin.HGet(ctx, "latch", l.Owner()).Val(); n != "1" {
		t.Fatalf("hold count %q after a repeated request, want 1", n)
	}
}

// With a replica, each lock write is followed by WAIT; when no replica acknowledges, the acquire is undone
// and reported as ErrNoSync.
func TestReplicaSyncAndNoSync(t *testing.T) {
	ctx := context.Background()
	f, rep := newReplicated(t)
	cfg := fast()
	cfg.SyncRetries = 0
	// Long enough for a loaded machine's replica to acknowledge (the stalled case below waits all of it),
	// and within the command timeout.
	cfg.SlavesSyncTimeout, cfg.Timeout = 2*time.Second, 5*time.Second
	l := f.client(t, "c1", cfg).Lock("synced", 1)
	if ok, err := l.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("synced acquire: %v %v", ok, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rep.Pause(); err != nil {
		t.Fatal(err)
	}
	defer rep.Resume()
	ok, err := l.TryLock(ctx, 0, 0)
	if ok || !errors.Is(err, locks.ErrNoSync) {
		t.Fatalf("acquire with a stalled replica: %v %v, want ErrNoSync", ok, err)
	}
	if f.admin.Exists(ctx, "synced").Val() != 0 {
		t.Fatal("the unsynced acquire was not compensated")
	}
	// The history shows the acquire that applied on the primary and the release that undid it.
	var fs []string
	for _, o := range f.history(t).Ops {
		fs = append(fs, o.Invoke.F+"/"+string(o.Outcome()))
	}
	want := "[acquire/ok release/ok acquire/ok release/ok]"
	if fmt.Sprint(fs) != want {
		t.Fatalf("recorded %v, want %s", fs, want)
	}
}

// newReplicated is a fixture whose node has one replica, attached and acknowledging writes.
func newReplicated(t *testing.T) (*fixture, *node.Node) {
	ctx := context.Background()
	f := newFixture(t)
	rep := redistest.StartConfig(t, node.Config{Name: "n2", Password: f.node.Password(),
		Extra: []string{"replicaof 127.0.0.1 " + fmt.Sprint(f.node.Port())}})
	// Wait for the replica to attach and acknowledge a write, as Redisson's cached connected_slaves would
	// see it (online alone is not enough: a replica still loading its first sync answers no WAIT).
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains([]byte(f.admin.Info(ctx, "replication").Val()), []byte("state=online")) ||
		f.admin.Do(ctx, "WAIT", 1, 1000).Val() != int64(1) {
		if time.Now().After(deadline) {
			t.Fatal("replica never attached")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f, rep
}

func TestNaiveDeletesAnotherOwnersLock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	conn := locks.ClientConfig{Addr: f.node.Addr(), Password: f.node.Password(), Timeout: time.Second}
	ca := locks.NewNaiveClient("c1", "a", conn, 100*time.Millisecond, f.rec)
	cb := locks.NewNaiveClient("c2", "b", conn, time.Second, f.rec)
	defer ca.Close()
	defer cb.Close()
	a, b := ca.Lock("n", 1), cb.Lock("n", 1)
	if ok, _ := a.TryLock(ctx, 0, 0); !ok {
		t.Fatal("a")
	}
	if ok, _ := b.TryLock(ctx, time.Second, 0); !ok {
		t.Fatal("b did not get the lock once a's lease ran out")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a's unconditional DEL: %v", err)
	}
	if f.admin.Exists(ctx, "n").Val() != 0 {
		t.Fatal("a did not delete b's lock: the control is not unsafe")
	}
}

func TestScriptOverrides(t *testing.T) {
	dir := t.TempDir()
	if _, err := locks.LoadScripts("nope", ""); err == nil {
		t.Fatal("unknown set accepted")
	}
	if _, err := locks.LoadScripts("redisson", dir); err == nil {
		t.Fatal("an empty override directory accepted")
	}
	write(t, dir+"/bogus.lua", "return 1")
	if _, err := locks.LoadScripts("redisson", dir); err == nil {
		t.Fatal("an override naming no script accepted")
	}
}

// A paused client's watchdog stops renewing: the lease runs out while the client is frozen, and the
// client carries on when resumed.
func TestPausedClientStopsRenewing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	cfg := fast()
	cfg.WatchdogTimeout = 300 * time.Millisecond
	cfg.Gate = locks.NewGate()
	l := f.client(t, "c1", cfg).Lock("paused", 1)
	if ok, _ := l.TryLock(ctx, 0, 0); !ok {
		t.Fatal("acquire")
	}
	cfg.Gate.Pause()
	deadline := time.Now().Add(5 * time.Second)
	for f.admin.Exists(ctx, "paused").Val() == 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if f.admin.Exists(ctx, "paused").Val() == 1 {
		t.Fatal("the lease was renewed while the client was paused")
	}
	cfg.Gate.Resume()
	if err := l.Unlock(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("unlock after the lease ran out: %v, want ErrNotHeld", err)
	}
}

// An armed gate freezes the client at its next grant, and Resume lets it go.
func TestGateArm(t *testing.T) {
	g := locks.NewGate()
	if g.Granted() {
		t.Fatal("an unarmed gate froze")
	}
	g.Arm()
	if !g.Granted() || !g.Paused() {
		t.Fatal("an armed gate did not freeze at the grant")
	}
	done := make(chan struct{})
	go func() { g.Pass(); close(done) }()
	g.Resume()
	<-done
	g.SetClockOffset(time.Hour)
	if d := time.Until(g.Now()); d < 59*time.Minute {
		t.Fatalf("clock offset not applied: %v", d)
	}
}

// MultiLock.Lock blocks in rounds of locks × 1500 ms until every member is free.
func TestMultiLockBlocksUntilAllFree(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a, b := f.client(t, "c1", fast()), f.client(t, "c2", fast())
	holder := a.Lock("m2", 1)
	if ok, _ := holder.TryLock(ctx, 0, 0); !ok {
		t.Fatal("holder")
	}
	m := locks.NewMultiLock(b.Lock("m1", 1), b.Lock("m2", 1))
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx, 0) }()
	time.Sleep(200 * time.Millisecond)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"m1", "m2"} {
		if f.admin.Exists(ctx, k).Val() != 1 {
			t.Fatalf("%s not held after Lock returned", k)
		}
	}
	if ok, _ := a.Lock("m1", 1).TryLock(ctx, 0, 0); ok {
		t.Fatal("another client got a member of a held multi lock")
	}
}

// Redisson's watchdog abandons a renewal tick at the first chunk that fails: with chunks of one lock, a
// failing renewal of "wa" (its key was replaced by a string, so the script errs) stops the renewal of "wb"
// after it, which then expires while held. Before, lockcheck renewed every chunk whatever the others did.
func TestWatchdogTickStopsAtFirstFailingChunk(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	cfg := fast()
	cfg.WatchdogTimeout, cfg.WatchdogBatch = 600*time.Millisecond, 1
	r := f.client(t, "c1", cfg)
	for _, k := range []string{"wa", "wb"} {
		if ok, err := r.Lock(k, 1).TryLock(ctx, 0, 0); !ok || err != nil {
			t.Fatalf("acquire %s: %v %v", k, ok, err)
		}
	}
	if err := f.admin.Set(ctx, "wa", "not a lock", 0).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * cfg.WatchdogTimeout)
	for f.admin.Exists(ctx, "wb").Val() == 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if f.admin.Exists(ctx, "wb").Val() == 1 {
		t.Fatal("wb was renewed although the chunk before it failed")
	}
	failed := false
	for _, o := range f.history(t).Ops {
		if o.Invoke.F == "renew" && o.Invoke.Key == "wa" && o.Outcome() == history.Fail {
			failed = true
		}
	}
	if !failed {
		t.Fatal("the failing renewal of wa is not recorded")
	}
}

// RedissonMultiLock.unlock is forEach(Lock::unlock): it stops at the first member whose unlock throws,
// whatever the exception, and the members after it stay held. Before, only "not held" stopped it.
func TestMultiLockUnlockStopsAtFirstError(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.client(t, "c1", fast())
	m := locks.NewMultiLock(r.Lock("mu1", 1), r.Lock("mu2", 1))
	if ok, err := m.TryLock(ctx, 0, time.Minute); !ok || err != nil {
		t.Fatalf("multi acquire: %v %v", ok, err)
	}
	if err := f.admin.Set(ctx, "mu1", "not a lock", 0).Err(); err != nil { // its unlock script errs
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err == nil {
		t.Fatal("the multi unlock did not fail with its first member")
	}
	if f.admin.Exists(ctx, "mu2").Val() != 1 {
		t.Fatal("the member after the failing one was unlocked")
	}
}
