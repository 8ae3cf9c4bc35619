package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	return Range{a, b}, nil
}

func (r Range) String() string { return r.Min.String() + "-" + r.Max.String() }

// Draw picks a duration in the range.
func (r Range) Draw(rng *rand.Rand) time.Duration {
	if r.Max == r.Min {
		return r.Min
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)+1))
}

// MutexClient hands out one client's lock objects.
type MutexClient interface {
	Name() string
	Mutex(key string, thread int64) locks.Mutex
}

// Mutex is the mutex workload: each client loops acquire, hold (touching the resource, sometimes
// re-entering), release, over Keys keys.
type Mutex struct {
	Keys      int
	Wait      time.Duration // tryLock wait budget
	Lease     time.Duration // 0: the watchdog keeps the lease
	Hold      Range
	Reentry   float64 // chance of a nested acquire inside a critical section
	Reentrant bool    // the lock supports re-entry at all
	Seed      int64
}

// Validate rejects nonsense options.
func (m Mutex) Validate() error {
	switch {
	case m.Keys < 1:
		return fmt.Errorf("--keys must be at least 1, got %d", m.Keys)
	case m.Wait < 0:
		return fmt.Errorf("--wait must not be negative")
	case m.Lease < 0:
		return fmt.Errorf("--lease must not be negative")
	case m.Reentry < 0 || m.Reentry > 1:
		return fmt.Errorf("--reentry must be in [0, 1], got %g", m.Reentry)
	}
	return nil
}

// KeyName is the lock key for index i.
func KeyName(i int) string { return "lock-" + strconv.Itoa(i) }

// Run drives every client until stop closes or ctx ends. Either one cuts waits and holds short; a command
// already sent always completes (bounded by the client's timeout), so stopping adds no unknown outcomes.
func (m Mutex) Run(ctx context.Context, stop <-chan struct{}, clients []MutexClient, rec *history.Recorder, res *Resource) {
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
			w := mutexWorker{Mutex: m, c: c, rec: rec, res: res, thread: 1,
				rng: rand.New(rand.NewPCG(uint64(m.Seed), uint64(i)))}
			w.loop(ctx)
		}()
	}
	wg.Wait()
}

type mutexWorker struct {
	Mutex
	c      MutexClient
	rec    *history.Recorder
	res    *Resource
	thread int64
	rng    *rand.Rand
}

func (w *mutexWorker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		key := KeyName(w.rng.IntN(w.Keys))
		l := w.c.Mutex(key, w.thread)
		begin := time.Now()
		ok, err := w.tryLock(ctx, l, 0)
		if !ok {
			if err != nil && time.Since(begin) < 50*time.Millisecond {
				sleep(ctx, 50*time.Millisecond) // a fast error (node down): do not spin
			}
			continue
		}
		sec := w.res.Enter(key, w.c.Name(), w.thread, l.Owner(), 0)
		hold := w.Hold.Draw(w.rng)
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
		sec.Exit()
		w.unlock(ctx, l, 0)
	}
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
