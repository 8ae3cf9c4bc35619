package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/shrink"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// Bad input to shrink is one line and exit 254, before anything runs.
func TestShrinkRefusesWhatItCannotShrink(t *testing.T) {
	dir := t.TempDir()
	mkdir := func(name string) string {
		t.Helper()
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	file := func(d, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const invalid = `{"valid": false, "checkers": [{"checker": "mutual-exclusion", "valid": false, "violation_at_ns": 5}]}`
	valid := mkdir("valid")
	file(valid, "results.json", `{"valid": true, "checkers": [{"checker": "mutual-exclusion", "valid": true}]}`)
	garbled := mkdir("garbled")
	file(garbled, "results.json", `{"valid": fal`)
	nohistory := mkdir("nohistory")
	file(nohistory, "results.json", invalid)
	nocommand := mkdir("nocommand")
	file(nocommand, "results.json", invalid)
	file(nocommand, "history.jsonl", `{"type":"meta","data":{"lock":"naive"}}`+"\n")
	notrun := mkdir("notrun")
	file(notrun, "results.json", invalid)
	file(notrun, "history.jsonl", `{"type":"meta","data":{"lock":"naive","command":["lockcheck","check","h.jsonl"]}}`+"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink"}, "name one run directory"},
		{[]string{"shrink", valid, valid}, "name one run directory"},
		{[]string{"shrink", filepath.Join(dir, "none")}, "is not a run directory"},
		{[]string{"shrink", valid}, "shrink needs an invalid run"},
		{[]string{"shrink", "--checker", "porcupine", nohistory}, "--checker porcupine is not invalid"},
		{[]string{"shrink", garbled}, "results.json"},
		{[]string{"shrink", nohistory}, "its history"},
		{[]string{"shrink", nocommand}, "recorded no command line"},
		{[]string{"shrink", notrun}, "not a lockcheck run"},
		{[]string{"shrink", "--seeds", "0", notrun}, "at least 1"},
		{[]string{"shrink", "--budget", "-1s", notrun}, "--budget positive"},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		cmd, err := root.ExecuteContextC(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", tc.args, err, tc.want)
			continue
		}
		if !runner.IsUsage(err) && ran(cmd) {
			t.Errorf("%q: %v is not bad input (exit 254)", tc.args, err)
		}
	}
	if code := execute(context.Background(), []string{"shrink", valid}); code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
}

// startShrink starts lockcheck shrink on a run as a process, its output read line by line.
func startShrink(t *testing.T, run string, args ...string) (*exec.Cmd, chan string, string) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(buildBinary(t), append(append([]string{"shrink", "--results", out}, args...), run)...)
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			t.Log(sc.Text())
			lines <- sc.Text()
		}
	}()
	return cmd, lines, out
}

func readShrink(t *testing.T, dir string) *shrink.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "shrink.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r shrink.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// naiveToShrink is an invalid run of the naive control with more than it needs: 4 clients, 4 s.
func naiveToShrink(t *testing.T) string {
	t.Helper()
	code, dir := run(t, "run", "--lock", "naive", "--time", "4s", "--quiet", "1s", "--clients", "4", "--seed", "3")
	if code != exitInvalid {
		t.Fatalf("the naive run: exit %d, want %d (%s)", code, exitInvalid, dir)
	}
	return dir
}

