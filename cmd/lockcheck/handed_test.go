package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/shrink"
	"github.com/spf13/pflag"
)

// Issue 36: a run directory someone hands you is data, not a command. These tests tamper with a run
// directory's recorded command and check that nothing it names runs, is connected to or written through.

// handedRun writes a run directory as an invalid run would leave it (results.json, and a history whose meta
// record carries command), without running anything.
func handedRun(t *testing.T, command []string, options map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	if options == nil {
		options = map[string]any{}
	}
	res := map[string]any{"valid": false, "lock": "naive", "seed": 3, "options": options,
		"checkers": []map[string]any{{"checker": "mutual-exclusion", "valid": false, "violation_at_ns": 5}}}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	meta, err := json.Marshal(map[string]any{"type": "meta", "data": map[string]any{"lock": "naive", "command": command, "options": options}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), append(meta, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shrinkHanded runs lockcheck shrink (the binary: its candidates are child processes) on dir, bounded,
// and returns its exit code and output.
func shrinkHanded(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), append(append([]string{"shrink", "--budget", "20s", "--seeds", "1", "--repeats", "1", "--parallel", "1"}, args...), dir)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("shrink: exit %d\n%s", code, out)
	return code, string(out)
}

// A recorded --client-cmd is never run: shrink refuses in one line naming it (exit 254), and the command's
// marker file never appears. Named again on shrink's command line, or with --trust-recorded, it would be
// the user's word.
func TestShrinkRunsNoRecordedCommand(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "MARKER")
	dir := handedRun(t, []string{"lockcheck", "run", "--lock=naive", "--time=1s", "--quiet=0s",
		"--client-cmd=sh -c 'touch " + marker + "'", "--seed=3"}, nil)
	code, out := shrinkHanded(t, dir)
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the recorded --client-cmd ran: %s exists", marker)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitUsage || len(lines) != 1 || !strings.Contains(out, "--client-cmd=") || !strings.Contains(out, "--trust-recorded client-cmd") {
		t.Fatalf("exit %d, want %d and one line naming --client-cmd and --trust-recorded:\n%s", code, exitUsage, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "shrink")); err == nil {
		t.Fatal("a refused shrink made its directory")
	}
	// --trust-recorded names only flags shrink withholds.
	if code, out := shrinkHanded(t, dir, "--trust-recorded", "lock"); code != exitUsage || !strings.Contains(out, "not a flag shrink withholds") {
		t.Fatalf("--trust-recorded lock: exit %d\n%s", code, out)
	}
}

// A recorded external deployment is never connected to, even with the user's password in the
// environment: a listener on a loopback port the run directory names sees no connection.
func TestShrinkSendsNothingToARecordedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			_ = c.Close()
		}
	}()
	t.Setenv("LOCKCHECK_EXTERNAL_PASSWORD", "the-users-own-password")
	dir := handedRun(t, []string{"lockcheck", "run", "--lock=naive", "--time=1s", "--quiet=0s", "--backend=external",
		"--external-addrs=" + ln.Addr().String(), "--external-password=REDACTED", "--seed=3"}, nil)
	code, out := shrinkHanded(t, dir)
	if n := conns.Load(); n > 0 {
		t.Fatalf("shrink connected %d time(s) to the address the run directory names", n)
	}
	if code != exitUsage || !strings.Contains(out, "--backend=") || !strings.Contains(out, "--external-addrs=") || strings.Contains(out, "the-users-own-password") {
		t.Fatalf("exit %d, want %d naming --backend and --external-addrs:\n%s", code, exitUsage, out)
	}
}

// A planted RUN/shrink link is refused: nothing is written where it points.
func TestShrinkRefusesAPlantedShrinkLink(t *testing.T) {
	dir := handedRun(t, []string{"lockcheck", "run", "--lock=naive", "--time=1s", "--quiet=0s", "--seed=3"}, nil)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(dir, "shrink")); err != nil {
		t.Fatal(err)
	}
	root := newRoot()
	root.SetArgs([]string{"shrink", "--budget", "5s", dir})
	_, err := root.ExecuteContextC(context.Background())
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("shrink through a planted link: %v, want one line refusing it", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) > 0 {
		t.Fatalf("shrink wrote through the link: %v", ents)
	}
}

// Every flag of lockcheck run is placed: safe to take from a file, withheld (with why) or never replayed.
// A new flag fails here until someone decides which it is; until then a rebuilt command leaves it out.
func TestRunFlagsFromFile(t *testing.T) {
	run := newRunCmd()
	run.Flags().VisitAll(func(f *pflag.Flag) {
		safe, why := history.FromFile(f.Name)
		_, withheld := history.Withheld[f.Name]
		if !safe && !withheld && !slices.Contains(history.NotReplayed, f.Name) {
			t.Errorf("--%s is in none of history.FileSafe, Withheld and NotReplayed (%s)", f.Name, why)
		}
	})
	for name := range history.Withheld {
		if run.Flags().Lookup(name) == nil {
			t.Errorf("history.Withheld names --%s, which lockcheck run does not have", name)
		}
	}
	for _, name := range history.FileSafe {
		if run.Flags().Lookup(name) == nil {
			t.Errorf("history.FileSafe names --%s, which lockcheck run does not have", name)
		}
	}
}

