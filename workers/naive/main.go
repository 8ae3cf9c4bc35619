// Command naive is lockcheck's reference worker and the negative control of the lock-client protocol: a
// lock unsafe by design (SET NX PX to acquire, an unconditional DEL to release, a fixed lease, no
// watchdog), so a holder that outlives its lease deletes the next holder's lock. With --safe it releases
// by compare-and-delete instead and is the control's safe twin. With --shared-token it keeps one token per
// client for all its threads (an application sharing one lock object between tasks): the shared-token
// control, whose threads of one client both hold the lock. It is also the example of workers/sdk: a
// Go lock library becomes a worker by implementing sdk.Mutex and calling sdk.Serve.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/redis/go-redis/v9"
)

// compareAndDelete deletes the key only while it holds this owner's value.
var compareAndDelete = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

// takeShared sets the key to the value unless another value holds it (the shared-token mode's acquire: a
// key holding the client's own token is taken again, whichever thread asks).
var takeShared = redis.NewScript(`local v = redis.call('get', KEYS[1])
if v == false or v == ARGV[1] then redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2]) return 1 end return 0`)

// compareAndExtend sets a new lease only while the key holds this owner's value.
var compareAndExtend = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`)

type naive struct {
	rdb   redis.UniversalClient
	owner string // per client; the thread is appended
	lease time.Duration
	safe  bool
	// shared is the shared-token control's defect: one token for all the client's threads, as an
	// application sharing one lock object between tasks has; it releases by compare-and-delete.
	shared bool
	// silent is the silent-renewal control's defect: extend and release answer ok on a lock it lost.
	silent bool
}

func (n *naive) value(thread int64) string {
	if n.shared {
		return n.owner
	}
	return fmt.Sprintf("%s:%d", n.owner, thread)
}

// set is one acquire attempt.
func (n *naive) set(ctx context.Context, key, value string, lease time.Duration) (bool, error) {
	if n.shared {
		ok, err := takeShared.Run(ctx, n.rdb, []string{key}, value, lease.Milliseconds()).Int64()
		return ok == 1, err
	}
	return n.rdb.SetNX(ctx, key, value, lease).Result()
}

// Acquire polls SET NX PX until it wins or wait runs out.
func (n *naive) Acquire(ctx context.Context, thread int64, keys []string, wait, lease time.Duration) (sdk.Grant, error) {
	if len(keys) != 1 {
		return sdk.Grant{}, sdk.Errorf(sdk.CodeNotSupported, "one key per lock")
	}
	if lease <= 0 {
		lease = n.lease
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := n.set(ctx, keys[0], n.value(thread), lease)
		if err != nil {
			return sdk.Grant{}, classify(err)
		}
		if ok {
			return sdk.Grant{Granted: true}, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return sdk.Grant{}, nil
		}
		time.Sleep(min(25*time.Millisecond, left))
	}
}

// Release deletes the key: whoever holds it (unsafe), or only this owner's value (--safe).
func (n *naive) Release(ctx context.Context, thread int64, keys []string) error {
	var deleted int64
	var err error
	if n.safe || n.shared {
		deleted, err = compareAndDelete.Run(ctx, n.rdb, keys[:1], n.value(thread)).Int64()
	} else {
		deleted, err = n.rdb.Del(ctx, keys[0]).Result()
	}
	if err != nil {
		return classify(err)
	}
	if deleted == 0 && !n.silent {
		return sdk.ErrNotHeld
	}
	return nil
}

// Extend sets a new lease on the owner's key.
func (n *naive) Extend(ctx context.Context, thread int64, keys []string, lease time.Duration) (bool, error) {
	ok, err := compareAndExtend.Run(ctx, n.rdb, keys[:1], n.value(thread), lease.Milliseconds()).Int64()
	if err != nil {
		return false, classify(err)
	}
	return ok == 1 || n.silent, nil
}

// classify maps a go-redis error to a protocol code: an error reply or a refused dial never ran.
func classify(err error) error {
	var rerr redis.Error
	var nerr *net.OpError
	switch {
	case errors.As(err, &rerr):
		return sdk.Errorf(sdk.CodeUnavailable, err.Error())
	case errors.As(err, &nerr) && nerr.Op == "dial", errors.Is(err, redis.ErrPoolTimeout):
		return sdk.Errorf(sdk.CodeUnavailable, err.Error())
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout"):
		return sdk.Errorf(sdk.CodeTimeout, err.Error())
	}
	return err // crash: indefinite
}

func main() {
	safe := flag.Bool("safe", false, "release by compare-and-delete (the safe twin)")
	single := flag.Bool("single-thread", false, "announce the single-thread cap (one thread per client instance)")
	shared := flag.Bool("shared-token", false, "one token per client shared by its threads, compare-and-delete release (the shared-token control)")
	renew := flag.String("renew", "", "silent: extend and release answer ok on a lost lock (the silent-renewal control); honest: its twin")
	flag.Parse()
	name, kinds := "naive", []string{"naive"}
	switch {
	case *shared:
		name = "naive-shared-token"
	case *safe:
		name = "naive-safe"
	case *renew != "": // compare-and-delete; the application extends it (lock kind mutex), as redsync's users do
		name, kinds, *safe = "naive-"+*renew+"-renew", []string{"mutex"}, true
	}
	caps := []string{"extend"}
	if *single {
		caps = append(caps, sdk.CapSingleThread)
	}
	sdk.Serve(sdk.Worker{Library: name, Version: "1", Kinds: kinds, Caps: caps,
		Connect: func(_ context.Context, m *sdk.Message, _ func(sdk.Message)) (sdk.Mutex, error) {
			t, o := m.Topology, m.Options
			if t == nil || o == nil || len(t.Nodes) == 0 {
				return nil, sdk.Errorf(sdk.CodeMalformed, "init without topology or options")
			}
			timeout := time.Duration(o.TimeoutMs) * time.Millisecond
			opts := &redis.UniversalOptions{Addrs: []string{t.Nodes[0].Addr}, Password: m.Password, MaxRetries: -1,
				DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, DisableIdentity: true, Protocol: 2,
				Dialer: sdk.NATDialer(t.NAT)}
			switch t.Kind {
			case "single":
			case "sentinel":
				opts.Addrs, opts.MasterName, opts.SentinelPassword = t.Sentinels, t.MasterName, m.Password
			default:
				return nil, sdk.Errorf(sdk.CodeNotSupported, "topology "+t.Kind+": the naive lock runs on single or sentinel")
			}
			lease := time.Duration(o.LeaseMs) * time.Millisecond
			if lease <= 0 {
				lease = time.Duration(o.WatchdogMs) * time.Millisecond
			}
			return &naive{rdb: redis.NewUniversalClient(opts), owner: m.Client, lease: lease, safe: *safe, shared: *shared,
				silent: *renew == "silent"}, nil
		}})
}
