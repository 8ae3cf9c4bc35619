package locks

import (
	"fmt"
	"math/rand/v2"
)

// redissonClient is one Redisson instance serving every family; the kind picks the primitive.
type redissonClient struct {
	*Redisson
	variant string // reentrant, fenced, fair, multi
	broken  bool
}

func (c *redissonClient) Mutex(keys []string, thread int64) Mutex {
	switch c.variant {
	case "fenced":
		return c.FencedLock(keys[0], thread, c.broken)
	case "fair":
		return c.FairLock(keys[0], thread, c.broken)
	case "multi":
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

func newRedisson(variant string, broken bool) func(Env) (Client, error) {
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

func newRedlock(broken bool) func(Env) (Client, error) {
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

func newSpec(broken bool) func(Env) (Client, error) {
	return func(e Env) (Client, error) {
		lease := e.Lease
		if lease <= 0 {
			lease = e.Redisson.WatchdogTimeout
		}
		return NewSpecClient(e.Client, nodeNames(len(e.Addrs)), e.Addrs, e.Password, e.Redisson.Timeout, lease, e.Scripts,
			e.Rec, broken, e.Gate), nil
	}
}

func newNaive(e Env) (Client, error) {
	lease := e.Lease
	if lease <= 0 {
		lease = e.Redisson.WatchdogTimeout
	}
	return NewNaiveClient(e.Client, newRequestID(), e.conn(), lease, e.Rec), nil
}

// Mutex returns the naive lock called keys[0].
func (c *NaiveClient) Mutex(keys []string, thread int64) Mutex { return c.Lock(keys[0], thread) }

// Name is the client's name in the history.
func (c *NaiveClient) Name() string { return c.name }

// Gate is the client's pause gate.
func (c *NaiveClient) Gate() *Gate { return c.gate }

// Name is the client's name in the history.
func (r *Redisson) Name() string { return r.name }

func init() {
	// pair registers a kind and its negative control, which must be flagged on the fault-free run flags.
	pair := func(k Kind, broken func(Env) (Client, error), why string, flags ...string) {
		Register(k)
		b := k
		b.Name, b.Broken, b.Flags, b.New = k.Name+"-broken", why, flags, broken
		b.About = "negative control for " + k.Name + ": " + why
		Register(b)
	}
	Register(Kind{Name: "reentrant", About: "Redisson RLock: reentrant hash lock, watchdog, pub/sub wake-up",
		Family: FamilyMutex, Reentrant: true, Scripts: "redisson", Topology: "single", New: newRedisson("reentrant", false)})
	Register(Kind{Name: "naive", About: "negative control: SET NX PX, unconditional DEL, fixed lease, no watchdog",
		Family: FamilyMutex, Topology: "single", New: newNaive,
		Broken: "lets a holder that outlives its lease delete the next holder's lock", Flags: []string{"--lease", "300ms", "--hold", "400ms-1s"}})
	pair(Kind{Name: "fair", About: "Redisson RFairLock: FIFO queue, per-waiter channel, client-clock deadlines",
		Family: FamilyMutex, Reentrant: true, Fair: true, Scripts: "redisson", Topology: "single", New: newRedisson("fair", false)},
		newRedisson("fair", true), "takes a free lock whoever heads the queue, so a client that just released it overtakes the waiters")
	pair(Kind{Name: "multi", About: "Redisson RMultiLock: several RLocks, all or nothing", Family: FamilyMutex,
		Group: true, Scripts: "redisson", Topology: "single", New: newRedisson("multi", false)},
		newRedisson("multi", true), "keeps the members it got when it gives up, so a failed tryLock leaves a strict subset held",
		"--keys", "3", "--group", "2", "--wait", "300ms", "--hold", "100ms-300ms")
	pair(Kind{Name: "redlock", About: "Redisson RedLock: RLock on each of N masters, majority, sequential, no validity check",
		Family: FamilyMutex, Scripts: "redisson", Topology: "redlock", New: newRedlock(false)},
		newRedlock(true), "accepts one member (a minority) as enough and tries members in a random order, so two clients each hold some")
	pair(Kind{Name: "redlock-spec", About: "Redlock as the Redis docs specify: parallel SET NX PX, majority and validity",
		Family: FamilyMutex, Scripts: "redisson", Topology: "redlock", New: newSpec(false)},
		newSpec(true), "accepts one master (a minority) as enough, so racing clients each win some masters and both hold")
	pair(Kind{Name: "rwlock", About: "Redisson RReadWriteLock: mode field, per-reader timeout keys, no upgrade",
		Family: FamilyRW, Reentrant: true, Scripts: "redisson", Topology: "single", New: newRedisson("rwlock", false)},
		newRedisson("rwlock", true), "grants a read lock to anyone while another client holds the write lock")
	pair(Kind{Name: "semaphore", About: "Redisson RSemaphore: permit counter, trySetPermits, pub/sub wake-up",
		Family: FamilySemaphore, Scripts: "redisson", Topology: "single", New: newRedisson("semaphore", false)},
		newRedisson("semaphore", true), "each release gives back twice what was taken, so more clients hold permits than exist")
	pair(Kind{Name: "expirable-semaphore", About: "Redisson RPermitExpirableSemaphore: permit ids with leases, lazy reclamation",
		Family: FamilyExpirable, Scripts: "redisson", Topology: "single", New: newRedisson("expirable", false)},
		newRedisson("expirable", true), "issues a permit whether or not one is available")
	pair(Kind{Name: "latch", About: "Redisson RCountDownLatch: trySetCount, countDown, await via pub/sub",
		Family: FamilyLatch, Scripts: "redisson", Topology: "single", New: newRedisson("latch", false)},
		newRedisson("latch", true), "applies every countDown twice, so the latch opens after half the count")
	pair(Kind{Name: "fenced", About: "Redisson RFencedLock: RLock plus a token from INCR on every grant",
		Family: FamilyMutex, Reentrant: true, Fenced: true, Scripts: "redisson", Topology: "single", New: newRedisson("fenced", false)},
		newRedisson("fenced", true), "hands out the token counter's value without incrementing it, so successive holders share a token")
}
