package lockspec

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
)

// mutex is one hold of a spec mutex, or one half of a spec read-write lock. Its token is made at each
// TryLock and passed to the release and extend of that hold.
type mutex struct {
	c        *client
	key      string
	thread   int64
	acquireO *Op
	releaseO *Op
	read     bool   // a read-write lock's read half (recorded with args.read)
	write    bool   // its write half (recorded owner <id>:<thread>:write, as the family expects)
	hold     string // ".<n>", this hold's number, where the acquire names holds by {{token}}
	mu       sync.Mutex
	token    string
	lease    time.Duration
}

var (
	_ locks.MutexClient = (*client)(nil)
	_ locks.RWClient    = (*rwClient)(nil)
	_ locks.Mutex       = (*mutex)(nil)
)

// Mutex hands out the spec's mutex on keys[0].
func (c *client) Mutex(keys []string, thread int64) locks.Mutex {
	return c.newMutex(&mutex{key: keys[0], thread: thread, acquireO: c.s.Ops["acquire"], releaseO: c.s.Ops["release"]})
}

// newMutex numbers the hold when the acquire stores {{token}}: each hold is then its own owner to the
// checkers, as it is to Redis, so a thread refused by its own earlier hold (one whose acquire timed out
// but ran) is no re-entry the model would expect to be granted. A lock that names holders by {{owner}}
// alone is one owner per thread. The workload makes a new lock value for each acquisition.
func (c *client) newMutex(l *mutex) *mutex {
	l.c = c
	if l.acquireO.usesToken() {
		l.hold = "." + strconv.FormatInt(c.holds.Add(1), 10)
	}
	return l
}

func (l *mutex) Key() string { return l.key }

func (l *mutex) Owner() string {
	if l.write {
		return l.c.owner(l.thread) + l.hold + ":write"
	}
	return l.c.owner(l.thread) + l.hold
}

func (l *mutex) call(op *Op, f string, lease time.Duration) call {
	l.mu.Lock()
	defer l.mu.Unlock()
	args := map[string]int64{}
	if f != "release" {
		args["lease_ms"] = lease.Milliseconds()
	}
	if l.read {
		args["read"] = 1
	}
	return call{op: op, key: l.key, thread: l.thread, owner: l.Owner(), token: l.token, lease: lease, args: args, f: f}
}

// TryLock makes a token and runs the acquire script until granted or wait runs out. A hold taken without
// a lease gets the client's default one, and the watchdog renews it if the spec has one.
func (l *mutex) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	fixed := lease > 0
	if !fixed {
		lease = l.c.lease
	}
	l.mu.Lock()
	l.token, l.lease = l.c.newToken(), lease
	l.mu.Unlock()
	ok, err := l.c.acquire(ctx, l.call(l.acquireO, "acquire", lease), wait)
	if ok && !fixed && l.c.wd != nil && !l.read && !l.write {
		l.c.wd.add(l)
	}
	return ok, err
}

// Unlock runs the release script for this hold; not_held is locks.ErrNotHeld.
func (l *mutex) Unlock(ctx context.Context) error {
	if l.c.wd != nil {
		l.c.wd.remove(l) // whatever the release answers, as Redisson's unlock does
	}
	out, _, err := l.c.retry(ctx, l.call(l.releaseO, "release", l.lease), ambiguousRetries)
	if err == nil && out == NotHeld {
		return locks.ErrNotHeld
	}
	return err
}

// extend runs the extend script for this hold: false when it is no longer held.
func (l *mutex) extend(ctx context.Context) (bool, error) {
	out, _, err := l.c.retry(ctx, l.call(l.c.s.Ops[l.c.s.WatchdogOp], "renew", l.lease), ambiguousRetries)
	return err == nil && out == Extended, err
}

// rwClient is a client of a spec read-write lock.
type rwClient struct{ *client }

func (c rwClient) ReadLock(key string, thread int64) locks.Mutex {
	return c.newMutex(&mutex{key: key, thread: thread, read: true, acquireO: c.s.Ops["read_acquire"],
		releaseO: c.s.Ops["read_release"]})
}

