package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
)

// Range is a duration range drawn uniformly, e.g. "10ms-200ms" or a single "50ms".
type Range struct{ Min, Max time.Duration }

// ParseRange reads "A-B" or "A".
func ParseRange(s string) (Range, error) {
	lo, hi, found := strings.Cut(s, "-")
	a, err := time.ParseDuration(strings.TrimSpace(lo))
	if err != nil {
		return Range{}, fmt.Errorf("range %q: %v (want e.g. 10ms-200ms)", s, err)
	}
	b := a
	if found {
		if b, err = time.ParseDuration(strings.TrimSpace(hi)); err != nil {
			return Range{}, fmt.Errorf("range %q: %v (want e.g. 10ms-200ms)", s, err)
		}
	}
	if a < 0 || b < a {
		return Range{}, fmt.Errorf("range %q: want 0 <= min <= max", s)
	}
	if b > MaxRange {
		return Range{}, fmt.Errorf("range %q: at most %s", s, MaxRange)
	}
	return Range{a, b}, nil
}

// MaxRange bounds a range's ends: no run is longer (--time is at most 24h).
const MaxRange = 24 * time.Hour

func (r Range) String() string { return r.Min.String() + "-" + r.Max.String() }

// Draw picks a duration in the range.
func (r Range) Draw(rng *rand.Rand) time.Duration {
	if r.Max == r.Min {
		return r.Min
	}
	// In uint64, so that even an unbounded range cannot overflow the draw.
	return r.Min + time.Duration(rng.Uint64N(uint64(r.Max-r.Min)+1))
}

// Mutex is the mutex workload: each client loops acquire, hold (touching the resource, sometimes
// re-entering), release, over Keys keys. It also drives read-write locks (ReadRatio of the acquisitions
// read) and multi locks (Group keys per acquisition).
type Mutex struct {
	Keys      int
	Group     int           // keys per acquisition (multi lock); 1 otherwise
	Wait      time.Duration // tryLock wait budget
	Lease     time.Duration // 0: the watchdog keeps the lease
	Hold      Range
	Reentry   float64 // chance of a nested acquire inside a critical section
	Reentrant bool    // the lock supports re-entry at all
	RW        bool    // clients are read-write locks
	ReadRatio float64 // with RW: share of acquisitions that read
	Seed      int64
	Extend    bool // the application extends long holds of locks with no watchdog (workloads/extend.go)
}

// Validate rejects nonsense options.
func (m Mutex) Validate() error {
	switch {
	case m.Keys < 1:
		return fmt.Errorf("--keys must be at least 1, got %d", m.Keys)
	case m.Group < 1:
		return fmt.Errorf("--group must be at least 1, got %d", m.Group)
	case m.Group > m.Keys:
		return fmt.Errorf("--group %d needs at least as many --keys, got %d", m.Group, m.Keys)
	case m.Wait < 0:
		return fmt.Errorf("--wait must not be negative")
	case m.Lease < 0:
		return fmt.Errorf("--lease must not be negative")
	case m.Reentry < 0 || m.Reentry > 1:
		return fmt.Errorf("--reentry must be in [0, 1], got %g", m.Reentry)
	case m.ReadRatio < 0 || m.ReadRatio > 1:
		return fmt.Errorf("the read share must be in [0, 1], got %g", m.ReadRatio)
	}
	return nil
}

// KeyName is the lock key for index i.
func KeyName(i int) string { return "lock-" + strconv.Itoa(i) }

// Run drives every client until stop closes or ctx ends. Either one cuts waits and holds short; a command
// already sent always completes (bounded by the client's timeout), so stopping adds no unknown outcomes.
func (m Mutex) Run(ctx context.Context, stop <-chan struct{}, clients []locks.Client, rec *history.Recorder, res *Resource) {
	eachClient(ctx, stop, clients, m.Seed, func(ctx context.Context, c locks.Client, rng *rand.Rand) {
		w := mutexWorker{Mutex: m, c: c, rec: rec, res: res, thread: 1, rng: rng, back: newBackoff(m.Seed, c.Name())}
		w.loop(ctx)
	})
}

// eachClient runs one worker per client with its own seeded rng, until stop or ctx, and waits for all.
func eachClient(ctx context.Context, stop <-chan struct{}, clients []locks.Client, seed int64,
	work func(ctx context.Context, c locks.Client, rng *rand.Rand)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(ctx, c, rand.New(rand.NewPCG(uint64(seed), uint64(i))))
		}()
	}
	wg.Wait()
}

type mutexWorker struct {
	Mutex
	c      locks.Client
	rec    *history.Recorder
	res    *Resource
	thread int64
	rng    *rand.Rand
	back   *backoff
	late   sync.WaitGroup // writes in flight to the resource (resource-delay)
}

