// Command myworker stands in for a new user's worker (cmd/lockcheck/newuser_test.go,
// protocol_doc_test.go): a correct SET NX PX lock with compare-and-delete release and extend, which drives
// only its library's own kind and answers init with error 10 for any other, as docs/protocol.md tells a
// worker to; an init without lock (the kind probe) gets init_ok with its kinds. It takes no arguments:
// one it is given (a flag meant for lockcheck, written after the command) makes it exit 2.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/redis/go-redis/v9"
)

var (
	del    = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	extend = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`)
)

type lock struct {
	rdb   *redis.Client
	owner string
	lease time.Duration
}

func (l *lock) value(thread int64) string { return fmt.Sprintf("%s:%d", l.owner, thread) }

func (l *lock) Acquire(ctx context.Context, thread int64, keys []string, wait, lease time.Duration) (sdk.Grant, error) {
	if lease <= 0 {
		lease = l.lease
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := l.rdb.SetNX(ctx, keys[0], l.value(thread), lease).Result()
		if err != nil || ok {
			return sdk.Grant{Granted: ok}, err
		}
		if time.Now().After(deadline) {
			return sdk.Grant{}, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *lock) Release(ctx context.Context, thread int64, keys []string) error {
	n, err := del.Run(ctx, l.rdb, keys[:1], l.value(thread)).Int64()
	if err == nil && n == 0 {
		return sdk.ErrNotHeld
	}
	return err
}

func (l *lock) Extend(ctx context.Context, thread int64, keys []string, lease time.Duration) (bool, error) {
	n, err := extend.Run(ctx, l.rdb, keys[:1], l.value(thread), lease.Milliseconds()).Int64()
	return n == 1, err
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "my-worker: unknown argument %q\n", os.Args[1])
		os.Exit(2)
	}
	kinds := []string{"my-lock", "mutex"}
	sdk.Serve(sdk.Worker{Library: "my-lock", Version: "0.1", Kinds: kinds, Caps: []string{"extend"},
		Connect: func(_ context.Context, m *sdk.Message, _ func(sdk.Message)) (sdk.Mutex, error) {
			if m.Lock != nil && m.Lock.Kind != "mutex" && m.Lock.Kind != "my-lock" {
				return nil, sdk.Errorf(sdk.CodeNotSupported, "lock kind "+m.Lock.Kind+": my-lock drives my-lock, mutex")
			}
			if m.Topology == nil || m.Options == nil || m.Topology.Kind != "single" || len(m.Topology.Nodes) == 0 {
				return nil, sdk.Errorf(sdk.CodeNotSupported, "my-lock runs on topology single")
			}
			lease := time.Duration(m.Options.LeaseMs) * time.Millisecond
			if lease <= 0 { // no fixed lease: a lock without a watchdog keeps it this long (docs/protocol.md)
				lease = time.Duration(m.Options.WatchdogMs) * time.Millisecond
			}
			rdb := redis.NewClient(&redis.Options{Addr: m.Topology.Nodes[0].Addr, Password: m.Password, Protocol: 2,
				DisableIdentity: true, MaxRetries: -1})
			return &lock{rdb: rdb, owner: m.Client, lease: lease}, nil
		}})
}
