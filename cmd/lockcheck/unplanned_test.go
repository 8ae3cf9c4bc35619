package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serverPIDs finds the redis-server processes running in a node directory under dir (redis-server rewrites
// its command line, so the working directory, nodes/<name>, is what tells them apart).
func serverPIDs(dir string) map[string]int {
	out := map[string]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && filepath.Dir(cwd) == filepath.Join(dir, "nodes") {
			out[filepath.Base(cwd)] = pid
		}
	}
	return out
}

// A redis-server killed by hand outside the fault plan (here on a run with no faults at all) is noticed:
// the history records which node died and when, and the run is not valid, on the spot and when re-checked.
func TestUnplannedNodeDeathIsNotValid(t *testing.T) {
	// Sequential: kills a node of an in-process 6 s run before it ends.
	root := t.TempDir()
	done := make(chan int, 1)
	go func() {
		done <- execute(context.Background(), []string{"run", "--lock", "reentrant", "--time", "6s", "--quiet", "1s", "--clients", "4", "--seed", "3", "--results", root})
	}()
	hist := filepath.Join(root, "latest", "history.jsonl")
	var victim int
	for deadline := time.Now().Add(60 * time.Second); victim == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run never got going")
		}
		b, _ := os.ReadFile(hist)
		if strings.Count(string(b), `"type":"ok"`) < 20 {
			continue
		}
		dir, err := filepath.EvalSymlinks(filepath.Join(root, "latest"))
		if err != nil {
			continue
		}
		victim = serverPIDs(dir)["n1"]
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := <-done
	if code == exitValid {
		t.Fatal("exit 0 (valid) after a node was killed outside the plan")
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	b, _ := os.ReadFile(hist)
	var died map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"f":"node-died"`) {
			_ = json.Unmarshal([]byte(line), &died)
		}
	}
	if died == nil || died["phase"] != "unplanned" || !strings.Contains(jsonText(died["targets"]), "n1") {
		t.Fatalf("no unplanned death of n1 in the history: %v", died)
	}
	r := readResults(t, dir)
	if r.Valid == true {
		t.Fatal("results.json says valid")
	}
	res, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if !strings.Contains(string(res), "n1 died outside the fault plan") {
		t.Fatalf("results.json does not name the node: %s", res)
	}
	if code := execute(context.Background(), []string{"check", dir}); code == exitValid {
		t.Fatal("re-check: exit 0 (valid)")
	}
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }
