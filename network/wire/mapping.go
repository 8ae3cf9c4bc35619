package wire

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
)

// Shape is how to read one lock script's call and reply as the history's lock commands: which KEYS and
// ARGV positions carry the key, owner and lease, and what the reply means. Scripts whose texts differ
// (another Redisson version, lockcheck's commented copies, a user's override) share a shape when their
// contract is the same.
type Shape int

// The shapes of the scripts the wire recorder maps. Each records exactly what lockcheck's emulation
// records for the same command (F, key, owner, args, value), so the checkers take both unchanged.
const (
	// RLockAcquire: KEYS[1] lock; ARGV[1] lease ms, ARGV[2] owner. nil granted, else the holder's pttl.
	RLockAcquire Shape = iota + 1
	// FencedAcquire: as RLockAcquire, KEYS[2] the token counter; {-1, token} granted, {pttl, -1} refused.
	FencedAcquire
	// RLockRelease: KEYS[1] lock, KEYS[2] channel, KEYS[3] unlock latch (3.24+, absent before); ARGV[2]
	// lease ms, ARGV[3] owner. nil not held, 0 still held, 1 released.
	RLockRelease
	// RenewBatch (3.44+): KEYS[i] lock; ARGV[1] lease ms, ARGV[i+1] owner. One 1 or 0 per key.
	RenewBatch
	// RenewOne (up to 3.43): KEYS[1] lock; ARGV[1] lease ms, ARGV[2] owner. 1 renewed, 0 not ours.
	RenewOne
	// RWReadAcquire: KEYS[1] lock hash; ARGV[1] lease ms, ARGV[2] reader. nil granted, else the pttl. (The
	// write half's acquire and release have RLock's shapes.)
	RWReadAcquire
	// RWReadRelease (3.44+): KEYS[1] lock hash, KEYS[5] unlock latch; ARGV[2] reader. nil not held, 0 others
	// still hold it, 1 released. The lease is not sent (Redisson keeps it client-side): no lease_ms.
	RWReadRelease
	// RWReadRenewOne (up to 3.43): KEYS[1] lock hash; ARGV[1] lease ms, ARGV[2] reader. 1 or 0.
	RWReadRenewOne
	// RWReadRenewBatch (3.44–4.3): KEYS[2i-1] lock hash, KEYS[2i] its prefix; ARGV[1] lease ms, ARGV[i+1]
	// the reader. One 1 or 0 per lock.
	RWReadRenewBatch
	// RWReadRenewOwners (4.4.0+): KEYS[2i-1] lock hash, KEYS[2i] its prefix; ARGV[1] lease ms, then per lock
	// a count n and n readers. One 1 (some reader still held it: all renewed) or 0 (none) per lock. With
	// several readers a 1 does not say which held it: each reader's renewal is then unknown.
	RWReadRenewOwners
	// FairAcquireWait (lock, tryLock with a wait): KEYS[1] lock, KEYS[2] queue, KEYS[3] deadlines; ARGV[1]
	// lease ms, ARGV[2] owner, ARGV[3] the waiter's slot (wait) ms, ARGV[4] client now. nil or a wait ms.
	FairAcquireWait
	// FairAcquireNoWait (tryLock without a wait): ARGV[3] now and ARGV[4] slot swapped; nil or 1.
	FairAcquireNoWait
	// FairDequeue (acquireFailed): KEYS[1] queue, KEYS[2] deadlines; ARGV[1] owner, ARGV[2] slot ms. The
	// lock's name is read back from the queue key (redisson_lock_queue:{name}).
	FairDequeue
	// FairRelease: KEYS[1] lock, KEYS[5] unlock latch; ARGV[2] lease ms, ARGV[3] owner. nil, 0 or 1 (1
	// also for a lock that is gone).
	FairRelease
	// CompareDelete (the Redis docs' release, redsync's deleteScript): KEYS[1] lock; ARGV[1] owner (the
	// value it set). 1 deleted; 0 (someone else's) or -1 (gone) not held.
	CompareDelete
	// CompareExpire (redsync's touchScript): KEYS[1] lock; ARGV[1] owner, ARGV[2] lease ms. 1 or 0.
	CompareExpire
	// ExpireKeys (RedissonExpirable.expireAsync, MultiLock's and RedLock's final lease): KEYS[i] locks; ARGV[1]
	// lease ms. PEXPIRE with no owner check; 1 when some key was set, 0 when none existed.
	ExpireKeys
)

