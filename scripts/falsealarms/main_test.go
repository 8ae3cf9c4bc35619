package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/kinds"
)

// The campaign covers every lock the Go emulation has, fault-free and under partition and kill, and never
// a negative control or a worker-only lock (those are meant to fail, or need --client).
func TestCasesCoverEveryEmulatedLock(t *testing.T) {
	seeds := map[string]int{}
	for _, c := range Cases(100, 20) {
		seeds[c.Name] = c.Seeds
		if k, err := kinds.Lookup(c.Lock); err != nil || k.Broken != "" || k.WorkerOnly {
			t.Errorf("%s runs %s, which is not an emulated safe lock (%v)", c.Name, c.Lock, err)
		}
	}
	n := 0
	for _, name := range kinds.KindNames() {
		k, _ := kinds.Lookup(name)
		if k.Broken != "" || k.WorkerOnly {
			continue
		}
		n++
		if seeds["fault-free/"+name] != 100 || seeds["partition-kill-aof/"+name] != 20 {
			t.Errorf("%s: %d fault-free runs and %d partition-kill seeds, want 100 and 20", name,
				seeds["fault-free/"+name], seeds["partition-kill-aof/"+name])
		}
	}
	if n < 10 || seeds["sentinel-failover/reentrant"] != 20 || seeds["client-pause/fenced"] != 20 ||
		seeds["cluster-failover-command/reentrant"] != 20 {
		t.Errorf("%d emulated locks; cases %v", n, seeds)
	}
}

// A campaign counts verdicts by exit code and names each invalid run with the command that reproduces
// it; a valid run's directory is removed, an invalid one's kept. The negative control makes the invalid;
// seeds start at First.
func TestCampaignNamesInvalidRuns(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/lockcheck").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	short := []string{"--time", "3s", "--quiet", "1s", "--clients", "4"}
	cases := []Case{
		{Name: "fault-free/reentrant", Lock: "reentrant", Args: short, Seeds: 1},
		{Name: "control/naive", Lock: "naive", Args: append([]string{"--lease", "300ms", "--hold", "400ms-1s"}, short...), Seeds: 1},
	}
	root := t.TempDir()
	var out bytes.Buffer
	tally := Campaign{Bin: bin, Root: root, Parallel: 2, Out: &out, First: 3}.Run(context.Background(), cases)
	Report(&out, tally, time.Second)
	t.Log(out.String())
	if tally.Runs != 2 || tally.Valid != 1 || tally.Invalid != 1 || tally.Unknown != 0 || tally.Errors != 0 {
		t.Fatalf("tally %+v, want 2 runs: 1 valid, 1 invalid", tally)
	}
	want := "INVALID: lockcheck run --lock naive --lease 300ms --hold 400ms-1s --time 3s --quiet 1s --clients 4 --seed 3"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "2 runs, 1 invalid, 0 unknown") {
		t.Fatalf("the report does not name the invalid run as %q", want)
	}
	if _, err := os.Stat(filepath.Join(root, "control", "naive", "seed-3", "latest", "results.json")); err != nil {
		t.Fatalf("the invalid run's results are not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "fault-free", "reentrant", "seed-3")); !os.IsNotExist(err) {
		t.Fatalf("the valid run's directory is still there (%v)", err)
	}
}

// A run past its time bound, or past its memory cap, is stopped and counted without a verdict, saying why,
// and leaves no process behind.
func TestCampaignStopsRunawayRuns(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/lockcheck").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	long := []Case{{Name: "long/reentrant", Lock: "reentrant", Args: []string{"--time", "60s"}, Seeds: 1}}
	for _, tc := range []struct {
		c    Campaign
		says string
	}{
		{Campaign{Limit: 3 * time.Second}, "stopped: still running after 3s"},
		{Campaign{MaxRSS: 1 << 20}, "stopped: grew to"},
	} {
		c := tc.c
		var out bytes.Buffer
		c.Bin, c.Root, c.Parallel, c.Out = bin, t.TempDir(), 1, &out
		began := time.Now()
		tally := c.Run(context.Background(), long)
		Report(&out, tally, time.Since(began))
		if tally.Errors != 1 || !strings.Contains(out.String(), tc.says) {
			t.Fatalf("tally %+v, report:\n%s\nwant one run without a verdict, %q", tally, out.String(), tc.says)
		}
		if took := time.Since(began); took > 45*time.Second {
			t.Fatalf("the 60 s run was stopped only after %s", took)
		}
		if b, _ := exec.Command("pgrep", "-f", c.Root).Output(); len(b) > 0 {
			t.Fatalf("processes of the stopped run remain: %s", b)
		}
	}
}
