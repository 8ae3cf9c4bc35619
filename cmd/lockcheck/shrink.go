package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/redact"
	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/shrink"
	"github.com/lockcheck/lockcheck/suite"
	"github.com/lockcheck/lockcheck/workloads/schedule"
	"github.com/spf13/cobra"
)

func newShrinkCmd() *cobra.Command {
	var (
		checkerName, results     string
		seeds, repeats, parallel int
		budget                   time.Duration
		trust                    []string
	)
	cmd := &cobra.Command{
		Use:   "shrink RUN_DIR",
		Short: "Find a smaller run that fails the same way as an invalid one, by re-running candidates",
		Long: `Re-runs the run's own command with one thing made smaller at a time: a shorter --time, a fault kind
dropped, fewer fault events (or faults fired by the lock's events), fewer clients, threads and keys, no
re-entry, cross-thread operations or force-unlocks, narrower hold, lease and wait ranges. A step is kept
only when every one of --seeds fresh seeds fails the same way: the same checker invalid with the same kind
of violation. Each step's line is printed as it ends. At the end the smallest command runs on --repeats
more seeds, and shrink.json and steps.txt are written; the command is printed last. --budget bounds the
whole; Ctrl-C stops at once and keeps the best command found so far.

A run directory is data: shrink takes from its command only the flags that name no command, address or
path (docs/security.md). A run that had --client-cmd, --server-bin, --scripts, --lock-spec, --schedule,
--backend, --docker-image, --client-option or an --external flag is refused in one line naming them, until
you name each again on shrink's command line (lockcheck shrink --schedule FILE RUN_DIR), or, after reading
them, pass --trust-recorded with their names to take them as recorded. A --schedule must be the file the
run played (its sha256).`,
		Example: `  lockcheck shrink results/latest
  lockcheck shrink --budget 5m --seeds 2 --checker mutual-exclusion results/latest
  lockcheck shrink --schedule examples/schedules/naive-stale-release.yaml results/latest`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return runner.UsageError{Err: fmt.Errorf("shrink: name one run directory (lockcheck shrink RUN_DIR)")}
			}
			if seeds < 1 || repeats < 1 || parallel < 1 || budget <= 0 {
				return runner.UsageError{Err: fmt.Errorf("--seeds, --repeats and --parallel must be at least 1 and --budget positive, got %d, %d, %d and %s", seeds, repeats, parallel, budget)}
			}
			dir := args[0]
			res, sig, start, err := readShrinkRun(dir, checkerName)
			if err != nil {
				return runner.UsageError{Err: err}
			}
			if start, err = giveAgain(cmd, dir, start, trust, playedSHA(res)); err != nil {
				return runner.UsageError{Err: err}
			}
			if err := sameSchedule(start, res); err != nil {
				return runner.UsageError{Err: err}
			}
			secrets := start.Secrets // its runs read them where the original did, or fail to start
			if start.Get("backend") == runner.BackendExternal && !slices.Contains(secrets, "external-password") {
				secrets = append(secrets, "external-password")
			}
			for _, name := range secrets {
				if env := redact.Flags[name]; env != "" && os.Getenv(env) == "" {
					fmt.Fprintf(os.Stderr, "lockcheck: shrink's runs read --%s from $%s, which is not set: a deployment that needs it will refuse them\n", name, env)
				}
			}
			// Bad flags are said once, now, not as every candidate's run failing to start.
			if err := dryRun(cmd, start.Args()); err != nil {
				return runner.UsageError{Err: fmt.Errorf("%s's command, as shrink would run it, does not start: %s", dir, oneLine(err))}
			}
			if results == "" {
				if results, err = shrinkDir(dir); err != nil {
					return runner.UsageError{Err: err}
				}
			}
			markRan(cmd)
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if err := runner.ResultsDir(results); err != nil {
				return err
			}
			o := shrinkOracle{exe: exe, dir: results, sig: sig, parallel: parallel}
			return runShrink(cmd.Context(), os.Stdout, dir, res.Seed, start, sig, o, shrinkPlan{seeds: seeds, repeats: repeats, budget: budget})
		},
	}
	f := cmd.Flags()
	f.DurationVar(&budget, "budget", 10*time.Minute, "bound on the whole shrink, the final measurement included")
	f.IntVar(&seeds, "seeds", 3, "fresh seeds each step must all fail on to be kept")
	f.IntVar(&repeats, "repeats", 5, "runs of the smallest command at the end, to say how often it fails")
	f.IntVar(&parallel, "parallel", 3, "runs at a time")
	f.StringVar(&checkerName, "checker", "", "the invalid checker to keep (default: the one the story leads with: an overlap, then a lost lock, a holder not told, no legal order, any other; the earliest among equals, as docs/shrink.md says)")
	f.StringVar(&results, "results", "", "directory of the candidates' runs and shrink.json (default RUN_DIR/shrink/TIME)")
	for _, name := range slices.Sorted(maps.Keys(history.Withheld)) { // named again: read by giveAgain
		f.StringArray(name, nil, fmt.Sprintf("lockcheck run's --%s, never taken from RUN_DIR (%s)", name, history.Withheld[name]))
	}
	f.StringSliceVar(&trust, "trust-recorded", nil, "take these withheld flags (names, comma-separated) from RUN_DIR's command as recorded: read them first")
	return cmd
}

