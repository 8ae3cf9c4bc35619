package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// On --backend external, a lock key an earlier run left (here one killed within its lease) would make the
// model start from a free lock and report a violation that is not real: the run is refused up front, with
// the key and its pttl. A left-over unlock latch (scoped to a request id no later run reuses) is no reason
// to refuse.
func TestExternalLeftoverKeyIsRefused(t *testing.T) {
	// Sequential: swaps os.Stderr (stderrOf).
	ctx := context.Background()
	n := redistest.Start(t, node.PersistNone)
	c := redistest.Client(t, n.Addr(), n.Password())
	if err := c.HSet(ctx, "lock-0", "0d7c1a2e-dead-beef:1", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(ctx, "lock-0", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	code, stderr := stderrOf(t, "run", "--backend", "external", "--external-addrs", n.Addr(), "--external-password", n.Password(),
		"--lock", "reentrant", "--time", "4s", "--quiet", "1s", "--results", t.TempDir())
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}
	if !strings.Contains(stderr, "lock-0") || !strings.Contains(stderr, "pttl 29") {
		t.Fatalf("the refusal does not name the key and its pttl:\n%s", stderr)
	}
	if err := c.Del(ctx, "lock-0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "redisson_unlock_latch:{lock-0}:0d7c1a2e", 1, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if code, stderr := stderrOf(t, "run", "--backend", "external", "--external-addrs", n.Addr(), "--external-password", n.Password(),
		"--lock", "reentrant", "--time", "4s", "--quiet", "1s", "--results", t.TempDir()); code != exitValid {
		t.Fatalf("with only an unlock latch left: exit %d, want %d; stderr:\n%s", code, exitValid, stderr)
	}
	// The run leaves none of its keys behind, even a lock granted as it stopped (holds past the run's end),
	// so the next run is not refused; the harmless latch it did not write stays.
	if code, stderr := stderrOf(t, "run", "--backend", "external", "--external-addrs", n.Addr(), "--external-password", n.Password(),
		"--lock", "reentrant", "--clients", "8", "--hold", "3s-5s", "--time", "2s", "--quiet", "0s", "--results", t.TempDir()); code != exitValid {
		t.Fatalf("holds past the end: exit %d, want %d; stderr:\n%s", code, exitValid, stderr)
	}
	for _, p := range []string{"lock-0", "*{lock-0}*"} {
		keys, err := c.Keys(ctx, p).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, "redisson_unlock_latch:") {
				t.Errorf("the run left %s on the deployment", k)
			}
		}
	}
	if n, _ := c.Exists(ctx, "redisson_unlock_latch:{lock-0}:0d7c1a2e").Result(); n != 1 {
		t.Error("the run deleted a key it did not write (the unlock latch)")
	}
}
