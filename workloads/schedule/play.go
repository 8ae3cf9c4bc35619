package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workloads"
)

// Defaults are the run's values for what a step leaves out, and the semaphore its permit steps take.
type Defaults struct {
	Lease, Wait time.Duration // --lease, --wait
	Permits     int64         // --permits: each key's capacity, set before the first step
	Expirable   bool          // the semaphore's permits are ids with leases (the expirable-semaphore family)
}

// Play plays the steps against clients (by name) once, or with Loop again and again until stop closes;
// stop or ctx's end cuts a cycle short. Faults start through env (Aim drew their targets) and heal within
// their cycle. At the end of a cycle every actor releases what it still holds, latest first, so that
// every critical section is recorded and the next cycle starts from a free lock. It returns how many
// cycles ran to their end.
func (s *Schedule) Play(ctx context.Context, stop <-chan struct{}, clients []locks.Client, rec *history.Recorder,
	env *nemesis.Env, d Defaults) int {
	ctx, cancel := workloads.UntilStop(ctx, stop)
	defer cancel()
	byName := map[string]locks.Client{}
	for _, c := range clients {
		byName[c.Name()] = c
	}
	if env != nil {
		env.Note = func(f string, ts []nemesis.Target, detail string) {
			rec.Fault(f, "step", nemesis.TargetStrings(ts), detail)
		}
	}
	res := workloads.NewResource(rec)
	budget := &faultBudget{tokens: FaultBurst, at: time.Now()}
	defer func() {
		if budget.skipped > 0 { // one record says what was not played
			rec.Event(history.Record{Client: "nemesis", F: FaultsSkipped, Value: history.Int64(budget.skipped),
				Detail: fmt.Sprintf("%d fault steps were not played: over the budget of %d at once and %d a second", budget.skipped, FaultBurst, FaultRate)})
		}
	}()
	keys := s.permitKeys()
	if len(keys) > 0 && len(clients) > 0 {
		// As the semaphore workload: the first client sets each key's permits, and reads what is left at
		// the end (the permits-at-rest check's final read).
		res.Capacity = int(d.Permits)
		for _, k := range keys {
			_, _ = workloads.OpenPermits(clients[0], k, 0, d.Expirable, d.Wait, d.Lease).TrySet(ctx, d.Permits)
		}
		defer func() {
			for _, k := range keys {
				_, _ = workloads.OpenPermits(clients[0], k, 0, d.Expirable, d.Wait, d.Lease).Available(context.WithoutCancel(ctx))
			}
		}()
	}
	n := 0
	for ctx.Err() == nil {
		began := time.Now()
		if !s.cycle(ctx, byName, rec, res, env, d, budget) {
			break
		}
		n++
		if !s.Loop {
			break
		}
		workloads.Sleep(ctx, CycleFloor-time.Since(began)) // a cycle that plays faster is slowed (Paced)
	}
	return n
}

// FaultsSkipped is the event that counts the fault steps a schedule did not play (over its budget).
const FaultsSkipped = "faults-skipped"

// faultBudget is a token bucket of fault steps: FaultBurst at once, FaultRate a second.
type faultBudget struct {
	mu      sync.Mutex
	tokens  float64
	at      time.Time
	skipped int64
}

// take reports whether one more fault may be played now, counting it skipped if not.
func (b *faultBudget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(FaultBurst, b.tokens+now.Sub(b.at).Seconds()*FaultRate)
	b.at = now
	if b.tokens < 1 {
		b.skipped++
		return false
	}
	b.tokens--
	return true
}

