package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/bugreport"
	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/coverage"
	"github.com/lockcheck/lockcheck/explore"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/known"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/shrink"
	"github.com/lockcheck/lockcheck/suite"
	"github.com/lockcheck/lockcheck/workloads/schedule"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// exploreFlags are run's flags that describe the system under test: explore passes them to every run.
var exploreFlags = []string{"lock", "lock-spec", "client", "client-cmd", "client-option", "scripts", "topology",
	"nodes", "server", "server-bin", "backend", "external", "timeout", "watchdog", "persistence", "permits"}

// exploreRunTime bounds the dry runs that try each fault.
const exploreRunTime = "30s"

func newExploreCmd() *cobra.Command {
	o := runner.Defaults()
	var (
		lockSpec, results, shard, corpus string
		shardEnv                         string
		shardCount                       int
		budget, settleBudget             time.Duration
		parallel, maxFindings, maxRuns   int
		confirm                          int
		merge                            bool
	)
	cmd := &cobra.Command{
		Use:   "explore",
		Short: "Search schedules and faults for violations nobody wrote down, guided by the lock model's coverage",
		Long: `A loop of short runs, each playing a generated schedule (actors acquiring locks or a semaphore's
permits with leases and waits, re-entries, leaves, releases, faults after an event) against the lock under
test (a mutex, a read-write lock or a semaphore). A schedule whose run
reached a coverage transition no earlier run had is kept in a corpus and mutated (a lease changed, a
re-entry or an actor added, a fault moved onto an event, two schedules spliced). Every invalid run gets a
signature; runs of one signature are one finding. When the search ends (--budget, --max-findings, --max-runs)
each finding is widened (a step that raced a lease moved past it, kept while it fails the same way),
shrunk, confirmed on fresh seeds, matched against the catalog and written as a report.
explore.json and index.html list the findings; coverage.json holds the whole map. Ctrl-C keeps what was found.
--merge DIR... gathers the directories of several explores (shards) into --results.`,
		Example: `  lockcheck explore --lock-spec examples/locks/rwlock-zset-broken.yaml --budget 2m --seed 1
  lockcheck explore --lock rwlock --budget 10m --parallel 2
  lockcheck explore --lock naive --shard 2/4 --results out/explore-2
  lockcheck explore --merge out/explore-1 out/explore-2 --results out/explore`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if merge {
				if results == "" || len(args) == 0 {
					return runner.UsageError{Err: errors.New("explore --merge: name the explores' directories and --results OUT")}
				}
				markRan(cmd)
				return mergeExplores(args, results)
			}
			if len(args) > 0 {
				return runner.UsageError{Err: fmt.Errorf("explore takes no arguments (got %q); --merge takes directories", args[0])}
			}
			if budget <= 0 || parallel < 1 || maxFindings < 0 || maxRuns < 0 || confirm < 1 {
				return runner.UsageError{Err: fmt.Errorf("--budget must be positive, --parallel and --confirm at least 1, --max-findings and --max-runs not negative")}
			}
			if !cmd.Flags().Changed("seed") {
				o.Seed = time.Now().UnixNano() % 1_000_000
			}
			var err error
			if shard, err = shardFlags(cmd, shard, shardEnv, shardCount); err != nil {
				return runner.UsageError{Err: err}
			}
			if shard != "" {
				i, n, err := suite.ParseShard(shard)
				if err != nil {
					return runner.UsageError{Err: err}
				}
				o.Seed = o.Seed*int64(n) + int64(i-1) // side by side, each shard its own search
			}
			sut, err := exploreArgs(cmd)
			if err != nil {
				return err
			}
			if err := useLockSpec(cmd, lockSpec, &o); err != nil {
				return err
			}
			o.Given = givenFlags(cmd)
			t, err := runner.Prepare(o)
			if err != nil {
				return err
			}
			caps, err := exploreCaps(cmd, t, sut)
			if err != nil {
				return runner.UsageError{Err: err}
			}
			var seeds []*explore.Genome
			if corpus != "" {
				if seeds, err = readCorpus(corpus, caps); err != nil {
					return runner.UsageError{Err: err}
				}
			}
			markRan(cmd)
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if results == "" {
				results = filepath.Join("results", "explore", caps.Lock+"-"+time.Now().Format("20060102T150405"))
			}
			if err := runner.ResultsDir(results); err != nil {
				return err
			}
			if results, err = filepath.Abs(results); err != nil { // the runs, shrink and report name it from their own directories
				return err
			}
			for _, d := range []string{"runs", "corpus", "findings"} {
				if err := suite.Subdir(results, d); err != nil {
					return err
				}
			}
			x := &exploration{exe: exe, dir: results, sut: sut, caps: caps, seed: o.Seed, shard: shard,
				confirm: confirm, settle: settleBudget, base: withoutScripts(sut), onBase: map[string]baseRun{}}
			return x.run(cmd.Context(), budget, parallel, maxFindings, maxRuns, seeds)
		},
	}
	f := cmd.Flags()
	scratch := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.Flags(scratch)
	scratch.StringVar(&lockSpec, "lock-spec", "", "YAML file describing your own Lua lock (see examples/locks/), instead of --lock")
	addWorkerFlags(scratch, &o)
	for _, name := range exploreFlags {
		f.AddFlag(scratch.Lookup(name))
	}
	f.Int64Var(&o.Seed, "seed", 0, "seeds the search (default: random, printed): the same seed gives the same schedules at --parallel 1")
	f.StringVar(&results, "results", "", "the exploration's directory (default results/explore/LOCK-TIME)")
	f.DurationVar(&budget, "budget", 10*time.Minute, "how long to search; each finding is then shrunk, confirmed and reported")
	f.DurationVar(&settleBudget, "settle-budget", 3*time.Minute, "bound on shrinking and confirming each finding")
	f.IntVar(&confirm, "confirm", 5, "fresh seeds each finding's shrunk command runs on (the k of n)")
	f.IntVar(&parallel, "parallel", 1, "runs at a time")
	f.IntVar(&maxFindings, "max-findings", 0, "stop the search at this many new findings (those no catalog entry names; 0: at the budget)")
	f.IntVar(&maxRuns, "max-runs", 0, "stop the search after this many runs (0: at the budget)")
	f.StringVar(&shard, "shard", "", "explore as shard i of n (i/n): its own seeds, merged later with --merge")
	f.StringVar(&shardEnv, "shard-index-env", "", "take the shard's 0-based index from this variable (Kubernetes: JOB_COMPLETION_INDEX), with --shard-count")
	f.IntVar(&shardCount, "shard-count", 0, "shards in all, with --shard-index-env")
	f.StringVar(&corpus, "corpus", "", "start from the corpus of an earlier explore's directory (explore.json), such as a merge")
	f.BoolVar(&merge, "merge", false, "merge the explores' directories named as arguments into --results")
	return cmd
}

