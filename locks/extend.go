package locks

import (
	"context"
	"time"
)

// Extender is a held lock the application keeps alive itself: a library with no watchdog and a fixed
// lease, as redsync, redislock, node-redlock and redis-py are. The workload extends it during long holds
// and stops touching the resource once it is lost.
type Extender interface {
	// ExtendLease is the fixed lease of the last grant: 0 when nothing is for the application to extend
	// (a watchdog keeps it, or the library cannot extend).
	ExtendLease() time.Duration
	// Extend sets the lease again. false (or ErrNotHeld) means the lock is lost.
	Extend(ctx context.Context, lease time.Duration) (bool, error)
	// Lost reports whether the library said, since the last grant, that the hold is lost.
	Lost() bool
}
