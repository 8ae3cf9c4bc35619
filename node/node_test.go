package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/redis/go-redis/v9"
)

func TestPasswordIsRequired(t *testing.T) {
	n := redistest.Start(t, node.PersistNone)
	if err := redistest.Client(t, n.Addr(), "").Ping(context.Background()).Err(); err == nil {
		t.Fatal("PING without the password succeeded")
	}
	if err := redistest.Client(t, n.Addr(), n.Password()).Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// A killed node restarts on the same port, empty without persistence and with its data with AOF.
func TestKillAndRestart(t *testing.T) {
	for _, tc := range []struct {
		persistence string
		keeps       bool
	}{{node.PersistNone, false}, {node.PersistAlways, true}, {node.PersistEverySec, true}} {
		t.Run(tc.persistence, func(t *testing.T) {
			ctx := context.Background()
			n := redistest.Start(t, tc.persistence)
			c := redistest.Client(t, n.Addr(), n.Password())
			if err := c.Set(ctx, "lock", "owner", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// Even everysec keeps it: Redis write()s the AOF before it replies, and a process kill (unlike a
			// machine crash) loses nothing the kernel already has.
			port := n.Port()
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
			if n.Running() {
				t.Fatal("still running after kill")
			}
			if err := c.Ping(ctx).Err(); err == nil {
				t.Fatal("PING answered by a killed node")
			}
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if n.Port() != port {
				t.Fatalf("port changed from %d to %d", port, n.Port())
			}
			got, err := c.Exists(ctx, "lock").Result()
			if err != nil {
				t.Fatal(err)
			}
			if (got == 1) != tc.keeps {
				t.Fatalf("after restart the key exists=%d, want kept=%v", got, tc.keeps)
			}
		})
	}
}

func TestPauseAndResume(t *testing.T) {
	ctx := context.Background()
	n := redistest.Start(t, node.PersistNone)
	c := redistest.Client(t, n.Addr(), n.Password())
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("a paused node answered")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("resumed node: %v", err)
	}
}

func TestStopIsIdempotentAndPausedNodesStop(t *testing.T) {
	n := redistest.Start(t, node.PersistNone)
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	n.Stop()
	if n.Running() {
		t.Fatal("running after Stop")
	}
}

func TestBadPersistence(t *testing.T) {
	_, err := node.Start(context.Background(), node.Config{Name: "n1", Dir: t.TempDir(), Persistence: "sometimes"})
	if err == nil {
		t.Fatal("accepted persistence \"sometimes\"")
	}
}

// clockNode starts a node under the clock library and a client straight to it.
func clockNode(t *testing.T) (*node.Node, *redis.Client) {
	t.Helper()
	lib, err := clockshift.Library(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := redistest.StartConfig(t, node.Config{ClockLib: lib})
	return n, redistest.Client(t, n.Addr(), n.Password())
}

// A clock bump on a node makes a key's TTL run out at once, and a reset brings the clock back.
func TestClockBumpExpiresKeys(t *testing.T) {
	ctx := context.Background()
	n, c := clockNode(t)
	before, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(before); d > 5*time.Second || d < -5*time.Second {
		t.Fatalf("the unshifted clock is off by %v", d)
	}
	if err := c.Set(ctx, "lease", "owner", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.SetClockOffset(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if now, _ := c.Time(ctx).Result(); time.Until(now) < 15*time.Second {
		t.Fatalf("TIME after a 20s bump is %v ahead", time.Until(now))
	}
	if c.Exists(ctx, "lease").Val() != 0 {
		t.Fatal("a 10s key survived a 20s clock bump")
	}
	if err := n.SetClockOffset(0); err != nil {
		t.Fatal(err)
	}
	if now, _ := c.Time(ctx).Result(); time.Until(now) > 5*time.Second {
		t.Fatal("the clock did not come back after the reset")
	}
}
