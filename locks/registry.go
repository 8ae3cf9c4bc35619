package locks

import (
	"context"
	"net"
	"time"
)

// Env is what a lock client needs to connect: its name, the addresses of the nodes (through its own
// proxies, one per node in order), the password, the script set and the recorder.
type Env struct {
	Client   string
	Addrs    []string
	Password string
	Scripts  *Scripts
	Redisson RedissonConfig
	Lease    time.Duration // the run's --lease, for locks that need a fixed one
	Rec      Recorder
	Gate     *Gate // pauses the client and skews its clock; nil for none
	// Sentinel, on the sentinel topology, is how to reach the primary (Addrs are then the data nodes).
	Sentinel *SentinelConn
	// Cluster, on the cluster topology, is how to reach the cluster (Addrs are then the data nodes).
	Cluster *ClusterConn
}

// ClusterConn is a cluster-mode connection's settings.
type ClusterConn struct {
	Addrs  []string
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

// SentinelConn is a Sentinel-mode connection's settings.
type SentinelConn struct {
	Addrs      []string
	MasterName string
	Dialer     func(ctx context.Context, network, addr string) (net.Conn, error)
}

// conn is the connection settings of a client of one master: the first node, or the Sentinels' primary.
func (e Env) conn() ClientConfig {
	c := ClientConfig{Addr: e.Addrs[0], Password: e.Password, Timeout: e.Redisson.Timeout, Gate: e.Gate}
	if e.Sentinel != nil {
		c.Sentinels, c.MasterName, c.Dialer = e.Sentinel.Addrs, e.Sentinel.MasterName, e.Sentinel.Dialer
	}
	if e.Cluster != nil {
		c.Cluster, c.Dialer = e.Cluster.Addrs, e.Cluster.Dialer
	}
	return c
}

// Client is one client instance of some lock kind; it also implements its family's interface.
type Client interface {
	Name() string
	Close() error
	// Gate pauses the client and skews its clock (nil: the client cannot be paused).
	Gate() *Gate
}

// MutexClient hands out mutex-like locks; keys has one name, or several for a multi lock.
type MutexClient interface {
	Client
	Mutex(keys []string, thread int64) Mutex
}

// Fenced is a Mutex whose grants carry a fencing token.
type Fenced interface{ Token() int64 }

// Validity is a Mutex whose holder must stop by a deadline (the Redlock validity time).
type Validity interface{ ValidUntil() time.Time }

// RWClient hands out the two halves of a read-write lock.
type RWClient interface {
	Client
	ReadLock(key string, thread int64) Mutex
	WriteLock(key string, thread int64) Mutex
}

// Semaphore is a counting semaphore whose permits nobody owns.
type Semaphore interface {
	TrySetPermits(ctx context.Context, n int64) (bool, error)
	TryAcquire(ctx context.Context, n int64, wait time.Duration) (bool, error)
	Release(ctx context.Context, n int64) error
	// Available reads the available permits (recorded as "available").
	Available(ctx context.Context) (int64, error)
}

// SemaphoreClient hands out semaphores.
type SemaphoreClient interface {
	Client
	Semaphore(key string, thread int64) Semaphore
}

// Expirable is a semaphore whose permits have ids and leases.
type Expirable interface {
	TrySetPermits(ctx context.Context, n int64) (bool, error)
	// TryAcquire returns the permit id, or "" when none came within wait.
	TryAcquire(ctx context.Context, wait, lease time.Duration) (string, error)
	// Release returns false when the permit had already expired (it is reclaimed all the same).
	Release(ctx context.Context, id string) (bool, error)
	// Available reclaims expired permits and reads the available ones (recorded as "available").
	Available(ctx context.Context) (int64, error)
}

// ExpirableClient hands out permit-expirable semaphores.
type ExpirableClient interface {
	Client
	Expirable(key string, thread int64) Expirable
}

// Latch is a count-down latch.
type Latch interface {
	TrySetCount(ctx context.Context, n int64) (bool, error)
	CountDown(ctx context.Context) error
	// Await returns true once the count is zero, false when wait ran out first.
	Await(ctx context.Context, wait time.Duration) (bool, error)
}

// LatchClient hands out latches.
type LatchClient interface {
	Client
	Latch(key string, thread int64) Latch
}

// ClientFactory makes one client of a lock kind from its Env: the seam through which a built-in Go lock, an
// out-of-process worker (one process per client, speaking docs/protocol.md) and a user's spec-defined Lua
// lock all plug in. The client it returns must implement its kind's family interface (MutexClient, RWClient,
// SemaphoreClient, ExpirableClient or LatchClient); the runner refuses one that does not before the
// workload starts.
type ClientFactory func(Env) (Client, error)
