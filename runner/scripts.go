package runner

import (
	"context"
	"errors"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/redis/go-redis/v9"
)

// compileScripts has the first node compile every --scripts override before the workload starts: a Lua
// syntax error is bad input (254, naming the file and carrying Redis's message), not a run of failed calls.
func compileScripts(ctx context.Context, topo *topology.Topology, scripts *locks.Scripts) error {
	if scripts == nil || len(topo.Nodes) == 0 {
		return nil
	}
	c := redis.NewClient(&redis.Options{Addr: topo.Nodes[0].Addr(), Password: topo.Password, MaxRetries: -1,
		DisableIdentity: true, Protocol: 2, DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second})
	defer c.Close()
	err := scripts.Compile(ctx, c)
	var ce *locks.CompileError
	if errors.As(err, &ce) {
		return UsageError{err}
	}
	return err
}
