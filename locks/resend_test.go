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
	"github.com/lockcheck/lockcheck/topology"
	"github.com/redis/go-redis/v9"
)

// deployment is a lockcheck topology with one client, c1, whose Redisson instance talks to it through
// the client's own proxies, and a recorder.
type deployment struct {
	topo *topology.Topology
	buf  *hookWriter
	rec  *history.Recorder
}

// hookWriter keeps a history and calls on (when set) with each record as it is written, before the
// operation's caller goes on.
type hookWriter struct {
	bytes.Buffer
	on func(line []byte)
}

func (w *hookWriter) Write(p []byte) (int, error) {
	if w.on != nil {
		w.on(p)
	}
	return w.Buffer.Write(p)
}

// healAfterFirstUnknown heals link as soon as a command's outcome is recorded unknown, so that a resend,
// if any, goes through.
func (d *deployment) healAfterFirstUnknown(link interface{ Heal() error }) {
	d.buf.on = func(line []byte) {
		if bytes.Contains(line, []byte(`"type":"unknown"`)) {
			_ = link.Heal()
		}
	}
}

func startDeployment(t *testing.T, kind string) *deployment {
	t.Helper()
	topo, err := topology.Start(context.Background(), topology.Spec{Kind: kind, Clients: []string{"c1"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(topo.Stop)
	buf := &hookWriter{}
	return &deployment{topo: topo, buf: buf, rec: history.NewRecorder(buf, history.NewClock())}
}

// client connects c1 as the runner does for the deployment's kind.
func (d *deployment) client(t *testing.T, cfg locks.RedissonConfig) *locks.Redisson {
	t.Helper()
	s, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	conn := locks.ClientConfig{Addr: d.topo.Addrs("c1")[0], Password: d.topo.Password}
	switch d.topo.Kind {
	case topology.Sentinel:
		conn.Sentinels, conn.MasterName, conn.Dialer = d.topo.SentinelAddrs(), d.topo.MasterName(), d.topo.Dialer("c1")
	case topology.Cluster:
		conn.Cluster, conn.Dialer = d.topo.ClusterAddrs(), d.topo.Dialer("c1")
	}
	r := locks.NewRedisson("c1", conn, cfg, s, d.rec)
	t.Cleanup(func() { r.Close() })
	return r
}

func (d *deployment) history(t *testing.T) *history.History {
	h, err := history.Read(bytes.NewReader(d.buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// sends lists the recorded commands f on key as outcome/resend/attempt.
func sends(h *history.History, key, f string) []string {
	var out []string
	for _, o := range h.Ops {
		if o.Invoke.Key == key && o.Invoke.F == f {
			out = append(out, fmt.Sprintf("%s/%d/%d", o.Outcome(), o.Invoke.Args["resend"], o.Invoke.Args["attempt"]))
		}
	}
	return out
}

// quick is Redisson's defaults with a short timeout and retry delay, so that resends come fast.
func quick() locks.RedissonConfig {
	c := locks.DefaultRedissonConfig()
	c.Timeout = time.Second
	c.RetryDelayMin, c.RetryDelayMax = 20*time.Millisecond, 40*time.Millisecond
	return c
}

// warm runs a lock and a semaphore through a whole cycle, so that their scripts are in the server's cache
// (a NOSCRIPT answer lost with the replies would keep the EVAL fallback from running).
func warm(t *testing.T, r *locks.Redisson, lock, sem string) {
	t.Helper()
	ctx := context.Background()
	l := r.Lock(lock, 1)
	if ok, err := l.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	s := r.Semaphore(sem, 1, false)
	if ok, err := s.TrySetPermits(ctx, 1); !ok || err != nil {
		t.Fatalf("trySetPermits: %v %v", ok, err)
	}
	for i := 0; i < 2; i++ {
		if ok, err := s.TryAcquire(ctx, 1, 0); !ok || err != nil {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		if i == 0 {
			if err := s.Release(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// lostReplies holds lock, then releases it and a semaphore permit while the replies are dropped on c1's
// link to node; the link heals as soon as a send is recorded unknown, so any resend goes through. It
// returns a client of node, for reading what applied.
func lostReplies(t *testing.T, d *deployment, r *locks.Redisson, node, lock, sem string) (*redis.Client, error, error) {
	t.Helper()
	ctx := context.Background()
	warm(t, r, lock, sem)
	l := r.Lock(lock, 1)
	if ok, err := l.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	link := d.topo.Link("c1", node)
	if err := link.DropReplies(); err != nil {
		t.Fatal(err)
	}
	d.healAfterFirstUnknown(link)
	unlockErr := l.Unlock(ctx)
	sm := r.Semaphore(sem, 1, false)
	// A live connection in the pool past the heal (which reset the pooled ones; retries are off).
	for i := 0; ; i++ {
		if _, err := sm.Available(ctx); err == nil {
			break
		} else if i == 5 {
			t.Fatal(err)
		}
	}
	if err := link.DropReplies(); err != nil {
		t.Fatal(err)
	}
	releaseErr := sm.Release(ctx, 1)
	d.buf.on = nil
	if err := link.Heal(); err != nil {
		t.Fatal(err)
	}
	n := d.topo.Node(node)
	return redistest.Client(t, n.Addr(), n.Password()), unlockErr, releaseErr
}

// On a single server Redisson never resends a lock write whose reply did not come (evalWriteNoRetryAsync):
// an unlock and a semaphore release are sent once and end unknown, even when the link is back at once.
// Before, lockcheck repeated the unlock up to 4 times on every topology.
func TestSingleNeverResendsAfterTimeout(t *testing.T) {
	ctx := context.Background()
	d := startDeployment(t, topology.Single)
	admin, unlockErr, releaseErr := lostReplies(t, d, d.client(t, quick()), "n1", "single-lock", "single-sem")
	if unlockErr == nil || locks.Definite(unlockErr) || releaseErr == nil || locks.Definite(releaseErr) {
		t.Fatalf("unlock %v, release %v: want ambiguous errors", unlockErr, releaseErr)
	}
	if admin.Exists(ctx, "single-lock").Val() != 0 {
		t.Fatal("the unlock did not apply")
	}
	if v := admin.Get(ctx, "single-sem").Val(); v != "1" {
		t.Fatalf("permits %q after one release of 1 to 0 permits, want 1", v)
	}
	h := d.history(t)
	if got := fmt.Sprint(sends(h, "single-lock", "release")); got != "[ok/0/0 unknown/0/0]" {
		t.Fatalf("unlock sends %s, want the warm-up's and one unknown", got)
	}
	if got := fmt.Sprint(sends(h, "single-sem", "release")); got != "[ok/0/0 unknown/0/0]" {
		t.Fatalf("release sends %s, want the warm-up's and one unknown", got)
	}
}

// On Sentinel, Redisson's executor resends the script+WAIT batch after a response timeout, up to
// retryAttempts (4) more times, even for its "no retry" writes: a semaphore release whose reply is lost
// applies twice, and each send is its own recorded command. An unlock is resent with the same request id,
// which its latch turns into a replay (attempt 1). Before, lockcheck sent the release once.
func TestSentinelResendsAfterTimeout(t *testing.T) {
	ctx := context.Background()
	d := startDeployment(t, topology.Sentinel)
	r := d.client(t, quick())
	primary, err := d.topo.Primary(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	admin, unlockErr, releaseErr := lostReplies(t, d, r, primary, "sent-lock", "sent-sem")
	if unlockErr != nil || releaseErr != nil {
		t.Fatalf("unlock %v, release %v: the resends answered", unlockErr, releaseErr)
	}
	if admin.Exists(ctx, "sent-lock").Val() != 0 {
		t.Fatal("the unlock did not apply")
	}
	if v := admin.Get(ctx, "sent-sem").Val(); v != "2" {
		t.Fatalf("permits %q: want 2, the release of 1 applied by both sends", v)
	}
	h := d.history(t)
	if got, want := fmt.Sprint(sends(h, "sent-sem", "release")), "[ok/0/0 unknown/0/0 ok/1/0]"; got != want {
		t.Fatalf("release sends %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(sends(h, "sent-lock", "release")), "[ok/0/0 unknown/0/0 ok/0/1]"; got != want {
		t.Fatalf("unlock sends %s, want %s", got, want)
	}
}

// When no replica acknowledges an unlock, Redisson 4.7 repeats it (same request id) up to retryAttempts
// times and then throws, cancelling watchdog renewal once per attempt: the inner unlock of a re-entrant
// hold drops the whole renewal entry, so the outer hold, still in Redis, expires while held. Before,
// lockcheck stopped at the first NoSync, called the unlock done and kept renewing.
func TestUnlockNoSyncRetriesThenFails(t *testing.T) {
	ctx := context.Background()
	f, rep := newReplicated(t)
	cfg := fast()
	cfg.SyncRetries = 2
	cfg.RetryDelayMin, cfg.RetryDelayMax = 20*time.Millisecond, 40*time.Millisecond
	cfg.SlavesSyncTimeout, cfg.Timeout = 2*time.Second, 5*time.Second
	cfg.WatchdogTimeout = 3 * time.Second
	l := f.client(t, "c1", cfg).Lock("nosync", 1)
	for i := 0; i < 2; i++ {
		if ok, err := l.TryLock(ctx, 0, 0); !ok || err != nil {
			t.Fatalf("synced acquire %d: %v %v", i, ok, err)
		}
	}
	if err := rep.Pause(); err != nil {
		t.Fatal(err)
	}
	err := l.Unlock(ctx)
	if err := rep.Resume(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, locks.ErrNoSync) || locks.Definite(err) {
		t.Fatalf("unlock with a stalled replica: %v, want ErrNoSync, ambiguous", err)
	}
	var got []string
	for _, o := range f.history(t).Ops {
		if o.Invoke.F == "release" {
			got = append(got, fmt.Sprintf("%s/%d/nosync=%d/%d", o.Outcome(), o.Invoke.Args["attempt"],
				o.Complete.Args["nosync"], *o.Complete.Value))
		}
	}
	// 0: a partial unlock (the outer hold stays), replayed by the latch on each repeat.
	if want := "[ok/0/nosync=1/0 ok/1/nosync=1/0 ok/2/nosync=1/0]"; fmt.Sprint(got) != want {
		t.Fatalf("unlock sends %v, want %s", got, want)
	}
	deadline := time.Now().Add(3 * cfg.WatchdogTimeout)
	for f.admin.Exists(ctx, "nosync").Val() == 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if f.admin.Exists(ctx, "nosync").Val() == 1 {
		t.Fatal("the outer hold is still renewed: each NoSync attempt must cancel one hold's renewal")
	}
}

// A WAIT that fails after its script ran (here WAIT is renamed away on the primary, which has a replica)
// leaves the script's effect in place: the acquire is unknown, never "did not run". Before, WAIT's Redis
// error made the command definite, recorded as failed although the lock was taken.
func TestWaitErrorAfterScriptIsUnknown(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "rename-command WAIT wait-renamed")
	redistest.StartConfig(t, node.Config{Name: "n2", Password: f.node.Password(),
		Extra: []string{"replicaof 127.0.0.1 " + fmt.Sprint(f.node.Port())}})
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains([]byte(f.admin.Info(ctx, "replication").Val()), []byte("state=online")) {
		if time.Now().After(deadline) {
			t.Fatal("replica never attached")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cfg := fast()
	cfg.SyncRetries = 0
	l := f.client(t, "c1", cfg).Lock("waiterr", 1)
	ok, err := l.TryLock(ctx, 0, 0)
	var werr *locks.WaitError
	if ok || !errors.As(err, &werr) || locks.Definite(err) {
		t.Fatalf("acquire with a failing WAIT: %v %v, want an ambiguous WaitError", ok, err)
	}
	if !f.admin.HExists(ctx, "waiterr", l.Owner()).Val() {
		t.Fatal("the script did not run")
	}
	for _, o := range f.history(t).Ops {
		if o.Invoke.F == "acquire" && o.Outcome() != history.Unknown {
			t.Fatalf("the acquire whose WAIT failed is recorded %s", o.Outcome())
		}
	}
}

// trySetPermits is a synced write in Redisson (syncedEvalWithRetry): with no replica acknowledging, it is
// repeated, the repeat answers 0 (already set), and the call fails with ErrNoSync. Before, the emulation
// sent it without WAIT and reported success.
func TestTrySetPermitsIsSynced(t *testing.T) {
	ctx := context.Background()
	f, rep := newReplicated(t)
	cfg := fast()
	cfg.SyncRetries = 1
	cfg.RetryDelayMin, cfg.RetryDelayMax = 20*time.Millisecond, 40*time.Millisecond
	cfg.SlavesSyncTimeout, cfg.Timeout = 2*time.Second, 5*time.Second
	r := f.client(t, "c1", cfg)
	if err := rep.Pause(); err != nil {
		t.Fatal(err)
	}
	ok, err := r.Semaphore("tsp", 1, false).TrySetPermits(ctx, 3)
	if err := rep.Resume(); err != nil {
		t.Fatal(err)
	}
	if ok || !errors.Is(err, locks.ErrNoSync) {
		t.Fatalf("trySetPermits with a stalled replica: %v %v, want ErrNoSync", ok, err)
	}
	if v := f.admin.Get(ctx, "tsp").Val(); v != "3" {
		t.Fatalf("permits %q, want 3 (the first send applied)", v)
	}
	var got []string
	for _, o := range f.history(t).Ops {
		if o.Invoke.F == "setPermits" {
			got = append(got, fmt.Sprintf("%s/%d/nosync=%d", o.Outcome(), o.Invoke.Args["retry"], o.Complete.Args["nosync"]))
		}
	}
	if want := "[ok/0/nosync=1 fail/1/nosync=0]"; fmt.Sprint(got) != want {
		t.Fatalf("setPermits sends %v, want %s", got, want)
	}
}

// RFencedLock.tryLockAndGetToken neither undoes nor repeats a grant no replica acknowledged: the NoSync
// goes to the caller, the lock stays held on the primary with its token drawn once, and no watchdog
// renews it. Before, the emulation ran RLock's compensation (an unlock) and retries around it.
func TestFencedNoSyncIsNotUndone(t *testing.T) {
	ctx := context.Background()
	f, rep := newReplicated(t)
	cfg := fast()
	cfg.SyncRetries = 2
	cfg.RetryDelayMin, cfg.RetryDelayMax = 20*time.Millisecond, 40*time.Millisecond
	cfg.SlavesSyncTimeout, cfg.Timeout = 2*time.Second, 5*time.Second
	l := f.client(t, "c1", cfg).FencedLock("fnc", 1, false)
	if err := rep.Pause(); err != nil {
		t.Fatal(err)
	}
	ok, err := l.TryLock(ctx, 0, 0)
	if err := rep.Resume(); err != nil {
		t.Fatal(err)
	}
	if ok || !errors.Is(err, locks.ErrNoSync) {
		t.Fatalf("fenced acquire with a stalled replica: %v %v, want ErrNoSync", ok, err)
	}
	if !f.admin.HExists(ctx, "fnc", l.Owner()).Val() {
		t.Fatal("the unacknowledged grant was undone")
	}
	if v := f.admin.Get(ctx, "redisson_lock_token:{fnc}").Val(); v != "1" {
		t.Fatalf("token %q, want 1: one grant", v)
	}
	var fs []string
	for _, o := range f.history(t).Ops {
		fs = append(fs, o.Invoke.F+"/"+string(o.Outcome()))
	}
	if want := "[acquire/ok]"; fmt.Sprint(fs) != want {
		t.Fatalf("recorded %v, want %s", fs, want)
	}
}

// When the first attempt of a fair tryLock gets no reply, Redisson throws without acquireFailed, so a
// waiter the attempt did enqueue stays in the queue (a ghost until its deadline). Before, the emulation
// dequeued it.
func TestFairFirstAttemptErrorLeavesWaiterQueued(t *testing.T) {
	ctx := context.Background()
	d := startDeployment(t, topology.Single)
	r := d.client(t, quick())
	holder, waiter := r.FairLock("fq", 1, false), r.FairLock("fq", 2, false)
	if ok, err := holder.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("holder: %v %v", ok, err)
	}
	link := d.topo.Link("c1", "n1")
	if err := link.DropReplies(); err != nil {
		t.Fatal(err)
	}
	d.healAfterFirstUnknown(link)
	ok, err := waiter.TryLock(ctx, 5*time.Second, 0)
	d.buf.on = nil
	if err := link.Heal(); err != nil {
		t.Fatal(err)
	}
	if ok || err == nil || locks.Definite(err) {
		t.Fatalf("waiter: %v %v, want an ambiguous error", ok, err)
	}
	n1 := d.topo.Node("n1")
	admin := redistest.Client(t, n1.Addr(), n1.Password())
	queue := admin.LRange(ctx, "redisson_lock_queue:{fq}", 0, -1).Val()
	if len(queue) != 1 || queue[0] != waiter.Owner() {
		t.Fatalf("queue %q, want the waiter still in it", queue)
	}
	for _, o := range d.history(t).Ops {
		if o.Invoke.F == "dequeue" {
			t.Fatal("the waiter was dequeued after its first attempt failed")
		}
	}
}