// lockcheck report --out never replaces a file of the run: its history, results, pages and proof stay as
// they were, and the run still reads (issue 36, item 6).
func TestReportOutRefusesTheRunsOwnFiles(t *testing.T) {
	dir := handedRun(t, []string{"lockcheck", "run", "--lock=naive", "--seed=3"}, nil)
	own := map[string]string{
		"index.html":   "<html>" + report.PageMarker + "</html>\n",
		"history.html": "<html><title>Porcupine</title></html>\n",
		"proof.jsonl":  `{"type":"meta","data":{"lock":"naive"}}` + "\n",
	}
	for name, text := range own {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"history.jsonl", "results.json", "index.html", "history.html", "proof.jsonl"} {
		path := filepath.Join(dir, name)
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		root := newRoot()
		root.SetArgs([]string{"report", "--out", path, dir})
		cmd, err := root.ExecuteContextC(context.Background())
		if err == nil || !runner.IsUsage(err) && ran(cmd) || strings.Contains(err.Error(), "\n") {
			t.Errorf("report --out %s: %v, want one line of bad input", name, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("report --out %s replaced the run's own file", name)
		}
	}
	// The report itself is written, and written again over itself.
	for range 2 {
		if code := execute(context.Background(), []string{"report", dir}); code != 0 {
			t.Fatalf("report: exit %d", code)
		}
	}
}

// A schedule's run: shrink and report compare the schedule file with the sha256 the run recorded, and refuse
// another file in one line naming both hashes; the report carries the run's own copy inline (issue 36, item 7).
func TestScheduleMustBeTheOnePlayed(t *testing.T) {
	played := []byte("lock: naive\nsteps:\n  - {client: c1, acquire: lock, lease: 300ms}\n  - {client: c2, at: 400ms, acquire: lock}\n")
	sum := sha256.Sum256(played)
	playedSHA := hex.EncodeToString(sum[:])
	edited := filepath.Join(t.TempDir(), "edited.yaml")
	if err := os.WriteFile(edited, append(played, []byte("  - {client: c1, at: 900ms, release: true}\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := handedRun(t, []string{"lockcheck", "run", "--lock=naive", "--schedule=/elsewhere/s.yaml", "--time=2s", "--seed=3"},
		map[string]any{"schedule": "/elsewhere/s.yaml", "schedule_sha256": playedSHA})
	for _, args := range [][]string{{"shrink", "--schedule", edited, dir}, {"report", "--out", "-", "--schedule", edited, dir}} {
		root := newRoot()
		root.SetArgs(args)
		_, err := root.ExecuteContextC(context.Background())
		if err == nil || !runner.IsUsage(err) || !strings.Contains(err.Error(), playedSHA) || !strings.Contains(err.Error(), "has sha256 ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s with an edited schedule: %v, want one line naming both hashes", args[0], err)
		}
	}
	// The run's own copy, as the run wrote it beside its history, is carried inline with its hash.
	if err := os.WriteFile(filepath.Join(dir, "schedule.yaml"), played, 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(t.TempDir(), "report.md")
	if code := execute(context.Background(), []string{"report", "--out", md, dir}); code != 0 {
		t.Fatalf("report: exit %d", code)
	}
	text, words := readReport(t, md)
	if !strings.Contains(text, "sha256 "+playedSHA) || !strings.Contains(text, "```yaml\n"+string(played)+"```") || !slices.Contains(words, "--schedule=schedule.yaml") {
		t.Fatalf("the report does not carry the schedule it names:\n%s", text)
	}
	// Edited in place, the run's copy is left out, and the report says why.
	if err := os.WriteFile(filepath.Join(dir, "schedule.yaml"), []byte("steps: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := execute(context.Background(), []string{"report", "--out", md, dir}); code != 0 {
		t.Fatalf("report: exit %d", code)
	}
	if text, words := readReport(t, md); strings.Contains(text, "```yaml") || slices.Contains(words, "--schedule=schedule.yaml") || !strings.Contains(text, "not the sha256 "+playedSHA) {
		t.Fatalf("an edited schedule.yaml was carried:\n%s", text)
	}
}

// A shrink whose runs never start (an external deployment without $LOCKCHECK_EXTERNAL_PASSWORD) says so,
// with the runs' error, instead of "fails in 0 of n runs": it stops after its first steps and exits 255
// (issue 36, item 12). A stand-in for lockcheck fails every run at its start.
func TestShrinkSaysItsRunsNeverStarted(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "lockcheck")
	script := "#!/bin/sh\necho 'lockcheck: node n1 at 127.0.0.1:1: NOAUTH Authentication required.'\nexit 254\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sig := shrink.Signature{Checker: "mutual-exclusion", Kind: "overlap"}
	o := shrinkOracle{exe: exe, dir: t.TempDir(), sig: sig, parallel: 1}
	start, err := shrink.FromRun([]string{"lockcheck", "run", "--lock=naive", "--time=3s", "--clients=4", "--threads=2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = runShrink(context.Background(), os.Stdout, "RUN", 3, start, sig, o, shrinkPlan{seeds: 1, repeats: 1, budget: 2 * time.Minute})
	var ee exitError
	if !errors.As(err, &ee) || ee.code != exitHarness {
		t.Fatalf("shrink: %v, want exit %d", err, exitHarness)
	}
	r := readShrink(t, o.dir)
	if r.Stopped != shrink.NotStarted || !strings.Contains(r.Error, "NOAUTH") || len(r.Steps) != 2 {
		t.Fatalf("stopped %q with error %q after %d steps", r.Stopped, r.Error, len(r.Steps))
	}
}

// A schedule run keeps the file it played beside its history, with the hash it recorded; the report
// carries it inline and names it in its command, and shrink plays that copy without being told.
func TestScheduleRunKeepsTheFileItPlayed(t *testing.T) {
	src := "../../examples/schedules/naive-stale-release.yaml"
	code, dir := run(t, "run", "--schedule", src, "--quiet", "0s", "--seed", "1")
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d", code, exitInvalid)
	}
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(filepath.Join(dir, "schedule.yaml"))
	if err != nil || !bytes.Equal(kept, want) {
		t.Fatalf("the run's schedule.yaml (%v) is not the file it played", err)
	}
	res, _, start, err := readShrinkRun(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(want)
	if playedSHA(res) != hex.EncodeToString(sum[:]) {
		t.Fatalf("recorded sha256 %s", playedSHA(res))
	}
	if start.Get("schedule") != "" || len(start.Recorded("schedule")) != 1 {
		t.Fatalf("the recorded --schedule was taken: %q", start.Args())
	}
	c, err := giveAgain(newShrinkCmd(), dir, start, nil, playedSHA(res))
	if abs, _ := filepath.Abs(filepath.Join(dir, "schedule.yaml")); err != nil || c.Get("schedule") != abs {
		t.Fatalf("shrink does not play the run's own copy: %v, %q", err, c.Args())
	}
	if err := sameSchedule(c, res); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(t.TempDir(), "report.md")
	if code := execute(context.Background(), []string{"report", "--out", md, dir}); code != 0 {
		t.Fatalf("report: exit %d", code)
	}
	text, words := readReport(t, md)
	if !strings.Contains(text, "```yaml\n"+string(want)) || !slices.Contains(words, "--schedule=schedule.yaml") || strings.Contains(text, "Left out") {
		t.Fatalf("the report does not carry the schedule:\n%s", text)
	}
}

// What the user names again replaces the recorded value (a path made absolute); --trust-recorded takes the
// recorded one as it is, and prints it.
func TestShrinkTakesWhatTheUserNamesAgain(t *testing.T) {
	dir := handedRun(t, []string{"lockcheck", "run", "--lock=naive", "--client-cmd=sh -c 'touch x'", "--scripts=/planted", "--seed=3"}, nil)
	_, _, start, err := readShrinkRun(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	cmd := newShrinkCmd()
	if err := cmd.ParseFlags([]string{"--client-cmd", "./my-worker --fast", "--scripts", "lua"}); err != nil {
		t.Fatal(err)
	}
	c, err := giveAgain(cmd, dir, start, nil, "")
	abs, _ := filepath.Abs("lua")
	if err != nil || c.Get("client-cmd") != "./my-worker --fast" || c.Get("scripts") != abs || len(c.Withheld) != 0 {
		t.Fatalf("named again: %v, %q", err, c.Args())
	}
	c, err = giveAgain(newShrinkCmd(), dir, start, []string{"client-cmd", "scripts"}, "")
	if err != nil || c.Get("client-cmd") != "sh -c 'touch x'" || c.Get("scripts") != "/planted" {
		t.Fatalf("--trust-recorded: %v, %q", err, c.Args())
	}
	if _, err := giveAgain(newShrinkCmd(), dir, start, []string{"client-cmd"}, ""); err == nil || !strings.Contains(err.Error(), "--scripts=") {
		t.Fatalf("--trust-recorded client-cmd alone: %v, want --scripts still refused", err)
	}
}
