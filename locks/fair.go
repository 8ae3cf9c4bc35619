package locks

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// FairLock is Redisson's RFairLock: an RLock plus a waiter queue (list) and per-waiter deadlines (zset,
// scored in client epoch milliseconds), one wake-up channel per waiter, and grants in queue order.
type FairLock struct {
	r             *Redisson
	name          string
	thread        int64
	internalLease time.Duration
	acquire       string // "fair_acquire", or the broken one that skips the queue
}

var _ Mutex = (*FairLock)(nil)

// FairLock returns the RFairLock called name for a thread.
func (r *Redisson) FairLock(name string, thread int64, broken bool) *FairLock {
	l := &FairLock{r: r, name: name, thread: thread, internalLease: r.cfg.WatchdogTimeout, acquire: "fair_acquire"}
	if broken {
		l.acquire = "fair_acquire_broken"
	}
	return l
}

// Key is the lock's Redis key.
func (l *FairLock) Key() string { return l.name }

// Owner is <uuid>:<thread>.
func (l *FairLock) Owner() string { return l.r.ID + ":" + strconv.FormatInt(l.thread, 10) }

func (l *FairLock) queue() string    { return prefixName("redisson_lock_queue", l.name) }
func (l *FairLock) timeouts() string { return prefixName("redisson_lock_timeout", l.name) }
func (l *FairLock) channel() string  { return prefixName("redisson_lock__channel", l.name) }

func (l *FairLock) op(f string, args map[string]int64) history.Record {
	args["fair"] = 1
	return history.Record{Client: l.r.name, Node: l.r.node, Thread: l.thread, Key: l.name, Owner: l.Owner(), F: f, Args: args}
}

// now is the client's wall clock in epoch ms: the fair lock's deadlines are client time.
func (l *FairLock) now() int64 { return l.r.now().UnixMilli() }

// TryLock follows RedissonFairLock: the waiter's slot is its wait time (or fairLockWaitTimeout, 5 min);
// a waiter that gives up leaves the queue (acquireFailed).
func (l *FairLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	slot := wait
	if slot <= 0 {
		slot = 5 * time.Minute
	}
	cmdCtx := context.WithoutCancel(ctx)
	deadline := time.Now().Add(wait)
	ok, ttl, err := l.tryAcquire(cmdCtx, lease, slot)
	if err != nil || ok {
		if err != nil {
			l.acquireFailed(cmdCtx, slot)
		}
		return ok, err
	}
	if time.Until(deadline) <= 0 {
		l.acquireFailed(cmdCtx, slot)
		return false, nil
	}
	ch := l.channel() + ":" + l.Owner()
	e, err := l.r.subs.subscribe(cmdCtx, ch)
	if err != nil {
		l.acquireFailed(cmdCtx, slot)
		return false, nil
	}
	defer l.r.subs.unsubscribe(ch)
	for {
		remain := time.Until(deadline)
		d := remain
		if ttl >= 0 && time.Duration(ttl)*time.Millisecond < remain {
			d = time.Duration(ttl) * time.Millisecond
		}
		e.wait(ctx, d)
		if ctx.Err() != nil || time.Until(deadline) <= 0 {
			l.acquireFailed(cmdCtx, slot)
			return false, nil
		}
		ok, ttl, err = l.tryAcquire(cmdCtx, lease, slot)
		if err != nil {
			l.acquireFailed(cmdCtx, slot)
			return false, err
		}
		if ok {
			return true, nil
		}
	}
}

func (l *FairLock) tryAcquire(ctx context.Context, lease, slot time.Duration) (bool, int64, error) {
	arg := lease
	if lease <= 0 {
		arg = l.r.cfg.WatchdogTimeout
	}
	v, refused, err := record(l.r.rec, l.op("acquire", msArgs("lease_ms", arg, "slot_ms", slot)), func() (*int64, bool, error) {
		res, err := l.r.eval(ctx, l.acquire, []string{l.name, l.queue(), l.timeouts()},
			arg.Milliseconds(), l.Owner(), slot.Milliseconds(), l.now())
		if res == nil {
			return nil, false, err
		}
		ttl, _ := res.(int64)
		return history.Int64(ttl), true, err
	})
	if errors.Is(err, ErrNoSync) && !refused {
		_, _, _ = l.unlockInner(ctx, newRequestID(), 0)
		return false, 0, err
	}
	if err != nil {
		return false, 0, err
	}
	if refused {
		return false, *v, nil
	}
	if lease > 0 {
		l.internalLease = lease
	} else {
		l.r.wd.add(l.name, l.Owner())
	}
	return true, 0, nil
}

// acquireFailed leaves the queue and hands the slot back to the waiters behind.
func (l *FairLock) acquireFailed(ctx context.Context, slot time.Duration) {
	_, _, _ = record(l.r.rec, l.op("dequeue", msArgs("slot_ms", slot)), func() (*int64, bool, error) {
		_, err := l.r.eval(ctx, "fair_acquire_failed", []string{l.queue(), l.timeouts()}, l.Owner(), slot.Milliseconds())
		return nil, false, err
	})
}

// Unlock releases one hold and wakes the waiter at the head of the queue.
func (l *FairLock) Unlock(ctx context.Context) error {
	res, err := l.r.unlockRetrying(ctx, l.unlockInner)
	l.r.wd.remove(l.name, l.Owner())
	if err == nil && res == 1 {
		l.internalLease = l.r.cfg.WatchdogTimeout
	}
	return err
}

func (l *FairLock) unlockInner(ctx context.Context, id string, attempt int) (int64, bool, error) {
	latch := latchKey(l.name, id)
	l.r.noteLatch(id, latch)
	latchMs := max((l.r.cfg.Timeout+1500*time.Millisecond).Milliseconds()*int64(l.r.cfg.UnlockRetries+1), 1)
	v, refused, err := record(l.r.rec, l.op("release", msArgs("lease_ms", l.internalLease, "attempt", attempt)), func() (*int64, bool, error) {
		reply, err := l.r.eval(ctx, "fair_release", []string{l.name, l.queue(), l.timeouts(), l.channel(), latch},
			unlockMessage, l.internalLease.Milliseconds(), l.Owner(), l.now(), publishCommand, latchMs)
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
