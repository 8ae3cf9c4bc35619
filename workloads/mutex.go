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
	"github.com/lockcheck/lockcheck/history/outcome"
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

// Span is the range from lo to hi; hi 0 (or below lo) makes it the single value lo.
func Span(lo, hi time.Duration) Range { return Range{lo, max(lo, hi)} }

// Text is the range as a flag takes it: "5s" for a single value, "1s-10s" for a range.
func (r Range) Text() string {
	if r.Min == r.Max {
		return r.Min.String()
	}
	return r.String()
}

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
	WaitTo    time.Duration // with Wait: a range drawn per acquire; 0: Wait alone
	Lease     time.Duration // 0: the watchdog keeps the lease
	LeaseTo   time.Duration // with Lease: a range drawn per acquire and per re-entry; 0: Lease alone
	Threads   int           // application threads per client, each its own owner; 0 counts as 1
	Hold      Range
	Reentry   float64 // chance of a nested acquire inside a critical section
	Reentrant bool    // the lock supports re-entry at all
	RW        bool    // clients are read-write locks
	ReadRatio float64 // with RW: share of acquisitions that read
	Seed      int64
	Extend    bool   // the application extends long holds of locks with no watchdog (workloads/extend.go)
	OnLost    OnLost // --on-lost: whether a critical section ends at the library's loss signal
	// CrossThread is the chance, per acquisition and per critical section, of a cross-thread operation
	// (--cross-thread, crossthread.go): a stray release or a read of the lock's state.
	CrossThread float64
	// ForceUnlock is the chance per critical section that a thread force-unlocks a key (--force-unlock).
	ForceUnlock float64
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
	case m.WaitTo != 0 && m.WaitTo < m.Wait || m.LeaseTo != 0 && m.LeaseTo < m.Lease:
		return fmt.Errorf("--wait and --lease ranges want min <= max")
	}
	for _, c := range []struct {
		what string
		p    float64
	}{{"--reentry", m.Reentry}, {"the read share", m.ReadRatio}, {"--cross-thread", m.CrossThread}, {"--force-unlock", m.ForceUnlock}} {
		if err := CheckChance(c.what, c.p); err != nil {
			return err
		}
	}
	return nil
}

// CheckChance refuses a chance that is not a number in [0, 1]. NaN fails every comparison, so a check
// written as p < 0 || p > 1 lets it through, and neither NaN nor an infinity can be recorded in JSON.
func CheckChance(what string, p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("%s must be a chance in [0, 1], got %g", what, p)
	}
	return nil
}

// KeyName is the lock key for index i.
func KeyName(i int) string { return "lock-" + strconv.Itoa(i) }

// Run drives every client's threads until stop closes or ctx ends. Either one cuts waits and holds short; a
// command already sent always completes (bounded by the client's timeout), so stopping adds no unknown outcomes.
func (m Mutex) Run(ctx context.Context, stop <-chan struct{}, clients []locks.Client, rec *history.Recorder, res *Resource) {
	eachThread(ctx, stop, clients, m.Threads, m.Seed, func(ctx context.Context, t Thread) {
		w := mutexWorker{Mutex: m, c: t.Client, rec: rec, res: res, thread: t.ID, rng: t.Rng, back: t.Back,
			x: crossRng(m.Seed, t)}
		w.loop(ctx)
	})
}

// Thread is one application thread of a client: its id (1..N, its owner in the history), its own rng and
// backoff, both derived from the run's seed, the client's index and the thread, so a seed repeats a run.
type Thread struct {
	Client locks.Client
	ID     int64
	Rng    *rand.Rand
	Back   *backoff
}

// eachThread runs threads (at least one) concurrent application threads per client, until stop or ctx,
// and waits for all. The threads of one client share its one client instance, as an application's thread
// pool shares one RedissonClient. Thread 1's streams are what a run with one thread per client had.
func eachThread(ctx context.Context, stop <-chan struct{}, clients []locks.Client, threads int, seed int64,
	work func(ctx context.Context, t Thread)) {
	ctx, cancel := UntilStop(ctx, stop)
	defer cancel()
	var wg sync.WaitGroup
	for i, c := range clients {
		for th := int64(1); th <= int64(max(threads, 1)); th++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work(ctx, newThread(c, i, th, seed))
			}()
		}
	}
	wg.Wait()
}

