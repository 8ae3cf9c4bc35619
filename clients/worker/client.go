package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

// A worker's calls are recorded as the Go clients record their commands, so the same checkers judge them:
// a mutex or read-write acquire is one "acquire" per key (args lease_ms, and read for a read hold; a
// refusal fails with value -2, as the naive Go lock's), a release one "release" per key (value 1 when the
// last hold went, 0 when a re-entrant hold is left; "not held" fails with value -1). The lease of a grant
// with lease 0 from a worker with a watchdog is the watchdog's, marked watchdog=1: the worker renews it
// unseen. Semaphore, expirable-semaphore and latch calls do not carry what the count models need (the
// count after each command), so they are recorded as "lcp_<request>" operations that the models skip,
// and judged by the resource's exclusion and the workloads' own checks.

var (
	_ locks.MutexClient     = (*Client)(nil)
	_ locks.RWClient        = (*Client)(nil)
	_ locks.SemaphoreClient = (*Client)(nil)
	_ locks.ExpirableClient = (*Client)(nil)
	_ locks.LatchClient     = (*Client)(nil)
)

// owner is the owner id of a worker thread in the history: a thread is an owner (docs/protocol.md).
func (c *Client) owner(thread int64) string { return fmt.Sprintf("%s:%d", c.cfg.Client, thread) }

// Caps reports whether the worker announced a capability.
func (c *Client) Caps(name string) bool { return c.caps[name] }

// lease is the lease sent with an acquire: the caller's; with 0, the worker's watchdog keeps the lock
// if it has one, else the run's fixed lease (--lease, or the watchdog timeout) is sent, so the history
// knows it. A sent lease is fitted to the worker's granularity (Fit), and recorded as sent.
func (c *Client) lease(lease time.Duration) (sent, recorded time.Duration, watchdog bool) {
	o := c.cfg.Init.Options
	switch {
	case lease > 0:
	case o == nil:
		return 0, 0, false
	case c.caps["watchdog"]:
		return 0, time.Duration(o.WatchdogMs) * time.Millisecond, true
	case o.LeaseMs > 0:
		lease = time.Duration(o.LeaseMs) * time.Millisecond
	default:
		lease = time.Duration(o.WatchdogMs) * time.Millisecond
	}
	lease = c.Fit(lease)
	return lease, lease, false
}

// MaxLeaseGranularity bounds init_ok's lease_granularity_ms: a larger one is refused at init.
const MaxLeaseGranularity = time.Hour

// LeaseGranularity is the unit the worker's library counts leases in (init_ok's lease_granularity_ms),
// 0 when it takes any number of milliseconds.
func (c *Client) LeaseGranularity() time.Duration {
	return time.Duration(c.Info.LeaseGranularityMs) * time.Millisecond
}

// Fit is the lease lockcheck sends for d: d itself, or for a worker that announced a granularity the
// nearest multiple of it, at least one. Decided at init, so that a library whose leases are whole
// seconds is never sent one it must refuse (every acquire of a --lease 1s-3s run refused, else).
func (c *Client) Fit(d time.Duration) time.Duration { return FitLease(d, c.LeaseGranularity()) }

// FitLease is d rounded to the nearest multiple of g, at least g; d itself when g or d is not positive.
func FitLease(d, g time.Duration) time.Duration {
	if g <= 0 || d <= 0 {
		return d
	}
	return max(g, (d+g/2)/g*g)
}

// do sends req, invoking one operation per record as it is written, and returns the ops to complete. An
// error before anything was written comes back with no ops.
func (c *Client) do(req sdk.Message, recs []history.Record) (sdk.Message, []*history.Op, error) {
	var ops []*history.Op
	reply, err := c.call(req, func() {
		for _, r := range recs {
			ops = append(ops, c.cfg.Rec.Invoke(r))
		}
	})
	if err == nil && reply.Type == sdk.TypeError {
		code := sdk.CodeCrash
		if reply.Code != nil {
			code = *reply.Code
		}
		err = &Error{Client: c.cfg.Client, Code: code, Text: printable(reply.Text), sure: sdk.Definite(code)}
	}
	return reply, ops, err
}

