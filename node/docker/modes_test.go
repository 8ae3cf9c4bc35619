package docker_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/dockertest"
	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/redis/go-redis/v9"
)

// In containers too, no file that holds the password is readable by group or other, Sentinel's configs
// included after Sentinel rewrote them (the container's umask is 022, so each rewrite makes a new 0644
// file), and the node files belong to lockcheck's user, who can read and remove them.
func TestContainerSentinelConfigsStayPrivate(t *testing.T) {
	dockertest.Require(t)
	ctx := context.Background()
	rt, err := docker.Connect(ctx, docker.DefaultImage, "modes"+time.Now().Format("150405.000")[7:])
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	dir := t.TempDir()
	topo, err := topology.Start(ctx, topology.Spec{Kind: topology.Sentinel, Clients: []string{"c1"}, Dir: dir, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	flush := func() {
		for _, sn := range topo.Sentinels {
			c := redis.NewClient(&redis.Options{Addr: sn.Addr(), Password: topo.Password, MaxRetries: -1})
			if err := c.Do(ctx, "SENTINEL", "FLUSHCONFIG").Err(); err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
	}
	// open lists the files holding the password that group or other may read; seen counts those files.
	open := func() (open []string, seen int) {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			if strings.Contains(string(b), topo.Password) {
				seen++
				if fi.Mode().Perm()&0o077 != 0 {
					open = append(open, fmt.Sprintf("%s (%o)", rel, fi.Mode().Perm()))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return open, seen
	}
	// Sentinel's rewrite and the chmod after it race: wait for the chmod, a few milliseconds, 10 s at most.
	check := func(when string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			left, seen := open()
			if seen < 6 {
				t.Fatalf("%s: only %d files hold the password: want the 3 nodes' and 3 Sentinels' configs", when, seen)
			}
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: readable by group or other 10 s on: %v", when, left)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	check("after start-up")
	flush()
	check("after SENTINEL FLUSHCONFIG")
	topo.Stop()
	check("after the containers were removed")
}