// A real shrink, short: the naive control's run loses clients or time, every kept step confirmed on
// both its seeds, and the smallest command, measured on two more, printed last and in shrink.json.
func TestShrinkNaiveRun(t *testing.T) {
	dir := naiveToShrink(t)
	cmd, lines, out := startShrink(t, dir, "--budget", "35s", "--seeds", "2", "--repeats", "2")
	var all []string
	for l := range lines {
		all = append(all, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shrink: %v", err)
	}
	r := readShrink(t, out)
	if r.Signature != (shrink.Signature{Checker: "mutual-exclusion", Kind: "overlap"}) || r.Confirm != 2 {
		t.Fatalf("signature %v, confirmed on %d", r.Signature, r.Confirm)
	}
	kept, seeds := 0, map[int64]bool{}
	for _, s := range r.Steps {
		if s.Outcome == shrink.Accepted {
			kept++
			if s.Caught != 2 {
				t.Errorf("step %d kept on %d of 2 seeds", s.N, s.Caught)
			}
		}
		for _, seed := range s.Seeds {
			if seeds[seed] {
				t.Errorf("seed %d run twice", seed)
			}
			seeds[seed] = true
		}
	}
	small, _ := shrink.FromRun(append([]string{"lockcheck", "run"}, r.Args...), nil)
	if kept == 0 || small.Get("clients") == "4" && small.Get("time") == "4s" {
		t.Fatalf("nothing kept in %d steps: %q", len(r.Steps), r.Args)
	}
	if r.Repeats != 2 || r.Caught < 1 || r.MedianNs <= 0 {
		t.Fatalf("final measurement: %d of %d, median %d ns", r.Caught, r.Repeats, r.MedianNs)
	}
	// The caught run as a schedule: it reads back and fails the same way on every seed it ran on (its
	// holders stay inside past their leases, so no timing saves it).
	if r.Schedule == nil || r.Schedule.File == "" || r.Schedule.Runs != 2 || r.Schedule.Caught != 2 {
		t.Fatalf("schedule %+v, want one caught on both seeds", r.Schedule)
	}
	if _, err := schedule.Load(r.Schedule.File); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(all, func(l string) bool { return strings.HasPrefix(l, "as a schedule") }) || !slices.Contains(all, r.Schedule.Command) {
		t.Fatalf("the schedule and its command are not in the output:\n%s", strings.Join(all, "\n"))
	}
	if last := all[len(all)-1]; last != r.Minimal || !strings.HasPrefix(last, "lockcheck run ") {
		t.Fatalf("last line %q, shrink.json's command %q", last, r.Minimal)
	}
	words, err := runner.SplitCommand(r.Minimal)
	if err != nil {
		t.Fatal(err)
	}
	if err := dryRun(newRoot(), words[2:]); err != nil {
		t.Fatalf("the minimal command does not parse: %v", err)
	}
	table, err := os.ReadFile(filepath.Join(out, "steps.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(table, []byte("\n")); n != len(r.Steps)+1 {
		t.Fatalf("steps.txt has %d lines for %d steps", n, len(r.Steps))
	}
	// The bug report of the shrunk run: the minimal command (with a seed it failed on) and how often it fails.
	md := filepath.Join(t.TempDir(), "report.md")
	if code := execute(context.Background(), []string{"report", "--shrink", out, "--out", md, dir}); code != 0 {
		t.Fatalf("report: exit %d", code)
	}
	text, words := readReport(t, md)
	got, _ := shrink.FromRun(append([]string{"lockcheck"}, words...), nil)
	if a, b := slices.Sorted(slices.Values(got.Args())), slices.Sorted(slices.Values(r.Args)); !slices.Equal(a, b) {
		t.Errorf("the report's command %q, the shrink's %q", words, r.Args)
	}
	if want := fmt.Sprintf("failed the same way in %d of %d runs", r.Caught, r.Repeats); !strings.Contains(text, want) {
		t.Errorf("the report lacks %q:\n%s", want, text)
	}
}

// Ctrl-C during a shrink: the step in flight is interrupted, shrink.json keeps the best command kept so
// far, which is printed last, and the exit is 130.
func TestShrinkInterruptedKeepsTheBest(t *testing.T) {
	dir := naiveToShrink(t)
	cmd, lines, out := startShrink(t, dir, "--seeds", "1")
	var last string
	for l := range lines {
		last = l
		if strings.Contains(l, " accepted ") {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("shrink: %v, want exit %d", err, exitInterrupted)
	}
	r := readShrink(t, out)
	if r.Stopped != "interrupted" || r.Repeats != 0 || last != r.Minimal {
		t.Fatalf("stopped %q, %d repeats, last line %q, minimal %q", r.Stopped, r.Repeats, last, r.Minimal)
	}
	var best []string // the last step kept
	for _, s := range r.Steps {
		if s.Outcome == shrink.Accepted {
			best = s.Args
		}
	}
	if best == nil || !strings.Contains(r.Minimal, strings.Join(best, " ")) {
		t.Fatalf("the last kept step %q is not the minimal command %q", best, r.Minimal)
	}
	if s := r.Steps[len(r.Steps)-1]; s.Outcome != shrink.Interrupted {
		t.Fatalf("the last step %v was not interrupted", s)
	}
}

// A step's run that ends in a harness error (exit 255) says nothing about the candidate: it is run again
// once on a fresh seed, and the step is judged on the runs that gave verdicts. A stand-in for lockcheck
// fails seed 2 so and writes an invalid results.json for every other seed.
func TestShrinkRunsAHarnessErrorAgain(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "lockcheck")
	script := `#!/bin/sh
seed= results=
while [ $# -gt 0 ]; do
  case "$1" in --seed) seed=$2; shift;; --results) results=$2; shift;; esac
  shift
done
if [ "$seed" = 2 ]; then echo "lockcheck: client c1: worker left init unanswered"; exit 255; fi
mkdir -p "$results/run"
echo '{"valid": false, "checkers": [{"checker": "mutual-exclusion", "valid": false, "violation_at_ns": 7}]}' > "$results/run/results.json"
exit 1
`
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := shrinkOracle{exe: exe, dir: t.TempDir(), sig: shrink.Signature{Checker: "mutual-exclusion", Kind: "overlap"}, parallel: 1}
	c, _ := shrink.FromRun([]string{"lockcheck", "run", "--lock=naive"}, nil)
	tr := o.trial(context.Background(), c, []int64{1, 2, 3}, "step-001")
	// One run at a time: the error stops the step before seed 3, which runs again too.
	want := []int64{1, 2 + retrySeed, 3 + retrySeed}
	if !slices.Equal(tr.Caught, want) || tr.Runs != 3 || !slices.Equal(tr.Seeds, []int64{1, 2, 3, 2 + retrySeed, 3 + retrySeed}) {
		t.Fatalf("caught %v of %d runs, seeds %v: want %v", tr.Caught, tr.Runs, tr.Seeds, want)
	}
	o.final = true // the final measurement counts every run as it was
	if tr := o.trial(context.Background(), c, []int64{1, 2, 3}, "final"); len(tr.Caught) != 2 || tr.Runs != 3 {
		t.Fatalf("final: caught %v of %d runs", tr.Caught, tr.Runs)
	}
}
