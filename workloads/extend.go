package workloads

import (
	"context"
	"time"

	"github.com/lockcheck/lockcheck/locks"
)

// extending returns the lock's fixed lease when the application must keep it alive itself during this
// hold (no watchdog, and the hold outlasts a third of the lease), else 0.
func (w *mutexWorker) extending(l locks.Mutex, hold time.Duration) (locks.Extender, time.Duration) {
	x, ok := l.(locks.Extender)
	if !ok || !w.Extend || w.RW || w.Group > 1 {
		return nil, 0
	}
	lease := x.ExtendLease()
	if lease <= 0 || hold <= lease/3 {
		return nil, 0
	}
	return x, lease
}

// extendingHold is a long hold done as redsync's, redis-py's and node-redlock's docs tell applications:
// split into steps of a third of the lease, each one write to the resource preceded by an extend. Once an
// extend says the lock is lost (or fails), or the library reports it lost, the client stops touching the
// resource. A client-pause lands after the grant, before the first write: a correct library's extend then
// reports the loss, so only a library that says "extended" on a lost lock lets two holders write.
func (w *mutexWorker) extendingHold(ctx context.Context, x locks.Extender, e Entry, keys []string, hold, lease time.Duration) {
	frozen(w.c, w.rec)
	w.c.Gate().Pass()
	e.Until = 0 // the grant's validity window is moved by each extend
	step := max(lease/3, time.Millisecond)
	for left := hold; left > 0 && ctx.Err() == nil; left -= step {
		if x.Lost() {
			return
		}
		if ok, err := x.Extend(context.WithoutCancel(ctx), lease); !ok || err != nil || x.Lost() {
			return
		}
		var secs []*Section
		for _, k := range keys {
			e.Key = k
			secs = append(secs, w.res.Enter(e))
		}
		Sleep(ctx, min(step, left))
		w.c.Gate().Pass()
		for _, s := range secs {
			s.Exit()
		}
	}
}