// settle completes ops after an error: definite ones failed (a "not held" with value -1, as the mutex
// model reads it), others are unknown.
func settle(ops []*history.Op, err error, notHeld bool) {
	c := outcome.Call{Err: err}
	if notHeld {
		c.Value = history.Int64(-1) // error 40 is definite (sdk.Definite)
	}
	for _, op := range ops {
		outcome.Complete(op, c)
	}
}

// errGroupOutcome completes each member's command of a group (MultiLock, RedLock) that the library answered
// "refused" or "not held" as a whole: which members it took and let go, or found not held, the worker cannot
// say (a refused group may have taken some members for twice its wait), so no member is claimed refused.
var errGroupOutcome = errors.New("answered for the group as a whole: this member's own outcome is not known")

func isCode(err error, code int) bool {
	e, ok := err.(*Error)
	return ok && e.Code == code
}

// mutex is one thread's hold on keys (one, or a group), through the worker.
type mutex struct {
	c      *Client
	keys   []string
	thread int64
	mode   string // read or write for a read-write lock
	lease  time.Duration
	wd     bool
	token  int64
}

// Mutex returns the lock on keys for thread.
func (c *Client) Mutex(keys []string, thread int64) locks.Mutex {
	return &mutex{c: c, keys: keys, thread: thread}
}

// ReadLock returns the read half of the read-write lock called key.
func (c *Client) ReadLock(key string, thread int64) locks.Mutex {
	return &mutex{c: c, keys: []string{key}, thread: thread, mode: "read"}
}

// WriteLock returns the write half.
func (c *Client) WriteLock(key string, thread int64) locks.Mutex {
	return &mutex{c: c, keys: []string{key}, thread: thread, mode: "write"}
}

func (l *mutex) Key() string   { return l.keys[0] }
func (l *mutex) Owner() string { return l.c.owner(l.thread) }

// Token is the fencing token of the last grant (0: none).
func (l *mutex) Token() int64 { return l.token }

func (l *mutex) records(f string, lease time.Duration, wd bool) []history.Record {
	var out []history.Record
	for _, k := range l.keys {
		args := map[string]int64{"lease_ms": lease.Milliseconds()}
		if wd {
			args["watchdog"] = 1
		}
		if l.mode == "read" {
			args["read"] = 1
		}
		out = append(out, history.Record{Client: l.c.cfg.Client, Thread: l.thread, Key: k, Owner: l.Owner(), F: f, Args: args})
	}
	return out
}

func (l *mutex) TryLock(_ context.Context, wait, lease time.Duration) (bool, error) {
	sent, recorded, wd := l.c.lease(lease)
	req := sdk.Message{Type: sdk.TypeAcquire, Thread: wireThread(l.thread), Keys: l.keys, Mode: l.mode,
		WaitMs: wait.Milliseconds(), LeaseMs: sent.Milliseconds()}
	reply, ops, err := l.c.do(req, l.records("acquire", recorded, wd))
	if err != nil {
		settle(ops, err, false)
		if !outcome.Definite(err) { // it may hold one more than lockcheck counts
			l.c.mu.Lock()
			for _, k := range l.keys {
				l.c.unsure[holdKey{l.thread, k}] = true
			}
			l.c.mu.Unlock()
		}
		return false, err
	}
	if reply.Granted == nil || !*reply.Granted {
		for _, op := range ops {
			if len(l.keys) > 1 {
				op.Fail(nil, errGroupOutcome) // says nothing of this member: the models leave it out
			} else {
				op.Fail(history.Int64(-2), nil) // refused: held by someone
			}
		}
		return false, nil
	}
	l.lease, l.wd = recorded, wd
	l.token = 0
	if reply.Token != nil {
		l.token = *reply.Token
	}
	// reply.ValidMs (Redlock's validity) does not end the critical section, as locks.Validity would: the
	// application lockcheck plays for a library writes as its users do, and no library here tells them to
	// stop writing at it (redlock's lock.expiration, redsync's Until, pottery's locked()). A holder paused
	// beyond it really writes late, and exclusion must count that write.
	l.c.mu.Lock()
	for _, k := range l.keys {
		l.c.holds[holdKey{l.thread, k}]++
		delete(l.c.lost, holdKey{l.thread, k})
	}
	l.c.mu.Unlock()
	for _, k := range l.keys {
		l.c.losses.Arm(k, l.Owner(), l.c.caps["events"])
	}
	if l.mode == "read" {
		l.c.cfg.Readers.add(l.keys[0], 1)
	}
	var token *int64 // the fencing-tokens checker reads a grant's token as its value
	if l.token != 0 {
		token = &l.token
	}
	for _, op := range ops {
		op.Ok(token, nil)
	}
	return true, nil
}

