package worker

import "github.com/lockcheck/lockcheck/network/wire"

// The wire recorder's tables of the libraries the workers drive (network/wire.RegisterLibrary): which
// script texts, by SHA-1, are which lock commands. Each library's table lives here, beside its worker's
// registration, so that the proxy layer knows no library.
func init() {
	wire.RegisterLibrary(redissonWire)
	wire.RegisterLibrary(redsyncWire)
	wire.RegisterLibrary(naiveWire)
	wire.RegisterLibrary(redislockWire)
}

// redissonWire holds the SHA-1s of the exact texts real Redisson sends for its locks, per version range:
// computed from the Java string literals at every release tag from 3.11.0 to 4.7.0 of
// github.com/redisson/redisson, and for 4.7.0 checked against what Redisson sent through the tap.
var redissonWire = wire.Library{Name: "redisson", Scripts: map[string]wire.Script{
	"9401052d872adfd0179ef8c8e8c028512707629a": {Shape: wire.RLockAcquire, Source: "redisson 3.11.0–3.12.2 tryLockInnerAsync"},
	"dad0f8d619e548e04f21fb48d50be5034df3adae": {Shape: wire.RLockAcquire, Source: "redisson 3.12.3–3.18.1 tryLockInnerAsync"},
	"149c5a8bf18676fd99e9e6e24923bd64d9b62f94": {Shape: wire.RLockAcquire, Source: "redisson 3.19.0–4.7.0 tryLockInnerAsync"},
	// RFencedLock's plain tryLock path counts a token without returning it: an acquire whose value is nil.
	"46b5551ba403d6152a7a6eca122e08728d6c8c66": {Shape: wire.RLockAcquire, Source: "redisson 3.19.0–4.7.0 RFencedLock tryLockInnerAsync (no token)"},
	"49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45": {Shape: wire.FencedAcquire, Source: "redisson 3.19.0–4.7.0 RFencedLock tryLockInnerAsync"},
	"3ffe249c16dee540ac8ab32e39bd408626b9aff7": {Shape: wire.RLockRelease, Source: "redisson 3.11.0–3.21.3 unlockInnerAsync"},
	"778cea8aada230ae060b432fc333adaec85f2f4c": {Shape: wire.RLockRelease, Source: "redisson 3.22.0–3.23.5 unlockInnerAsync"},
	"6866459238a13a701d42f4971f12d9f3a50e2442": {Shape: wire.RLockRelease, Source: "redisson 3.24.0–4.7.0 unlockInnerAsync (latch)"},
	"8e19a1ddbdee9138df9f32a480c57addab4353d1": {Shape: wire.RenewOne, Source: "redisson 3.11.0–3.43.0 renewExpirationAsync"},
	"6a3d31570dc6f4b0bd32bcdc8e75667747c6f635": {Shape: wire.RenewBatch, Source: "redisson 3.44.0–4.7.0 LockTask"},
	// RReadWriteLock. Before 3.44.0 both unlock scripts answer 1 for a lock that no longer exists, which
	// the read-write model cannot tell from a real release: GoneIsOne.
	"6306ba3bf1f563b284bed52d305fce615c6664d9": {Shape: wire.RLockAcquire, Source: "redisson 3.11.0–4.7.0 RedissonWriteLock tryLockInnerAsync"},
	"baa634f6184acc1b8f145e810a0e0e00967a3cbe": {Shape: wire.RLockRelease, Source: "redisson 3.11.0–3.21.3 RedissonWriteLock unlockInnerAsync", GoneIsOne: true},
	"319a1cdf1b56c767a0a9adf2224250bf811f110c": {Shape: wire.RLockRelease, Source: "redisson 3.22.0–3.23.5 RedissonWriteLock unlockInnerAsync", GoneIsOne: true},
	"d29c5559782035515d32e926762830b3304b49be": {Shape: wire.RLockRelease, Source: "redisson 3.24.0–3.43.0 RedissonWriteLock unlockInnerAsync", GoneIsOne: true},
	"f5469be4bfe5232d519471092634b3ee84e5ee6f": {Shape: wire.RWReadRelease, Source: "redisson 3.11.0–3.21.3 RedissonReadLock unlockInnerAsync", GoneIsOne: true},
	"92a54c31a4dc3b46f81e24a6dd5bb7d677c6f882": {Shape: wire.RWReadRelease, Source: "redisson 3.22.0–3.23.5 RedissonReadLock unlockInnerAsync", GoneIsOne: true},
	"5947c0fee6ca25ae094ec1b3e7a2559a9273d29f": {Shape: wire.RWReadRelease, Source: "redisson 3.24.0–3.43.0 RedissonReadLock unlockInnerAsync", GoneIsOne: true},
	"21f5fb0f8ddfa9be5c3e0c9757c128796add75c6": {Shape: wire.RLockRelease, Source: "redisson 3.44.0–4.7.0 RedissonWriteLock unlockInnerAsync"},
	"95553a6ff11176c18e71344e89d116b06fd6f753": {Shape: wire.RWReadAcquire, Source: "redisson 3.11.1–4.7.0 RedissonReadLock tryLockInnerAsync"},
	"6e1b10e11ac0a3ed8e902562ecd32ce01b553039": {Shape: wire.RWReadRelease, Source: "redisson 3.44.0–4.7.0 RedissonReadLock unlockInnerAsync"},
	"6563941ff57e01b8cf61e86907b80686438a2f74": {Shape: wire.RWReadRenewOne, Source: "redisson 3.11.0–3.43.0 RedissonReadLock renewExpirationAsync"},
	"1affef780a01e1406cb1968c62918f618d10d6a3": {Shape: wire.RWReadRenewBatch, Source: "redisson 3.44.0–3.52.0 ReadLockTask"},
	"d6564f42b98d6eece0e940a478ee248f80b8a90a": {Shape: wire.RWReadRenewBatch, Source: "redisson 4.0.0–4.3.1 ReadLockTask"},
	"38d2b478dfbe264ab67c221b7e4be62245f00ba0": {Shape: wire.RWReadRenewOwners, Source: "redisson 4.4.0–4.7.0 ReadLockTask"},
	// RFairLock, from 3.32.0 (earlier texts differ in nil guards and the wait-time arithmetic, not mapped).
	"d20501c26a30adf6fb0fe9883bbbcc497e6157e2": {Shape: wire.FairAcquireNoWait, Source: "redisson 3.32.0–4.7.0 RedissonFairLock tryLockInnerAsync (no wait)"},
	"929defe0321e0a4c943b4244951d3a730b6eaabc": {Shape: wire.FairAcquireWait, Source: "redisson 3.32.0–3.44.0 RedissonFairLock tryLockInnerAsync"},
	"8f6ed299ffd259f0539c20f89253998c0777ea75": {Shape: wire.FairAcquireWait, Source: "redisson 3.45.0–4.7.0 RedissonFairLock tryLockInnerAsync"},
	"d1ddef65ad80886b5d36e023c99930044ddd653a": {Shape: wire.FairDequeue, Source: "redisson 3.11.1–4.7.0 RedissonFairLock acquireFailedAsync"},
	"367f80bd2e300e411fb0936d9b601e5bcb3fd4b6": {Shape: wire.FairRelease, Source: "redisson 3.32.0–4.7.0 RedissonFairLock unlockInnerAsync"},
	// RedissonExpirable.expireAsync, which MultiLock and RedLock call on each member after taking them all with a
	// lease of twice the wait (H6). 4.7.0's text checked through the tap; the one-ARGV text is the older form.
	"3fd750e0b43af99dbd223e5523718f18cded3664": {Shape: wire.ExpireKeys, Source: "redisson 4.7.0 RedissonExpirable expireAsync (PEXPIRE option ARGV[2])"},
	"3adcab8843f28538b47f67950913e2a88189dddd": {Shape: wire.ExpireKeys, Source: "redisson RedissonExpirable expireAsync, older one-ARGV text"},
}, Ignored: map[string]string{
	"444506ed6079843ae4590ff6caf5f677dae3a35f": "redisson MasterSlaveConnectionManager: a check when it connects",
}, Unmapped: []string{
	"RFairLock before Redisson 3.32.0: the texts differ in nil guards and wait-time arithmetic; not mapped",
	"RReadWriteLock read acquire of Redisson 3.11.0 (it may shorten the hash's pttl)",
	"RSemaphore release and RCountDownLatch countDown: real Redisson's scripts reply nothing, and the models need the count after (published inside the script, seen on the wire only by a subscriber); so the semaphore and the latch are not mapped",
	"RPermitExpirableSemaphore (pes_*): not yet mapped; its permit ids are raw bytes on the wire",
	"forceUnlock (force_release): deletes whoever holds the lock; the models have no operation for it",
}}