var shapeNames = map[Shape]string{RLockAcquire: "acquire", FencedAcquire: "fenced_acquire",
	RLockRelease: "release", RenewBatch: "renew", RenewOne: "renew-one", RWReadAcquire: "rw_read_acquire",
	RWReadRelease: "rw_read_release", RWReadRenewOne: "rw_read_renew", RWReadRenewBatch: "rw_read_renew-batch", RWReadRenewOwners: "rw_read_renew-owners",
	FairAcquireWait: "fair_acquire", FairAcquireNoWait: "fair_acquire-nowait", FairDequeue: "fair_acquire_failed",
	FairRelease: "fair_release", CompareDelete: "compare-delete", CompareExpire: "compare-expire", ExpireKeys: "expire"}

func (s Shape) String() string { return shapeNames[s] }

// Script is one known script text.
type Script struct {
	Shape  Shape
	Source string // where the text comes from: "redisson 3.19.0–4.7.0", "lockcheck redisson set", ...
	// GoneIsOne is set for unlocks that also answer 1 when the lock no longer exists (read-write unlocks
	// before Redisson 3.44.0): their 1 is recorded unknown, since it may mean released or gone.
	GoneIsOne bool
}

// redissonScripts are the SHA-1s of the exact texts real Redisson sends for its locks, per version range:
// computed from the Java string literals at every release tag from 3.11.0 to 4.7.0 of
// github.com/redisson/redisson, and for 4.7.0 checked against what Redisson sent through the tap.
var redissonScripts = map[string]Script{
	"9401052d872adfd0179ef8c8e8c028512707629a": {Shape: RLockAcquire, Source: "redisson 3.11.0–3.12.2 tryLockInnerAsync"},
	"dad0f8d619e548e04f21fb48d50be5034df3adae": {Shape: RLockAcquire, Source: "redisson 3.12.3–3.18.1 tryLockInnerAsync"},
	"149c5a8bf18676fd99e9e6e24923bd64d9b62f94": {Shape: RLockAcquire, Source: "redisson 3.19.0–4.7.0 tryLockInnerAsync"},
	// RFencedLock's plain tryLock path counts a token without returning it: an acquire whose value is nil.
	"46b5551ba403d6152a7a6eca122e08728d6c8c66": {Shape: RLockAcquire, Source: "redisson 3.19.0–4.7.0 RFencedLock tryLockInnerAsync (no token)"},
	"49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45": {Shape: FencedAcquire, Source: "redisson 3.19.0–4.7.0 RFencedLock tryLockInnerAsync"},
	"3ffe249c16dee540ac8ab32e39bd408626b9aff7": {Shape: RLockRelease, Source: "redisson 3.11.0–3.21.3 unlockInnerAsync"},
	"778cea8aada230ae060b432fc333adaec85f2f4c": {Shape: RLockRelease, Source: "redisson 3.22.0–3.23.5 unlockInnerAsync"},
	"6866459238a13a701d42f4971f12d9f3a50e2442": {Shape: RLockRelease, Source: "redisson 3.24.0–4.7.0 unlockInnerAsync (latch)"},
	"8e19a1ddbdee9138df9f32a480c57addab4353d1": {Shape: RenewOne, Source: "redisson 3.11.0–3.43.0 renewExpirationAsync"},
	"6a3d31570dc6f4b0bd32bcdc8e75667747c6f635": {Shape: RenewBatch, Source: "redisson 3.44.0–4.7.0 LockTask"},
	// RReadWriteLock. Before 3.44.0 both unlock scripts answer 1 for a lock that no longer exists, which
	// the read-write model cannot tell from a real release: GoneIsOne.
	"6306ba3bf1f563b284bed52d305fce615c6664d9": {Shape: RLockAcquire, Source: "redisson 3.11.0–4.7.0 RedissonWriteLock tryLockInnerAsync"},
	"baa634f6184acc1b8f145e810a0e0e00967a3cbe": {Shape: RLockRelease, Source: "redisson 3.11.0–3.21.3 RedissonWriteLock unlockInnerAsync", GoneIsOne: true},
	"319a1cdf1b56c767a0a9adf2224250bf811f110c": {Shape: RLockRelease, Source: "redisson 3.22.0–3.23.5 RedissonWriteLock unlockInnerAsync", GoneIsOne: true},
	"d29c5559782035515d32e926762830b3304b49be": {Shape: RLockRelease, Source: "redisson 3.24.0–3.43.0 RedissonWriteLock unlockInnerAsync", GoneIsOne: true},
	"f5469be4bfe5232d519471092634b3ee84e5ee6f": {Shape: RWReadRelease, Source: "redisson 3.11.0–3.21.3 RedissonReadLock unlockInnerAsync", GoneIsOne: true},
	"92a54c31a4dc3b46f81e24a6dd5bb7d677c6f882": {Shape: RWReadRelease, Source: "redisson 3.22.0–3.23.5 RedissonReadLock unlockInnerAsync", GoneIsOne: true},
	"5947c0fee6ca25ae094ec1b3e7a2559a9273d29f": {Shape: RWReadRelease, Source: "redisson 3.24.0–3.43.0 RedissonReadLock unlockInnerAsync", GoneIsOne: true},
	"21f5fb0f8ddfa9be5c3e0c9757c128796add75c6": {Shape: RLockRelease, Source: "redisson 3.44.0–4.7.0 RedissonWriteLock unlockInnerAsync"},
	"95553a6ff11176c18e71344e89d116b06fd6f753": {Shape: RWReadAcquire, Source: "redisson 3.11.1–4.7.0 RedissonReadLock tryLockInnerAsync"},
	"6e1b10e11ac0a3ed8e902562ecd32ce01b553039": {Shape: RWReadRelease, Source: "redisson 3.44.0–4.7.0 RedissonReadLock unlockInnerAsync"},
	"6563941ff57e01b8cf61e86907b80686438a2f74": {Shape: RWReadRenewOne, Source: "redisson 3.11.0–3.43.0 RedissonReadLock renewExpirationAsync"},
	"1affef780a01e1406cb1968c62918f618d10d6a3": {Shape: RWReadRenewBatch, Source: "redisson 3.44.0–3.52.0 ReadLockTask"},
	"d6564f42b98d6eece0e940a478ee248f80b8a90a": {Shape: RWReadRenewBatch, Source: "redisson 4.0.0–4.3.1 ReadLockTask"},
	"38d2b478dfbe264ab67c221b7e4be62245f00ba0": {Shape: RWReadRenewOwners, Source: "redisson 4.4.0–4.7.0 ReadLockTask"},
	// RFairLock, from 3.32.0 (earlier texts differ in nil guards and the wait-time arithmetic, not mapped).
	"d20501c26a30adf6fb0fe9883bbbcc497e6157e2": {Shape: FairAcquireNoWait, Source: "redisson 3.32.0–4.7.0 RedissonFairLock tryLockInnerAsync (no wait)"},
	"929defe0321e0a4c943b4244951d3a730b6eaabc": {Shape: FairAcquireWait, Source: "redisson 3.32.0–3.44.0 RedissonFairLock tryLockInnerAsync"},
	"8f6ed299ffd259f0539c20f89253998c0777ea75": {Shape: FairAcquireWait, Source: "redisson 3.45.0–4.7.0 RedissonFairLock tryLockInnerAsync"},
	"d1ddef65ad80886b5d36e023c99930044ddd653a": {Shape: FairDequeue, Source: "redisson 3.11.1–4.7.0 RedissonFairLock acquireFailedAsync"},
	"367f80bd2e300e411fb0936d9b601e5bcb3fd4b6": {Shape: FairRelease, Source: "redisson 3.32.0–4.7.0 RedissonFairLock unlockInnerAsync"},
	// RedissonExpirable.expireAsync, which MultiLock and RedLock call on each member after taking them all with a
	// lease of twice the wait (H6). 4.7.0's text checked through the tap; the one-ARGV text is the older form.
	"3fd750e0b43af99dbd223e5523718f18cded3664": {Shape: ExpireKeys, Source: "redisson 4.7.0 RedissonExpirable expireAsync (PEXPIRE option ARGV[2])"},
	"3adcab8843f28538b47f67950913e2a88189dddd": {Shape: ExpireKeys, Source: "redisson RedissonExpirable expireAsync, older one-ARGV text"},
	// go-redsync/redsync v4 (the SHA-1s it declares beside its scripts). Its acquire is a plain SET NX PX:
	// see Table.SetNX.
	"e950836ed1e694540c503ef9972b8de518044d3b": {Shape: CompareDelete, Source: "redsync v4 deleteScript"},
	"d75bb8b5bd13532ddedd17762e772346e39b321e": {Shape: CompareExpire, Source: "redsync v4 touchScript"},
	// lockcheck's reference worker (workers/naive): the safe twin's release, and extend.
	"2e47b373b4dbd63ee966d2eb9fe24ed6a138ad4e": {Shape: CompareDelete, Source: "lockcheck naive worker compareAndDelete"},
	"e95849a1757fe494b3c802dc09b717d0c074eb21": {Shape: CompareExpire, Source: "lockcheck naive worker compareAndExtend"},
}