func (l *mutex) Unlock(_ context.Context) error {
	req := sdk.Message{Type: sdk.TypeRelease, Thread: wireThread(l.thread), Keys: l.keys, Mode: l.mode}
	recs := l.records("release", l.lease, l.wd)
	l.c.mu.Lock()
	for i, k := range l.keys {
		// An unlock reply does not say whether the lock is still held, and lockcheck's count of holds is
		// only sure when this is the last one and no acquire ended unknown: an outer hold that was lost
		// (its lease ran out) makes a nested acquire a fresh grant, whose release frees the lock.
		if h := (holdKey{l.thread, k}); l.mode != "read" && (l.c.holds[h] > 1 || l.c.unsure[h]) {
			recs[i].Args["uncertain"] = 1
		}
	}
	l.c.mu.Unlock()
	_, ops, err := l.c.do(req, recs)
	notHeld := isCode(err, sdk.CodeNotHeld)
	if notHeld || err == nil {
		l.c.mu.Lock()
		for i, k := range l.keys {
			h := holdKey{l.thread, k}
			if l.mode == "read" && (notHeld || l.c.holds[h] > 0) {
				// A read release frees the lock when it was the last read hold of any client: the run's
				// count, in the order the replies came (overlapping releases may be ordered either way).
				if left := l.c.cfg.Readers.add(k, -1); err == nil && i < len(ops) {
					ops[i].Ok(history.Int64(b2i(left == 0)), nil)
				}
				if l.c.holds[h]--; l.c.holds[h] <= 0 || notHeld {
					delete(l.c.holds, h)
				}
				continue
			}
			if notHeld || l.c.holds[h] <= 1 {
				delete(l.c.holds, h)
				delete(l.c.unsure, h)
				if err == nil && i < len(ops) {
					ops[i].Ok(history.Int64(1), nil)
				}
				continue
			}
			l.c.holds[h]--
			if i < len(ops) {
				ops[i].Ok(history.Int64(0), nil) // a re-entrant hold is left
			}
		}
		l.c.mu.Unlock()
	}
	if notHeld {
		if len(l.keys) > 1 {
			for _, op := range ops {
				op.Fail(nil, errGroupOutcome)
			}
		} else {
			settle(ops, err, true)
		}
		return fmt.Errorf("%w: %v", locks.ErrNotHeld, err)
	}
	if err != nil {
		settle(ops, err, false)
	}
	return err
}

// counted is one semaphore, expirable semaphore or latch call on key, recorded as lcp_<type>.
func (c *Client) counted(req sdk.Message, owner string, args map[string]int64) (sdk.Message, error) {
	thread := req.Thread
	if thread == setupThread {
		thread = 0
	}
	rec := history.Record{Client: c.cfg.Client, Thread: thread, Key: req.Key, Owner: owner, F: "lcp_" + req.Type, Args: args}
	reply, ops, err := c.do(req, []history.Record{rec})
	if err != nil {
		settle(ops, err, false)
		return reply, err
	}
	var v *int64
	switch {
	case reply.Value != nil:
		v = reply.Value
	case reply.Granted != nil:
		v = history.Int64(b2i(*reply.Granted))
	case reply.Set != nil:
		v = history.Int64(b2i(*reply.Set))
	case reply.Released != nil:
		v = history.Int64(b2i(*reply.Released))
	case reply.Done != nil:
		v = history.Int64(b2i(*reply.Done))
	}
	for _, op := range ops {
		op.Ok(v, nil)
	}
	return reply, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func yes(p *bool) bool { return p != nil && *p }

// Readers counts the read holds of every client of a run on each key, so that a worker's read release
// can be recorded as freeing the lock (the last one) or not, as the read-write model expects. A nil
// *Readers counts nothing.
type Readers struct {
	mu sync.Mutex
	n  map[string]int
}

// NewReaders returns a run's count.
func NewReaders() *Readers { return &Readers{n: map[string]int{}} }

func (r *Readers) add(key string, d int) int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[key] = max(r.n[key]+d, 0)
	return r.n[key]
}

