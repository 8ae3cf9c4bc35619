// Package locks implements Redis lock clients in Go, each behaving as its original does (Redisson's RLock,
// and a naive SET NX control), and records every command a lock sends as one operation in the history.
package locks

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/redis/go-redis/v9"
)

// Recorder receives every command a lock sends. *history.Recorder is one.
type Recorder interface {
	Invoke(rec history.Record) *history.Op
}

// Mutex is a lock one owner holds at a time, possibly re-entrantly.
type Mutex interface {
	Key() string
	Owner() string
	// TryLock waits up to wait for the lock. lease 0 means no fixed lease (a watchdog keeps it, if the lock
	// has one). A refusal is (false, nil); an error means the outcome may be unknown (see Definite).
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	// Unlock releases one hold. It returns ErrNotHeld when Redis says the caller does not hold it.
	Unlock(ctx context.Context) error
}

// ErrNotHeld is Redisson's IllegalMonitorStateException: the lock is not held by this owner. It proves
// the call took no effect (an outcome.NoEffect).
var ErrNotHeld = outcome.Refusal("not held by this owner")

// ErrNoSync is Redisson's NoSyncedSlavesException: the write reached the primary and no replica
// acknowledged it.
var ErrNoSync = errors.New("none of the replicas were synced")

// Definite reports whether err proves that a command did not run: outcome.Definite, the one rule.
func Definite(err error) bool { return outcome.Definite(err) }

// ClientConfig is how a lock client talks to Redis. Retries are off: a retried lock script is a second,
// different operation, so each lock decides itself what it may repeat.
type ClientConfig struct {
	Addr     string
	Password string
	Timeout  time.Duration // per command: dial, read and write (Redisson's timeout, 3 s)
	PoolSize int
	Gate     *Gate // every command waits here while the client is paused
	// Sentinels, when set, make this a Sentinel-mode client: it asks them for MasterName's primary and
	// follows failovers (Redisson's sentinel mode). Dialer maps the addresses they report to the client's
	// own links.
	Sentinels  []string
	MasterName string
	Dialer     func(ctx context.Context, network, addr string) (net.Conn, error)
	// Cluster, when set, makes this a Redis Cluster client seeded with these addresses: it follows MOVED
	// and ASK replies (reached through Dialer, like Sentinel's reports).
	Cluster []string
}

// DefaultPoolSize is how many connections a client keeps to one node at most, besides its pub/sub one.
const DefaultPoolSize = 4

// NewClient builds a go-redis client with retries off and the timeout bounding every command.
func NewClient(c ClientConfig) redis.UniversalClient {
	if c.Timeout <= 0 {
		c.Timeout = 3 * time.Second
	}
	if c.PoolSize <= 0 {
		c.PoolSize = DefaultPoolSize
	}
	if len(c.Cluster) > 0 {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: c.Cluster, Password: c.Password, Dialer: c.Dialer,
			// MOVED/ASK are followed (a redirected command never ran), nothing else is retried.
			MaxRedirects: 3, MaxRetries: -1, DialTimeout: c.Timeout, ReadTimeout: c.Timeout, WriteTimeout: c.Timeout,
			ContextTimeoutEnabled: true, PoolSize: c.PoolSize, PoolTimeout: c.Timeout, DisableIdentity: true, Protocol: 2,
		})
		if c.Gate != nil {
			rdb.AddHook(gateHook{c.Gate})
		}
		return rdb
	}
	if len(c.Sentinels) > 0 {
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: c.MasterName, SentinelAddrs: c.Sentinels, SentinelPassword: c.Password, Password: c.Password,
			Dialer: c.Dialer, MaxRetries: -1, DialTimeout: c.Timeout, ReadTimeout: c.Timeout, WriteTimeout: c.Timeout,
			ContextTimeoutEnabled: true, PoolSize: c.PoolSize, PoolTimeout: c.Timeout, DisableIdentity: true, Protocol: 2,
		})
		if c.Gate != nil {
			rdb.AddHook(gateHook{c.Gate})
		}
		return rdb
	}
	rdb := redis.NewClient(&redis.Options{
		Addr: c.Addr, Password: c.Password, Dialer: c.Dialer,
		MaxRetries:            -1, // -1, not 0: 0 means the default of 3
		DialTimeout:           c.Timeout,
		ReadTimeout:           c.Timeout,
		WriteTimeout:          c.Timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              c.PoolSize,
		PoolTimeout:           c.Timeout,
		DisableIdentity:       true,
		Protocol:              2,
	})
	if c.Gate != nil {
		rdb.AddHook(gateHook{c.Gate})
	}
	return rdb
}

// gateHook holds every command and pipeline of a paused client before it is written.
type gateHook struct{ g *Gate }

func (h gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.g.Pass()
		return next(ctx, cmd)
	}
}

func (h gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.g.Pass()
		return next(ctx, cmds)
	}
}

// record runs one command as one history operation. run returns the reply's value and whether Redis
// refused it (answered, and the command took no effect).
func record(rec Recorder, r history.Record, run func() (value *int64, refused bool, err error)) (*int64, bool, error) {
	op := rec.Invoke(r)
	v, refused, err := run()
	outcome.Complete(op, answer(v, refused, err))
	return v, refused, err
}

// answer is the outcome of a call that returned value, refused and err. A NoSync is an answer: the write
// ran on the primary, which no replica acknowledged, so a failover may still lose it (args nosync).
func answer(value *int64, refused bool, err error) outcome.Call {
	c := outcome.Call{Value: value, Refused: refused, Err: err}
	if errors.Is(err, ErrNoSync) {
		c.Err = nil
		if !refused {
			c.Args = map[string]int64{"nosync": 1}
		}
	}
	return c
}

// msArgs is the args map of an operation with a lease.
func msArgs(kv ...any) map[string]int64 {
	m := map[string]int64{}
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case time.Duration:
			m[kv[i].(string)] = v.Milliseconds()
		case int64:
			m[kv[i].(string)] = v
		case int:
			m[kv[i].(string)] = int64(v)
		}
	}
	return m
}

// hashTagged mirrors Redisson's prefixName: aux keys share the lock name's hash slot.
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}