// giveAgain puts back the withheld flags of a run's command: those the user named again on shrink's
// command line, and those --trust-recorded names, as recorded (printed as they are taken). Any other one
// refuses the shrink, in one line naming each and why: a run directory someone hands you is data.
func giveAgain(cmd *cobra.Command, dir string, c shrink.Cmd, trust []string, played string) (shrink.Cmd, error) {
	for _, name := range slices.Sorted(maps.Keys(history.Withheld)) {
		if cmd.Flags().Changed(name) {
			vals, _ := cmd.Flags().GetStringArray(name)
			for i, v := range vals { // as lockcheck run records them: absolute, for the candidates and the lines printed
				if abs, err := filepath.Abs(v); slices.Contains(pathFlags, name) && v != "" && err == nil {
					vals[i] = abs
				}
			}
			c = c.Give(name, vals...)
		}
	}
	var taken []string
	for _, name := range trust {
		name = strings.TrimPrefix(strings.TrimSpace(name), "--")
		if _, ok := history.Withheld[name]; !ok {
			return c, fmt.Errorf("--trust-recorded %s: not a flag shrink withholds (those are %s)", name, join(slices.Sorted(maps.Keys(history.Withheld))))
		}
		rec := c.Recorded(name)
		if len(rec) == 0 {
			if !cmd.Flags().Changed(name) {
				return c, fmt.Errorf("--trust-recorded %s: %s's command has no --%s", name, dir, name)
			}
			continue
		}
		for _, v := range rec {
			taken = append(taken, fmt.Sprintf("--%s=%q", name, v))
		}
		c = c.Give(name, rec...)
	}
	if len(taken) > 0 {
		fmt.Printf("shrink: taking from %s as recorded (--trust-recorded): %s\n", dir, strings.Join(taken, " "))
	}
	// The run's copy of the schedule it played (RUN_DIR/schedule.yaml, a file of the run, not a path its
	// command names), when its hash is the one the run recorded.
	if own := filepath.Join(dir, "schedule.yaml"); len(c.Recorded("schedule")) > 0 && played != "" {
		if fi, err := os.Lstat(own); err == nil && fi.Mode().IsRegular() {
			if s, err := schedule.Load(own); err == nil && s.SHA256 == played {
				abs, _ := filepath.Abs(own)
				c = c.Give("schedule", abs)
				fmt.Printf("shrink: playing %s, the schedule the run played (sha256 %s)\n", own, played)
			}
		}
	}
	if len(c.Withheld) == 0 {
		return c, nil
	}
	var names, what []string
	for _, f := range c.Withheld {
		if !slices.Contains(names, f.Name) {
			names = append(names, f.Name)
		}
		what = append(what, fmt.Sprintf("--%s=%q (%s)", f.Name, f.Value, history.Withheld[f.Name]))
	}
	return c, fmt.Errorf("%s's command has %s: a run directory is data, so shrink takes none of these from it; name them again (lockcheck shrink --%s VALUE %s) or, once you have read them, pass --trust-recorded %s",
		dir, strings.Join(what, ", "), names[0], dir, strings.Join(names, ","))
}

// shrinkDir makes the shrink's own directory in the run directory, RUN_DIR/shrink/TIME, through no link:
// a run directory is data, and a planted RUN_DIR/shrink link would have the candidates' runs written
// wherever it points. The TIME directory must be new.
func shrinkDir(dir string) (string, error) {
	if err := suite.Subdir(dir, "shrink"); err != nil {
		return "", err
	}
	d := filepath.Join(dir, "shrink", time.Now().Format("20060102T150405"))
	if err := os.Mkdir(d, 0o755); err != nil {
		return "", fmt.Errorf("a shrink's directory must be new: %v", err)
	}
	return d, nil
}

