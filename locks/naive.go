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
}

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

// Owner is the value stored in the key.
func (l *Naive) Owner() string { return l.c.ID + ":" + strconv.FormatInt(l.thread, 10) }

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
			ok, err := l.c.rdb.SetNX(cmdCtx, l.name, l.Owner(), lease).Result()
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

// Unlock deletes the key, whoever holds it.
func (l *Naive) Unlock(ctx context.Context) error {
	_, refused, err := record(l.c.rec, l.op("release", nil), func() (*int64, bool, error) {
		n, err := l.c.rdb.Del(context.WithoutCancel(ctx), l.name).Result()
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