type semaphore struct {
	c      *Client
	key    string
	thread int64
}

// Semaphore returns the semaphore called key.
func (c *Client) Semaphore(key string, thread int64) locks.Semaphore {
	return &semaphore{c: c, key: key, thread: thread}
}

func (s *semaphore) msg(t string, n int64) sdk.Message {
	return sdk.Message{Type: t, Thread: wireThread(s.thread), Key: s.key, N: n}
}

// setupThread is the protocol thread of the workloads' set-up calls (their thread 0): threads are positive.
const setupThread = 1 << 20

func wireThread(t int64) int64 {
	if t <= 0 {
		return setupThread
	}
	return t
}

func (s *semaphore) TrySetPermits(_ context.Context, n int64) (bool, error) {
	r, err := s.c.counted(s.msg(sdk.TypeSetPermits, n), s.c.owner(s.thread), map[string]int64{"permits": n})
	return yes(r.Set), err
}

func (s *semaphore) TryAcquire(_ context.Context, n int64, wait time.Duration) (bool, error) {
	m := s.msg(sdk.TypeAcquirePermits, n)
	m.WaitMs = wait.Milliseconds()
	r, err := s.c.counted(m, s.c.owner(s.thread), map[string]int64{"permits": n, "wait_ms": m.WaitMs})
	return yes(r.Granted), err
}

func (s *semaphore) Release(_ context.Context, n int64) error {
	_, err := s.c.counted(s.msg(sdk.TypeReleasePermits, n), s.c.owner(s.thread), map[string]int64{"permits": n})
	return err
}

func (s *semaphore) Available(_ context.Context) (int64, error) {
	r, err := s.c.counted(s.msg(sdk.TypeAvailable, 0), s.c.owner(s.thread), nil)
	if err != nil || r.Value == nil {
		return -1, err
	}
	return *r.Value, nil
}

type expirable struct{ semaphore }

// Expirable returns the permit-expirable semaphore called key.
func (c *Client) Expirable(key string, thread int64) locks.Expirable {
	return &expirable{semaphore{c: c, key: key, thread: thread}}
}

func (e *expirable) TryAcquire(_ context.Context, wait, lease time.Duration) (string, error) {
	m := e.msg(sdk.TypeAcquirePermit, 0)
	m.WaitMs, m.LeaseMs = wait.Milliseconds(), e.c.Fit(lease).Milliseconds()
	r, err := e.c.counted(m, e.c.owner(e.thread), map[string]int64{"wait_ms": m.WaitMs, "lease_ms": m.LeaseMs})
	if err != nil || r.Permit == nil {
		return "", err
	}
	return *r.Permit, nil
}

func (e *expirable) Release(_ context.Context, id string) (bool, error) {
	m := e.msg(sdk.TypeReleasePermit, 0)
	m.Permit = &id
	r, err := e.c.counted(m, id, nil)
	return yes(r.Released), err
}

type latch struct{ semaphore }

// Latch returns the count-down latch called key.
func (c *Client) Latch(key string, thread int64) locks.Latch {
	return &latch{semaphore{c: c, key: key, thread: thread}}
}

func (l *latch) TrySetCount(_ context.Context, n int64) (bool, error) {
	r, err := l.c.counted(l.msg(sdk.TypeSetCount, n), l.c.owner(l.thread), map[string]int64{"count": n})
	return yes(r.Set), err
}

func (l *latch) CountDown(_ context.Context) error {
	_, err := l.c.counted(l.msg(sdk.TypeCountDown, 0), l.c.owner(l.thread), nil)
	return err
}

func (l *latch) Await(_ context.Context, wait time.Duration) (bool, error) {
	m := l.msg(sdk.TypeAwait, 0)
	m.WaitMs = wait.Milliseconds()
	r, err := l.c.counted(m, l.c.owner(l.thread), map[string]int64{"wait_ms": m.WaitMs})
	return yes(r.Done), err
}