// cycle plays every step once; false when ctx ended first.
func (s *Schedule) cycle(ctx context.Context, clients map[string]locks.Client, rec *history.Recorder,
	res *workloads.Resource, env *nemesis.Env, d Defaults, budget *faultBudget) bool {
	start := time.Now()
	done := make([]chan struct{}, len(s.Steps))
	index := map[string]int{}
	for i, st := range s.Steps {
		done[i] = make(chan struct{})
		if st.Name != "" {
			index[st.Name] = i
		}
	}
	// ready waits for step i's turn: its time, then the step it comes after (and its delay).
	ready := func(i int) bool {
		st := s.Steps[i]
		if !workloads.Sleep(ctx, time.Until(start.Add(st.At))) {
			return false
		}
		if st.After != "" {
			select {
			case <-done[index[st.After]]:
			case <-ctx.Done():
				return false
			}
			return workloads.Sleep(ctx, st.Delay)
		}
		return true
	}
	var order []string
	steps := map[string][]int{}
	for i, st := range s.Steps {
		if st.Fault != "" {
			continue
		}
		if _, ok := steps[st.Actor()]; !ok {
			order = append(order, st.Actor())
		}
		steps[st.Actor()] = append(steps[st.Actor()], i)
	}
	var wg, playing sync.WaitGroup
	var actors []*actor
	for _, name := range order {
		idx := steps[name]
		first := s.Steps[idx[0]]
		a := &actor{c: clients[first.Client], thread: first.ThreadID(), rec: rec, res: res, d: d,
			handles: map[handleKey]locks.Mutex{}, secs: map[string]*workloads.Section{}}
		actors = append(actors, a)
		playing.Add(1)
		go func() {
			defer playing.Done()
			if a.c == nil {
				return // Prepare made a client for every actor; nothing to play otherwise
			}
			for _, i := range idx {
				if !ready(i) {
					return
				}
				a.play(ctx, s.Steps[i], func() { close(done[i]) })
			}
		}()
	}
	for i, st := range s.Steps {
		if st.Fault == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !ready(i) || env == nil {
				return
			}
			if !budget.take() { // not played: the steps after it go on
				close(done[i])
				return
			}
			heal := nemesis.Apply(ctx, env, stepFaults{rec, st.Name}, st.Fault, s.aimed[i], st.For)
			close(done[i])
			workloads.Sleep(ctx, st.For)
			heal()
		}()
	}
	// What an actor still holds it keeps until every actor has played its steps: "A takes the lock" in a
	// report means A holds it while the others act, not that it lets go once it has nothing more to do.
	playing.Wait()
	for _, a := range actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.releaseAll(ctx)
		}()
	}
	wg.Wait()
	return ctx.Err() == nil
}

// permitKeys lists the keys the permit steps take, in order of first use.
func (s *Schedule) permitKeys() []string {
	var keys []string
	for _, st := range s.Steps {
		if st.Acquire == Permit && !slices.Contains(keys, st.KeyName()) {
			keys = append(keys, st.KeyName())
		}
	}
	return keys
}

type handleKey struct {
	key string
	op  Op
}

// hold is one acquire of an actor, granted or not, until its release.
type hold struct {
	l       locks.Mutex
	key     string
	granted bool
	// A permit: its semaphore view, id and critical section (each permit is a section of its own).
	p   workloads.Permits
	id  string
	sec *workloads.Section
}

// actor is one client thread playing its steps.
type actor struct {
	c       locks.Client
	thread  int64
	rec     *history.Recorder
	res     *workloads.Resource
	d       Defaults
	handles map[handleKey]locks.Mutex     // one handle per key and mode, as a thread keeps its lock object
	holds   []hold                        // latest last
	secs    map[string]*workloads.Section // per key, the critical section it is inside
}

// play does one step and calls done once its operation has been answered: an acquire is done at its
// answer, before an armed client-pause freezes the actor there, so that steps after it go on meanwhile.
func (a *actor) play(ctx context.Context, st Step, done func()) {
	if st.Leave {
		a.leave(st.KeyName())
		done()
		return
	}
	if st.Release {
		a.release(ctx, st.Name)
		done()
		return
	}
	wait, lease := a.d.Wait, a.d.Lease
	if st.Wait != nil {
		wait = *st.Wait
	}
	if st.Lease != nil {
		lease = *st.Lease
	}
	if st.Acquire == Permit {
		a.acquirePermit(ctx, st.KeyName(), wait, lease)
		done()
		return
	}
	a.acquire(ctx, st.Name, st.KeyName(), st.Acquire, wait, lease, done)
}