// redsyncWire: go-redsync/redsync v4, by the SHA-1s it declares beside its scripts. Its acquire is a plain
// SET NX PX: see wire.Table.SetNX.
var redsyncWire = wire.Library{Name: "redsync", Scripts: map[string]wire.Script{
	"e950836ed1e694540c503ef9972b8de518044d3b": {Shape: wire.CompareDelete, Source: "redsync v4 deleteScript"},
	"d75bb8b5bd13532ddedd17762e772346e39b321e": {Shape: wire.CompareExpire, Source: "redsync v4 touchScript"},
}, Unmapped: []string{
	"redsync's touchWithSetNXScript: not mapped",
}}

// naiveWire: lockcheck's reference worker (workers/naive): the safe twin's release, and extend.
var naiveWire = wire.Library{Name: "naive", Scripts: map[string]wire.Script{
	"2e47b373b4dbd63ee966d2eb9fe24ed6a138ad4e": {Shape: wire.CompareDelete, Source: "lockcheck naive worker compareAndDelete"},
	"e95849a1757fe494b3c802dc09b717d0c074eb21": {Shape: wire.CompareExpire, Source: "lockcheck naive worker compareAndExtend"},
}}

// redislockWire: bsm/redislock, whose scripts are not mapped.
var redislockWire = wire.Library{Name: "redislock", Unmapped: []string{
	"bsm/redislock's scripts (multi-key, token prefixes): not mapped",
}}
