package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 29, item 6: every chance flag (--reentry, --cross-thread, --force-unlock, and --reentry in a spec's
// control flags) refuses NaN, the infinities and values outside [0, 1], and --lease refuses a range that
// can draw a lease between 0 and 1 ms; in one line with 254, --dry-run too, before anything starts.
// Before, --reentry NaN passed --dry-run, started Redis and failed with "meta record: unexpected end of
// JSON input", and --lease 0-1ms ran.
func TestChanceAndLeaseRangeRefused(t *testing.T) {
	t.Parallel() // refused before anything starts
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	spec := func(name, flags string) string {
		return hostileSpec(t, dir, name, "control: {why: \"is broken\", flags: "+flags+"}\n", delScript)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--reentry", "NaN"}, "--reentry must be a chance in [0, 1], got NaN"},
		{[]string{"--reentry", "NaN", "--dry-run"}, "--reentry must be a chance in [0, 1], got NaN"},
		{[]string{"--reentry", "+Inf"}, "--reentry must be a chance in [0, 1], got +Inf"},
		{[]string{"--reentry", "-0.5"}, "--reentry must be a chance in [0, 1], got -0.5"},
		{[]string{"--reentry", "1.5", "--dry-run"}, "--reentry must be a chance in [0, 1], got 1.5"},
		{[]string{"--cross-thread", "NaN", "--dry-run"}, "--cross-thread must be a chance in [0, 1], got NaN"},
		{[]string{"--force-unlock", "-Inf", "--dry-run"}, "--force-unlock must be a chance in [0, 1], got -Inf"},
		{[]string{"--lock-spec", spec("nan", "[--reentry, NaN]")}, `control: flags: --reentry "NaN": want a chance in [0, 1]`},
		{[]string{"--lock-spec", spec("inf", "[--reentry, Inf]"), "--dry-run"}, `control: flags: --reentry "Inf": want a chance in [0, 1]`},
		{[]string{"--lease", "0-1ms"}, "--lease 0s-1ms: every value drawn from the range must be at least 1ms"},
		{[]string{"--lease", "500us-10s", "--dry-run"}, "--lease 500µs-10s: every value drawn from the range must be at least 1ms"},
		{[]string{"--lock-spec", spec("lease", "[--lease, 0-1ms]"), "--dry-run"}, "--lease 0s-1ms: every value drawn"},
	} {
		args := append([]string{"run", "--time", "2s", "--quiet", "1s", "--results", results}, c.args...)
		code, _, errs := hostileRun(t, nil, time.Minute, args...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 254 and one line with %q", c.args, code, errs, c.want)
		}
	}
	if _, err := os.Stat(results); err == nil {
		t.Fatal("a refused run made its results directory")
	}
	for _, args := range [][]string{{"--reentry", "0"}, {"--reentry", "1", "--cross-thread", "1"}, {"--lease", "1ms-2ms"}, {"--lease", "0"}} {
		if code, _, errs := hostileRun(t, nil, time.Minute, append([]string{"run", "--dry-run", "--results", results}, args...)...); code != 0 {
			t.Errorf("%v: exit %d, stderr %q; want it accepted", args, code, errs)
		}
	}
}

// Issue 29, item 7: a --time too short for --quiet's default says that the default is the cause and what
// to pass. Before: "--quiet must be in [0, --time), got 3s" to a user who gave no --quiet.
func TestQuietDefaultNamed(t *testing.T) {
	t.Parallel() // refused before anything starts
	code, _, errs := hostileRun(t, nil, time.Minute, "run", "--time", "3s", "--dry-run")
	want := "--time 3s is not longer than --quiet's default 3s (the fault-free end of the run): give a longer --time, or --quiet below 3s (0 for none)"
	if code != exitUsage || strings.TrimSpace(errs) != "lockcheck: "+want {
		t.Errorf("--time 3s: exit %d, stderr %q; want 254 and %q", code, errs, want)
	}
	code, _, errs = hostileRun(t, nil, time.Minute, "run", "--time", "3s", "--quiet", "5s", "--dry-run")
	if code != exitUsage || !strings.Contains(errs, "--quiet must be in [0, --time), got 5s") {
		t.Errorf("--quiet 5s given: exit %d, stderr %q", code, errs)
	}
}

// Issue 29, item 6: `check` of a FIFO (or a run directory whose history.jsonl is one) or a device is one
// line and 254 at once. Before, it waited for a writer for ever.
func TestCheckSpecialFileRefused(t *testing.T) {
	t.Parallel() // no run starts
	dir := t.TempDir()
	fifo := filepath.Join(dir, "history.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "not a regular file (a FIFO)", dir: "not a regular file (a FIFO)",
		"/dev/zero": "not a regular file (a character device)"} {
		code, _, errs := hostileRun(t, nil, 20*time.Second, "check", path)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, want) {
			t.Errorf("check %s: exit %d, stderr %q; want 254 and one line with %q", path, code, errs, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("check wrote %d files beside the FIFO", len(ents)-1)
	}
}

// Issue 29, items 6 and 7: merge refuses an --out that is one of its inputs, lies inside one or holds one
// (a later merge of that input would count its runs twice), and a --junit that is a device; each in one
// line naming the cause, before anything is written. Before, --out inside an input was merged, the next
// merge of the input counted its run twice, `merge --out X X` said "no suite.json under X", and
// --junit /dev/zero wrote the report to the device.
func TestMergeOutApartAndJUnitRegular(t *testing.T) {
	t.Parallel() // no run starts
	base := t.TempDir()
	in := filepath.Join(base, "in")
	writeSuiteShard(t, filepath.Join(in, "shard-1"), "runs/c/r")
	for _, c := range []struct {
		out, want string
		args      []string
	}{
		{filepath.Join(in, "merged"), "--out " + filepath.Join(in, "merged") + " is inside the input " + in, nil},
		{in, "--out " + in + " is the input " + in + " itself", nil},
		{filepath.Join(in, "shard-1"), "is inside the input " + in, nil},
		{base, "--out " + base + " holds the input " + in, nil},
		{filepath.Join(base, "m"), "--junit /dev/zero: not a regular file (a character device)", []string{"--junit", "/dev/zero"}},
	} {
		before := treeNames(base)
		code, errs := runSuiteIn(t, base, nil, append(append([]string{"merge", "--out", c.out}, c.args...), in)...)
		wantSuiteLine(t, code, errs, c.want, "no suite.json under")
		if after := treeNames(base); after != before {
			t.Fatalf("--out %s: written before refusing:\n%s\n---\n%s", c.out, before, after)
		}
	}
	// Apart, the merged table counts the run once.
	out := filepath.Join(base, "m")
	if code, errs := runSuiteIn(t, base, nil, "merge", "--out", out, in); code != 0 {
		t.Fatalf("merge: exit %d %s", code, errs)
	}
	var rep struct{ Outcomes []json.RawMessage }
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, "suite.json")), &rep); err != nil || len(rep.Outcomes) != 1 {
		t.Fatalf("merged %d runs (%v), want 1", len(rep.Outcomes), err)
	}
}