// acquirePermit takes one permit as the semaphore workload does, recorded as it records one; granted, the
// permit is a critical section of its own until its release.
func (a *actor) acquirePermit(ctx context.Context, key string, wait, lease time.Duration) {
	p := workloads.OpenPermits(a.c, key, a.thread, a.d.Expirable, wait, lease)
	op := a.rec.Invoke(history.Record{Client: a.c.Name(), Thread: a.thread, Key: key, F: "tryAcquire",
		Args: map[string]int64{"wait_ms": wait.Milliseconds(), "lease_ms": lease.Milliseconds()}})
	begin := time.Now()
	id, ok, err := p.Acquire(ctx)
	outcome.Complete(op, outcome.Call{Refused: !ok, Err: err})
	h := hold{key: key, granted: ok, p: p, id: id}
	if ok {
		h.sec = workloads.EnterPermit(a.rec, a.res, a.c, a.thread, key, id, a.d.Expirable, lease, begin)
	}
	a.holds = append(a.holds, h)
}

// releasePermit gives back a permit hold (a refused expirable one is released all the same, as for locks).
func (a *actor) releasePermit(ctx context.Context, h hold) {
	if h.sec != nil {
		a.c.Gate().Pass()
		h.sec.Exit()
	}
	op := a.rec.Invoke(history.Record{Client: a.c.Name(), Thread: a.thread, Key: h.key, Owner: h.id, F: "releasePermit"})
	outcome.Complete(op, outcome.Call{Err: h.p.Release(ctx, h.id)})
}

// handle is the actor's lock object for key in mode op (nil when the client is of another family: Check
// refuses such a schedule before the run).
func (a *actor) handle(key string, op Op) locks.Mutex {
	k := handleKey{key, op}
	if l := a.handles[k]; l != nil {
		return l
	}
	var l locks.Mutex
	rw, _ := a.c.(locks.RWClient)
	m, _ := a.c.(locks.MutexClient)
	switch {
	case op == Read && rw != nil:
		l = rw.ReadLock(key, a.thread)
	case op == Write && rw != nil:
		l = rw.WriteLock(key, a.thread)
	case op == Lock && m != nil:
		l = m.Mutex([]string{key}, a.thread)
	}
	a.handles[k] = l
	return l
}

// granted counts the actor's holds of key.
func (a *actor) granted(key string) int {
	n := 0
	for _, h := range a.holds {
		if h.granted && h.key == key {
			n++
		}
	}
	return n
}

// op records an operation as the mutex workload does.
// step names the step that made it ("" for the releases at a cycle's end).
func (a *actor) op(step, f string, l locks.Mutex, nested int64, wait, lease time.Duration) *history.Op {
	return a.rec.Invoke(history.Record{Client: a.c.Name(), Thread: a.thread, Key: l.Key(), Owner: l.Owner(), F: f,
		Args: map[string]int64{"wait_ms": wait.Milliseconds(), "lease_ms": lease.Milliseconds(), "nested": nested}, Step: step})
}

// stepFaults records a fault step's fault records with the step's name.
type stepFaults struct {
	rec  *history.Recorder
	step string
}

func (s stepFaults) Fault(kind, phase string, targets []string, detail string) {
	s.rec.FaultStep(s.step, kind, phase, targets, detail)
}