func (c rwClient) WriteLock(key string, thread int64) locks.Mutex {
	return c.newMutex(&mutex{key: key, thread: thread, write: true, acquireO: c.s.Ops["write_acquire"],
		releaseO: c.s.Ops["write_release"]})
}

// watchdog renews, every spec watchdog period, each hold taken without a lease, until it is released or
// the extend says it is no longer held (an error keeps it, unless the spec says on_error: stop).
type watchdog struct {
	c    *client
	mu   sync.Mutex
	held map[*mutex]bool
	stop chan struct{}
	done chan struct{}
}

func newWatchdog(c *client) *watchdog {
	w := &watchdog{c: c, held: map[*mutex]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *watchdog) add(l *mutex) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held[l] = true
}

func (w *watchdog) remove(l *mutex) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.held, l)
}

func (w *watchdog) close() {
	close(w.stop)
	<-w.done
}

func (w *watchdog) loop() {
	defer close(w.done)
	t := time.NewTicker(w.c.s.WatchdogEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.c.gate.Pass() // a frozen client's watchdog is frozen too
		w.mu.Lock()
		var ls []*mutex
		for l := range w.held {
			ls = append(ls, l)
		}
		w.mu.Unlock()
		for _, l := range ls {
			ok, err := l.extend(context.Background())
			if !ok && (err == nil || w.c.s.WatchdogStopsOnError) {
				w.remove(l) // lost, or given up: the holder learns it at release
			}
		}
	}
}

// semaphore is the spec's counting semaphore on one key; permits are tokens with leases.
type semaphore struct {
	c      *client
	key    string
	thread int64
}

// semClient is a client of a spec semaphore.
type semClient struct{ *client }

var _ locks.ExpirableClient = semClient{}

func (c semClient) Expirable(key string, thread int64) locks.Expirable {
	return &semaphore{c: c.client, key: key, thread: thread}
}

func (s *semaphore) permitOwner(token string) string { return s.c.owner(s.thread) + ":" + token }

// TrySetPermits records the capacity the application gives every acquire ({{permits}}). A hand-written
// semaphore has no set-once step: its capacity is an argument, fixed from the start, so this is recorded
// as applied with no command sent (args.local).
func (s *semaphore) TrySetPermits(_ context.Context, n int64) (bool, error) {
	op := s.c.rec.Invoke(history.Record{Client: s.c.name, Thread: s.thread, Key: s.key, F: "setPermits",
		Args: map[string]int64{"permits": n, "local": 1}})
	s.c.sh.mu.Lock()
	_, set := s.c.sh.permits[s.key]
	if !set {
		s.c.sh.permits[s.key] = n
	}
	s.c.sh.mu.Unlock()
	if set {
		op.Fail(nil, errors.New("capacity already set"))
		return false, nil
	}
	op.Ok(nil, nil)
	return true, nil
}

// TryAcquire takes one permit with a lease (0: the client's default), returning its token.
func (s *semaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (string, error) {
	if lease <= 0 {
		lease = s.c.lease
	}
	token := s.c.newToken()
	ok, err := s.c.acquire(ctx, call{op: s.c.s.Ops["acquire_permits"], key: s.key, thread: s.thread,
		owner: s.permitOwner(token), token: token, lease: lease, f: "acquire",
		args: map[string]int64{"lease_ms": lease.Milliseconds(), "permits": 1}}, wait)
	if !ok {
		return "", err
	}
	return token, nil
}

// Release gives back the permit with this token: false when the script says it was not held.
func (s *semaphore) Release(ctx context.Context, token string) (bool, error) {
	out, _, err := s.c.retry(ctx, call{op: s.c.s.Ops["release_permits"], key: s.key, thread: s.thread,
		owner: s.permitOwner(token), token: token, lease: s.c.lease, f: "release",
		args: map[string]int64{"permits": 1}}, ambiguousRetries)
	return err == nil && out == Released, err
}

// Available reads the available permits.
func (s *semaphore) Available(ctx context.Context) (int64, error) {
	out, n, err := s.c.run(ctx, call{op: s.c.s.Ops["available"], key: s.key, thread: s.thread, lease: s.c.lease,
		f: "available"})
	if err != nil || out != Count {
		return -1, err
	}
	return n, nil
}
