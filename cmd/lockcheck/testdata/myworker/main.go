// Command myworker stands in for a new user's worker (cmd/lockcheck/newuser_test.go,
// protocol_doc_test.go): a correct SET NX PX lock with compare-and-delete release and extend
// (testdata/setnxlock), which drives only its library's own kind and answers init with error 10 for any
// other, as docs/protocol.md tells a worker to; an init without lock (the kind probe) gets init_ok with its
// kinds. It takes no arguments: one it is given (a flag meant for lockcheck, written after the command)
// makes it exit 2.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockcheck/lockcheck/cmd/lockcheck/testdata/setnxlock"
	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/redis/go-redis/v9"
)

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
			return setnxlock.New(rdb, m.Client, lease), nil
		}})
}
