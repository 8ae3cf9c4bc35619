package locks_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RPermitExpirableSemaphore permit ids are Redisson's 16 raw bytes in the zset (the caller sees them as
// hex), so a permit the emulation issues is one Redisson's tryRelease(hex) finds, and the other way round.
// Before, the emulation stored the 32 hex characters and neither could release the other's permits.
func TestPermitIDsAreRawBytes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	p := f.client(t, "c1", fast()).PermitExpirableSemaphore("pes", 1, false)
	if ok, err := p.TrySetPermits(ctx, 2); !ok || err != nil {
		t.Fatalf("trySetPermits: %v %v", ok, err)
	}
	id, err := p.TryAcquire(ctx, 0, time.Minute)
	if err != nil || id == "" {
		t.Fatalf("acquire: %q %v", id, err)
	}
	raw, _ := hex.DecodeString(id)
	members := f.admin.ZRange(ctx, "{pes}:timeout", 0, -1).Val()
	if len(members) != 1 || members[0] != string(raw) {
		t.Fatalf("zset members %q, want the 16 raw bytes of %s", members, id)
	}
	// A permit as Java Redisson issues it: the raw bytes of a hex id, one permit taken.
	javaID := "00112233445566778899aabbccddeeff"
	javaRaw, _ := hex.DecodeString(javaID)
	f.admin.ZAdd(ctx, "{pes}:timeout", redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: string(javaRaw)})
	f.admin.Decr(ctx, "pes")
	for _, id := range []string{id, javaID} {
		if ok, err := p.Release(ctx, id); !ok || err != nil {
			t.Fatalf("release %s: %v %v", id, ok, err)
		}
	}
	if n := f.admin.ZCard(ctx, "{pes}:timeout").Val(); n != 0 {
		t.Fatalf("%d permits left in the zset after both releases", n)
	}
	if v := f.admin.Get(ctx, "pes").Val(); v != "2" {
		t.Fatalf("available %q after both releases, want 2", v)
	}
}

// A read unlock finds the other readers' timeout keys under Redisson's key prefix, which for a name with a
// hash tag is the name itself: one reader's unlock leaves the other's hold in place. Before, the emulation
// looked under "{name}", found no other hold and deleted the lock under the remaining reader.
func TestReadUnlockWithHashTaggedName(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	const name = "map{orders}:lock"
	a := f.client(t, "c1", fast()).ReadLock(name, 1, false)
	b := f.client(t, "c2", fast()).ReadLock(name, 1, false)
	for _, l := range []interface {
		TryLock(context.Context, time.Duration, time.Duration) (bool, error)
	}{a, b} {
		if ok, err := l.TryLock(ctx, 0, time.Minute); !ok || err != nil {
			t.Fatalf("read acquire: %v %v", ok, err)
		}
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !f.admin.HExists(ctx, name, b.Owner()).Val() {
		t.Fatal("the other reader's hold is gone after one reader's unlock")
	}
	if pttl := f.admin.PTTL(ctx, name).Val(); pttl < 30*time.Second {
		t.Fatalf("pttl %v after one reader's unlock, want the remaining reader's minute", pttl)
	}
}

// Redisson 4.7's read unlock cancels the same thread's write-lock renewal too (RedissonReadLock calls its
// parent's cancelExpirationRenewal): a writer that takes and releases a read hold loses its watchdog, and
// its write lock expires while held. Before, the emulation kept the two renewals apart.
func TestReadUnlockCancelsWriteRenewal(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	cfg := fast()
	cfg.WatchdogTimeout = 600 * time.Millisecond
	r := f.client(t, "c1", cfg)
	w, rd := r.WriteLock("wr", 1), r.ReadLock("wr", 1, false)
	if ok, err := w.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("write acquire: %v %v", ok, err)
	}
	if ok, err := rd.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("the writer's read acquire: %v %v", ok, err)
	}
	if err := rd.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * cfg.WatchdogTimeout)
	for f.admin.HExists(ctx, "wr", w.Owner()).Val() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if f.admin.HExists(ctx, "wr", w.Owner()).Val() {
		t.Fatal("the write lock is still renewed after the same thread's read unlock")
	}
}

// Redisson 4.7 resets a lock's internalLockLeaseTime to the watchdog timeout after an unlock that is not
// partial (RedissonLock.cancelExpirationRenewal, the read and write locks' parent), and a partial write
// unlock (the `counter > 0` branch) pexpires the hash to it. So a write lock taken once with a short lease,
// released, then taken twice under the watchdog, keeps the watchdog's lease after one unlock. Before, the
// emulation kept the old short lease and the partial unlock cut the holder's lock to it.
func TestPartialWriteUnlockAfterAShortLease(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	cfg := fast()
	cfg.WatchdogTimeout = 20 * time.Second
	w := f.client(t, "c1", cfg).WriteLock("wl", 1)
	if ok, err := w.TryLock(ctx, 0, 300*time.Millisecond); !ok || err != nil {
		t.Fatalf("write acquire with a lease: %v %v", ok, err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // taken and re-entered under the watchdog
		if ok, err := w.TryLock(ctx, 0, 0); !ok || err != nil {
			t.Fatalf("write acquire %d under the watchdog: %v %v", i+1, ok, err)
		}
	}
	if err := w.Unlock(ctx); err != nil { // partial: one hold left
		t.Fatal(err)
	}
	if !f.admin.HExists(ctx, "wl", w.Owner()).Val() {
		t.Fatal("the write lock is gone after a partial unlock")
	}
	if pttl := f.admin.PTTL(ctx, "wl").Val(); pttl < 10*time.Second {
		t.Fatalf("pttl %v after the partial unlock, want the watchdog's %v (the earlier 300ms lease was kept)", pttl, cfg.WatchdogTimeout)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