// acquire is a tryLock: a first grant of the key enters its critical section; an acquire while holding it
// is a re-entry (nested 1) with its own lease, inside the section it joins.
func (a *actor) acquire(ctx context.Context, step, key string, op Op, wait, lease time.Duration, done func()) {
	l := a.handle(key, op)
	if l == nil {
		done()
		return
	}
	var nested int64
	if a.granted(key) > 0 {
		nested = 1
	}
	rop := a.op(step, "tryLock", l, nested, wait, lease)
	ok, err := l.TryLock(ctx, wait, lease)
	outcome.Complete(rop, outcome.Call{Refused: !ok, Err: err})
	a.holds = append(a.holds, hold{l: l, key: key, granted: ok})
	if !ok || nested == 1 {
		done()
		return
	}
	mode := ""
	if op != Lock {
		mode = string(op)
	}
	e := workloads.Entry{Key: key, Client: a.c.Name(), Thread: a.thread, Owner: l.Owner(), Mode: mode}
	if f, ok := l.(locks.Fenced); ok {
		e.Token = f.Token()
	}
	if v, ok := l.(locks.Validity); ok && !v.ValidUntil().IsZero() {
		e.Until = a.rec.Clock.At(v.ValidUntil())
	}
	a.secs[key] = a.res.Enter(e)
	done()
	workloads.Frozen(a.c, a.rec)
}

// release unlocks the actor's latest acquire, as the library answers it (an acquire that was refused
// is released all the same: the report's steps say so; but not to a worker that is not thread-bound).
// The last hold of a key leaves its section first, unless a leave step did.
func (a *actor) release(ctx context.Context, step string) {
	if len(a.holds) == 0 {
		return
	}
	h := a.holds[len(a.holds)-1]
	a.holds = a.holds[:len(a.holds)-1]
	if h.p != nil {
		// A plain semaphore's release has no owner: RSemaphore adds a permit for whoever calls it, so a
		// release of a permit never granted is the application making one up, not the lock's fault (the
		// random workload never sends one). An expirable permit's release names its id: it is sent.
		if !h.granted && !a.d.Expirable {
			return
		}
		a.releasePermit(ctx, h)
		return
	}
	if b, ok := h.l.(locks.ThreadBound); ok && !b.ThreadBound() && !h.granted {
		// A worker whose library does not refuse a release by a thread without the lock (no thread-bound
		// cap) is sent no stray release (docs/protocol.md): a void release answers ok whatever it did, and
		// the checkers would judge the caller's mistake as the library's.
		return
	}
	var nested int64
	if a.granted(h.key) > 0 {
		nested = 1
	} else if s := a.secs[h.key]; s != nil && h.granted {
		a.c.Gate().Pass() // a paused client leaves its section only once it runs again
		s.Exit()
		delete(a.secs, h.key)
	}
	op := a.op(step, "unlock", h.l, nested, 0, 0)
	c := outcome.Call{Err: h.l.Unlock(ctx)}
	if errors.Is(c.Err, locks.ErrNotHeld) {
		c.Value = history.Int64(-1)
	}
	outcome.Complete(op, c)
}

// leave ends the actor's critical section on key, if it is inside one, and keeps the lock: a later
// release sends the unlock.
func (a *actor) leave(key string) {
	for i := len(a.holds) - 1; i >= 0; i-- {
		if h := &a.holds[i]; h.key == key && h.sec != nil { // a permit's own section
			a.c.Gate().Pass()
			h.sec.Exit()
			h.sec = nil
			return
		}
	}
	if s := a.secs[key]; s != nil {
		a.c.Gate().Pass()
		s.Exit()
		delete(a.secs, key)
	}
}

// releaseAll releases what the actor still holds at the end of a cycle (once every actor has played its
// steps); a cycle cut short by the run's
// end still sends them (each command bounded by the client's timeout), so that no section is left open.
func (a *actor) releaseAll(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for len(a.holds) > 0 {
		if !a.holds[len(a.holds)-1].granted {
			a.holds = a.holds[:len(a.holds)-1] // refused: nothing to give back
			continue
		}
		a.release(ctx, "")
	}
}
