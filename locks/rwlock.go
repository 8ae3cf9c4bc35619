package locks

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// ReadWriteLock is Redisson's RReadWriteLock: one hash with a mode field, read holders as fields
// <uuid>:<thread> with a timeout key per hold, the write holder as <uuid>:<thread>:write.
type ReadWriteLock struct {
	r           *Redisson
	name        string
	thread      int64
	write       bool
	readAcquire string // "rw_read_acquire", or the broken one that ignores write mode
	lease       time.Duration
}

var _ Mutex = (*ReadWriteLock)(nil)

// ReadLock returns the read half of the read-write lock called name.
func (r *Redisson) ReadLock(name string, thread int64, broken bool) *ReadWriteLock {
	return &ReadWriteLock{r: r, name: name, thread: thread, readAcquire: variant("rw_read_acquire", broken),
		lease: r.cfg.WatchdogTimeout}
}

// WriteLock returns the write half.
func (r *Redisson) WriteLock(name string, thread int64) *ReadWriteLock {
	return &ReadWriteLock{r: r, name: name, thread: thread, write: true, lease: r.cfg.WatchdogTimeout}
}

// suffixName mirrors Redisson's: {name}:suffix unless name already has a hash tag.
func suffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// rwKeyPrefix is Redisson's getKeyPrefix: the timeout-key prefix cut before ":<owner>", which is {name},
// or name itself when it has a hash tag.
func rwKeyPrefix(name string) string {
	if strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}

func readTimeoutPrefix(name, owner string) string { return suffixName(name, owner) + ":rwlock_timeout" }

// Key is the lock's hash.
func (l *ReadWriteLock) Key() string { return l.name }

// Owner is the hash field this half holds: <uuid>:<thread>, with ":write" for the write half.
func (l *ReadWriteLock) Owner() string {
	o := l.r.ID + ":" + strconv.FormatInt(l.thread, 10)
	if l.write {
		return o + ":write"
	}
	return o
}

// Mode is "read" or "write".
func (l *ReadWriteLock) Mode() string {
	if l.write {
		return "write"
	}
	return "read"
}

func (l *ReadWriteLock) channel() string { return prefixName("redisson_rwlock", l.name) }

func (l *ReadWriteLock) op(f string, args map[string]int64) history.Record {
	if !l.write {
		args["read"] = 1
	}
	return history.Record{Client: l.r.name, Node: l.r.node, Thread: l.thread, Key: l.name, Owner: l.Owner(), F: f, Args: args}
}

// TryLock acquires this half as RLock.tryLock does: try, then wait on the shared channel.
func (l *ReadWriteLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.r.waitFor(ctx, l.channel(), wakeLock, wait, func(ctx context.Context) (bool, int64, error) {
		return l.tryAcquire(ctx, lease)
	}, nil)
}

func (l *ReadWriteLock) tryAcquire(ctx context.Context, lease time.Duration) (bool, int64, error) {
	arg := l.r.leaseArg(lease)
	mine := l.r.ID + ":" + strconv.FormatInt(l.thread, 10)
	return l.r.acquireOnce(l.op("acquire", msArgs("lease_ms", arg)), func() (*int64, bool, error) {
		if l.write {
			return ttlReply(l.r.eval(ctx, "rw_write_acquire", []string{l.name}, arg.Milliseconds(), l.Owner()))
		}
		return ttlReply(l.r.eval(ctx, l.readAcquire, []string{l.name, readTimeoutPrefix(l.name, mine)},
			arg.Milliseconds(), mine, mine+":write"))
	}, func() { _, _, _ = l.unlockInner(ctx, newRequestID(), 0) }, func() {
		if lease > 0 {
			l.lease = lease
		} else {
			l.r.wd.addKind(l.name, l.Owner(), !l.write)
		}
	})
}

// Unlock releases one hold of this half.
// A read unlock also takes one hold off the same thread's write-lock renewal: RedissonReadLock's
// cancelExpirationRenewal calls its parent's, which cancels the LockTask entry of the name and thread, the
// write lock's (a Redisson 4.7 bug: a writer that reads loses its write renewal).
// Then the lease a later partial write unlock sets goes back to the watchdog's (leaseAfterUnlock).
func (l *ReadWriteLock) Unlock(ctx context.Context) error {
	res, err := l.r.unlockRequest(ctx, l.unlockInner, func() {
		l.r.wd.removeKind(l.name, l.Owner(), !l.write)
		if !l.write {
			l.r.wd.remove(l.name, l.Owner()+":write")
		}
	})
	l.lease = l.r.leaseAfterUnlock(l.lease, res, err)
	return err
}

func (l *ReadWriteLock) unlockInner(ctx context.Context, id string, attempt int) (int64, bool, error) {
	latch := latchKey(l.name, id)
	l.r.noteLatch(id, latch)
	rec := l.op("release", msArgs("lease_ms", l.lease, "attempt", attempt))
	if l.write {
		return l.r.releaseOnce(ctx, rec, "rw_write_release", []string{l.name, l.channel(), latch},
			readUnlockMessage, l.lease.Milliseconds(), l.Owner(), l.r.publish(), l.r.latchMs())
	}
	return l.r.releaseOnce(ctx, rec, "rw_read_release",
		[]string{l.name, l.channel(), readTimeoutPrefix(l.name, l.Owner()), rwKeyPrefix(l.name), latch},
		unlockMessage, l.Owner(), l.r.publish(), l.r.latchMs())
}