// ignoredScripts are scripts real Redisson sends that are no lock command: not counted as unmapped.
var ignoredScripts = map[string]string{
	"444506ed6079843ae4590ff6caf5f677dae3a35f": "redisson MasterSlaveConnectionManager: a check when it connects",
}

// embeddedShapes maps lockcheck's own script names (locks/scripts/<set>/<name>.lua) to their shapes.
var embeddedShapes = map[string]Shape{"acquire": RLockAcquire, "fenced_acquire": FencedAcquire,
	"release": RLockRelease, "renew": RenewBatch, "rw_write_acquire": RLockAcquire,
	"rw_write_release": RLockRelease, "rw_read_acquire": RWReadAcquire, "rw_read_release": RWReadRelease,
	"rw_read_renew": RWReadRenewOne, "fair_acquire": FairAcquireWait, "fair_acquire_failed": FairDequeue,
	"fair_release": FairRelease, "spec_release": CompareDelete}

// Unmapped lists the lock scripts the recorder does not turn into lock commands, and why; their calls are
// counted in Stats.Unmapped and those locks are judged at the API level. Plain commands are never mapped:
// SET NX PX could be an acquire, but the naive lock's DEL names no owner, so its release cannot be.
var Unmapped = []string{
	"RFairLock before Redisson 3.32.0: the texts differ in nil guards and wait-time arithmetic; not mapped",
	"RReadWriteLock read acquire of Redisson 3.11.0 (it may shorten the hash's pttl)",
	"RSemaphore release and RCountDownLatch countDown: real Redisson's scripts reply nothing, and the models need the count after (published inside the script, seen on the wire only by a subscriber); so the semaphore and the latch are not mapped",
	"RPermitExpirableSemaphore (pes_*): not yet mapped; its permit ids are raw bytes on the wire",
	"forceUnlock (force_release): deletes whoever holds the lock; the models have no operation for it",
	"plain DEL of a lock key (the naive lock's release): it names no owner; counted as \"DEL\" in Stats.Unmapped",
	"SET NX without PX/EX, SETNX, SET NX GET: no lease (or not a plain acquire); with Table.SetNX counted as \"SET NX\" in Stats.Unmapped",
	"redsync's touchWithSetNXScript and bsm/redislock's scripts (multi-key, token prefixes): not mapped",
}