// exploreArgs are the system-under-test flags given, as run arguments, files made absolute.
func exploreArgs(cmd *cobra.Command) ([]string, error) {
	var out []string
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !slices.Contains(exploreFlags, f.Name) {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		v := f.Value.String()
		if slices.Contains(pathFlags, f.Name) && v != "" {
			abs, aerr := filepath.Abs(v)
			if aerr != nil {
				err = aerr
			}
			v = abs
			_ = f.Value.Set(abs)
		}
		out = append(out, "--"+f.Name+"="+v)
	})
	return out, err
}

// withoutScripts is the system under test with the lock's own scripts: sut without --scripts (nil when it
// has none).
func withoutScripts(sut []string) []string {
	base := slices.DeleteFunc(slices.Clone(sut), func(a string) bool { return strings.HasPrefix(a, "--scripts=") })
	if len(base) == len(sut) {
		return nil
	}
	return base
}

// faultMenu are the faults a generated step may start, each kept only when a dry run of a schedule with it
// passes on this deployment. A new fault for explore is one line here. Left out: faults that break every
// lease lock by design and would fill the findings with them (clock: a node's clock a minute ahead expires
// every lease; kill without --persistence: a node restarts empty).
var faultMenu = []struct {
	explore.Fault
	persistent bool // only with --persistence everysec or always
}{
	{Fault: explore.Fault{Name: "client-pause", Client: true}},
	{Fault: explore.Fault{Name: "client-stall", Client: true}},
	{Fault: explore.Fault{Name: "drop-reply", Client: true}},
	{Fault: explore.Fault{Name: "latency", Client: true}},
	{Fault: explore.Fault{Name: "delay-pexpire"}},
	{Fault: explore.Fault{Name: "pause"}},
	{Fault: explore.Fault{Name: "failover"}},
	{Fault: explore.Fault{Name: "kill"}, persistent: true},
}

// exploreCaps are what the prepared test's lock can play, and the faults its deployment can have.
func exploreCaps(cmd *cobra.Command, t *runner.Test, sut []string) (explore.Caps, error) {
	k := t.Kind
	c := explore.Caps{Lock: t.Options.Lock, Family: k.Family.Name, Reentrant: k.Reentrant, Watchdog: k.Watchdog,
		Permits: t.Options.Permits, Timeout: t.Options.Timeout}
	if name, _, err := runner.SplitClient(t.Options.Worker.Client); err == nil && name != "" { // NAME[@VERSION][,go]
		if s, _, err := worker.Lookup(name); err == nil {
			c.OneLease = s.OneLease
		}
	}
	if !slices.Contains(explore.Families, c.Family) || k.Group {
		return c, fmt.Errorf("explore: lock %s is of the %s family: explore generates schedules of mutexes, read-write locks and semaphores of single keys", c.Lock, k.Family.Name)
	}
	dir, err := os.MkdirTemp("", "lockcheck-explore-")
	if err != nil {
		return c, err
	}
	defer os.RemoveAll(dir)
	op := c.Ops()[0]
	for _, f := range faultMenu {
		if f.persistent && t.Options.Persistence == "none" {
			continue
		}
		s := &schedule.Schedule{Steps: []schedule.Step{{Name: "a", Client: "c1", Acquire: op},
			{After: "a", Fault: f.Name, For: time.Second}}}
		if f.Client {
			s.Steps[1].Targets = []string{"c1"}
		}
		file := filepath.Join(dir, f.Name+".yaml")
		if err := os.WriteFile(file, s.Marshal(), 0o644); err != nil {
			return c, err
		}
		if dryRun(cmd, append(slices.Clone(sut), "--schedule="+file, "--quiet=0s", "--time="+exploreRunTime)) == nil {
			c.Faults = append(c.Faults, f.Fault)
		}
	}
	return c, nil
}