// sameSchedule refuses a --schedule file that is not the one the run played: a shrink of another file
// would answer for a workload that never failed. Both hashes are named.
func sameSchedule(c shrink.Cmd, res *report.Results) error {
	path := c.Get("schedule")
	if path == "" {
		return nil
	}
	played := playedSHA(res)
	s, err := schedule.Load(path)
	if err != nil {
		return err
	}
	if played == "" {
		return fmt.Errorf("--schedule %s: the run played no schedule (its random workload is what shrink reduces): leave --schedule out", path)
	}
	if s.SHA256 != played {
		return fmt.Errorf("--schedule %s has sha256 %s, the run played sha256 %s: not the schedule that failed; give the file the run played", path, s.SHA256, played)
	}
	return nil
}

// playedSHA is the sha256 of the schedule the run played, "" when it played none.
func playedSHA(res *report.Results) string {
	var opts struct {
		SHA string `json:"schedule_sha256"`
	}
	_ = json.Unmarshal(res.Options, &opts)
	return opts.SHA
}

// readShrinkRun reads a run directory's results.json, its signature (checkerName's, or the lead's) and
// the command line its history recorded.
func readShrinkRun(dir, checkerName string) (*report.Results, shrink.Signature, shrink.Cmd, error) {
	var sig shrink.Signature
	res, err := report.ReadResults(dir)
	if err != nil {
		return nil, sig, shrink.Cmd{}, fmt.Errorf("%s is not a run directory: %v", dir, err)
	}
	if sig, err = shrink.SignatureOf(res, checkerName); err != nil {
		return nil, sig, shrink.Cmd{}, fmt.Errorf("%s: %v", dir, err)
	}
	f, _, err := safefile.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil, sig, shrink.Cmd{}, fmt.Errorf("%s: its history: %v", dir, err)
	}
	defer f.Close()
	meta, err := history.ReadMeta(f)
	if err != nil {
		return nil, sig, shrink.Cmd{}, fmt.Errorf("%s/history.jsonl: %v", dir, err)
	}
	if len(meta.Command) == 0 {
		return nil, sig, shrink.Cmd{}, fmt.Errorf("%s: its history recorded no command line (a run checked or made by another program): nothing to re-run", dir)
	}
	c, err := shrink.FromRun(meta.Command, res.Options)
	if err != nil {
		return nil, sig, shrink.Cmd{}, fmt.Errorf("%s: %v", dir, err)
	}
	return res, sig, c, nil
}

// shrinkPlan is how hard a shrink tries.
type shrinkPlan struct {
	seeds, repeats int
	budget         time.Duration
	// scheduleRuns: how many runs check the caught run written as a schedule (0: seeds); explore's
	// settle confirms the schedule as often as the command
	scheduleRuns int
}

