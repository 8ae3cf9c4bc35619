package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/redis/go-redis/v9"
)

// Needs is what a run asks of its server beyond a data node.
type Needs struct {
	Sentinel bool // the sentinel topology: the server's own Sentinel mode
	Cluster  bool // the cluster topology: its cluster mode
	Clock    bool // a node-clock fault: the clock library, preloaded, moves its TIME
}

// Probe starts the server once for each need, in a private temporary folder, and says in one line why it
// falls short (an Error: the user chose the server). The host's redis-server is not probed: lockcheck's own
// tests run every fault on it.
func Probe(ctx context.Context, srv node.Server, needs Needs) error {
	if srv.Host() || needs == (Needs{}) {
		return nil
	}
	dir, err := os.MkdirTemp("", "lockcheck-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	what := fmt.Sprintf("server %s %s (%s)", srv.Name, srv.Version, srv.From)
	start := func(name string, cfg node.Config) (*node.Node, *redis.Client, error) {
		cfg.Server, cfg.Name, cfg.Dir, cfg.Password = srv, name, filepath.Join(dir, name), node.NewPassword()
		n, err := node.Start(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		return n, redis.NewClient(&redis.Options{Addr: n.Addr(), Password: cfg.Password, MaxRetries: -1, PoolSize: 1,
			DisableIdentity: true, Protocol: 2}), nil
	}
	if needs.Sentinel {
		n, c, err := start("sentinel", node.Config{Sentinel: true})
		if err == nil {
			info := c.Info(ctx, "server").Val()
			c.Close()
			n.Stop()
			if !strings.Contains(info, "_mode:sentinel") { // redis_mode, or Valkey's server_mode
				err = fmt.Errorf("it started, but INFO says it is not a Sentinel")
			}
		}
		if err != nil {
			return errorf("--topology sentinel runs the server's own Sentinel, and %s has none: %s", what, firstLine(err))
		}
	}
	if needs.Cluster {
		n, c, err := start("cluster", node.Config{Extra: []string{"cluster-enabled yes", "cluster-config-file nodes.conf"}})
		if err == nil {
			info := c.Info(ctx, "cluster").Val()
			c.Close()
			n.Stop()
			if !strings.Contains(info, "cluster_enabled:1") {
				err = fmt.Errorf("it started, but INFO says cluster mode is off")
			}
		}
		if err != nil {
			return errorf("--topology cluster runs the server's own cluster mode, and %s has none: %s", what, firstLine(err))
		}
	}
	if needs.Clock {
		lib, err := clockshift.Library(filepath.Join(dir, "clockshift"))
		if err != nil {
			return err
		}
		n, c, err := start("clock", node.Config{ClockLib: lib})
		if err == nil {
			c.Close()
			err = n.SetClockOffset(time.Hour) // it checks TIME followed
			n.Stop()
		}
		if err != nil {
			return errorf("the clock faults move a node's clock through a preloaded library (LD_PRELOAD), and %s does not take it: %s",
				what, firstLine(err))
		}
	}
	return nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