// exploration is one `lockcheck explore`: where it writes, what it passes every run, and what it found.
type exploration struct {
	exe, dir string
	sut      []string
	caps     explore.Caps
	seed     int64
	shard    string
	confirm  int
	settle   time.Duration

	e       *explore.Explorer
	began   time.Time
	mu      sync.Mutex
	keep    map[int]bool // runs whose directory stays: corpus entries and findings
	pmu     sync.Mutex   // the progress line's
	printed time.Time
	// cov is every run's coverage added up, for the map (the explorer keeps the keys alone);
	// covFamily is the coverage family of the runs' lock (coverage.FamilyOf).
	cov       *coverage.Map
	covFamily string
	// base is a --scripts explore's system under test with the lock's own scripts (nil otherwise), and
	// onBase what each finding's first schedule showed there, by signature (see baseOf).
	base   []string
	onBase map[string]baseRun
}

// baseRun is a finding's first schedule replayed on the lock's own scripts: whether it failed there with the
// same violation, the catalog entry that run matched ("" for none), and its directory (in the explore's).
type baseRun struct {
	same              bool
	known, about, dir string
}

// Explore is explore.json.
type Explore struct {
	Lock     string             `json:"lock"`
	Family   string             `json:"family"`
	Args     []string           `json:"args"` // the system under test's flags, as every run got them
	Seed     int64              `json:"seed"`
	Shard    string             `json:"shard,omitempty"`
	Started  time.Time          `json:"started"`
	Seconds  float64            `json:"seconds"`
	Runs     int                `json:"runs"`
	Invalid  int                `json:"invalid"`
	Errors   int                `json:"errors"`
	Coverage int                `json:"coverage"`
	Faults   []string           `json:"faults"` // the faults the deployment could have
	Stopped  string             `json:"stopped,omitempty"`
	Growth   []explore.Point    `json:"growth"`
	Corpus   []*explore.Entry   `json:"corpus"`
	Findings []*explore.Finding `json:"findings"`
	Merged   []string           `json:"merged,omitempty"` // the directories a merge gathered
	dir      string
}

func (x *exploration) run(ctx context.Context, budget time.Duration, parallel, maxFindings, maxRuns int, seeds []*explore.Genome) error {
	x.began, x.keep = time.Now(), map[int]bool{}
	var faults []string
	for _, f := range x.caps.Faults {
		faults = append(faults, f.Name)
	}
	fmt.Fprintf(os.Stderr, "lockcheck: explore %s (%s): seed %d, budget %s, %d at a time, faults: %s; into %s\n",
		x.caps.Lock, x.caps.Family, x.seed, budget, parallel, orNone(strings.Join(faults, ", ")), x.dir)
	x.e = &explore.Explorer{Caps: x.caps, Seed: x.seed, Run: x.trial, Parallel: parallel, MaxFindings: maxFindings,
		MaxRuns: maxRuns, Progress: x.progress, NewFinding: x.newFinding, NewEntry: x.newEntry}
	x.e.SeedCorpus(seeds)
	sctx, cancel := context.WithTimeoutCause(ctx, budget, context.DeadlineExceeded)
	x.e.Search(sctx)
	cancel()
	st := x.e.Status()
	fmt.Fprintln(os.Stderr, st.Line()+" (stopped: "+x.e.Stopped+")")
	x.prune()
	if err := x.write(); err != nil {
		return err
	}
	if x.e.Stopped == "interrupted" {
		fmt.Printf("interrupted: %d finding(s) kept unsettled in %s\n", len(x.e.Findings), filepath.Join(x.dir, "explore.json"))
		return exitError{exitInterrupted}
	}
	if err := settleEach(ctx, x.e.Findings, x.base == nil, func(f *explore.Finding) { x.settleFinding(ctx, f) }, x.write); err != nil {
		return err
	}
	x.summary(os.Stdout)
	if ctx.Err() != nil {
		return exitError{exitInterrupted}
	}
	if newFindings(x.e.Findings) > 0 { // as a suite whose run missed its expectation: CI fails on it
		return exitError{exitInvalid}
	}
	return nil
}

// settleEach settles each finding in turn (settle), then calls done (explore.json written as it grows).
// A finding whose first run matched a catalog entry that an earlier finding was settled as is that entry
// again: it is recorded as settled as that finding, not shrunk, since each shrink costs a settle budget and
// an unbroken lock's 30 minutes find the same design limits tens of times. Only where the first run's
// entry is the settled word (byEntry: not a --scripts explore, whose base decides each finding).
func settleEach(ctx context.Context, fs []*explore.Finding, byEntry bool, settle func(*explore.Finding), done func() error) error {
	settledAs := map[string]*explore.Finding{} // a catalog entry, and the finding settled as it
	for _, f := range fs {
		if ctx.Err() != nil {
			break
		}
		if by := settledAs[f.Known]; by != nil && byEntry {
			f.Settled = &explore.Settled{As: by.ID, Known: by.Settled.Known, About: by.Settled.About}
			fmt.Fprintf(os.Stderr, "  %s: known: %s, as %s, settled before it; not shrunk again\n", f.ID, f.Known, by.ID)
		} else {
			settle(f)
			if s := f.Settled; s != nil && f.Known != "" && s.Known == f.Known && s.Note == "" {
				settledAs[f.Known] = f
			}
		}
		if err := done(); err != nil {
			return err
		}
	}
	return nil
}

