package kinds

import (
	"errors"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/topology"
)

// The built-in kinds: lockcheck's Go clients, which behave as Redisson does. A new kind is one more value here.
func init() {
	// pair registers a kind and its negative control, which must be flagged on the fault-free run flags.
	pair := func(k Kind, broken locks.ClientFactory, why string, flags ...string) {
		Register(k)
		b := k
		b.Name, b.Broken, b.Flags, b.New = k.Name+"-broken", why, flags, broken
		b.About = "negative control for " + k.Name + ": " + why
		Register(b)
	}
	redisson := func(v locks.Variant) locks.ClientFactory { return locks.RedissonClients(v, false) }
	broken := func(v locks.Variant) locks.ClientFactory { return locks.RedissonClients(v, true) }
	Register(Kind{Name: "reentrant", About: "Redisson RLock: reentrant hash lock, watchdog, pub/sub wake-up",
		Family: Mutex, Reentrant: true, Watchdog: true, Scripts: "redisson", Topology: topology.Single,
		New: redisson(locks.VariantLock)})
	Register(Kind{Name: "mutex", About: "a library's own lock (every --client library but Redisson): through its worker, --client",
		Family: Mutex, Topology: topology.Single, WorkerOnly: true, AppExtends: true, New: func(locks.Env) (locks.Client, error) {
			return nil, errors.New("lock mutex has no Go client: drive it with --client")
		}})
	Register(Kind{Name: "naive", About: "negative control: SET NX PX, unconditional DEL, fixed lease, no watchdog",
		Family: Mutex, Topology: topology.Single, New: locks.NaiveClients,
		Broken: "lets a holder that outlives its lease delete the next holder's lock", Flags: []string{"--lease", "300ms", "--hold", "400ms-1s"}})
	Register(Kind{Name: "shared-token", About: "negative control: SET NX PX and compare-and-delete with one token per client, shared by its threads",
		Family: Mutex, Topology: topology.Single, New: locks.SharedTokenClients,
		// No flags: the default run's two threads per client show it (a control may not set --threads).
		Broken: "takes the lock again for any thread of the client holding it, so two threads of one client hold it at once"})
	pair(Kind{Name: "fair", About: "Redisson RFairLock: FIFO queue, per-waiter channel, client-clock deadlines",
		Family: Mutex, Reentrant: true, Fair: true, Watchdog: true, Scripts: "redisson", Topology: topology.Single,
		New: redisson(locks.VariantFair)},
		broken(locks.VariantFair), "queues a newcomer at the head instead of the tail, so the latest arrival (often the client that just released it) is granted ahead of those who waited")
	pair(Kind{Name: "multi", About: "Redisson RMultiLock: several RLocks, all or nothing", Family: Mutex,
		Group: true, Watchdog: true, Scripts: "redisson", Topology: topology.Single, New: redisson(locks.VariantMulti)},
		broken(locks.VariantMulti), "keeps the members it got when it gives up, so a failed tryLock leaves a strict subset held",
		"--keys", "3", "--group", "2", "--wait", "300ms", "--hold", "100ms-300ms")
	pair(Kind{Name: "redlock", About: "Redisson RedLock: RLock on each of N masters, majority, sequential, no validity check",
		Family: Mutex, Watchdog: true, Scripts: "redisson", Topology: topology.Redlock, New: locks.RedlockClients(false)},
		locks.RedlockClients(true), "accepts one member (a minority) as enough and tries members in a random order, so two clients each hold some")
	pair(Kind{Name: "redlock-spec", About: "Redlock as the Redis docs specify: parallel SET NX PX, majority and validity",
		Family: Mutex, Scripts: "redisson", Topology: topology.Redlock, New: locks.SpecRedlockClients(false)},
		locks.SpecRedlockClients(true), "accepts one master (a minority) as enough, so racing clients each win some masters and both hold")
	pair(Kind{Name: "rwlock", About: "Redisson RReadWriteLock: mode field, per-reader timeout keys, no upgrade",
		Family: RW, Reentrant: true, Watchdog: true, Scripts: "redisson", Topology: topology.Single, New: redisson(locks.VariantLock)},
		broken(locks.VariantLock), "grants a read lock to anyone while another client holds the write lock")
	pair(Kind{Name: "semaphore", About: "Redisson RSemaphore: permit counter, trySetPermits, pub/sub wake-up",
		Family: Semaphore, Scripts: "redisson", Topology: topology.Single, New: redisson(locks.VariantLock)},
		broken(locks.VariantLock), "each release gives back twice what was taken, so more clients hold permits than exist")
	pair(Kind{Name: "expirable-semaphore", About: "Redisson RPermitExpirableSemaphore: permit ids with leases, lazy reclamation",
		Family: Expirable, Scripts: "redisson", Topology: topology.Single, New: redisson(locks.VariantLock)},
		broken(locks.VariantLock), "issues a permit whether or not one is available")
	pair(Kind{Name: "latch", About: "Redisson RCountDownLatch: trySetCount, countDown, await via pub/sub",
		Family: Latch, Scripts: "redisson", Topology: topology.Single, New: redisson(locks.VariantLock)},
		broken(locks.VariantLock), "applies every countDown twice, so the latch opens after half the count")
	pair(Kind{Name: "fenced", About: "Redisson RFencedLock: RLock plus a token from INCR on every grant",
		Family: Mutex, Reentrant: true, Fenced: true, Watchdog: true, Scripts: "redisson", Topology: topology.Single,
		New: redisson(locks.VariantFenced)},
		broken(locks.VariantFenced), "hands out the token counter's value without incrementing it, so successive holders share a token")
}
