package docker_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/dockertest"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/redis/go-redis/v9"
)

// containers lists run's containers.
func containers(t *testing.T, run string) []string {
	var out []string
	for _, x := range dockertest.Leftovers(t, run) {
		if strings.HasPrefix(x, "container ") {
			out = append(out, x)
		}
	}
	return out
}

// A node in a container: docker pause freezes it (PING times out) and unpause brings it back; docker kill
// stops it, and starting the same container again brings it back with its AOF; Stop leaves no container.
func TestContainerPauseKillRestart(t *testing.T) {
	dockertest.Require(t)
	ctx := context.Background()
	rt, err := docker.Connect(ctx, docker.DefaultImage, "test"+time.Now().Format("150405.000")[7:])
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	n, err := node.Start(ctx, node.Config{Name: "n1", Dir: filepath.Join(t.TempDir(), "n1"), Password: node.NewPassword(),
		Persistence: node.PersistAlways, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if got := containers(t, rt.RunID); len(got) != 1 {
		t.Fatalf("%d labelled containers for the run, want 1", len(got))
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.Password(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("a paused container answered PING")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("after unpause: %v", err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("running after docker kill")
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after restart with AOF: %q %v", v, err)
	}
	n.Stop()
	if got := containers(t, rt.RunID); len(got) != 0 {
		t.Fatalf("%d containers left after Stop", len(got))
	}
}

// The clock fault inside a container: the image's clockshift library reads the offset file in the
// bind-mounted node directory, so a 20 s bump expires a 10 s key at once.
func TestContainerClockBump(t *testing.T) {
	dockertest.Require(t)
	ctx := context.Background()
	rt, err := docker.Connect(ctx, docker.DefaultImage, "clock"+time.Now().Format("150405"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	n, err := node.Start(ctx, node.Config{Name: "n1", Dir: filepath.Join(t.TempDir(), "n1"), Password: node.NewPassword(),
		ClockLib: docker.ClockLib, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.Password(), MaxRetries: -1})
	defer c.Close()
	if err := c.Set(ctx, "lease", "owner", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.SetClockOffset(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if c.Exists(ctx, "lease").Val() != 0 {
		t.Fatal("a 10s key survived a 20s clock bump in the container")
	}
	if err := n.SetClockOffset(0); err != nil {
		t.Fatal(err)
	}
	if now, _ := c.Time(ctx).Result(); time.Until(now) > 5*time.Second {
		t.Fatal("the container's clock did not come back after the reset")
	}
}