// trial runs one genome as a child `lockcheck run --schedule`, a fresh deployment each time.
func (x *exploration) trial(ctx context.Context, t explore.Trial) explore.Outcome {
	name := fmt.Sprintf("%05d", t.N)
	t.Genome.Schedule.About = fmt.Sprintf("explore %s, run %d: %s", x.caps.Lock, t.N, t.Genome.Origin)
	return x.play(ctx, t.Genome, t.Seed, filepath.Join(x.dir, "runs", name), name, true)
}

// play runs a genome on a seed into dir and reads what it showed: its coverage, and an invalid run's
// signature and catalog entry. A search's run adds its transitions to the map; a finding's settling runs
// (search false) do not: the map is what the search reached, as explore.json counts it.
func (x *exploration) play(ctx context.Context, g *explore.Genome, seed int64, dir, name string, search bool) explore.Outcome {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return explore.Outcome{Verdict: "error", Note: err.Error()}
	}
	file := filepath.Join(dir, "schedule.yaml")
	if err := os.WriteFile(file, g.Schedule.Marshal(), 0o644); err != nil {
		return explore.Outcome{Verdict: "error", Note: err.Error()}
	}
	o, err := x.runOnce(ctx, x.sut, g, file, seed, dir, name)
	if err != nil {
		return explore.Outcome{Verdict: "error", Note: err.Error()}
	}
	out := explore.Outcome{Dir: filepath.Join(dir, o.Dir), Verdict: o.Verdict, Note: o.Story, FirstNs: o.FirstNs,
		Seconds: o.Seconds, Refused: o.Exit == exitUsage}
	if o.Verdict == "error" {
		out.Note = o.Violation
		return out
	}
	h, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		out.Verdict, out.Note = "error", err.Error()
		return out
	}
	var m *coverage.Map
	out.Transitions, m = coverageOf(h)
	if search {
		x.mu.Lock()
		if x.cov == nil {
			x.cov, x.covFamily = coverage.NewMap(), coverage.FamilyOf(h)
		}
		x.cov.Add(m)
		x.mu.Unlock()
	}
	if o.Verdict == "invalid" {
		var sig known.Signature
		if res, err := report.ReadResults(out.Dir); err == nil {
			var ok bool
			if sig, ok = signatureOf(h, res); ok {
				out.Signature = findingKey(sig)
				out.Known, _ = knownOf(h, res)
			}
		}
		if x.base != nil && out.Signature != "" {
			out.Known, _ = x.baseOf(ctx, g, file, seed, dir, out.Signature, sig).decide(out.Known, "")
		}
	}
	return out
}

// runOnce runs a genome's schedule file with the system under test's flags sut as a child `lockcheck run`
// into dir.
func (x *exploration) runOnce(ctx context.Context, sut []string, g *explore.Genome, file string, seed int64, dir, name string) (suite.Outcome, error) {
	// --time only bounds the run (a once-schedule ends with its steps): its steps' longest chain and a margin
	runTime := (g.Span(x.caps) + 3*time.Second).Round(time.Second)
	args := slices.Concat(sut, g.Args(), []string{"--schedule=" + file, "--quiet=0s", "--time=" + runTime.String()})
	s := &suite.Suite{Name: name, Cases: []suite.Case{{ID: "run", Entry: name, Args: append(args, "--seed="+strconv.FormatInt(seed, 10)),
		Seed: seed, Expect: []string{"valid"}}}}
	rep, err := suite.Run(ctx, s, "", suite.Config{Exe: x.exe, Dir: dir, Parallel: 1, Repeat: 1, KeepAll: true})
	if err != nil {
		return suite.Outcome{}, err
	}
	if len(rep.Outcomes) == 0 {
		return suite.Outcome{}, errors.New("interrupted")
	}
	return rep.Outcomes[0], nil
}

// baseOf: on a --scripts explore (a lock's script set with some files replaced: a twin, or a user's change),
// what decides known or new is whether the lock's own scripts fail the same way: each invalid run's
// signature is replayed, once per signature, on the lock's own scripts (the same schedule and settings,
// the run's seed and the next, until one fails with the same violation by the same checker). Failing so,
// the finding is the lock's own behaviour, known by that run's catalog entry (a library's entries do not
// match a --scripts run, nobody's library) or by its own; staying valid, it is the replaced scripts' own,
// new whatever design limit its signature resembles (a twin whose re-entry replaces the lease looks like
// RLock's design).
func (x *exploration) baseOf(ctx context.Context, g *explore.Genome, file string, seed int64, dir, key string, sig known.Signature) baseRun {
	x.mu.Lock()
	b, done := x.onBase[key]
	x.mu.Unlock()
	if done {
		return b
	}
	for i := range int64(2) {
		bdir := filepath.Join(dir, "base", strconv.FormatInt(i+1, 10))
		o, err := x.runOnce(ctx, x.base, g, file, seed+i, bdir, "base")
		if err != nil || o.Verdict != "invalid" {
			continue
		}
		run := filepath.Join(bdir, o.Dir)
		h, herr := history.ReadFile(filepath.Join(run, "history.jsonl"))
		res, rerr := report.ReadResults(run)
		if herr != nil || rerr != nil {
			continue
		}
		// the same violation by the same checker: which faults were in force at it, or which side of a
		// lease it fell on, may differ from run to run of one schedule
		if s, ok := signatureOf(h, res); ok && s.Kind == sig.Kind && s.Checker == sig.Checker && s.Family == sig.Family {
			b.same, b.dir = true, rel(x.dir, run)
			b.known, b.about = knownOf(h, res)
			break
		}
	}
	if ctx.Err() != nil { // cut short: not an answer to keep
		return baseRun{}
	}
	x.mu.Lock()
	x.onBase[key] = b
	x.mu.Unlock()
	return b
}

