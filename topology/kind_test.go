package topology

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/topology/kind"
)

// No Go file outside topology/ compares or switches on a topology kind's name (or its constant): it asks
// the kind (topology.KindNamed, topology/kind) instead. workers/ is left out: those are protocol clients
// reading the init message's topology.kind string, as a worker in any language does (docs/protocol.md).
func TestNoKindNameComparedOutsideTopology(t *testing.T) {
	var names []string
	for _, k := range kind.All {
		names = append(names, `"`+k.Name+`"`, `topology\.`+strings.ToUpper(k.Name[:1])+k.Name[1:]+`\b`)
	}
	alt := "(" + strings.Join(names, "|") + ")"
	re := regexp.MustCompile(`(==|!=)\s*` + alt + `|` + alt + `\s*(==|!=)|case\s+[^:]*` + alt)
	var hits []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case path == filepath.Join("..", "topology"), path == filepath.Join("..", "workers"), name == "testdata",
				path != ".." && strings.HasPrefix(name, "."):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if re.MatchString(line) {
				hits = append(hits, path+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) > 0 {
		t.Fatalf("a topology kind's name compared outside topology/ (ask topology.KindNamed instead):\n%s", strings.Join(hits, "\n"))
	}
}

// The kinds' facts agree with what topology starts: their names, Cluster's shards, and which replicate.
func TestKindFactsMatchTopology(t *testing.T) {
	if len(kind.All) != len(Kinds) {
		t.Fatalf("kind.All %d kinds, topology.Kinds %d", len(kind.All), len(Kinds))
	}
	for i, k := range kind.All {
		if k.Name != Kinds[i] || !KindNamed(k.Name).Known() {
			t.Errorf("kind %d: %q, topology says %q", i, k.Name, Kinds[i])
		}
		if shards, _ := Shape(k.Name); (shards > 0) != k.FailsOver {
			t.Errorf("%s: %d replicated shards, but FailsOver %v", k.Name, shards, k.FailsOver)
		}
	}
	if kind.Cluster.Nodes != 2*clusterShards {
		t.Errorf("cluster: %d nodes, topology starts %d", kind.Cluster.Nodes, 2*clusterShards)
	}
	if KindNamed("nope").Known() || NodeCount("nope", 0) != 1 {
		t.Error("an unknown kind has facts")
	}
}