// Table maps script SHA-1s to shapes.
type Table struct {
	bySHA map[string]Script
	// SetNX maps a plain SET key value NX PX|EX to an acquire by owner value (replies OK or nil), for
	// locks whose release is a compare-and-delete script (the Redis docs' algorithm, redsync). Off by
	// default: a client that sets keys NX for other reasons would have them judged as locks.
	SetNX bool
}

// NewTable knows real Redisson's RLock and RFencedLock scripts from 3.11.0 to 4.7.0 and lockcheck's own
// redisson script set.
func NewTable() (*Table, error) {
	t := &Table{bySHA: map[string]Script{}}
	for sha, s := range redissonScripts {
		t.bySHA[sha] = s
	}
	s, err := locks.LoadScripts("redisson", "")
	if err != nil {
		return nil, err
	}
	for name, shape := range embeddedShapes {
		t.bySHA[SHA(s.Source(name))] = Script{Shape: shape, Source: "lockcheck redisson set " + name + ".lua"}
	}
	return t, nil
}

// AddScripts maps every script of s that has a known name (e.g. a --scripts override of release.lua) to
// that name's shape, so a replayed or user script is recorded under the same contract.
func (t *Table) AddScripts(s *locks.Scripts) {
	for _, name := range s.Names() {
		base := strings.TrimSuffix(name, "_broken")
		if shape, ok := embeddedShapes[base]; ok {
			t.bySHA[SHA(s.Source(name))] = Script{Shape: shape, Source: s.Set + " " + name + ".lua"}
		}
	}
}

