package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/suite"
	"github.com/spf13/cobra"
)

func newSuiteCmd() *cobra.Command {
	var (
		cfg        suite.Config
		shard      string
		shardEnv   string
		shardCount int
		junit      string
		keep       string
		results    string
		list       bool
		server     string
	)
	cmd := &cobra.Command{
		Use:   "suite FILE.yaml",
		Short: "Run a matrix of runs (entries × topologies × nemeses × seeds), each against its expected verdict",
		Args:  cobra.ExactArgs(1),
		Example: `  lockcheck suite examples/suites/smoke.yaml --junit smoke.xml
  lockcheck suite examples/suites/nightly.yaml --shard 2/4 --results out/shard-2
  lockcheck suite examples/suites/matrix.yaml --parallel 2 --repeat 3 --until-fail
  lockcheck suite examples/suites/smoke.yaml --server valkey@8.1.8`,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := suite.Load(args[0])
			if err != nil {
				return runner.UsageError{Err: err}
			}
			switch keep {
			case "failed":
			case "all":
				cfg.KeepAll = true
			default:
				return runner.UsageError{Err: fmt.Errorf("--keep %q: want failed or all", keep)}
			}
			if cfg.Repeat < 0 || cfg.Parallel < 0 {
				return runner.UsageError{Err: fmt.Errorf("--repeat and --parallel must not be negative")}
			}
			if err := s.SetServer(server); err != nil {
				return runner.UsageError{Err: err}
			}
			if shard, err = shardFlags(cmd, shard, shardEnv, shardCount); err != nil {
				return runner.UsageError{Err: err}
			}
			if shard != "" {
				i, n, err := suite.ParseShard(shard)
				if err != nil {
					return runner.UsageError{Err: err}
				}
				s.Shard(i, n)
			}
			if junit != "" { // found now, not after every run
				if err := suite.CheckJUnit(junit); err != nil {
					return runner.UsageError{Err: err}
				}
			}
			for _, c := range s.Cases { // every entry is checked before the first run starts
				if err := dryRun(cmd, c.Args); err != nil {
					return runner.UsageError{Err: fmt.Errorf("suite %s: entry %q (%s): %s", args[0], c.Entry, c.ID, oneLine(err))}
				}
			}
			markRan(cmd)
			if list {
				for _, c := range s.Cases {
					fmt.Printf("%s\tlockcheck run %s\n", c.ID, strings.Join(c.Args, " "))
				}
				return nil
			}
			if cfg.Exe, err = os.Executable(); err != nil {
				return err
			}
			if results == "" {
				results = filepath.Join("results", "suites", s.Name+"-"+time.Now().Format("20060102T150405"))
			}
			if err := runner.ResultsDir(results); err != nil {
				return err
			}
			if err := suite.RunsDir(results); err != nil { // before the first line about the runs
				return err
			}
			cfg.Dir, cfg.Progress = results, os.Stdout
			fmt.Fprintf(os.Stderr, "lockcheck: suite %s: %d runs, %d at a time, into %s\n", s.Name,
				len(s.Cases)*max(cfg.Repeat, 1), max(cfg.Parallel, 1), results)
			rep, err := suite.Run(cmd.Context(), s, shard, cfg)
			if rep != nil && junit != "" {
				if jerr := suite.WriteJUnit(junit, rep); jerr != nil && err == nil {
					err = jerr
				}
			}
			if err != nil {
				return err
			}
			return suiteVerdict(rep, os.Stdout)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Parallel, "parallel", defaultParallel(), "runs at a time (default: half the cores, so timing faults are not starved)")
	f.IntVar(&cfg.Repeat, "repeat", 1, "rounds of the whole matrix (with --until-fail, 0 means until one fails)")
	f.BoolVar(&cfg.UntilFail, "until-fail", false, "stop at the first run that misses its expectation")
	f.StringVar(&shard, "shard", "", "run only shard i of n (i/n, 1-based): a stable split of the matrix")
	f.StringVar(&shardEnv, "shard-index-env", "", "take the shard's 0-based index from this variable (Kubernetes: JOB_COMPLETION_INDEX), with --shard-count")
	f.IntVar(&shardCount, "shard-count", 0, "shards in all, with --shard-index-env")
	f.StringVar(&junit, "junit", "", "write JUnit XML here: one testcase per run, failure = verdict other than expected")
	f.StringVar(&keep, "keep", "failed", "run directories to keep: failed (those that missed their expectation) or all")
	f.BoolVar(&list, "list", false, "print the runs (after --shard) and their command lines, run nothing")
	f.StringVar(&results, "results", "", "the suite's directory (default results/suites/NAME-TIME)")
	f.StringVar(&server, "server", "", "run every entry on this server (lockcheck run --server NAME[@VERSION]), e.g. valkey@8.1.8: a CI matrix's server dimension")
	return cmd
}