// decide is a --scripts explore's known-or-new for a finding its own run matched as known (known, about):
// the base's entry where the lock's own scripts fail the same way, else new.
func (b baseRun) decide(known, about string) (string, string) {
	switch {
	case !b.same:
		return "", ""
	case b.known != "":
		return b.known, b.about + " (the lock's own scripts fail the same way on this schedule: " + b.dir + ")"
	}
	return known, about
}

// progress prints the status line now and then, and every run that added to the map or found something.
func (x *exploration) progress(s explore.Status, out explore.Outcome) {
	if s.LastNew > 0 || out.Signature != "" {
		_ = x.write() // explore.json as it grows: Ctrl-C or a killed explore keeps what it found
	}
	x.pmu.Lock() // runs end side by side
	defer x.pmu.Unlock()
	if s.LastNew > 0 || time.Since(x.printed) > 10*time.Second || out.Verdict == "error" {
		x.printed = time.Now()
		line := s.Line()
		if s.LastNew > 0 {
			line += fmt.Sprintf(" (+%d)", s.LastNew)
		}
		if out.Verdict == "error" && out.Note != "" {
			line += "; a run ended in error: " + out.Note
		}
		fmt.Fprintln(os.Stderr, line)
	}
}

func (x *exploration) newEntry(e *explore.Entry) {
	x.keep[e.Run] = true
	e.File = filepath.Join("corpus", e.ID+".yaml")
	_ = copyFile(filepath.Join(x.dir, "runs", fmt.Sprintf("%05d", e.Run), "schedule.yaml"), filepath.Join(x.dir, e.File))
}

func (x *exploration) newFinding(f *explore.Finding) {
	x.keep[f.FirstRun] = true
	f.File = filepath.Join("findings", f.ID, "schedule.yaml")
	_ = os.MkdirAll(filepath.Join(x.dir, "findings", f.ID), 0o755)
	_ = copyFile(filepath.Join(x.dir, "runs", fmt.Sprintf("%05d", f.FirstRun), "schedule.yaml"), filepath.Join(x.dir, f.File))
	fmt.Fprintf(os.Stderr, "finding %s at run %d (%.0fs): %s\n  %s\n", f.ID, f.FirstRun, f.FoundS, f.Signature, f.Story)
}

// prune removes the directories of runs that neither reached something new nor found anything: a long
// exploration's thousands of valid runs would fill the disk.
func (x *exploration) prune() {
	ents, _ := os.ReadDir(filepath.Join(x.dir, "runs"))
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err == nil && !x.keep[n] {
			_ = os.RemoveAll(filepath.Join(x.dir, "runs", e.Name()))
		}
	}
}

func copyFile(from, to string) error {
	b, err := safefile.Read(from, schedule.MaxFile)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// settleFinding shrinks a finding's first run with the shrink command's machinery (the time reducers of a
// schedule run, then its final measurement on --confirm fresh seeds and the caught run as a schedule),
// matches it against the catalog and writes its report.
func (x *exploration) settleFinding(ctx context.Context, f *explore.Finding) {
	st := &explore.Settled{}
	f.Settled = st
	fdir := filepath.Join(x.dir, "findings", f.ID)
	log, err := os.Create(filepath.Join(fdir, "shrink.txt"))
	if err != nil {
		st.Note = err.Error()
		return
	}
	defer log.Close()
	run := x.settleSchedule(ctx, f, fdir, log)
	st.Run = rel(x.dir, run)
	fmt.Fprintf(os.Stderr, "settling %s (%s): shrinking, confirming on %d fresh seeds ...\n", f.ID, f.Signature, x.confirm)
	res, sig, start, err := readShrinkRun(run, "")
	if err != nil {
		st.Note = err.Error()
		return
	}
	start = ownRun(start)
	sdir := filepath.Join(fdir, "shrink")
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		st.Note = err.Error()
		return
	}
	o := shrinkOracle{exe: x.exe, dir: sdir, sig: sig, parallel: 3}
	err = runShrink(ctx, log, run, res.Seed, start, sig, o, shrinkPlan{seeds: 2, repeats: x.confirm, budget: x.settle, scheduleRuns: x.confirm})
	st.Shrink = rel(x.dir, sdir)
	var sr shrink.Result
	if b, rerr := safefile.Read(filepath.Join(sdir, "shrink.json"), safefile.ResultsMax); rerr == nil && json.Unmarshal(b, &sr) == nil {
		st.Minimal, st.Caught, st.Of = sr.Minimal, sr.Caught, sr.Repeats
		if sr.Schedule != nil && sr.Schedule.File != "" {
			st.Schedule = rel(x.dir, sr.Schedule.File)
			st.ScheduleCaught, st.ScheduleOf = sr.Schedule.Caught, sr.Schedule.Runs
		}
	}
	if err != nil {
		st.Note = "shrink: " + oneLine(err)
	}
	if h, herr := history.ReadFile(filepath.Join(run, "history.jsonl")); herr == nil && h.Run != nil {
		st.Known, st.About = knownOf(h, res)
	}
	if x.base != nil {
		st.Known, st.About = x.onBase[f.Signature].decide(st.Known, st.About)
	}
	in, err := bugreport.Load(run, sdir)
	if err == nil {
		out := filepath.Join(fdir, "report.md")
		if err = report.WriteAtomic(out, in.Write); err == nil {
			st.Report = rel(x.dir, out)
		}
	}
	if err != nil && st.Note == "" {
		st.Note = "report: " + oneLine(err)
	}
	known := "new"
	if st.Known != "" {
		known = "known: " + st.Known
	}
	fmt.Fprintf(os.Stderr, "  %s: %s; %s; report %s\n", f.ID, again(st), known, orNone(st.Report))
}

