package locks

import (
	"context"
	"errors"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The pieces every Redisson primitive shares: the wait loop around an attempt, one recorded acquire, one
// recorded release.

// waitFor is Redisson's tryLock shape: one attempt; then, while wait lasts, subscribe to channel, and once
// Redis confirmed the subscription try again at once (a release between the first attempt and the
// subscription sent no message this waiter could hear), then again on each wake-up or after the returned
// ttl (ms, -1 for none). Time running out during a wait ends the call without a last attempt, as in
// Redisson. ctx ends waiting; a command in flight always finishes. giveUp (may be nil) is Redisson's
// acquireFailed: it runs when the wait ends without the lock, the subscription fails, or an attempt inside
// the loop gets no reply; not when the first attempt or a later one fails with an answer.
func (r *Redisson) waitFor(ctx context.Context, channel string, kind wakeKind, wait time.Duration,
	attempt func(context.Context) (bool, int64, error), giveUp func(context.Context)) (bool, error) {
	// Redisson spends the wait by System.currentTimeMillis() differences: the client's wall clock, so a
	// clock that jumps ahead (client-clock) spends it at once, and one that jumps back lengthens it.
	deadline := r.now().Add(wait)
	left := func() time.Duration { return deadline.Sub(r.now()) }
	cmdCtx := context.WithoutCancel(ctx)
	fail := func(err error) (bool, error) {
		if giveUp != nil {
			giveUp(cmdCtx)
		}
		return false, err
	}
	ok, ttl, err := attempt(cmdCtx)
	switch {
	case err != nil:
		return false, err // Redisson's first attempt throws without acquireFailed (a fair waiter stays queued)
	case ok:
		return true, nil
	case left() <= 0:
		return fail(nil)
	}
	e, err := r.subscribe(cmdCtx, channel, kind)
	if err != nil {
		return fail(err) // Redisson gives up when it cannot subscribe in time
	}
	defer r.subs.unsubscribe(e)
	for {
		if ctx.Err() != nil || left() <= 0 {
			return fail(nil)
		}
		if ok, ttl, err = attempt(cmdCtx); err != nil {
			if !resendable(err) { // only a response timeout runs acquireFailed inside Redisson's loop
				return false, err
			}
			return fail(err)
		} else if ok {
			return true, nil
		}
		d := left()
		if d <= 0 {
			return fail(nil)
		}
		if ttl >= 0 && time.Duration(ttl)*time.Millisecond < d {
			d = time.Duration(ttl) * time.Millisecond
		}
		e.wait(ctx, d)
	}
}

// SubscribeError is a wait that could not subscribe to its channel. The call then gives up without the
// lock, as Redisson's does, so it surely failed: its only attempt was refused.
type SubscribeError struct {
	Channel string
	Err     error
}

func (e *SubscribeError) Error() string { return "subscribe " + e.Channel + ": " + e.Err.Error() }
func (e *SubscribeError) Unwrap() error { return e.Err }
func (e *SubscribeError) NoEffect()     {} // outcome.NoEffect: definite whatever it wraps

// subscribe joins channel for a wait, bounded by the command timeout (the subscription holds the client's
// pub/sub lock, so an unanswered dial must not hold it longer).
func (r *Redisson) subscribe(ctx context.Context, channel string, kind wakeKind) (*entry, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	e, err := r.subs.subscribeKind(ctx, channel, kind)
	if err != nil {
		return nil, &SubscribeError{Channel: channel, Err: err}
	}
	return e, nil
}

// ttlReply reads an acquire script's reply: nil when granted, else the holder's pttl (a refusal).
func ttlReply(res any, err error) (*int64, bool, error) {
	if res == nil {
		return nil, false, err
	}
	ttl, ok := res.(int64)
	if !ok {
		return nil, false, errors.New("acquire: unexpected reply")
	}
	return history.Int64(ttl), true, err
}

// acquireOnce records one acquire command (and its resends, see write) and settles it: a grant that no
// replica acknowledged is undone (Redisson's handleNoSync); a refusal returns the holder's pttl; a grant
// runs granted.
func (r *Redisson) acquireOnce(rec history.Record, run func() (*int64, bool, error), undo, granted func()) (bool, int64, error) {
	v, refused, err := r.write(rec, run)
	switch {
	case errors.Is(err, ErrNoSync):
		if !refused {
			undo()
		}
		return false, 0, err
	case err != nil:
		return false, 0, err
	case refused:
		return false, *v, nil
	}
	granted()
	return true, 0, nil
}

// releaseOnce records one release script: nil means not held (recorded as refused, -1), else its number.
func (r *Redisson) releaseOnce(ctx context.Context, rec history.Record, script string, keys []string, args ...any) (int64, bool, error) {
	v, refused, err := record(r.rec, rec, func() (*int64, bool, error) {
		reply, err := r.eval(ctx, script, keys, args...)
		if reply == nil {
			if err == nil {
				return history.Int64(-1), true, nil
			}
			return nil, false, err
		}
		n, _ := reply.(int64)
		return history.Int64(n), false, err
	})
	var res int64
	if v != nil {
		res = *v
	}
	return res, refused, err
}

// latchMs is how long an unlock latch lives: (timeout + retry delay) × attempts, as Redisson computes it.
func (r *Redisson) latchMs() int64 {
	return max((r.cfg.Timeout+1500*time.Millisecond).Milliseconds()*int64(r.cfg.RetryAttempts+1), 1)
}

// leaseArg is the lease an acquire script gets: the caller's, or the watchdog's when none.
func (r *Redisson) leaseArg(lease time.Duration) time.Duration {
	if lease <= 0 {
		return r.cfg.WatchdogTimeout
	}
	return lease
}

// leaseAfterUnlock is the lease a lock's next partial unlock sets after an unlock that answered res, err:
// RedissonLock.cancelExpirationRenewal (the parent of the read and write locks too) resets
// internalLockLeaseTime to the watchdog timeout unless the unlock was partial (false). Without it a hold
// taken under the watchdog after one with a short lease, re-entered and partly released, was cut to the
// old short lease.
func (r *Redisson) leaseAfterUnlock(cur time.Duration, res int64, err error) time.Duration {
	if err != nil || res != 0 {
		return r.cfg.WatchdogTimeout
	}
	return cur
}

// variant names a primitive's script, or its negative control's (<script>_broken.lua).
func variant(script string, broken bool) string {
	if broken {
		return script + "_broken"
	}
	return script
}
