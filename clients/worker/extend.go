package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

var _ locks.Extender = (*mutex)(nil)

// ExtendLease is the grant's fixed lease when the worker can extend and no watchdog keeps the lock.
func (l *mutex) ExtendLease() time.Duration {
	if !l.c.caps["extend"] || l.c.caps["watchdog"] || l.wd || l.mode != "" {
		return 0
	}
	return l.lease
}

// Extend asks the library to extend the hold. It is recorded as the mutex model's "renew" on each key
// (the model's compare-and-pexpire): extended is a renewal, which is legal only for the holder; not
// extended or "not held" is a refusal; an error that may have reached Redis is unknown.
func (l *mutex) Extend(_ context.Context, lease time.Duration) (bool, error) {
	lease = l.c.Fit(lease)
	req := sdk.Message{Type: sdk.TypeExtend, Thread: wireThread(l.thread), Keys: l.keys, LeaseMs: lease.Milliseconds()}
	reply, ops, err := l.c.do(req, l.records("renew", lease, false))
	if err != nil {
		notHeld := isCode(err, sdk.CodeNotHeld)
		settle(ops, err, notHeld)
		if notHeld {
			return false, fmt.Errorf("%w: %v", locks.ErrNotHeld, err)
		}
		return false, err
	}
	if reply.Extended == nil || !*reply.Extended {
		for _, op := range ops {
			op.Fail(history.Int64(-1), nil)
		}
		return false, nil
	}
	l.lease = lease
	for _, op := range ops {
		op.Ok(nil, nil)
	}
	return true, nil
}

// Lost reports whether the worker sent a lost event for this thread and one of its keys since the grant.
func (l *mutex) Lost() bool {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	for _, k := range l.keys {
		if l.c.lost[holdKey{l.thread, k}] {
			return true
		}
	}
	return false
}

var _ locks.LossSignal = (*mutex)(nil)

// LostSignal closes at the worker's lost event for this thread and the hold's (first) key since the grant;
// nil for a worker that sends no events.
func (l *mutex) LostSignal() <-chan struct{} { return l.c.losses.Signal(l.keys[0], l.Owner()) }