// runShrink searches from start, measures the smallest command found, writes shrink.json and steps.txt,
// and prints the command last to w. Interrupted, it writes what it has and exits 130.
func runShrink(ctx context.Context, w io.Writer, dir string, seed int64, start shrink.Cmd, sig shrink.Signature, o shrinkOracle, p shrinkPlan) error {
	began := time.Now()
	parent := ctx // the schedule's check comes after the budget: a short run, stopped only by Ctrl-C
	ctx, cancel := context.WithTimeoutCause(ctx, p.budget, context.DeadlineExceeded)
	defer cancel()
	s := &shrink.Search{Confirm: p.seeds, Reducers: shrink.Reducers, Oracle: o.trial, Progress: w,
		Reserve: (p.repeats + o.parallel - 1) / o.parallel, Seed: seed, Best: start, BestRun: estimate(start)}
	fmt.Fprintf(w, "shrink %s: fails by %s; each step kept only when %d fresh seeds all fail so; budget %s; runs into %s\n",
		dir, sig, p.seeds, p.budget, o.dir)
	s.Run(ctx)
	r := &shrink.Result{Run: dir, Signature: sig, Original: start.Line(seed), Args: s.Best.Args(), Confirm: p.seeds,
		Steps: s.Steps, Stopped: s.Stopped, Error: s.Error}
	minimal := seed
	for _, st := range s.Steps { // a seed the best command was caught on, if any step was kept
		if st.Outcome == shrink.Accepted {
			minimal = st.Seeds[0]
		}
	}
	if s.Stopped != "interrupted" && s.Stopped != shrink.NotStarted {
		o.final = true
		t := o.trial(ctx, s.Best, s.NextSeeds(p.repeats), "final")
		if t.Runs == len(t.Seeds) { // every repeat judged, even if the budget ended as the last one did
			r.Repeats, r.Caught, r.MedianNs = t.Runs, len(t.Caught), int64(t.Median())
			if t.NeverStarted() {
				r.Error = t.Error
			}
			if len(t.Caught) > 0 {
				minimal = t.Caught[0]
				r.Schedule = o.asSchedule(parent, t.CaughtDirs[0], s.Best, s.NextSeeds(cmp.Or(p.scheduleRuns, p.seeds)))
			}
		} else {
			r.Stopped = "interrupted" // Ctrl-C during the measurement, or its budget ran out
			if context.Cause(ctx) == context.DeadlineExceeded {
				r.Stopped = "budget"
			}
		}
	}
	r.Minimal, r.Seconds = s.Best.Line(minimal), time.Since(began).Seconds()
	if err := r.Write(o.dir); err != nil {
		return err
	}
	kept := 0
	for _, st := range s.Steps {
		if st.Outcome == shrink.Accepted {
			kept++
		}
	}
	fmt.Fprintf(w, "\n%d step(s) tried, %d kept, in %s", len(s.Steps), kept, time.Since(began).Round(time.Second))
	if r.Stopped != "" {
		fmt.Fprintf(w, " (stopped: %s)", r.Stopped)
	}
	fmt.Fprintf(w, "; steps in %s\n", filepath.Join(o.dir, "steps.txt"))
	r.Schedule.Print(w, sig)
	if r.Error != "" { // not "fails in 0 of n": the runs said nothing of the command
		fmt.Fprintf(w, "the runs never started (none gave a verdict), so nothing was measured: %s\nthe command they ran:\n", orText(r.Error, "no error line (see the runs' output.txt)"))
	} else if r.Repeats > 0 {
		fmt.Fprintf(w, "the smallest command fails by %s in %d of %d runs, median first violation %.1fs:\n",
			sig, r.Caught, r.Repeats, time.Duration(r.MedianNs).Seconds())
	} else {
		fmt.Fprintf(w, "the smallest command found (not measured: %s):\n", r.Stopped)
	}
	fmt.Fprintln(w, r.Minimal)
	if r.Stopped == "interrupted" {
		return exitError{exitInterrupted}
	}
	if r.Error != "" {
		return exitError{exitHarness}
	}
	return nil
}

func orText(s, d string) string {
	if strings.TrimSpace(s) == "" {
		return d
	}
	return s
}

// estimate is how long a run of c takes before any has been timed: its time, the quiet time and 10 s of
// start-up and checking.
func estimate(c shrink.Cmd) time.Duration {
	run, _ := time.ParseDuration(c.Get("time"))
	quiet, _ := time.ParseDuration(c.Get("quiet"))
	return run + quiet + 10*time.Second
}

// runLimit bounds one run of c: three times its time and quiet time, and two minutes of start-up and
// checking (a worker's JVMs on a loaded machine start in tens of seconds).
func runLimit(c shrink.Cmd) time.Duration {
	run, _ := time.ParseDuration(c.Get("time"))
	quiet, _ := time.ParseDuration(c.Get("quiet"))
	return 3*(run+quiet) + 2*time.Minute
}

// shrinkOracle runs a candidate as a small suite of child runs, one per seed, into its own directory.
type shrinkOracle struct {
	exe, dir string
	sig      shrink.Signature
	parallel int
	final    bool // the final measurement: every seed runs (no early stop)
}

// trial runs c on the seeds into the directory name. A run that ends in a harness error (exit 255: a
// worker that did not answer in time on a loaded machine) says nothing about c: during a step it is run
// again once on a fresh seed, so that one slow start does not reject a step.
func (o shrinkOracle) trial(ctx context.Context, c shrink.Cmd, seeds []int64, name string) shrink.Trial {
	began := time.Now()
	t := shrink.Trial{Seeds: seeds}
	redo, errored := o.runSeeds(ctx, c, seeds, filepath.Join(o.dir, name), &t)
	if len(redo) > 0 && !o.final && ctx.Err() == nil {
		again := make([]int64, len(redo))
		for i, seed := range redo {
			again[i] = seed + retrySeed
		}
		t.Seeds, t.Runs, t.NoVerdict, t.Other = slices.Concat(t.Seeds, again), t.Runs-errored, t.NoVerdict-errored, ""
		o.runSeeds(ctx, c, again, filepath.Join(o.dir, name+"-again"), &t)
	}
	t.Took = time.Since(began)
	return t
}

