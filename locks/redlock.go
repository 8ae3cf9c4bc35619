package locks

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/redis/go-redis/v9"
)

// SpecRedlock is the algorithm of the Redis documentation over N independent masters: SET NX PX to all of
// them in parallel, then the lock is held iff a majority said OK and the validity
// ttl - elapsed - (ttl*0.01 + 2ms) is still positive; otherwise every instance is released and, after a
// random delay, it tries again while the wait lasts.
type SpecRedlock struct {
	c      *SpecClient
	name   string
	thread int64
	until  time.Time
}

// SpecClient is one client of the spec Redlock: one connection pool per master.
type SpecClient struct {
	ID      string
	name    string
	nodes   []string
	rdbs    []redis.UniversalClient
	rec     Recorder
	scripts *Scripts
	lease   time.Duration // used when TryLock gets lease 0
	// quorum is n/2+1; the negative control accepts 1 (a minority).
	quorum int
	rng    *rand.Rand
	mu     sync.Mutex
	gate   *Gate
}

// NewSpecClient connects to every master (addrs[i] is node nodes[i]).
func NewSpecClient(name string, nodes, addrs []string, password string, timeout, lease time.Duration,
	scripts *Scripts, rec Recorder, minority bool, gate *Gate) *SpecClient {
	c := &SpecClient{ID: newRequestID(), name: name, nodes: nodes, rec: rec, scripts: scripts, lease: lease,
		quorum: len(addrs)/2 + 1, rng: rand.New(rand.NewPCG(rand.Uint64(), 0)), gate: gate}
	if minority {
		c.quorum = 1
	}
	for _, a := range addrs {
		c.rdbs = append(c.rdbs, NewClient(ClientConfig{Addr: a, Password: password, Timeout: timeout, Gate: gate}))
	}
	return c
}

// Name is the client's name in the history.
func (c *SpecClient) Name() string { return c.name }

// Gate is the client's pause gate.
func (c *SpecClient) Gate() *Gate { return c.gate }

// Close closes every pool.
func (c *SpecClient) Close() error {
	for _, r := range c.rdbs {
		_ = r.Close()
	}
	return nil
}

// Mutex returns the Redlock called keys[0].
func (c *SpecClient) Mutex(keys []string, thread int64) Mutex {
	return &SpecRedlock{c: c, name: keys[0], thread: thread}
}

// Key is the lock's name on every master.
func (l *SpecRedlock) Key() string { return l.name }

// Owner is the value stored on the masters.
func (l *SpecRedlock) Owner() string { return l.c.ID + ":" + strconv.FormatInt(l.thread, 10) }

// ValidUntil is when the last grant's validity ends.
func (l *SpecRedlock) ValidUntil() time.Time { return l.until }

func (l *SpecRedlock) op(node int, f string, args map[string]int64) history.Record {
	return history.Record{Client: l.c.name, Node: l.c.nodes[node], Thread: l.thread, Key: l.name, Owner: l.Owner(),
		F: f, Args: args}
}

// each runs f against every master in parallel.
func (l *SpecRedlock) each(f func(i int)) {
	var wg sync.WaitGroup
	for i := range l.c.rdbs {
		wg.Add(1)
		go func() { defer wg.Done(); f(i) }()
	}
	wg.Wait()
}

// TryLock runs acquisition rounds until one holds a valid majority or wait runs out.
func (l *SpecRedlock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if lease <= 0 {
		lease = l.c.lease
	}
	cmdCtx := context.WithoutCancel(ctx)
	deadline := time.Now().Add(wait)
	drift := lease/100 + 2*time.Millisecond
	for {
		start := time.Now()
		var mu sync.Mutex
		votes := 0
		l.each(func(i int) {
			_, refused, err := record(l.c.rec, l.op(i, "acquire", msArgs("lease_ms", lease)), func() (*int64, bool, error) {
				ok, err := l.c.rdbs[i].SetNX(cmdCtx, l.name, l.Owner(), lease).Result()
				if err != nil {
					return nil, false, err
				}
				if !ok {
					return history.Int64(-2), true, nil
				}
				return nil, false, nil
			})
			if err == nil && !refused {
				mu.Lock()
				votes++
				mu.Unlock()
			}
		})
		validity := lease - time.Since(start) - drift
		if votes >= l.c.quorum && validity > 0 {
			l.until = start.Add(lease - drift)
			return true, nil
		}
		l.releaseAll(cmdCtx)
		l.c.mu.Lock()
		pause := time.Duration(50+l.c.rng.IntN(200)) * time.Millisecond
		l.c.mu.Unlock()
		if time.Until(deadline) <= pause || !sleepCtx(ctx, pause) {
			return false, nil
		}
	}
}

// releaseAll deletes our value from every master that still has it.
func (l *SpecRedlock) releaseAll(ctx context.Context) (released int, err error) {
	var mu sync.Mutex
	l.each(func(i int) {
		v, refused, rerr := record(l.c.rec, l.op(i, "release", nil), func() (*int64, bool, error) {
			n, err := l.c.scripts.Get("spec_release").Run(ctx, l.c.rdbs[i], []string{l.name}, l.Owner()).Int64()
			if err != nil {
				return nil, false, err
			}
			if n == 0 {
				return history.Int64(-1), true, nil
			}
			return history.Int64(1), false, nil
		})
		mu.Lock()
		defer mu.Unlock()
		if rerr != nil && err == nil {
			err = rerr
		}
		if rerr == nil && !refused && v != nil {
			released++
		}
	})
	return released, err
}

// Unlock releases every master. It is ErrNotHeld when no master still had our value.
func (l *SpecRedlock) Unlock(ctx context.Context) error {
	n, err := l.releaseAll(context.WithoutCancel(ctx))
	if err == nil && n == 0 {
		return ErrNotHeld
	}
	return err
}
