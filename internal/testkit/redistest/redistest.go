// Package redistest starts real redis-server nodes for tests and stops them when the test ends, pass or
// fail.
package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/node"
	"github.com/redis/go-redis/v9"
)

// Start runs one node in a temp directory. A missing redis-server fails the test with the install hint.
func Start(t testing.TB, persistence string, extra ...string) *node.Node {
	t.Helper()
	return StartConfig(t, node.Config{Persistence: persistence, Extra: extra})
}

// StartConfig runs a node from cfg, filling in a name, a temp directory and a password where empty.
func StartConfig(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if cfg.Name == "" {
		cfg.Name = "n1"
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Password == "" {
		cfg.Password = node.NewPassword()
	}
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

// Client connects straight to addr with retries off and a short timeout.
func Client(t testing.TB, addr, password string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1, DisableIdentity: true,
		ReadTimeout: 500 * time.Millisecond, DialTimeout: 500 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}