// retrySeed offsets a seed run again after a harness error from every seed the shrink draws in order.
const retrySeed = 1_000_000

// runSeeds runs c on the seeds into dir and adds what they did to t. When no run failed another way, it
// returns the seeds to run again: those whose runs ended in a harness error, and those the error's early
// stop left without a verdict.
func (o shrinkOracle) runSeeds(ctx context.Context, c shrink.Cmd, seeds []int64, dir string, t *shrink.Trial) (redo []int64, errored int) {
	s := &suite.Suite{Name: filepath.Base(dir)}
	for _, seed := range seeds {
		args := append(c.Args(), "--seed", strconv.FormatInt(seed, 10))
		s.Cases = append(s.Cases, suite.Case{ID: "seed-" + strconv.FormatInt(seed, 10), Entry: s.Name, Args: args,
			Seed: seed, Expect: []string{"invalid"}})
	}
	// A run that hangs past its time must not hold the shrink until its budget ends: past the limit the
	// step's runs get their SIGINT, and those not judged by then leave the step rejected.
	limit := runLimit(c) * time.Duration((len(seeds)+o.parallel-1)/o.parallel)
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// A step stops at its first seed that is not invalid: it cannot be kept then.
	rep, err := suite.Run(runCtx, s, "", suite.Config{Exe: o.exe, Dir: dir, Parallel: o.parallel, Repeat: 1, UntilFail: !o.final, KeepAll: true})
	if err != nil {
		t.Other = oneLine(err)
		t.Error = t.Other
		return nil, 0
	}
	hung := ctx.Err() == nil && runCtx.Err() != nil && len(rep.Outcomes) < len(seeds)
	if hung {
		t.Other = fmt.Sprintf("a run was still going after %s: stopped", limit.Round(time.Second))
	}
	judged, other := map[int64]bool{}, false
	for _, out := range rep.Outcomes {
		judged[out.Seed] = true
		t.Runs++
		res, err := report.ReadResults(filepath.Join(dir, out.Dir))
		if err != nil || out.Verdict == "error" {
			if t.Other == "" {
				t.Other = "error: " + out.Violation
			}
			if t.NoVerdict++; t.Error == "" {
				t.Error = out.Violation
			}
			if out.Exit == exitHarness {
				redo, errored = append(redo, out.Seed), errored+1
			} else {
				other = true
			}
			continue
		}
		ok, at, what := o.sig.Match(res)
		if !ok {
			if t.Other == "" {
				t.Other = what
			}
			other = true
			continue
		}
		t.Caught, t.CaughtDirs = append(t.Caught, out.Seed), append(t.CaughtDirs, filepath.Join(dir, out.Dir))
		t.Firsts = append(t.Firsts, time.Duration(at))
	}
	if other || hung || errored == 0 {
		return nil, 0
	}
	for _, seed := range seeds {
		if !judged[seed] {
			redo = append(redo, seed)
		}
	}
	return redo, errored
}

// asSchedule writes the steps that led to the first violation of the caught run in dir as schedule.yaml
// (shrink.AsSchedule) and runs that schedule on the seeds, to say whether it fails the same way: a random
// run's interleaving, replayed at its times, need not line up again.
func (o shrinkOracle) asSchedule(ctx context.Context, dir string, best shrink.Cmd, seeds []int64) *shrink.ScheduleResult {
	out := &shrink.ScheduleResult{Run: dir}
	res, err := report.ReadResults(dir)
	if err != nil {
		out.Note = err.Error()
		return out
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		out.Note = err.Error()
		return out
	}
	lock, family := "", ""
	if h.Run != nil {
		lock, family = h.Run.Lock, h.Run.Checks.Family
	}
	sc, err := shrink.AsSchedule(h, res.Story, lock, family)
	if err != nil {
		out.Note = err.Error()
		return out
	}
	out.File = filepath.Join(o.dir, "schedule.yaml")
	if err := report.WriteAtomic(out.File, func(w io.Writer) error { _, err := w.Write(sc.Marshal()); return err }); err != nil {
		out.File, out.Note = "", err.Error()
		return out
	}
	c := best.ScheduleRun(out.File, shrink.Span(sc))
	out.Command = c.Line(seeds[0])
	t := o.trial(ctx, c, seeds, "schedule")
	out.Runs, out.Caught = t.Runs, len(t.Caught)
	if t.Other != "" && len(t.Caught) < t.Runs {
		out.Note = t.Other
	}
	return out
}
