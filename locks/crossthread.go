package locks

import "context"

// StateReader is a lock whose library reads its state: whether the calling thread holds it (Redisson's
// isHeldByCurrentThread) and whether anyone does (isLocked). Each read is one operation in the history
// ("held", "is_locked", value 1 or 0), judged by the mutex model as a read at some point in its interval.
type StateReader interface {
	Held(ctx context.Context) (bool, error)
	IsLocked(ctx context.Context) (bool, error)
	// ReadsState is false where the library has no such reads (a worker without the reads cap).
	ReadsState() bool
}

// ForceUnlocker is a lock with an admin release of whoever holds it (Redisson's forceUnlock). It is
// recorded as "force_release": applied (value 1) when it deleted a hold, refused (value 0) when the lock
// was free. The holder it removes is not told; the checkers treat its hold as ended there.
type ForceUnlocker interface {
	ForceUnlock(ctx context.Context) (bool, error)
	// ForcesUnlock is false where the library has no forceUnlock (a worker without the force-unlock cap).
	ForcesUnlock() bool
}

// ThreadBound marks a lock whose library ties a hold to the thread (or token) that took it, so that an
// unlock by any other thread is refused (Redisson: IllegalMonitorStateException, ErrNotHeld). Only such
// locks are sent stray releases by the workload: elsewhere a stray release is the caller's bug, not the
// library's.
type ThreadBound interface {
	ThreadBound() bool
}
