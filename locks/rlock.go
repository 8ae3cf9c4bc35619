package locks

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/redis/go-redis/v9"
)

// RLock is Redisson's reentrant lock: a hash <name> whose field <uuid>:<thread> counts re-entries, with a
// lease that the client's watchdog renews when no lease was given.
type RLock struct {
	r      *Redisson
	name   string
	thread int64
	// acquire is the acquire script: "acquire", or "fenced_acquire" (whose grants carry a token).
	acquire string
	token   int64
	// internalLease is what a partial unlock resets the pttl to: the last explicit lease, or the watchdog
	// timeout (Redisson keeps it per lock object).
	internalLease time.Duration
}

var _ Mutex = (*RLock)(nil)

// Key is the lock's Redis key.
func (l *RLock) Key() string { return l.name }

// Owner is Redisson's lock name for this thread: <uuid>:<thread>.
func (l *RLock) Owner() string { return l.r.ID + ":" + strconv.FormatInt(l.thread, 10) }

func (l *RLock) channel() string { return prefixName("redisson_lock__channel", l.name) }

func (l *RLock) op(f string, args map[string]int64) history.Record {
	return history.Record{Client: l.r.name, Node: l.r.node, Thread: l.thread, Key: l.name, Owner: l.Owner(), F: f, Args: args}
}

// TryLock follows RedissonLock.tryLock(wait, lease): one attempt; then, while the wait budget lasts,
// subscribe to the lock's channel and retry on every unlock message or after the holder's pttl.
func (l *RLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.r.waitFor(ctx, l.channel(), wakeLock, wait, func(ctx context.Context) (bool, int64, error) {
		return l.tryAcquire(ctx, lease)
	}, nil)
}

// tryAcquire runs the acquire script once; on ErrNoSync it compensates with an unlock and tries again, as
// Redisson's handleNoSync inside ServiceManager.execute does (RLock; the fenced lock does neither).
func (l *RLock) tryAcquire(ctx context.Context, lease time.Duration) (bool, int64, error) {
	arg := l.r.leaseArg(lease)
	for attempt := 0; ; attempt++ {
		ok, ttl, err := l.r.acquireOnce(l.op("acquire", msArgs("lease_ms", arg)), func() (*int64, bool, error) {
			keys := []string{l.name}
			if l.fenced() {
				keys = append(keys, prefixName("redisson_lock_token", l.name))
			}
			return l.parseAcquire(l.r.eval(ctx, l.acquire, keys, arg.Milliseconds(), l.Owner()))
		}, func() {
			if !l.fenced() {
				_, _, _ = l.unlockInner(ctx, newRequestID(), 0)
			}
		}, func() {
			l.r.losses.Arm(l.name, l.Owner(), lease <= 0) // only the watchdog tells a holder of a loss
			if lease > 0 {
				l.internalLease = lease
			} else {
				l.r.wd.add(l.name, l.Owner())
			}
		})
		// RedissonFencedLock's token path (tryLockAndGetToken) has neither handleNoSync nor execute: a NoSync
		// goes to the caller and the grant stays on the primary, unrenewed, until its lease runs out.
		if l.fenced() || !errors.Is(err, ErrNoSync) || attempt >= l.r.cfg.SyncRetries || !sleepCtx(ctx, l.r.retryDelay()) {
			return ok, ttl, err
		}
	}
}

func (l *RLock) fenced() bool { return l.acquire != "acquire" }

// parseAcquire reads the acquire script's reply: nil (granted) or the holder's pttl; for the fenced lock
// {-1, token} or {pttl, -1}. A granted fenced acquire is recorded with its token as value.
func (l *RLock) parseAcquire(res any, err error) (*int64, bool, error) {
	if l.fenced() {
		arr, ok := res.([]any)
		if !ok || len(arr) != 2 {
			if err == nil {
				err = errors.New("acquire: unexpected reply")
			}
			return nil, false, err
		}
		ttl, _ := arr[0].(int64)
		token, _ := arr[1].(int64)
		if ttl == -1 {
			l.token = token
			return history.Int64(token), false, err
		}
		return history.Int64(ttl), true, err
	}
	return ttlReply(res, err)
}

// Token is the fencing token of the last grant (fenced lock only).
func (l *RLock) Token() int64 { return l.token }

