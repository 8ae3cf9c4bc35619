// Command leaseworker stands in for a library whose leases are whole seconds (issue #29, items 8, 9 and
// 12): testdata/setnxlock's lock, for kind mutex on single, that answers error 10 to an acquire or extend
// whose lease is not a whole number of seconds, as such a library refuses it. Its flags:
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

	"github.com/lockcheck/lockcheck/cmd/lockcheck/testdata/setnxlock"
	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/redis/go-redis/v9"
)

type lock struct {
	*setnxlock.Lock
	lying bool
}

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
	return l.Lock.Acquire(ctx, thread, keys, wait, lease)
}

func (l *lock) Extend(ctx context.Context, thread int64, keys []string, lease time.Duration) (bool, error) {
	if err := whole(lease); err != nil {
		return false, err
	}
	if l.lying { // the defect: "extended", and the key keeps the lease it had
		return true, nil
	}
	return l.Lock.Extend(ctx, thread, keys, lease)
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
			l := &lock{Lock: setnxlock.New(rdb, m.Client, 0), lying: *lying}
			if *own { // the same scripts as a library lockcheck does not ship words them: unknown SHA-1s
				l.DelScript = redis.NewScript("-- whole-seconds release\n" + setnxlock.DelText)
				l.ExtendScript = redis.NewScript("-- whole-seconds extend\n" + setnxlock.ExtendText)
			}
			return l, nil
		}})
}
