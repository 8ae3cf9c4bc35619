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
)

// Clean leaves a live run's containers alone (their owner, this process, is alive) and says so; forced, it
// removes them, and the node reports the death of a container it did not remove itself.
func TestCleanKeepsLiveRun(t *testing.T) {
	dockertest.Require(t)
	ctx := context.Background()
	rt, err := docker.Connect(ctx, docker.DefaultImage, "live"+time.Now().Format("150405.000")[7:])
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	n, err := node.Start(ctx, node.Config{Name: "n1", Dir: filepath.Join(t.TempDir(), "n1"), Password: node.NewPassword(), Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	deaths := make(chan string, 1)
	n.OnUnplannedExit(func(d string) { deaths <- d })
	removed, kept, err := docker.CleanRuns(ctx, rt.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 || !strings.HasPrefix(kept[0], "container lockcheck-"+rt.RunID+"-n1: its run "+rt.RunID+" is alive") {
		t.Fatalf("clean of a live run: removed %v, kept %v", removed, kept)
	}
	if !n.Running() || len(containers(t, rt.RunID)) != 1 {
		t.Fatal("clean touched a live run's container")
	}
	removed, _, err = docker.CleanRuns(ctx, rt.RunID, true)
	if err != nil || len(removed) == 0 || removed[0] != "container lockcheck-"+rt.RunID+"-n1" {
		t.Fatalf("forced clean: removed %v, %v", removed, err)
	}
	select {
	case d := <-deaths:
		if !strings.Contains(d, "container") {
			t.Fatalf("death reported as %q, want the container's end", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the removed container's death was not reported")
	}
}