// widenTries and trimTries bound the moves a finding's widening tries and the cuts its trimming tries
// (two runs each at most).
const (
	widenTries = 4
	trimTries  = 8
)

// settleSchedule moves the steps of the finding's schedule that race a lease later past it
// (explore.Widen), then cuts the steps it does without (explore.Trim); each move or cut is kept when two
// runs of the changed schedule, on the finding's seed and the next, still fail with its signature (one
// run may fail by luck, as the finding's own did). It returns the run to settle: the last kept change's,
// or the finding's own. Half the settle budget bounds each.
func (x *exploration) settleSchedule(ctx context.Context, f *explore.Finding, fdir string, log io.Writer) string {
	run := f.Dir
	g := f.Genome()
	if g == nil {
		return run
	}
	n := 0
	still := func(what string) func(context.Context, *explore.Genome) bool {
		return func(ctx context.Context, g *explore.Genome) bool {
			n++
			g.Schedule.About = fmt.Sprintf("explore %s, %s %s (%d): %s", x.caps.Lock, f.ID, what, n, g.Origin)
			first, sig := "", ""
			for k := range int64(2) {
				name := fmt.Sprintf("w%d-%d", n, k+1)
				out := x.play(ctx, g, f.Seed+k, filepath.Join(fdir, "widen", name), name, false)
				// A move keeps the signature whole. A cut may take away a fault that was in force without
				// being the cause (a node pause begun as the flaw's release went out, making it 3 of 5):
				// the same violation by the same checker on the lock, twice alike, is still the finding.
				same := out.Signature == f.Signature
				if what == "trimmed" {
					same = violationOf(out.Signature) == violationOf(f.Signature) && (sig == "" || out.Signature == sig)
				}
				if out.Verdict != "invalid" || !same {
					fmt.Fprintf(log, "%s %s: %s, not kept: %s\n", what, name, out.Verdict, orNone(out.Signature))
					return false
				}
				if first == "" {
					first, sig = out.Dir, out.Signature
				}
			}
			fmt.Fprintf(log, "%s w%d: kept, 2 of 2 runs fail with the same signature (%s)\n", what, n, sig)
			run = first
			return true
		}
	}
	wctx, cancel := context.WithTimeout(ctx, x.settle/2)
	g, widened := explore.Widen(wctx, x.caps, g, widenTries, still("widened"))
	cancel()
	tctx, cancel := context.WithTimeout(ctx, x.settle/2)
	_, trimmed := explore.Trim(tctx, x.caps, g, trimTries, still("trimmed"))
	cancel()
	for _, w := range widened {
		f.Settled.Widened = append(f.Settled.Widened, w.String())
	}
	for _, t := range trimmed {
		f.Settled.Trimmed = append(f.Settled.Trimmed, t.String())
	}
	if len(widened) > 0 {
		fmt.Fprintf(os.Stderr, "  %s widened: %s\n", f.ID, strings.Join(f.Settled.Widened, "; "))
	}
	if len(trimmed) > 0 {
		fmt.Fprintf(os.Stderr, "  %s trimmed: %s\n", f.ID, strings.Join(f.Settled.Trimmed, "; "))
	}
	return run
}

// ownRun gives back the flags shrink withholds from a run directory (--schedule, --scripts, --lock-spec,
// --client-cmd, ...): explore made this run itself, a moment ago, from the user's flags and the schedule
// it wrote, so its command is explore's own word, not a directory someone handed over. Without them the
// shrink would replay the random workload on the lock without its scripts, and nothing would fail again.
func ownRun(c shrink.Cmd) shrink.Cmd {
	for _, name := range slices.Sorted(maps.Keys(history.Withheld)) {
		if rec := c.Recorded(name); len(rec) > 0 {
			c = c.Give(name, rec...)
		}
	}
	return c
}

func rel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return r
	}
	return p
}

func (x *exploration) explore(st explore.Status) *Explore {
	return &Explore{Lock: x.caps.Lock, Family: x.caps.Family, Args: x.sut, Seed: x.seed, Shard: x.shard, Started: x.began,
		Seconds: time.Since(x.began).Seconds(), Runs: st.Runs, Invalid: st.Invalid, Errors: st.Errors,
		Coverage: len(x.e.Coverage), Faults: faultNames(x.caps.Faults), Stopped: x.e.Stopped, Growth: x.e.Growth,
		Corpus: x.e.Corpus, Findings: x.e.Findings, dir: x.dir}
}