// next picks the keys and the lock (and mode) of one acquisition.
func (w *mutexWorker) next() (locks.Mutex, string, []string) {
	keys := []string{KeyName(w.rng.IntN(w.Keys))}
	if w.Group > 1 { // in key order, as careful users do: random orders deadlock until the wait runs out
		idx := w.rng.Perm(w.Keys)[:w.Group]
		sort.Ints(idx)
		keys = keys[:0]
		for _, i := range idx {
			keys = append(keys, KeyName(i))
		}
	}
	if w.RW {
		rw := w.c.(locks.RWClient)
		if w.rng.Float64() < w.ReadRatio {
			return rw.ReadLock(keys[0], w.thread), "read", keys
		}
		return rw.WriteLock(keys[0], w.thread), "write", keys
	}
	return w.c.(locks.MutexClient).Mutex(keys, w.thread), "", keys
}

func (w *mutexWorker) loop(ctx context.Context) {
	defer w.late.Wait() // no section is recorded after the workload ends
	for ctx.Err() == nil {
		l, mode, keys := w.next()
		begin := time.Now()
		ok, err := w.tryLock(ctx, l, 0)
		w.back.after(ctx, err, time.Since(begin))
		if !ok {
			continue
		}
		e := Entry{Client: w.c.Name(), Thread: w.thread, Owner: l.Owner(), Mode: mode}
		if f, ok := l.(locks.Fenced); ok {
			e.Token = f.Token()
		}
		if v, ok := l.(locks.Validity); ok && !v.ValidUntil().IsZero() {
			e.Until = w.rec.Clock.At(v.ValidUntil())
		}
		hold := w.Hold.Draw(w.rng)
		if x, lease := w.extending(l, hold); x != nil {
			w.extendingHold(ctx, x, e, keys, hold, lease)
			w.unlock(ctx, l, 0)
			continue
		}
		if d := w.c.Gate().WriteDelay(); d > 0 {
			w.delayedWrite(ctx, e, keys, hold, d)
			sleep(ctx, hold)
			w.unlock(ctx, l, 0)
			continue
		}
		var secs []*Section
		for _, k := range keys {
			e.Key = k
			secs = append(secs, w.res.Enter(e))
		}
		frozen(w.c, w.rec)
		if w.Reentrant && w.rng.Float64() < w.Reentry {
			sleep(ctx, hold/2)
			if ok, _ := w.tryLock(ctx, l, 1); ok {
				sleep(ctx, hold/4)
				w.unlock(ctx, l, 1)
			}
			sleep(ctx, hold-hold/2-hold/4)
		} else {
			sleep(ctx, hold)
		}
		w.c.Gate().Pass() // a paused client finishes its critical section only once it runs again
		for _, s := range secs {
			s.Exit()
		}
		w.unlock(ctx, l, 0)
	}
}

// delayedWrite is a critical section whose write to the resource lands d after the holder sent it (S3):
// the holder goes on (holds, then releases) while its write is in flight; at the resource the section
// lasts hold from its landing. A write still in flight when the run ends never lands.
func (w *mutexWorker) delayedWrite(ctx context.Context, e Entry, keys []string, hold, d time.Duration) {
	// The write was sent inside the holder's validity; when it lands is out of its hands, so the section is
	// not cut at the validity's end as a holder's own late writes are.
	e.Until = 0
	w.late.Add(1)
	go func() {
		defer w.late.Done()
		sleep(ctx, d)
		if ctx.Err() != nil {
			return
		}
		var secs []*Section
		for _, k := range keys {
			e.Key = k
			secs = append(secs, w.res.Enter(e))
		}
		sleep(ctx, hold)
		for _, s := range secs {
			s.Exit()
		}
	}()
}

func (w *mutexWorker) userOp(f string, l locks.Mutex, nested int64) *history.Op {
	return w.rec.Invoke(history.Record{Client: w.c.Name(), Thread: w.thread, Key: l.Key(), Owner: l.Owner(), F: f,
		Args: map[string]int64{"wait_ms": w.Wait.Milliseconds(), "lease_ms": w.Lease.Milliseconds(), "nested": nested}})
}

func (w *mutexWorker) tryLock(ctx context.Context, l locks.Mutex, nested int64) (bool, error) {
	op := w.userOp("tryLock", l, nested)
	ok, err := l.TryLock(ctx, w.Wait, w.Lease)
	switch {
	case err != nil && locks.Definite(err):
		op.Fail(nil, err)
	case err != nil:
		op.Unknown(err)
	case ok:
		op.Ok(nil, nil)
	default:
		op.Fail(nil, nil)
	}
	return ok, err
}

func (w *mutexWorker) unlock(ctx context.Context, l locks.Mutex, nested int64) {
	op := w.userOp("unlock", l, nested)
	err := l.Unlock(ctx)
	switch {
	case err == nil:
		op.Ok(nil, nil)
	case errors.Is(err, locks.ErrNotHeld):
		op.Fail(history.Int64(-1), err)
	case locks.Definite(err):
		op.Fail(nil, err)
	default:
		op.Unknown(err)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// frozen lets an armed client-pause fault freeze the client right after a grant, and records when it did.
func frozen(c locks.Client, rec *history.Recorder) {
	if g := c.Gate(); g != nil && g.Granted() {
		rec.Fault("client-pause", "frozen", []string{c.Name()}, "frozen inside its critical section")
		g.Pass()
	}
}
