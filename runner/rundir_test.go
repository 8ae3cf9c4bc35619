package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 9, item 18: a run that never started leaves no directory behind, unless a node wrote a log worth
// reading, which the error then names; latest is never pointed at it.
func TestFailedStartClearsUp(t *testing.T) {
	root := t.TempDir()
	dir, err := makeRunDir(root, "empty")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "history.jsonl"), nil, 0o644)
	_ = os.MkdirAll(filepath.Join(dir, "nodes", "n1"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "nodes", "n1", "redis.log"), nil, 0o644)
	cause := errors.New("attach failed")
	if err := failedStart(dir, cause); err != cause {
		t.Fatalf("error %v, want the cause unchanged", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the empty run directory is still there (%v)", err)
	}

	dir, _ = makeRunDir(root, "logged")
	_ = os.MkdirAll(filepath.Join(dir, "nodes", "n2"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "nodes", "n2", "redis.log"), []byte("# Fatal error, can't open config file\n"), 0o644)
	err = failedStart(dir, UsageError{cause})
	if !errors.Is(err, cause) || !IsUsage(err) || !strings.Contains(err.Error(), "node logs kept in "+dir) {
		t.Fatalf("error %v: want the cause, still bad input, naming %s", err, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "nodes", "n2", "redis.log")); err != nil {
		t.Fatalf("the node's log was removed: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "latest")); !os.IsNotExist(err) {
		t.Fatal("latest was made for a run that never started")
	}
	pointLatest(dir)
	if dest, _ := os.Readlink(filepath.Join(root, "latest")); dest != "logged" {
		t.Fatalf("latest -> %q", dest)
	}
}

// Issue 9, item 16: a --results that cannot hold a run directory is bad input.
func TestResultsThatCannotHoldARun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(file, nil, 0o644)
	for _, root := range []string{file, filepath.Join(file, "under"), "/sys/lockcheck-results"} {
		if _, err := makeRunDir(root, "x"); !IsUsage(err) || !strings.Contains(err.Error(), "--results "+root) {
			t.Errorf("--results %s: %v", root, err)
		}
	}
}

// Issue 9, items 10 and 15: the nodes a topology takes.
func TestNodesFor(t *testing.T) {
	for _, c := range []struct {
		topo  string
		given int
		want  int
		bad   bool
	}{
		{"redlock", 0, 5, false}, {"redlock", 3, 3, false}, {"redlock", -1, 0, true},
		{"single", 0, 0, false}, {"single", 7, 0, true}, {"sentinel", 7, 0, true}, {"cluster", 6, 0, true},
	} {
		got, err := nodesFor(c.topo, c.given, nil)
		if (err != nil) != c.bad || got != c.want || (err != nil && !IsUsage(err)) {
			t.Errorf("%s --nodes %d: %d %v", c.topo, c.given, got, err)
		}
	}
}

// Two runs started in the same millisecond into one --results got one directory: the second's "file
// exists" failed start removed the first's history. Each now gets its own.
func TestRunDirsStartedTogetherAreApart(t *testing.T) {
	root := filepath.Join(t.TempDir(), "results")
	dirs := make(chan string, 8)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			d, err := makeRunDir(root, "20261127T013158.575-rwlock-none")
			dirs <- d
			errs <- err
		}()
	}
	seen := map[string]bool{}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		d := <-dirs
		if seen[d] {
			t.Fatalf("%s given to two runs", d)
		}
		seen[d] = true
	}
}