// shardFlags gives the shard as i/n from --shard, or from --shard-index-env and --shard-count (Kubernetes'
// Indexed Job: a 0-based index in the environment), naming in any complaint the flags and variable given.
func shardFlags(cmd *cobra.Command, shard, env string, count int) (string, error) {
	counted := cmd.Flags().Changed("shard-count")
	switch {
	case env == "" && counted:
		return "", fmt.Errorf("--shard-count %d needs --shard-index-env (the variable holding this shard's 0-based index); or give --shard i/n", count)
	case env == "":
		return shard, nil
	case shard != "":
		return "", fmt.Errorf("--shard and --shard-index-env: give one")
	case count < 1:
		return "", fmt.Errorf("--shard-index-env %s needs --shard-count N (N at least 1), got %d", env, count)
	}
	v, ok := os.LookupEnv(env)
	if !ok {
		return "", fmt.Errorf("--shard-index-env %s: the variable is not set", env)
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= count {
		return "", fmt.Errorf("--shard-index-env %s=%q: want a 0-based index from 0 to %d (--shard-count %d)", env, v, count-1, count)
	}
	return fmt.Sprintf("%d/%d", i+1, count), nil
}

// defaultParallel is half the cores: a run's timing faults (leases of hundreds of milliseconds) misfire on a
// starved machine.
func defaultParallel() int { return max(runtime.NumCPU()/2, 1) }

// dryRun checks one run's arguments as `lockcheck run --dry-run` would, in this process.
func dryRun(parent *cobra.Command, args []string) error {
	run := newRunCmd()
	run.SetArgs(append(append([]string{}, args...), "--dry-run"))
	run.SetOut(io.Discard)
	run.SetErr(io.Discard)
	run.SilenceErrors, run.SilenceUsage = true, true
	return run.ExecuteContext(parent.Context())
}

// suiteVerdict prints the tally and maps it to an exit code: 0 only when every run met its expectation.
func suiteVerdict(rep *suite.Report, w io.Writer) error {
	failed := rep.Failed()
	fmt.Fprintf(w, "suite %s: %d runs, %d missed their expectation", rep.Name, len(rep.Outcomes), failed)
	if rep.Stopped != "" {
		fmt.Fprintf(w, " (%s)", rep.Stopped)
	}
	fmt.Fprintln(w)
	switch {
	case failed > 0:
		var ids []string
		for _, o := range rep.Outcomes {
			if !o.Met {
				ids = append(ids, o.ID)
			}
		}
		fmt.Fprintf(w, "missed: %s\n", strings.Join(ids, " "))
		return exitError{exitInvalid}
	case rep.Stopped == "interrupted" && len(rep.Outcomes) == 0:
		return exitError{exitInterrupted}
	case rep.Stopped == "interrupted": // what ran met its expectation; the rest is unknown
		return exitError{exitUnknown}
	case len(rep.Outcomes) == 0:
		fmt.Fprintln(w, "the suite ran nothing")
		return exitError{exitInvalid}
	}
	return nil
}

func newMergeCmd() *cobra.Command {
	var out, junit string
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Merge the results of many suite runs (shards, repeats, machines) into one suite page, JUnit file and store",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return runner.UsageError{Err: fmt.Errorf("merge: give --out DIR")}
			}
			if junit != "" {
				if err := suite.CheckJUnit(junit); err != nil {
					return runner.UsageError{Err: err}
				}
			}
			markRan(cmd)
			rep, err := suite.Merge(out, args)
			if err != nil {
				return runner.UsageError{Err: err}
			}
			if junit != "" {
				if err := suite.WriteJUnit(junit, rep); err != nil {
					return err
				}
			}
			// Each run's line and story, as the suite printed it: the Action reads a merge's alike.
			for _, o := range rep.Outcomes {
				suite.PrintOutcome(os.Stdout, o)
			}
			return suiteVerdict(rep, os.Stdout)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the merged suite's directory")
	cmd.Flags().StringVar(&junit, "junit", "", "write the merged JUnit XML here")
	return cmd
}
