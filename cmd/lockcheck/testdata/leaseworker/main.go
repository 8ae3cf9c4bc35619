// Command leaseworker stands in for a library whose leases are whole seconds (issue #29, items 8 and 9):
// a SET NX PX lock with compare-and-delete release and compare-and-extend, for kind mutex on single,
// that answers error 10 to an acquire or extend whose lease is not a whole number of seconds, as such a
// library refuses it. Its flags:
//
//	-granularity MS  announce lease_granularity_ms MS in init_ok (1000: lockcheck sends whole seconds only)
//	-lying           extend answers extended: true and extends nothing (a worker worker-check must fail)
//	-own-scripts     release and extend with scripts of its own, which lockcheck's wire recorder does not know
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/redis/go-redis/v9"
)

const (
	delText    = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`
	extendText = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`
)

var (
	del    = redis.NewScript(delText)
	extend = redis.NewScript(extendText)
	// The same, as a library lockcheck does not ship words them: their SHA-1s are unknown to the recorder.
	ownDel    = redis.NewScript("-- whole-seconds release\n" + delText)
	ownExtend = redis.NewScript("-- whole-seconds extend\n" + extendText)
)

type lock struct {
	rdb         *redis.Client
	owner       string
	lying       bool
	del, extend *redis.Script
}

func (l *lock) value(thread int64) string { return fmt.Sprintf("%s:%d", l.owner, thread) }

// whole refuses a lease the library cannot express: it counts leases in seconds.
func whole(lease time.Duration) error {
	if lease <= 0 || lease%time.Second != 0 {
		return sdk.Errorf(sdk.CodeNotSupported, fmt.Sprintf("leases are whole seconds, not %dms", lease.Milliseconds()))
	}
	return nil
}

func (l *lock) Acquire(ctx context.Context, thread int64, keys []string, wait, lease time.Duration) (sdk.Grant, error) {
	if err := whole(lease); err != nil {
		return sdk.Grant{}, err
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
	n, err := l.del.Run(ctx, l.rdb, keys[:1], l.value(thread)).Int64()
	if err == nil && n == 0 {
		return sdk.ErrNotHeld
	}
	return err
}

func (l *lock) Extend(ctx context.Context, thread int64, keys []string, lease time.Duration) (bool, error) {
	if err := whole(lease); err != nil {
		return false, err
	}
	if l.lying { // the defect: "extended", and the key keeps the lease it had
		return true, nil
	}
	n, err := l.extend.Run(ctx, l.rdb, keys[:1], l.value(thread), lease.Milliseconds()).Int64()
	return n == 1, err
}

func main() {
	granularity := flag.Int64("granularity", 0, "announce this lease_granularity_ms in init_ok")
	lying := flag.Bool("lying", false, "extend answers extended: true without extending")
	own := flag.Bool("own-scripts", false, "release and extend with scripts lockcheck does not know")
	flag.Parse()
	sdk.Serve(sdk.Worker{Library: "whole-seconds", Version: "0.1", Kinds: []string{"mutex"}, Caps: []string{"extend"},
		LeaseGranularity: time.Duration(*granularity) * time.Millisecond,
		Connect: func(_ context.Context, m *sdk.Message, _ func(sdk.Message)) (sdk.Mutex, error) {
			if m.Topology == nil || m.Topology.Kind != "single" || len(m.Topology.Nodes) == 0 {
				return nil, sdk.Errorf(sdk.CodeNotSupported, "whole-seconds runs on topology single")
			}
			rdb := redis.NewClient(&redis.Options{Addr: m.Topology.Nodes[0].Addr, Password: m.Password, Protocol: 2,
				DisableIdentity: true, MaxRetries: -1})
			l := &lock{rdb: rdb, owner: m.Client, lying: *lying, del: del, extend: extend}
			if *own {
				l.del, l.extend = ownDel, ownExtend
			}
			return l, nil
		}})
}
