package locks

import (
	"fmt"
	"math/rand/v2"
)

// Variant is which of Redisson's mutex-like primitives a Redisson client's Mutex hands out; the other
// families' primitives (read-write lock, semaphores, latch) need no variant.
type Variant int

// The Redisson mutex variants.
const (
	VariantLock   Variant = iota // RLock
	VariantFenced                // RFencedLock
	VariantFair                  // RFairLock
	VariantMulti                 // RMultiLock over the keys given
)

// redissonClient is one Redisson instance serving every family; the kind picks the primitive.
type redissonClient struct {
	*Redisson
	variant Variant
	broken  bool
}

func (c *redissonClient) Mutex(keys []string, thread int64) Mutex {
	switch c.variant {
	case VariantFenced:
		return c.FencedLock(keys[0], thread, c.broken)
	case VariantFair:
		return c.FairLock(keys[0], thread, c.broken)
	case VariantMulti:
		members := make([]*RLock, len(keys))
		for i, k := range keys {
			members[i] = c.Lock(k, thread)
		}
		m := NewMultiLock(members...)
		m.keepPartial = c.broken
		return m
	}
	return c.Lock(keys[0], thread)
}

func (c *redissonClient) ReadLock(key string, thread int64) Mutex {
	return c.Redisson.ReadLock(key, thread, c.broken)
}

func (c *redissonClient) WriteLock(key string, thread int64) Mutex {
	return c.Redisson.WriteLock(key, thread)
}

func (c *redissonClient) Semaphore(key string, thread int64) Semaphore {
	return c.Redisson.Semaphore(key, thread, c.broken)
}

func (c *redissonClient) Expirable(key string, thread int64) Expirable {
	return c.PermitExpirableSemaphore(key, thread, c.broken)
}

func (c *redissonClient) Latch(key string, thread int64) Latch {
	return c.CountDownLatch(key, thread, c.broken)
}

// RedissonClients makes one Redisson instance per client, whose Mutex is the variant (any for the other
// families); broken selects the negative control's defect.
func RedissonClients(variant Variant, broken bool) ClientFactory {
	return func(e Env) (Client, error) {
		cfg := e.Redisson
		cfg.Gate = e.Gate
		r := NewRedisson(e.Client, e.conn(), cfg, e.Scripts, e.Rec)
		return &redissonClient{Redisson: r, variant: variant, broken: broken}, nil
	}
}

// redlockClient is a RedLock user: one Redisson instance per master.
type redlockClient struct {
	gate   *Gate
	name   string
	rs     []*Redisson
	broken bool
	rng    *rand.Rand
}

func (c *redlockClient) Name() string { return c.name }

func (c *redlockClient) Gate() *Gate { return c.gate }

func (c *redlockClient) Close() error {
	for _, r := range c.rs {
		_ = r.Close()
	}
	return nil
}

func (c *redlockClient) Mutex(keys []string, thread int64) Mutex {
	members := make([]*RLock, len(c.rs))
	for i, r := range c.rs {
		members[i] = r.Lock(keys[0], thread)
	}
	m := NewRedLock(members...)
	if c.broken {
		m.failedLimit, m.shuffle, m.rng = len(members)-1, true, c.rng
	}
	return m
}

func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i+1)
	}
	return out
}

// RedlockClients makes RedissonRedLock users: one Redisson instance per master of the client's Env.
func RedlockClients(broken bool) ClientFactory {
	return func(e Env) (Client, error) {
		c := &redlockClient{name: e.Client, gate: e.Gate, broken: broken, rng: rand.New(rand.NewPCG(rand.Uint64(), 1))}
		cfg := e.Redisson
		cfg.Gate = e.Gate
		for i, a := range e.Addrs {
			c.rs = append(c.rs, NewRedissonOn(e.Client, nodeNames(len(e.Addrs))[i], ClientConfig{Addr: a, Password: e.Password},
				cfg, e.Scripts, e.Rec))
		}
		return c, nil
	}
}

// SpecRedlockClients makes clients of the Redis docs' Redlock algorithm over the client's masters.
func SpecRedlockClients(broken bool) ClientFactory {
	return func(e Env) (Client, error) {
		lease := e.Lease
		if lease <= 0 {
			lease = e.Redisson.WatchdogTimeout
		}
		return NewSpecClient(e.Client, nodeNames(len(e.Addrs)), e.Addrs, e.Password, e.Redisson.Timeout, lease, e.Scripts,
			e.Rec, broken, e.Gate), nil
	}
}

// NaiveClients makes clients of the naive lock (SET NX PX, unconditional DEL): unsafe by design.
func NaiveClients(e Env) (Client, error) {
	lease := e.Lease
	if lease <= 0 {
		lease = e.Redisson.WatchdogTimeout
	}
	return NewNaiveClient(e.Client, newRequestID(), e.conn(), lease, e.Rec), nil
}

// SharedTokenClients makes clients of the shared-token control: SET NX PX and compare-and-delete, with one
// token per client shared by its threads, so two threads of one client both hold the lock.
func SharedTokenClients(e Env) (Client, error) {
	c, err := NaiveClients(e)
	if err == nil {
		c.(*NaiveClient).shared = true
	}
	return c, err
}

// Mutex returns the naive lock called keys[0].
func (c *NaiveClient) Mutex(keys []string, thread int64) Mutex { return c.Lock(keys[0], thread) }

// Name is the client's name in the history.
func (c *NaiveClient) Name() string { return c.name }

// Gate is the client's pause gate.
func (c *NaiveClient) Gate() *Gate { return c.gate }

// Name is the client's name in the history.
func (r *Redisson) Name() string { return r.name }