// Issue 29, item 7: --scripts naming something that is not a directory says so, and a .lua there that is
// not a regular file (a FIFO) is refused at once. Before, /dev/zero was "no .lua files there" and a FIFO
// blocked the run.
func TestScriptsNotADirectory(t *testing.T) {
	t.Parallel() // refused before anything starts
	dir := t.TempDir()
	file := filepath.Join(dir, "acquire.lua")
	if err := os.WriteFile(file, []byte("return 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifos := filepath.Join(dir, "fifos")
	if err := os.Mkdir(fifos, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fifos, "acquire.lua"), 0o644); err != nil {
		t.Fatal(err)
	}
	for scripts, want := range map[string]string{
		"/dev/zero": "--scripts: /dev/zero: not a directory (a character device)",
		file:        "--scripts: " + file + ": not a directory (a file)",
		fifos:       "acquire.lua: not a regular file (a FIFO)",
	} {
		code, _, errs := hostileRun(t, nil, 20*time.Second, "run", "--lock", "reentrant", "--scripts", scripts, "--dry-run")
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, want) {
			t.Errorf("--scripts %s: exit %d, stderr %q; want 254 and one line with %q", scripts, code, errs, want)
		}
	}
}

// treeNames lists every path under dir with its size, one a line.
func treeNames(dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if fi, ierr := e.Info(); err == nil && ierr == nil {
			fmt.Fprintf(&b, "%s %d\n", p, fi.Size())
		}
		return nil
	})
	return b.String()
}
