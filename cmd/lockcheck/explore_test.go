package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/explore"
	"github.com/lockcheck/lockcheck/shrink"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// runExplore runs lockcheck explore into a fresh directory and reads its explore.json.
func runExplore(t *testing.T, args ...string) (*Explore, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "explore")
	cmd := exec.Command(buildBinary(t), append([]string{"explore", "--results", dir}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	t.Logf("lockcheck explore %s:\n%s", strings.Join(args, " "), out)
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == exitInvalid) { // 1: a new finding
		t.Fatalf("explore: %v", err)
	}
	ex, err := readExplore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ex, dir, string(out)
}

// TestExploreFindsTheZsetTwin: a seeded explore against the broken twin of rwlock.yaml (a short reader's
// lease becomes the whole readers set's TTL) finds it within a bounded number of runs, with no schedule
// written for it: the finding is settled (shrunk, confirmed on fresh seeds, reported, new to the catalog),
// and explore.json, the page and the coverage map say so.
func TestExploreFindsTheZsetTwin(t *testing.T) {
	ex, dir, out := runExplore(t, "--lock-spec", "examples/locks/rwlock-zset-broken.yaml", "--seed", "3",
		"--max-findings", "1", "--max-runs", "20", "--settle-budget", "20s", "--confirm", "2")
	if len(ex.Findings) != 1 || ex.Stopped != "max-findings" {
		t.Fatalf("%d findings after %d runs (stopped %q), want the twin's", len(ex.Findings), ex.Runs, ex.Stopped)
	}
	f := ex.Findings[0]
	if !strings.Contains(f.Signature, "on a rwlock") {
		t.Errorf("signature %q", f.Signature)
	}
	if _, err := schedule.Load(filepath.Join(dir, f.File)); err != nil {
		t.Errorf("the finding's schedule: %v", err)
	}
	s := f.Settled
	if s == nil || s.Of != 2 || s.Caught < 1 || s.Known != "" || s.Report == "" {
		t.Fatalf("settled %+v: want it caught again, new, reported", s)
	}
	// the shrunk schedule is confirmed as often as the command (the bar's k of n is the schedule's)
	if s.Schedule != "" && s.ScheduleOf != 2 {
		t.Errorf("the shrunk schedule ran %d times, want 2 (--confirm)", s.ScheduleOf)
	}
	// the shrink plays the finding's schedule on the spec's lock, not the random workload on --lock rwlock
	if !strings.Contains(s.Minimal, "--schedule=") || !strings.Contains(s.Minimal, "--lock-spec=") {
		t.Errorf("the smallest command lost the schedule or the spec: %s", s.Minimal)
	}
	if _, err := os.Stat(filepath.Join(dir, s.Report)); err != nil {
		t.Error(err)
	}
	var cm CoverageMap
	b, err := os.ReadFile(filepath.Join(dir, "coverage.json"))
	if err != nil || json.Unmarshal(b, &cm) != nil || cm.Family != "rwlock" || cm.Seen.Len() != ex.Coverage || cm.Seen.Len() == 0 {
		t.Fatalf("coverage.json (%v): family %q, %d seen, explore.json says %d", err, cm.Family, cm.Seen.Len(), ex.Coverage)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil || !strings.Contains(string(page), f.File) || !strings.Contains(string(page), "new") {
		t.Errorf("index.html does not list the finding (%v)", err)
	}
	if !strings.Contains(out, "FAIL f1 ") || !strings.Contains(out, "  new: "+f.Signature) {
		t.Errorf("the summary has no finding line as a suite's run")
	}
}

// TestExploreRwlockFindsNothingNew: on Redisson's read-write lock, unbroken, a short explore finds nothing
// the catalog does not know.
func TestExploreRwlockFindsNothingNew(t *testing.T) {
	ex, _, _ := runExplore(t, "--lock", "rwlock", "--seed", "1", "--max-runs", "10", "--settle-budget", "20s", "--confirm", "2")
	if ex.Runs < 10 || ex.Coverage == 0 || len(ex.Corpus) == 0 {
		t.Fatalf("%d runs, coverage %d, corpus %d", ex.Runs, ex.Coverage, len(ex.Corpus))
	}
	for _, f := range ex.Findings {
		if f.Settled == nil || f.Settled.Known == "" {
			t.Errorf("finding %s (%s) is new: %s", f.ID, f.Signature, f.Story)
		}
	}
}

// TestExploreRefuses: what explore cannot search is one line and exit 254, before any run.
func TestExploreRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"--lock", "latch"},
		{"--budget", "0s"},
		{"--merge"},
		{"stray"},
	} {
		cmd := exec.Command(buildBinary(t), append([]string{"explore", "--results", t.TempDir()}, args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || strings.Count(strings.TrimSpace(string(out)), "\n") > 0 {
			t.Errorf("explore %q: %v\n%s", args, err, out)
		}
	}
}

// TestExploreMerge: two shards' directories merge into one: the corpora side by side (their schedules
// copied), one finding per signature (the earlier kept, the runs of both counted), the coverage added.
func TestExploreMerge(t *testing.T) {
	shard := func(name string, found float64, sig string, runs []int) string {
		dir := filepath.Join(t.TempDir(), name)
		for _, d := range []string{"corpus", "findings/f1"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		sched := "lock: rwlock\nsteps:\n  - {name: s1, client: c1, acquire: read, lease: 1s}\n  - {name: s2, after: s1, client: c1, release: true}\n"
		for _, f := range []string{"corpus/e1.yaml", "findings/f1/schedule.yaml"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(sched), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ex := &Explore{Lock: "rwlock", Family: "rwlock", Runs: 10,
			Corpus:   []*explore.Entry{{ID: "e1", Run: 1, File: "corpus/e1.yaml", New: []string{"x"}}},
			Findings: []*explore.Finding{{ID: "f1", Signature: sig, FoundS: found, Runs: runs, File: "findings/f1/schedule.yaml"}}}
		if err := ex.write(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a := shard("a", 30, "overlap", []int{4})
	b := shard("b", 10, "overlap", []int{2, 7})
	out := filepath.Join(t.TempDir(), "merged")
	root := newRoot()
	root.SetArgs([]string{"explore", "--merge", a, b, "--results", out})
	if err := root.Execute(); !errors.Is(err, exitError{exitInvalid}) { // the finding is new
		t.Fatal(err)
	}
	m, err := readExplore(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs != 20 || len(m.Corpus) != 2 || len(m.Findings) != 1 || m.Findings[0].FoundS != 10 || len(m.Findings[0].Runs) != 3 {
		t.Fatalf("merged: %d runs, corpus %d, findings %+v", m.Runs, len(m.Corpus), m.Findings)
	}
	for _, e := range m.Corpus {
		if _, err := schedule.Load(filepath.Join(out, e.File)); err != nil {
			t.Error(err)
		}
	}
	// and the merged corpus seeds a later explore
	if gs, err := readCorpus(out, explore.Caps{Lock: "rwlock", Family: "rwlock"}); err != nil || len(gs) != 2 {
		t.Fatalf("corpus of the merge: %d, %v", len(gs), err)
	}
}

// TestExploreFindsTheNaiveFlaw: the naive control's plain DEL, which deletes whoever holds the key, is found
// within a few runs: a release by an actor that holds nothing (its acquire refused) takes another's lock.
// Where another client then enters, the catalog knows it (design-unconditional-unlock) and the search goes
// on; the lock lost with nobody else in yet is new, and ends it (seed 3: at run 1).
func TestExploreFindsTheNaiveFlaw(t *testing.T) {
	ex, _, _ := runExplore(t, "--lock", "naive", "--seed", "3", "--max-findings", "1", "--max-runs", "10",
		"--settle-budget", "10s", "--confirm", "1")
	var f *explore.Finding
	for _, g := range ex.Findings {
		if g.Known == "" {
			f = g
		}
	}
	if f == nil || ex.Stopped != "max-findings" || !strings.Contains(f.Signature, "on a mutex") {
		t.Fatalf("%d runs (stopped %q), findings %+v: want a new one", ex.Runs, ex.Stopped, ex.Findings)
	}
	if s := f.Settled; s == nil || s.Of != 1 || s.Report == "" {
		t.Fatalf("settled %+v", s)
	}
}

// TestExploreFindsTheSemaphoreControl: explore plays permits: on the semaphore's negative control (each
// release gives back twice what was taken) a seeded explore finds the flaw within a few runs, with a
// schedule of permit steps, and settles it.
func TestExploreFindsTheSemaphoreControl(t *testing.T) {
	ex, dir, _ := runExplore(t, "--lock", "semaphore-broken", "--seed", "1", "--max-findings", "1", "--max-runs", "10",
		"--settle-budget", "10s", "--confirm", "1")
	if len(ex.Findings) != 1 || ex.Family != "semaphore" || !strings.Contains(ex.Findings[0].Signature, "on a semaphore") {
		t.Fatalf("%d runs, family %s, findings %+v", ex.Runs, ex.Family, ex.Findings)
	}
	f := ex.Findings[0]
	s, err := schedule.Load(filepath.Join(dir, f.File))
	if err != nil || !slices.ContainsFunc(s.Steps, func(st schedule.Step) bool { return st.Acquire == schedule.Permit }) {
		t.Fatalf("the finding's schedule (%v) takes no permit", err)
	}
	if f.Settled == nil || f.Settled.Of != 1 || f.Settled.Report == "" {
		t.Fatalf("settled %+v", f.Settled)
	}
}

// TestExploreManifests: the nightly workflow's explore job and the Kubernetes explore Job pass explore
// arguments it takes (every check before the results directory passes), and each explore is merged.
func TestExploreManifests(t *testing.T) {
	stopsAtResults := func(what string, args []string) {
		t.Helper()
		sentinel := filepath.Join(t.TempDir(), "not-a-directory")
		if err := os.WriteFile(sentinel, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		root := newRoot()
		root.SetArgs(append(args, "--results", sentinel))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), sentinel) {
			t.Errorf("%s: lockcheck %s: %v, want it to stop at --results", what, strings.Join(args, " "), err)
		}
	}
	var wf struct {
		Jobs map[string]struct {
			Needs    string `yaml:"needs"`
			Strategy struct {
				Matrix struct {
					Lock  []string `yaml:"lock"`
					Shard []int    `yaml:"shard"`
				} `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	readYAML(t, filepath.Join("..", "..", ".github", "workflows", "nightly.yml"), &wf)
	job, merge := wf.Jobs["explore"], wf.Jobs["explore-merge"]
	if len(job.Strategy.Matrix.Lock) == 0 || len(job.Strategy.Matrix.Shard) < 2 || merge.Needs != "explore" {
		t.Fatalf("workflow: explore %+v, merge needs %q", job.Strategy.Matrix, merge.Needs)
	}
	ran := false
	for _, s := range job.Steps {
		if strings.HasPrefix(s.Run, "bin/lockcheck explore ") {
			// the first night (no corpus in the cache) and the next (last night's merge restored)
			lastNight := t.TempDir()
			if err := os.WriteFile(filepath.Join(lastNight, "explore.json"), []byte(`{"corpus": [], "findings": []}`), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, corpus := range []string{"", "--corpus " + lastNight} {
				for _, lock := range job.Strategy.Matrix.Lock {
					run := strings.NewReplacer("${{ matrix.lock }}", lock, "${{ matrix.shard }}", "1", "${{ github.run_number }}", "7",
						"${{ steps.corpus.outputs.cache-matched-key != '' && '--corpus merged' || '' }}", corpus).Replace(s.Run)
					if strings.Contains(run, "${{") {
						t.Fatalf("workflow: an expression the test does not know: %s", run)
					}
					stopsAtResults("workflow", strings.Fields(run)[1:])
				}
			}
			ran = true
		}
	}
	merged := false
	for _, s := range merge.Steps {
		merged = merged || strings.HasPrefix(s.Run, "bin/lockcheck explore --merge ")
	}
	if !ran || !merged {
		t.Fatalf("workflow: an explore step %v, a merge step %v", ran, merged)
	}
	var k8s struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	readYAML(t, filepath.Join("..", "..", "deploy", "k8s", "explore-job.yaml"), &k8s)
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	args := k8s.Spec.Template.Spec.Containers[0].Args
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "$(JOB_COMPLETION_INDEX)", "0")
	}
	stopsAtResults("k8s", args)
}

// TestExploreShrinksItsOwnRun: the flags shrink withholds from a run directory handed over (a schedule,
// scripts, a lock spec) are given back to the shrink of a run explore made itself; without them each
// finding's shrink replayed the random workload on the lock without its scripts and failed 0 of n.
func TestExploreShrinksItsOwnRun(t *testing.T) {
	c, err := shrink.FromRun([]string{"lockcheck", "run", "--lock=rwlock", "--schedule=/r/runs/00023/schedule.yaml",
		"--scripts=/w/examples/twins/rw-read-shorter-lease", "--seed=7", "--time=8s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Get("schedule") != "" || len(c.Withheld) != 2 {
		t.Fatalf("shrink took the recorded flags itself: %q", c.Args())
	}
	c = ownRun(c)
	if c.Get("schedule") != "/r/runs/00023/schedule.yaml" || c.Get("scripts") != "/w/examples/twins/rw-read-shorter-lease" ||
		c.Get("lock") != "rwlock" || len(c.Withheld) != 0 {
		t.Fatalf("explore's own run shrinks as %q (withheld %v)", c.Args(), c.Withheld)
	}
}

// TestExploreNamesTheBasesKnownBehaviour: on a --scripts explore (a twin: the lock's script set with some
// files replaced) a run that fails matching nothing known is replayed on the lock's own scripts; failing
// there the same way, it is that catalog entry's (the lock's known behaviour), so a twin's explore does not
// stop at its base's design limits as if they were new. Here the "twin" replaces a script with an
// unchanged copy, and the run plays Redisson's read re-entry that stops the watchdog (a library entry,
// which a --scripts run alone does not match).
func TestExploreNamesTheBasesKnownBehaviour(t *testing.T) {
	scripts := t.TempDir()
	b, err := os.ReadFile("../../locks/scripts/redisson/rw_read_release.lua")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scripts, "rw_read_release.lua"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := schedule.Load("../../examples/schedules/rw-reentry-stops-watchdog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := explore.FromSchedule(s, []explore.Setting{{Flag: "watchdog", Value: "600ms"}})
	sut := []string{"--lock=rwlock", "--scripts=" + scripts}
	caps := explore.Caps{Lock: "rwlock", Family: "rwlock", Reentrant: true, Watchdog: true}
	for _, replay := range []bool{false, true} {
		x := &exploration{exe: buildBinary(t), dir: t.TempDir(), sut: sut, caps: caps, onBase: map[string]baseRun{}}
		if replay {
			x.base = withoutScripts(sut)
		}
		out := x.play(context.Background(), g, 1, filepath.Join(x.dir, "runs", "00001"), "00001", true)
		if out.Verdict != "invalid" || out.Signature == "" {
			t.Fatalf("replay %v: %s (%s), want the overlap", replay, out.Verdict, out.Note)
		}
		if want := map[bool]string{false: "", true: "redisson-rw-reentry-stops-watchdog"}[replay]; out.Known != want {
			t.Errorf("replay on the lock's own scripts %v: known %q, want %q", replay, out.Known, want)
		}
	}
}

// TestOnBaseKnown: on a --scripts explore the lock's own scripts decide known or new: failing the same way
// there, the base's entry (or the finding's own match); staying valid, new even where the finding's
// signature matched a design limit (a twin whose re-entry replaces the lease looks like RLock's design).
func TestOnBaseKnown(t *testing.T) {
	for _, c := range []struct {
		name        string
		base        baseRun
		known, want string
	}{
		{"shared", baseRun{same: true, known: "redisson-rw-reentry-stops-watchdog", about: "a", dir: "runs/00001/base/1/run"}, "", "redisson-rw-reentry-stops-watchdog"},
		{"shared2", baseRun{same: true}, "design-reentry-lease", "design-reentry-lease"},
		{"twins", baseRun{}, "design-reentry-lease", ""},
		{"replayed", baseRun{same: false, known: ""}, "", ""},
	} {
		if got, _ := c.base.decide(c.known, ""); got != c.want {
			t.Errorf("%s (its own match %q): %q, want %q", c.name, c.known, got, c.want)
		}
	}
}

// TestViolationOf: a trim's cut is judged by the violation, checker and lock family alone; the faults in
// force, the lease side and the shape may change with what was cut.
func TestViolationOf(t *testing.T) {
	a := "overlap by mutual-exclusion on a rwlock, under pause, past the first owner's lease, at rwlock writer write-acquire granted"
	b := "overlap by mutual-exclusion on a rwlock, with no fault in force, within the first owner's lease"
	c := "no-legal-order by porcupine on a rwlock, under pause"
	if violationOf(a) != violationOf(b) || violationOf(a) == violationOf(c) || violationOf(a) != "overlap by mutual-exclusion on a rwlock" {
		t.Fatalf("%q %q %q", violationOf(a), violationOf(b), violationOf(c))
	}
}

// A finding whose first run matched an entry an earlier finding was settled as is not shrunk again: it is
// recorded as that finding's; a new one, one of another entry, one whose settling named another entry or
// went wrong, and every finding of a --scripts explore are settled each.
func TestSettleEachOncePerEntry(t *testing.T) {
	fs := []*explore.Finding{{ID: "f1", Known: "design-a"}, {ID: "f2", Known: "design-a"}, {ID: "f3"}, {ID: "f4"},
		{ID: "f5", Known: "design-b"}, {ID: "f6", Known: "design-b"}, {ID: "f7", Known: "design-c"}, {ID: "f8", Known: "design-c"}}
	settled := func(byEntry bool) []string {
		var shrunk []string
		for _, f := range fs {
			f.Settled = nil
		}
		err := settleEach(context.Background(), fs, byEntry, func(f *explore.Finding) {
			shrunk = append(shrunk, f.ID)
			f.Settled = &explore.Settled{Known: f.Known, About: "about " + f.Known}
			switch f.ID {
			case "f5":
				f.Settled.Known = "" // its shrunk run was new after all
			case "f7":
				f.Settled.Note = "shrink: interrupted"
			}
		}, func() error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return shrunk
	}
	if got := settled(true); !slices.Equal(got, []string{"f1", "f3", "f4", "f5", "f6", "f7", "f8"}) {
		t.Fatalf("shrunk %v", got)
	}
	if s := fs[1].Settled; s == nil || s.As != "f1" || s.Known != "design-a" || s.About != "about design-a" || s.Of != 0 {
		t.Fatalf("f2 settled %+v", s)
	}
	if !strings.Contains(again(fs[1].Settled), "settled as f1") {
		t.Errorf("again: %s", again(fs[1].Settled))
	}
	if got := settled(false); len(got) != len(fs) {
		t.Fatalf("a --scripts explore shrunk %v", got)
	}
}
