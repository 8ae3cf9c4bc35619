package workloads

import (
	"context"
	"hash/fnv"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/locks"
)

// Cross-thread operations (--cross-thread, --force-unlock), drawn from their own stream so that a run
// without them draws every other choice as before:
//   - between critical sections, a stray release: the thread, holding nothing, unlocks a random key. A
//     library that ties a hold to its thread (locks.ThreadBound) must refuse it (ErrNotHeld); the mutex
//     model judges the refusal (legal only for a non-holder) and an "ok" (legal only for the holder);
//   - a read of a random key's state: held (isHeldByCurrentThread) or isLocked (locks.StateReader);
//   - inside a critical section, both reads of the held lock: held must be true, and isLocked, unless
//     the lease may have run out by then;
//   - with --force-unlock, a force-unlock of a random key (locks.ForceUnlocker): whoever holds it loses it,
//     untold. The checkers take the victim's hold as ended at the force (checker.Exclusion, forcedSince).
// Group (multi) and read-write locks get none: their libraries' reads and releases are per lock object.

// crossRng is a thread's stream for cross-thread operations, from the seed, its client's name and its id.
func crossRng(seed int64, t Thread) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(t.Client.Name()))
	return rand.New(rand.NewPCG(uint64(seed)^0x63726f7373, h.Sum64()^uint64(t.ID)))
}

// crossOps runs the operations drawn before an acquisition.
func (w *mutexWorker) crossOps(ctx context.Context) {
	if w.Group > 1 || w.RW || w.CrossThread <= 0 && w.ForceUnlock <= 0 {
		return
	}
	if w.ForceUnlock > 0 && w.x.Float64() < w.ForceUnlock {
		if f, ok := w.any().(locks.ForceUnlocker); ok && f.ForcesUnlock() {
			l := f.(locks.Mutex)
			op := w.userOp("forceUnlock", l, 0, 0, 0)
			deleted, err := f.ForceUnlock(ctx)
			outcome.Answered(op, deleted, err, true)
		}
	}
	if w.CrossThread <= 0 || w.x.Float64() >= w.CrossThread {
		return
	}
	l := w.any()
	switch w.x.IntN(3) {
	case 0:
		if b, ok := l.(locks.ThreadBound); ok && b.ThreadBound() {
			op := w.rec.Invoke(history.Record{Client: w.c.Name(), Thread: w.thread, Key: l.Key(), Owner: l.Owner(),
				F: "unlock", Args: map[string]int64{"nested": 0, "stray": 1}})
			w.release(ctx, op, l)
		}
	case 1:
		w.read(ctx, l, false)
	default:
		w.read(ctx, l, true)
	}
}

// readsInside reads the state of the lock the thread has just been granted.
func (w *mutexWorker) readsInside(ctx context.Context, l locks.Mutex) {
	if w.Group > 1 || w.RW || w.CrossThread <= 0 || w.x.Float64() >= w.CrossThread {
		return
	}
	w.read(ctx, l, false)
	w.read(ctx, l, true)
}

// any is this thread's lock on a random key.
func (w *mutexWorker) any() locks.Mutex {
	return w.c.(locks.MutexClient).Mutex([]string{KeyName(w.x.IntN(w.Keys))}, w.thread)
}

// read runs held (or with locked, isLocked) where the lock has them, recorded as isHeld or isLocked with
// value 1 or 0.
func (w *mutexWorker) read(ctx context.Context, l locks.Mutex, locked bool) {
	r, ok := l.(locks.StateReader)
	if !ok || !r.ReadsState() {
		return
	}
	f, read := "isHeld", r.Held
	if locked {
		f, read = "isLocked", r.IsLocked
	}
	op := w.userOp(f, l, 0, 0, 0)
	yes, err := read(ctx)
	outcome.Answered(op, yes, err, false)
}
