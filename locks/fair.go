package locks

import (
	"context"
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
	acquire       string // "fair_acquire", or the broken one that queues newcomers first
}

var _ Mutex = (*FairLock)(nil)

// FairLock returns the RFairLock called name for a thread.
func (r *Redisson) FairLock(name string, thread int64, broken bool) *FairLock {
	return &FairLock{r: r, name: name, thread: thread, internalLease: r.cfg.WatchdogTimeout,
		acquire: variant("fair_acquire", broken)}
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

// TryLock follows RedissonFairLock: the waiter's slot is its wait time (or fairLockWaitTimeout, 5 min),
// it is woken on its own channel, and a waiter that gives up leaves the queue (acquireFailed).
func (l *FairLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	slot := wait
	if slot <= 0 {
		slot = 5 * time.Minute
	}
	return l.r.waitFor(ctx, l.channel()+":"+l.Owner(), wakeLock, wait, func(ctx context.Context) (bool, int64, error) {
		return l.tryAcquire(ctx, lease, slot)
	}, func(ctx context.Context) { l.acquireFailed(ctx, slot) })
}

func (l *FairLock) tryAcquire(ctx context.Context, lease, slot time.Duration) (bool, int64, error) {
	arg := l.r.leaseArg(lease)
	return l.r.acquireOnce(l.op("acquire", msArgs("lease_ms", arg, "slot_ms", slot)), func() (*int64, bool, error) {
		return ttlReply(l.r.eval(ctx, l.acquire, []string{l.name, l.queue(), l.timeouts()},
			arg.Milliseconds(), l.Owner(), slot.Milliseconds(), l.now()))
	}, func() { _, _, _ = l.unlockInner(ctx, newRequestID(), 0) }, func() {
		if lease > 0 {
			l.internalLease = lease
		} else {
			l.r.wd.add(l.name, l.Owner())
		}
	})
}

// acquireFailed leaves the queue and hands the slot back to the waiters behind.
func (l *FairLock) acquireFailed(ctx context.Context, slot time.Duration) {
	_, _, _ = l.r.write(l.op("dequeue", msArgs("slot_ms", slot)), func() (*int64, bool, error) {
		_, err := l.r.eval(ctx, "fair_acquire_failed", []string{l.queue(), l.timeouts()}, l.Owner(), slot.Milliseconds())
		return nil, false, err
	})
}

// Unlock releases one hold and wakes the waiter at the head of the queue.
func (l *FairLock) Unlock(ctx context.Context) error {
	res, err := l.r.unlockRequest(ctx, l.unlockInner, func() { l.r.wd.remove(l.name, l.Owner()) })
	if err != nil || res != 0 {
		l.internalLease = l.r.cfg.WatchdogTimeout
	}
	return err
}

func (l *FairLock) unlockInner(ctx context.Context, id string, attempt int) (int64, bool, error) {
	latch := latchKey(l.name, id)
	l.r.noteLatch(id, latch)
	return l.r.releaseOnce(ctx, l.op("release", msArgs("lease_ms", l.internalLease, "attempt", attempt)), "fair_release",
		[]string{l.name, l.queue(), l.timeouts(), l.channel(), latch},
		unlockMessage, l.internalLease.Milliseconds(), l.Owner(), l.now(), l.r.publish(), l.r.latchMs())
}
