package topology

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A relative directory works (redis-server runs inside it) and a failed start leaves nothing running.
func TestStartRelativeDirAndFailedStart(t *testing.T) {
	wd, _ := os.Getwd()
	tmp := t.TempDir()
	if err := os.Chdir(tmp); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	topo, err := Start(context.Background(), Spec{Kind: Redlock, Nodes: 2, Clients: []string{"c1", "c2"}, Dir: "rel"})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	if len(topo.Addrs("c1")) != 2 || topo.Link("c2", "n2") == nil {
		t.Fatalf("links: %v", topo.Addrs("c1"))
	}
	if _, err := os.Stat(filepath.Join(tmp, "rel", "nodes", "n2", "redis.log")); err != nil {
		t.Fatal(err)
	}
	// A directory that cannot be created fails the start cleanly, with no panic.
	if err := os.WriteFile(filepath.Join(tmp, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), Spec{Kind: Single, Clients: []string{"c1"}, Dir: filepath.Join(tmp, "file")}); err == nil {
		t.Fatal("started under a file")
	}
	if _, err := Start(context.Background(), Spec{Kind: "mesh", Clients: []string{"c1"}}); err == nil {
		t.Fatal("unknown topology accepted")
	}
}