// Unlock releases one hold as RedissonBaseLock.unlockAsync does (see unlockRequest): one request id, whose
// unlock latch makes every repeat answer what the first send did instead of unlocking twice.
func (l *RLock) Unlock(ctx context.Context) error {
	res, err := l.r.unlockRequest(ctx, l.unlockInner, func() { l.r.wd.remove(l.name, l.Owner()) })
	l.internalLease = l.r.leaseAfterUnlock(l.internalLease, res, err)
	return err
}

func (l *RLock) latchKey(id string) string { return latchKey(l.name, id) }

func latchKey(name, id string) string { return prefixName("redisson_unlock_latch", name) + ":" + id }

// unlockInner runs the release script once. nok is true when Redis answered nil (not held).
func (l *RLock) unlockInner(ctx context.Context, id string, attempt int) (res int64, nok bool, err error) {
	l.r.noteLatch(id, l.latchKey(id))
	return l.r.releaseOnce(ctx, l.op("release", msArgs("lease_ms", l.internalLease, "attempt", attempt)), "release",
		[]string{l.name, l.channel(), l.latchKey(id)},
		unlockMessage, l.internalLease.Milliseconds(), l.Owner(), l.r.publish(), l.r.latchMs())
}

// ForceUnlock deletes the lock whoever holds it and wakes every waiter (RedissonLock.forceUnlock). It is
// recorded as "force_release": value 1 (applied) when it deleted a hold, 0 (refused) when the lock was free.
func (l *RLock) ForceUnlock(ctx context.Context) (bool, error) {
	v, _, err := record(l.r.rec, l.op("force_release", nil), func() (*int64, bool, error) {
		res, err := l.r.eval(ctx, "force_release", []string{l.name, l.channel()}, unlockMessage, l.r.publish())
		n, ok := res.(int64)
		if !ok {
			if err == nil {
				err = errors.New("force_release: unexpected reply")
			}
			return nil, false, err
		}
		return history.Int64(n), n == 0, err
	})
	return v != nil && *v == 1, err
}

var (
	_ StateReader   = (*RLock)(nil)
	_ ForceUnlocker = (*RLock)(nil)
	_ ThreadBound   = (*RLock)(nil)
)

// ThreadBound: an RLock's hold is its thread's (<uuid>:<thread>); another thread's unlock is refused.
func (l *RLock) ThreadBound() bool { return true }

// ReadsState and ForcesUnlock: RLock has isHeldByCurrentThread, isLocked and forceUnlock.
func (l *RLock) ReadsState() bool { return true }

// ForcesUnlock: see ReadsState.
func (l *RLock) ForcesUnlock() bool { return true }

// Held is isHeldByCurrentThread: HEXISTS of this thread's field, recorded as "held" (value 1 or 0).
func (l *RLock) Held(ctx context.Context) (bool, error) {
	return l.read(ctx, "held", func(ctx context.Context) (bool, error) {
		return l.r.rdb.HExists(ctx, l.name, l.Owner()).Result()
	})
}

// IsLocked is isLocked: EXISTS of the lock's hash, recorded as "is_locked" (value 1 or 0).
func (l *RLock) IsLocked(ctx context.Context) (bool, error) {
	return l.read(ctx, "is_locked", func(ctx context.Context) (bool, error) {
		n, err := l.r.rdb.Exists(ctx, l.name).Result()
		return n > 0, err
	})
}

// read records one read of the lock's state as an operation whose value is the answer.
func (l *RLock) read(ctx context.Context, f string, run func(context.Context) (bool, error)) (bool, error) {
	var yes bool
	_, _, err := record(l.r.rec, l.op(f, nil), func() (*int64, bool, error) {
		var err error
		if yes, err = run(ctx); err != nil {
			return nil, false, err
		}
		if yes {
			return history.Int64(1), false, nil
		}
		return history.Int64(0), false, nil
	})
	return yes, err
}

// redisNil reports go-redis's nil reply.
func redisNil(err error) bool { return errors.Is(err, redis.Nil) }

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// retryDelay draws Redisson's equal-jitter delay between attempts.
func (r *Redisson) retryDelay() time.Duration {
	lo, hi := r.cfg.RetryDelayMin, max(r.cfg.RetryDelayMax, r.cfg.RetryDelayMin)
	return lo + rand.N(hi-lo+1)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
