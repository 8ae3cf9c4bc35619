package locks

import (
	"context"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/redis/go-redis/v9"
)

// Naive is the negative control: SET NX PX to acquire, an unconditional DEL to release, a fixed lease and no
// watchdog. A holder that outlives its lease deletes the next holder's lock, so it is unsafe by design.
type Naive struct {
	c      *NaiveClient
	name   string
	thread int64
	lease  time.Duration
}

// NaiveClient is one client of the naive lock.
type NaiveClient struct {
	ID    string
	name  string
	rdb   redis.UniversalClient
	rec   Recorder
	lease time.Duration // used when TryLock gets lease 0
	gate  *Gate
	poll  time.Duration
	// shared is the shared-token control's defect: the client keeps one token for all its threads (an
	// application sharing one lock object between tasks), takes the lock again when the key holds that
	// token, and releases by compare-and-delete of it. Two threads of one client both hold the lock.
	shared bool
}

// sharedAcquire sets the key to the token unless another token holds it; it answers -1 on a grant, else
// the key's pttl.
var sharedAcquire = redis.NewScript(`local v = redis.call('get', KEYS[1])
if v == false or v == ARGV[1] then redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2]) return -1 end
return redis.call('pttl', KEYS[1])`)

// sharedRelease deletes the key while it holds the token.
var sharedRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

// NewNaiveClient connects one naive client. defaultLease applies when a caller asks for lease 0.
func NewNaiveClient(name, id string, conn ClientConfig, defaultLease time.Duration, rec Recorder) *NaiveClient {
	return &NaiveClient{ID: id, name: name, rdb: NewClient(conn), rec: rec, lease: defaultLease, gate: conn.Gate,
		poll: 25 * time.Millisecond}
}

// Lock returns the naive lock called name for one thread.
func (c *NaiveClient) Lock(name string, thread int64) *Naive {
	return &Naive{c: c, name: name, thread: thread}
}

// Close closes the connections.
func (c *NaiveClient) Close() error { return c.rdb.Close() }

var _ Mutex = (*Naive)(nil)

// Key is the lock's Redis key.
func (l *Naive) Key() string { return l.name }

// Owner is the value stored in the key: the thread's own, or for the shared-token control the thread as the
// application knows it (the key holds the client's one token, which does not tell threads apart).
func (l *Naive) Owner() string { return l.c.ID + ":" + strconv.FormatInt(l.thread, 10) }

// value is what the key holds while l holds it.
func (l *Naive) value() string {
	if l.c.shared {
		return l.c.ID
	}
	return l.Owner()
}

func (l *Naive) op(f string, args map[string]int64) history.Record {
	return history.Record{Client: l.c.name, Thread: l.thread, Key: l.name, Owner: l.Owner(), F: f, Args: args}
}

// TryLock polls SET NX PX until it wins or wait runs out.
func (l *Naive) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if lease <= 0 {
		lease = l.c.lease
	}
	deadline := time.Now().Add(wait)
	cmdCtx := context.WithoutCancel(ctx) // ctx ends waiting; a command in flight always finishes
	for {
		_, refused, err := record(l.c.rec, l.op("acquire", msArgs("lease_ms", lease)), func() (*int64, bool, error) {
			ok, err := l.setNX(cmdCtx, lease)
			if err != nil {
				return nil, false, err
			}
			if !ok {
				return history.Int64(-2), true, nil // the value says only "held by someone"
			}
			return nil, false, nil
		})
		if err != nil || !refused {
			return err == nil, err
		}
		if time.Until(deadline) <= 0 || !sleepCtx(ctx, min(l.c.poll, time.Until(deadline))) {
			return false, nil
		}
	}
}

// setNX is one acquire attempt: SET NX PX, or the shared-token control's script.
func (l *Naive) setNX(ctx context.Context, lease time.Duration) (bool, error) {
	if l.c.shared {
		n, err := sharedAcquire.Run(ctx, l.c.rdb, []string{l.name}, l.value(), lease.Milliseconds()).Int64()
		return n == -1, err
	}
	return l.c.rdb.SetNX(ctx, l.name, l.value(), lease).Result()
}

// Unlock deletes the key, whoever holds it (the shared-token control: while it holds the client's token).
func (l *Naive) Unlock(ctx context.Context) error {
	_, refused, err := record(l.c.rec, l.op("release", nil), func() (*int64, bool, error) {
		var n int64
		var err error
		if l.c.shared {
			n, err = sharedRelease.Run(context.WithoutCancel(ctx), l.c.rdb, []string{l.name}, l.value()).Int64()
		} else {
			n, err = l.c.rdb.Del(context.WithoutCancel(ctx), l.name).Result()
		}
		if err != nil {
			return nil, false, err
		}
		if n == 0 {
			return history.Int64(-1), true, nil
		}
		return history.Int64(1), false, nil
	})
	if err == nil && refused {
		return ErrNotHeld
	}
	return err
}
