package workloads

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/locks"
)

// Semaphore is the semaphore workload (plain or permit-expirable): the first client sets Permits on every
// key, then every client loops acquire one permit, hold (touching the resource, which admits Permits at
// once), release. When the run stops, one final read of each key's available permits is recorded: at
// quiescence it must equal Permits.
type Semaphore struct {
	Keys      int
	Permits   int64
	Wait      time.Duration
	Lease     time.Duration // expirable only: each permit's lease
	WaitTo    time.Duration // with Wait: a range drawn per acquire; 0: Wait alone
	LeaseTo   time.Duration // with Lease: a range drawn per acquire; 0: Lease alone
	Threads   int           // application threads per client, each its own owner; 0 counts as 1
	Hold      Range
	Expirable bool
	Seed      int64
}

// Validate rejects nonsense options.
func (s Semaphore) Validate() error {
	switch {
	case s.Keys < 1:
		return fmt.Errorf("--keys must be at least 1, got %d", s.Keys)
	case s.Permits < 1:
		return fmt.Errorf("--permits must be at least 1, got %d", s.Permits)
	case s.Wait < 0 || s.Lease < 0:
		return fmt.Errorf("--wait and --lease must not be negative")
	}
	return nil
}

// Permits is one thread's view of a semaphore key, whichever kind: what the workload and a schedule's
// permit steps call.
type Permits interface {
	TrySet(ctx context.Context, n int64) (bool, error)
	Acquire(ctx context.Context) (string, bool, error) // the permit's id ("" for a plain semaphore's)
	Release(ctx context.Context, id string) error
	Available(ctx context.Context) (int64, error)
}

type plain struct {
	s    locks.Semaphore
	wait time.Duration
}

func (p plain) TrySet(ctx context.Context, n int64) (bool, error) { return p.s.TrySetPermits(ctx, n) }
func (p plain) Acquire(ctx context.Context) (string, bool, error) {
	ok, err := p.s.TryAcquire(ctx, 1, p.wait)
	return "", ok, err
}
func (p plain) Release(ctx context.Context, _ string) error  { return p.s.Release(ctx, 1) }
func (p plain) Available(ctx context.Context) (int64, error) { return p.s.Available(ctx) }

type expiring struct {
	s           locks.Expirable
	wait, lease time.Duration
}

func (p expiring) TrySet(ctx context.Context, n int64) (bool, error) {
	return p.s.TrySetPermits(ctx, n)
}
func (p expiring) Acquire(ctx context.Context) (string, bool, error) {
	id, err := p.s.TryAcquire(ctx, p.wait, p.lease)
	return id, id != "", err
}
func (p expiring) Release(ctx context.Context, id string) error {
	_, err := p.s.Release(ctx, id) // an expired permit answers false: the history shows it as failed
	return err
}
func (p expiring) Available(ctx context.Context) (int64, error) { return p.s.Available(ctx) }

func (s Semaphore) open(c locks.Client, key string, thread int64) Permits {
	return OpenPermits(c, key, thread, s.Expirable, s.Wait, s.Lease)
}

// OpenPermits is thread's view of key on c: an expirable semaphore's (permit ids with lease) or a plain
// one's, each acquire waiting up to wait.
func OpenPermits(c locks.Client, key string, thread int64, expirable bool, wait, lease time.Duration) Permits {
	if expirable {
		return expiring{s: c.(locks.ExpirableClient).Expirable(key, thread), wait: wait, lease: lease}
	}
	return plain{s: c.(locks.SemaphoreClient).Semaphore(key, thread), wait: wait}
}

// EnterPermit enters the critical section of a permit granted to thread of c, whose acquire call began
// at begin: an expirable permit with a lease is sure of its hold only up to begin + lease.
func EnterPermit(rec *history.Recorder, res *Resource, c locks.Client, thread int64, key, id string, expirable bool,
	lease time.Duration, begin time.Time) *Section {
	e := Entry{Key: key, Client: c.Name(), Thread: thread, Owner: id, Mode: "permit"}
	if expirable && lease > 0 {
		// The lease runs from the grant, somewhere in the call: the section is sure of it only up to the
		// call's start + lease. The hold itself is never cut there (--hold may outlive the lease: a lapsed
		// permit's release is what the models judge).
		e.Until = rec.Clock.At(begin.Add(lease))
	}
	sec := res.Enter(e)
	if u := &sec.rec.Until; *u > 0 && *u <= sec.rec.Enter {
		// A permit that came after a wait longer than its lease may have lapsed already: no part of its
		// hold is sure. A validity ending before the entry would count it as a holder forever (exits sort
		// before entries); porcupine still judges its grant and release.
		*u = sec.rec.Enter + 1
	}
	return sec
}

// Run sets the permits, drives every client until stop or ctx, and reads each key once more at the end.
func (s Semaphore) Run(ctx context.Context, stop <-chan struct{}, clients []locks.Client, rec *history.Recorder, res *Resource) {
	res.Capacity = int(s.Permits)
	for k := 0; k < s.Keys; k++ {
		_, _ = s.open(clients[0], KeyName(k), 0).TrySet(ctx, s.Permits)
	}
	eachThread(ctx, stop, clients, s.Threads, s.Seed, func(ctx context.Context, t Thread) {
		c, rng, back := t.Client, t.Rng, t.Back
		for ctx.Err() == nil {
			key := KeyName(rng.IntN(s.Keys))
			s := s.drawn(rng) // this acquire's own wait and lease
			p := s.open(c, key, t.ID)
			op := rec.Invoke(history.Record{Client: c.Name(), Thread: t.ID, Key: key, F: "tryAcquire",
				Args: map[string]int64{"wait_ms": s.Wait.Milliseconds(), "lease_ms": s.Lease.Milliseconds()}})
			begin := time.Now()
			id, ok, err := p.Acquire(ctx)
			outcome.Complete(op, outcome.Call{Refused: !ok, Err: err})
			back.after(ctx, err, time.Since(begin))
			if !ok {
				continue
			}
			sec := EnterPermit(rec, res, c, t.ID, key, id, s.Expirable, s.Lease, begin)
			frozen(c, rec)
			Sleep(ctx, s.Hold.Draw(rng))
			c.Gate().Pass() // a paused client leaves only once it runs again
			sec.Exit()
			op = rec.Invoke(history.Record{Client: c.Name(), Thread: t.ID, Key: key, Owner: id, F: "releasePermit"})
			outcome.Complete(op, outcome.Call{Err: p.Release(ctx, id)})
		}
	})
	final := context.WithoutCancel(ctx)
	for k := 0; k < s.Keys; k++ {
		_, _ = s.open(clients[0], KeyName(k), 0).Available(final)
	}
}

// drawn is s with one acquire's wait and lease drawn from the thread's rng (their ranges).
func (s Semaphore) drawn(rng *rand.Rand) Semaphore {
	s.Wait, s.Lease = Span(s.Wait, s.WaitTo).Draw(rng), Span(s.Lease, s.LeaseTo).Draw(rng)
	return s
}