func faultNames(fs []explore.Fault) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// write writes explore.json, its page and the coverage map.
func (x *exploration) write() error {
	x.mu.Lock() // one writer at a time: runs end side by side
	defer x.mu.Unlock()
	var err error
	x.e.View(func(st explore.Status) {
		if err = x.explore(st).write(x.dir); err == nil {
			err = writeCoverage(x.dir, x.covFamily, x.cov)
		}
	})
	return err
}

func (ex *Explore) write(dir string) error {
	b, err := json.MarshalIndent(ex, "", "  ")
	if err != nil {
		return err
	}
	if err := report.WriteAtomic(filepath.Join(dir, "explore.json"), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return err
	}
	return report.WriteAtomic(filepath.Join(dir, "index.html"), ex.page)
}

// CoverageMap is coverage.json: every transition seen with how often, and those the lock's model allows
// that no run reached (faults and scripts aside).
type CoverageMap struct {
	Family    string                `json:"family"`
	Seen      *coverage.Map         `json:"seen"`
	Unreached []coverage.Transition `json:"unreached"`
}

func writeCoverage(dir, family string, seen *coverage.Map) error {
	if seen == nil {
		seen = coverage.NewMap()
	}
	m := CoverageMap{Family: family, Seen: seen, Unreached: seen.Unreached(family)}
	if m.Unreached == nil {
		m.Unreached = []coverage.Transition{}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteAtomic(filepath.Join(dir, "coverage.json"), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// violationOf is a signature's violation, checker and lock family ("overlap by mutual-exclusion on a
// rwlock"), without the faults in force, the lease side or the shape that follow it.
func violationOf(sig string) string {
	v, _, _ := strings.Cut(sig, ", ")
	return v
}

// summary prints the growth of the map and the findings, each with its k of n, known or new, and report.
func (x *exploration) summary(w io.Writer) {
	st := x.e.Status()
	fmt.Fprintf(w, "explore %s: %d runs in %s, coverage %d transitions (%d of what the model allows still unreached), %d finding(s)\n",
		x.caps.Lock, st.Runs, time.Since(x.began).Round(time.Second), len(x.e.Coverage), len(x.cov.Unreached(x.covFamily)), len(x.e.Findings))
	if len(x.e.Growth) > 0 {
		var pts []string
		for _, p := range x.e.Growth {
			pts = append(pts, fmt.Sprintf("%d@run%d", p.Coverage, p.Run))
		}
		fmt.Fprintf(w, "growth: %s\n", strings.Join(pts, " "))
	}
	printFindings(w, x.dir, x.e.Findings)
	fmt.Fprintf(w, "map: %s; findings: %s\n", filepath.Join(x.dir, "coverage.json"), filepath.Join(x.dir, "index.html"))
}

// again is how often a settled finding failed again: its smallest command (the shrunk schedule, chained by
// events), and the caught run's timeline written as timed steps where one was written.
func again(s *explore.Settled) string {
	if s.As != "" {
		return "settled as " + s.As + " (its catalog entry's), not shrunk again"
	}
	t := fmt.Sprintf("fails again in %d of %d fresh runs", s.Caught, s.Of)
	if s.ScheduleOf > 0 {
		t += fmt.Sprintf(" (its timed steps %d of %d)", s.ScheduleCaught, s.ScheduleOf)
	}
	return t
}

// printFindings prints each finding as a suite prints a run (suite.PrintOutcome: "FAIL f1 invalid (want
// valid or known) 4.0s", its story and its known-or-new line under it), so that the Action reads an
// explore's log as it reads a suite's: a new finding misses the expectation, a known one meets it. Then
// its files.
func printFindings(w io.Writer, dir string, fs []*explore.Finding) {
	for _, f := range fs {
		o := suite.Outcome{Case: suite.Case{ID: f.ID, Expect: []string{"valid", "known"}}, Verdict: "invalid",
			Story: f.Story, Seconds: f.FoundS, Known: "new: " + f.Signature}
		settled := "not settled"
		if s := f.Settled; s != nil {
			settled = again(s)
			if c := s.Changes(); c != "" {
				settled += " once " + c
			}
			if s.Known != "" {
				o.Met, o.Known = true, fmt.Sprintf("known: `%s`, %s", s.Known, s.About)
			}
		}
		suite.PrintOutcome(w, o)
		fmt.Fprintf(w, "  %s; first at run %d, %d run(s); schedule %s", settled, f.FirstRun, len(f.Runs), filepath.Join(dir, f.File))
		if f.Settled != nil && f.Settled.Report != "" {
			fmt.Fprintf(w, "; report %s", filepath.Join(dir, f.Settled.Report))
		}
		fmt.Fprintln(w)
	}
}

// newFindings counts the findings the catalog does not know (unsettled ones too).
func newFindings(fs []*explore.Finding) int {
	n := 0
	for _, f := range fs {
		if f.Settled == nil || f.Settled.Known == "" {
			n++
		}
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// readExplore reads a directory's explore.json.
func readExplore(dir string) (*Explore, error) {
	b, err := safefile.Read(filepath.Join(dir, "explore.json"), safefile.ResultsMax)
	if err != nil {
		return nil, fmt.Errorf("%s: not an explore's directory: %v", dir, err)
	}
	var ex Explore
	if err := json.Unmarshal(b, &ex); err != nil {
		return nil, fmt.Errorf("%s/explore.json: %v", dir, err)
	}
	ex.dir = dir
	return &ex, nil
}

// readCorpus reads an earlier explore's corpus: each entry's schedule, checked against this lock (a
// schedule of another family is refused: that corpus is another lock's).
func readCorpus(dir string, c explore.Caps) ([]*explore.Genome, error) {
	ex, err := readExplore(dir)
	if err != nil {
		return nil, err
	}
	var out []*explore.Genome
	for _, e := range ex.Corpus {
		if e.File == "" {
			continue
		}
		s, err := schedule.Load(filepath.Join(dir, e.File))
		if err != nil {
			return nil, fmt.Errorf("--corpus: %v", err)
		}
		var settings []explore.Setting
		for _, a := range e.Args {
			name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			settings = append(settings, explore.Setting{Flag: name, Value: value})
		}
		g := explore.FromSchedule(s, settings)
		if err := g.Check(c); err != nil {
			return nil, fmt.Errorf("--corpus %s: %s: %v", dir, e.File, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// mergeExplores gathers several explores of one lock (shards, machines) into out: the coverage maps added,
// the corpora side by side, the findings by signature (the earliest of each kept, its runs counted).
func mergeExplores(dirs []string, out string) error {
	if err := runner.ResultsDir(out); err != nil {
		return err
	}
	for _, d := range []string{"corpus", "findings"} {
		if err := suite.Subdir(out, d); err != nil {
			return err
		}
	}
	m := &Explore{Started: time.Now(), Corpus: []*explore.Entry{}, Findings: []*explore.Finding{}}
	seen, family := coverage.NewMap(), ""
	for i, dir := range dirs {
		ex, err := readExplore(dir)
		if err != nil {
			return runner.UsageError{Err: err}
		}
		if m.Lock == "" {
			m.Lock, m.Family, m.Args, m.Faults = ex.Lock, ex.Family, ex.Args, ex.Faults
		} else if ex.Lock != m.Lock || ex.Family != m.Family {
			return runner.UsageError{Err: fmt.Errorf("%s explored %s, %s explored %s: merge explores of one lock", dir, ex.Lock, dirs[0], m.Lock)}
		}
		m.Merged = append(m.Merged, dir)
		m.Runs, m.Invalid, m.Errors, m.Seconds = m.Runs+ex.Runs, m.Invalid+ex.Invalid, m.Errors+ex.Errors, max(m.Seconds, ex.Seconds)
		if cm, err := readCoverage(dir); err == nil && cm.Seen != nil {
			seen.Add(cm.Seen)
			family = cm.Family
		}
		prefix := fmt.Sprintf("m%d-", i+1)
		for _, e := range ex.Corpus {
			if e.File == "" {
				continue
			}
			e.ID = prefix + e.ID
			to := filepath.Join("corpus", e.ID+".yaml")
			if err := copyFile(filepath.Join(dir, e.File), filepath.Join(out, to)); err != nil {
				return err
			}
			e.File = to
			m.Corpus = append(m.Corpus, e)
		}
		for _, f := range ex.Findings {
			if j := slices.IndexFunc(m.Findings, func(g *explore.Finding) bool { return g.Signature == f.Signature }); j >= 0 {
				g := m.Findings[j]
				if f.FoundS < g.FoundS {
					f.Runs, m.Findings[j] = append(f.Runs, g.Runs...), f
					f.Dir, f.File = absIn(dir, f.Dir), absIn(dir, f.File)
					rebase(f, dir)
				} else {
					g.Runs = append(g.Runs, f.Runs...)
				}
				continue
			}
			f.Dir, f.File = absIn(dir, f.Dir), absIn(dir, f.File)
			rebase(f, dir)
			m.Findings = append(m.Findings, f)
		}
	}
	m.Coverage = seen.Len()
	for i, f := range m.Findings {
		f.ID = "f" + strconv.Itoa(i+1)
	}
	if err := m.write(out); err != nil {
		return err
	}
	if err := writeCoverage(out, family, seen); err != nil {
		return err
	}
	fmt.Printf("explore merge: %d explores of %s, %d runs, coverage %d transitions, %d finding(s), corpus %d\n",
		len(dirs), m.Lock, m.Runs, m.Coverage, len(m.Findings), len(m.Corpus))
	printFindings(os.Stdout, out, m.Findings)
	if newFindings(m.Findings) > 0 {
		return exitError{exitInvalid}
	}
	return nil
}

// absIn is p, relative to dir, as a path that names it from anywhere.
func absIn(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if a, err := filepath.Abs(filepath.Join(dir, p)); err == nil {
		return a
	}
	return p
}

// rebase makes a merged finding's settled paths name their shard's files.
func rebase(f *explore.Finding, dir string) {
	if s := f.Settled; s != nil {
		s.Shrink, s.Schedule, s.Report = absIn(dir, s.Shrink), absIn(dir, s.Schedule), absIn(dir, s.Report)
	}
}

func readCoverage(dir string) (*CoverageMap, error) {
	b, err := safefile.Read(filepath.Join(dir, "coverage.json"), safefile.ResultsMax)
	if err != nil {
		return nil, err
	}
	var m CoverageMap
	return &m, json.Unmarshal(b, &m)
}