// UntilStop is ctx, also ended when stop closes: a workload's waits and holds end at either.
func UntilStop(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

func newThread(c locks.Client, i int, th, seed int64) Thread {
	name := c.Name()
	if th > 1 {
		name += "/" + strconv.FormatInt(th, 10)
	}
	return Thread{Client: c, ID: th, Rng: rand.New(rand.NewPCG(uint64(seed), uint64(i)|uint64(th-1)<<32)),
		Back: newBackoff(seed, name)}
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
	x      *rand.Rand     // draws the cross-thread operations: the other streams stay as without them
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
		w.crossOps(ctx)
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
			Sleep(ctx, hold)
			w.unlock(ctx, l, 0)
			continue
		}
		var secs []*Section
		for _, k := range keys {
			e.Key = k
			secs = append(secs, w.res.Enter(e))
		}
		frozen(w.c, w.rec)
		w.readsInside(ctx, l)
		held, done := w.untilLost(ctx, l)
		if w.Reentrant && w.rng.Float64() < w.Reentry {
			Sleep(held, hold/2)
			if ok, _ := w.tryLock(ctx, l, 1); ok {
				Sleep(held, hold/4)
				w.unlock(ctx, l, 1)
			}
			Sleep(held, hold-hold/2-hold/4)
		} else {
			Sleep(held, hold)
		}
		done()
		w.c.Gate().Pass() // a paused client finishes its critical section only once it runs again
		for _, s := range secs {
			s.Exit()
		}
		w.unlock(ctx, l, 0)
	}
}

// OnLost is what the application does when its library says a held lock is lost (--on-lost).
type OnLost int

// The applications lockcheck plays: one that carries on (as most do: the signal is easy to ignore), and one
// that ends its critical section at the signal, to show what the signal buys.
const (
	ContinueOnLost OnLost = iota
	StopOnLost
)

// ParseOnLost reads --on-lost.
func ParseOnLost(s string) (OnLost, error) {
	for o, name := range onLostNames {
		if s == name {
			return OnLost(o), nil
		}
	}
	return 0, fmt.Errorf("--on-lost %q: want continue or stop", s)
}

var onLostNames = [...]string{ContinueOnLost: "continue", StopOnLost: "stop"}

func (o OnLost) String() string { return onLostNames[o] }

// Set and Type make *OnLost a command-line flag value.
func (o *OnLost) Set(s string) error {
	v, err := ParseOnLost(s)
	if err == nil {
		*o = v
	}
	return err
}

// Type names the flag's values in usage.
func (*OnLost) Type() string { return "continue|stop" }

// untilLost is ctx, ended also at the lock's loss signal when the application stops there; done releases it.
func (w *mutexWorker) untilLost(ctx context.Context, l locks.Mutex) (context.Context, func()) {
	s, ok := l.(locks.LossSignal)
	if w.OnLost != StopOnLost || !ok || s.LostSignal() == nil {
		return ctx, func() {}
	}
	sig := s.LostSignal()
	held, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-held.Done():
		}
	}()
	return held, cancel
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
		Sleep(ctx, d)
		if ctx.Err() != nil {
			return
		}
		var secs []*Section
		for _, k := range keys {
			e.Key = k
			secs = append(secs, w.res.Enter(e))
		}
		Sleep(ctx, hold)
		for _, s := range secs {
			s.Exit()
		}
	}()
}

func (w *mutexWorker) userOp(f string, l locks.Mutex, nested int64, wait, lease time.Duration) *history.Op {
	return w.rec.Invoke(history.Record{Client: w.c.Name(), Thread: w.thread, Key: l.Key(), Owner: l.Owner(), F: f,
		Args: map[string]int64{"wait_ms": wait.Milliseconds(), "lease_ms": lease.Milliseconds(), "nested": nested}})
}

// tryLock draws this acquire's wait and lease from the thread's rng (a re-entry draws its own: a range lets
// it carry a lease other than the hold it joins), and records them in the operation.
func (w *mutexWorker) tryLock(ctx context.Context, l locks.Mutex, nested int64) (bool, error) {
	wait, lease := Span(w.Wait, w.WaitTo).Draw(w.rng), Span(w.Lease, w.LeaseTo).Draw(w.rng)
	op := w.userOp("tryLock", l, nested, wait, lease)
	ok, err := l.TryLock(ctx, wait, lease)
	outcome.Complete(op, outcome.Call{Refused: !ok, Err: err})
	return ok, err
}

func (w *mutexWorker) unlock(ctx context.Context, l locks.Mutex, nested int64) {
	w.release(ctx, w.userOp("unlock", l, nested, 0, 0), l)
}

// release runs l's unlock for op: ok, "not held" (failed, value -1), failed, or unknown.
func (w *mutexWorker) release(ctx context.Context, op *history.Op, l locks.Mutex) {
	c := outcome.Call{Err: l.Unlock(ctx)}
	if errors.Is(c.Err, locks.ErrNotHeld) {
		c.Value = history.Int64(-1)
	}
	outcome.Complete(op, c)
}

// Sleep waits d, or less when ctx ends; false when it ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// frozen lets an armed client-pause fault freeze the client right after a grant, and records when it did.
func frozen(c locks.Client, rec *history.Recorder) {
	if g := c.Gate(); g != nil && g.Granted() {
		rec.Fault("client-pause", "frozen", []string{c.Name()}, "frozen inside its critical section")
		g.Pass()
	}
}

// Frozen is frozen for a workload of another package (a schedule's player): called right after a grant,
// it lets an armed client-pause freeze the client there.
func Frozen(c locks.Client, rec *history.Recorder) { frozen(c, rec) }
