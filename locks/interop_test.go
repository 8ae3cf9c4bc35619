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