// Ignored says whether a script is known to be no lock command.
func (t *Table) Ignored(sha string) bool {
	_, ok := ignoredScripts[strings.ToLower(sha)]
	return ok
}

// Lookup finds a script by its SHA-1 (lower-case hex).
func (t *Table) Lookup(sha string) (Script, bool) {
	s, ok := t.bySHA[strings.ToLower(sha)]
	return s, ok
}

// SHAs lists the known SHA-1s, sorted.
func (t *Table) SHAs() []string {
	var out []string
	for k := range t.bySHA {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SHA is the SHA-1 Redis names a script text by.
func SHA(text string) string {
	h := sha1.Sum([]byte(text))
	return hex.EncodeToString(h[:])
}

// scriptCall is an EVAL or EVALSHA split into its parts.
type scriptCall struct {
	sha        string
	keys, argv []string
}

// parseScriptCall reads EVAL script|EVALSHA sha numkeys key... arg...; ok false if it is neither or malformed.
func parseScriptCall(c *Command) (scriptCall, bool) {
	var sc scriptCall
	switch c.Name {
	case "eval":
		sc.sha = SHA(string(c.Arg(0)))
	case "evalsha":
		sc.sha = strings.ToLower(string(c.Arg(0)))
	default:
		return sc, false
	}
	n, err := strconv.Atoi(string(c.Arg(1)))
	if err != nil || n < 0 || 2+n > len(c.Args) {
		return sc, false
	}
	for _, k := range c.Args[2 : 2+n] {
		sc.keys = append(sc.keys, string(k))
	}
	for _, a := range c.Args[2+n:] {
		sc.argv = append(sc.argv, string(a))
	}
	return sc, true
}

func (sc scriptCall) arg(i int) string {
	if i < len(sc.argv) {
		return sc.argv[i]
	}
	return ""
}

func (sc scriptCall) key(i int) string {
	if i < len(sc.keys) {
		return sc.keys[i]
	}
	return ""
}

// result is one lock command's outcome as the emulation records it.
type result struct {
	typ   history.Type
	value *int64
	err   string
}

// commands returns the lock commands a call of shape s records (before the reply is known) and how to read
// its reply; attempts gives how many earlier calls with an unlock request id (its latch key) may have run.
func (s Shape) commands(sc scriptCall, attempts func(latch string) int64) ([]history.Record, func(Value) []result) {
	ms := func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }
	op := func(f, key, owner string, args map[string]int64) history.Record {
		return history.Record{Thread: ownerThread(owner), Key: key, Owner: owner, F: f, Args: args}
	}
	attempt := func() int64 {
		if l := s.latch(sc); l != "" {
			return attempts(l)
		}
		return 0 // an unlock without a latch (before Redisson 3.24.0) is never a repeat
	}
	switch s {
	case RLockAcquire, FencedAcquire:
		recs := []history.Record{op("acquire", sc.key(0), sc.arg(1), map[string]int64{"lease_ms": ms(sc.arg(0))})}
		return recs, func(v Value) []result { return []result{acquireResult(s, v)} }
	case RLockRelease:
		recs := []history.Record{op("release", sc.key(0), sc.arg(2), map[string]int64{"lease_ms": ms(sc.arg(1)), "attempt": attempt()})}
		return recs, func(v Value) []result { return []result{releaseResult(v)} }
	case RenewOne, RWReadRenewOne:
		args := map[string]int64{"lease_ms": ms(sc.arg(0))}
		if s == RWReadRenewOne {
			args["read"] = 1
		}
		recs := []history.Record{op("renew", sc.key(0), sc.arg(1), args)}
		recs[0].Thread = 0 // the watchdog's, as the emulation records it
		return recs, func(v Value) []result { return []result{renewResult(v)} }
	case RWReadAcquire:
		recs := []history.Record{op("acquire", sc.key(0), sc.arg(1), map[string]int64{"lease_ms": ms(sc.arg(0)), "read": 1})}
		return recs, func(v Value) []result { return []result{acquireResult(RLockAcquire, v)} }
	case RWReadRelease:
		recs := []history.Record{op("release", sc.key(0), sc.arg(1), map[string]int64{"attempt": attempt(), "read": 1})}
		return recs, func(v Value) []result { return []result{releaseResult(v)} }
	case RWReadRenewBatch:
		var recs []history.Record
		for i := 0; 2*i < len(sc.keys); i++ {
			r := op("renew", sc.keys[2*i], sc.arg(i+1), map[string]int64{"lease_ms": ms(sc.arg(0)), "read": 1})
			r.Thread = 0
			recs = append(recs, r)
		}
		return recs, batchResults(len(recs))
	case RWReadRenewOwners:
		var recs []history.Record
		var owners []int // readers per lock, in order
		arg := 1
		for i := 0; 2*i < len(sc.keys); i++ {
			n, err := strconv.Atoi(sc.arg(arg))
			if err != nil || n < 0 || arg+1+n > len(sc.argv) {
				break // malformed: record what was readable
			}
			for k := 0; k < n; k++ {
				r := op("renew", sc.keys[2*i], sc.arg(arg+1+k), map[string]int64{"lease_ms": ms(sc.arg(0)), "read": 1})
				r.Thread = 0
				recs = append(recs, r)
			}
			owners = append(owners, n)
			arg += 1 + n
		}
		return recs, func(v Value) []result {
			out := make([]result, 0, len(recs))
			for i, n := range owners {
				var r result
				switch {
				case v.IsError():
					r = result{typ: history.Fail, err: string(v.Str)}
				case i >= len(v.Elems):
					r = result{typ: history.Unknown, err: "renew: unexpected reply " + v.String()}
				default:
					r = renewResult(v.Elems[i])
					if r.typ == history.Ok && n > 1 {
						r = result{typ: history.Unknown, err: "renewed for one of several readers"}
					}
				}
				for range n {
					out = append(out, r)
				}
			}
			return out
		}
	case FairAcquireWait, FairAcquireNoWait:
		slot := sc.arg(2)
		if s == FairAcquireNoWait {
			slot = sc.arg(3)
		}
		recs := []history.Record{op("acquire", sc.key(0), sc.arg(1), map[string]int64{"lease_ms": ms(sc.arg(0)),
			"slot_ms": ms(slot), "fair": 1})}
		return recs, func(v Value) []result { return []result{acquireResult(RLockAcquire, v)} }
	case FairDequeue:
		recs := []history.Record{op("dequeue", lockOfQueue(sc.key(0)), sc.arg(0), map[string]int64{"slot_ms": ms(sc.arg(1)), "fair": 1})}
		return recs, func(v Value) []result {
			if v.IsError() {
				return []result{{typ: history.Fail, err: string(v.Str)}}
			}
			return []result{{typ: history.Ok}}
		}
	case FairRelease:
		recs := []history.Record{op("release", sc.key(0), sc.arg(2), map[string]int64{"lease_ms": ms(sc.arg(1)), "attempt": attempt(), "fair": 1})}
		return recs, func(v Value) []result { return []result{releaseResult(v)} }
	case CompareDelete:
		recs := []history.Record{op("release", sc.key(0), sc.arg(0), nil)}
		return recs, func(v Value) []result {
			switch {
			case v.IsError():
				return []result{{typ: history.Fail, err: string(v.Str)}}
			case v.Kind == Integer && v.Int == 1:
				return []result{{typ: history.Ok, value: history.Int64(1)}}
			case v.Kind == Integer && (v.Int == 0 || v.Int == -1):
				return []result{{typ: history.Fail, value: history.Int64(-1)}} // not held, as the emulation records it
			}
			return []result{unexpected("release", v)}
		}
	case CompareExpire:
		recs := []history.Record{op("renew", sc.key(0), sc.arg(0), map[string]int64{"lease_ms": ms(sc.arg(1))})}
		return recs, func(v Value) []result { return []result{renewResult(v)} }
	case RenewBatch:
		var recs []history.Record
		for i, k := range sc.keys {
			r := op("renew", k, sc.arg(i+1), map[string]int64{"lease_ms": ms(sc.arg(0))})
			r.Thread = 0
			recs = append(recs, r)
		}
		return recs, batchResults(len(recs))
	case ExpireKeys:
		var recs []history.Record
		for _, k := range sc.keys {
			recs = append(recs, op("expire", k, "", map[string]int64{"lease_ms": ms(sc.arg(0))}))
		}
		return recs, func(v Value) []result { return expireResults(len(recs), v) }
	}
	return nil, nil
}

// expireResults reads expireAsync's reply as the emulation records it (1 set, 0 no such key) for each key:
// with several keys a 1 says only that some key was set, so each is unknown.
func expireResults(n int, v Value) []result {
	var r result
	switch {
	case v.IsError():
		r = result{typ: history.Fail, err: string(v.Str)}
	case v.Kind == Integer && v.Int == 0:
		r = result{typ: history.Fail, value: history.Int64(0)}
	case v.Kind == Integer && v.Int == 1 && n == 1:
		r = result{typ: history.Ok, value: history.Int64(1)}
	case v.Kind == Integer && v.Int == 1:
		r = result{typ: history.Unknown, err: "expire: some of several keys set"}
	default:
		r = unexpected("expire", v)
	}
	out := make([]result, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// batchResults reads a batched renewal's reply: one 1 or 0 per lock.
func batchResults(n int) func(Value) []result {
	return func(v Value) []result {
		out := make([]result, n)
		for i := range out {
			if v.IsError() {
				out[i] = result{typ: history.Fail, err: string(v.Str)}
			} else if i < len(v.Elems) {
				out[i] = renewResult(v.Elems[i])
			} else {
				out[i] = result{typ: history.Unknown, err: "renew: unexpected reply " + v.String()}
			}
		}
		return out
	}
}

// lockOfQueue is the lock a fair-lock queue key belongs to: Redisson's prefixName inverted. (A name that
// itself is wrapped in braces, "{x}", reads back as "x": prefixName gives both the same key.)
func lockOfQueue(queue string) string {
	name := strings.TrimPrefix(queue, "redisson_lock_queue:")
	if strings.HasPrefix(name, "{") && strings.HasSuffix(name, "}") && strings.Count(name, "{") == 1 {
		return name[1 : len(name)-1]
	}
	return name
}

// plainSetNX reads SET key value NX PX ms (or EX s, options in any order) as an acquire by owner value;
// ok false for any other SET.
func plainSetNX(c *Command) (history.Record, bool) {
	if c.Name != "set" || len(c.Args) < 4 {
		return history.Record{}, false
	}
	var nx bool
	var lease int64
	for i := 2; i < len(c.Args); i++ {
		switch strings.ToLower(string(c.Args[i])) {
		case "nx":
			nx = true
		case "px", "ex":
			if i+1 >= len(c.Args) {
				return history.Record{}, false
			}
			n, err := strconv.ParseInt(string(c.Args[i+1]), 10, 64)
			if err != nil || n <= 0 {
				return history.Record{}, false
			}
			if strings.EqualFold(string(c.Args[i]), "ex") {
				n *= 1000
			}
			lease = n
			i++
		default:
			return history.Record{}, false // GET, KEEPTTL, XX, PXAT...: not a plain acquire
		}
	}
	if !nx || lease == 0 {
		return history.Record{}, false
	}
	owner := string(c.Args[1])
	return history.Record{Thread: ownerThread(owner), Key: string(c.Args[0]), Owner: owner, F: "acquire",
		Args: map[string]int64{"lease_ms": lease}}, true
}

// setNXResult reads SET NX's reply: OK granted, nil held by someone (recorded as the emulation does, -2).
func setNXResult(v Value) []result {
	switch {
	case v.IsError():
		return []result{{typ: history.Fail, err: string(v.Str)}}
	case v.IsNil():
		return []result{{typ: history.Fail, value: history.Int64(-2)}}
	case v.Kind == Simple && string(v.Str) == "OK":
		return []result{{typ: history.Ok}}
	}
	return []result{unexpected("acquire", v)}
}

// latch is the unlock latch key of an unlock call (its request id), or "" for a shape or version without.
func (s Shape) latch(sc scriptCall) string {
	switch s {
	case RLockRelease:
		return sc.key(2)
	case RWReadRelease, FairRelease:
		return sc.key(4)
	}
	return ""
}

// ownerThread is the thread of a Redisson owner id <uuid>:<thread>, or a write half's <uuid>:<thread>:write
// (0 if it has none).
func ownerThread(owner string) int64 {
	owner = strings.TrimSuffix(owner, ":write")
	i := strings.LastIndex(owner, ":")
	if i < 0 {
		return 0
	}
	n, _ := strconv.ParseInt(owner[i+1:], 10, 64)
	return n
}

func unexpected(what string, v Value) result {
	return result{typ: history.Unknown, err: fmt.Sprintf("%s: unexpected reply %s", what, v)}
}

func acquireResult(s Shape, v Value) result {
	switch {
	case v.IsError():
		return result{typ: history.Fail, err: string(v.Str)} // an error reply: the script did not run
	case s == RLockAcquire && v.IsNil():
		return result{typ: history.Ok}
	case s == RLockAcquire && v.Kind == Integer:
		return result{typ: history.Fail, value: history.Int64(v.Int)} // refused: the holder's pttl
	case s == FencedAcquire && len(v.Elems) == 2 && v.Elems[0].Kind == Integer && v.Elems[1].Kind == Integer:
		if v.Elems[0].Int == -1 {
			return result{typ: history.Ok, value: history.Int64(v.Elems[1].Int)} // the token
		}
		return result{typ: history.Fail, value: history.Int64(v.Elems[0].Int)}
	}
	return unexpected("acquire", v)
}

func releaseResult(v Value) result {
	switch {
	case v.IsError():
		return result{typ: history.Fail, err: string(v.Str)}
	case v.IsNil():
		return result{typ: history.Fail, value: history.Int64(-1)} // not held
	case v.Kind == Integer:
		return result{typ: history.Ok, value: history.Int64(v.Int)}
	}
	return unexpected("release", v)
}

func renewResult(v Value) result {
	switch {
	case v.IsError():
		return result{typ: history.Fail, err: string(v.Str)}
	case v.Kind == Integer && v.Int == 1:
		return result{typ: history.Ok, value: history.Int64(1)}
	case v.Kind == Integer && v.Int == 0:
		return result{typ: history.Fail, value: history.Int64(0)}
	}
	return unexpected("renew", v)
}
