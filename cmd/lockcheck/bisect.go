package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/bisect"
	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/repro"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/suite"
	"github.com/spf13/cobra"
)

// listReleases asks a worker's registry for its releases; tests give a recorded list instead.
var listReleases = func(ctx context.Context, r worker.Releases) ([]string, error) { return r.Fetch(ctx) }

func newBisectCmd() *cobra.Command {
	var (
		client, good, bad, results string
		seeds, parallel            int
	)
	cmd := &cobra.Command{
		Use:   "bisect --client LIB --good V1 --bad V2 NAME",
		Short: "Find the release where a catalogued bug came in or was fixed: a binary search over the library's releases",
		Long: `Runs the catalog entry's buggy side at library releases between --good and --bad (the registry's own
list, stable releases, semver order), --seeds seeds each: a release is bad when any seed is caught. Either
end may be the older one: with the good end newer it finds the release that fixed the bug, with it older the
one that brought it in. Releases that do not build or give no verdict are skipped and said so.`,
		Example: `  lockcheck bisect --client redisson --good 3.17.0 --bad 3.16.0 --seeds 2 redisson-3994-wait-ignored
  lockcheck bisect --client redis-py --good 3.2.0 --bad 2.10.0 --seeds 2 redis-py-621-with-blocking-timeout`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return runner.UsageError{Err: fmt.Errorf("bisect: name one catalog entry (lockcheck repro list)")}
			}
			if client == "" || good == "" || bad == "" {
				return runner.UsageError{Err: fmt.Errorf("bisect needs --client LIB, --good V1 and --bad V2")}
			}
			if seeds < 1 {
				return runner.UsageError{Err: fmt.Errorf("--seeds must be at least 1, got %d", seeds)}
			}
			name := args[0]
			entry, err := repro.Get(name)
			if err != nil {
				return runner.UsageError{Err: err}
			}
			spec, ok := worker.Get(client)
			if !ok {
				return runner.UsageError{Err: fmt.Errorf("--client %s: no such worker (have: %s)", client, join(worker.Names()))}
			}
			if lib := entryClient(entry); lib != client {
				if lib == "" {
					return runner.UsageError{Err: fmt.Errorf("repro %s does not run a library's worker: nothing to bisect", name)}
				}
				return runner.UsageError{Err: fmt.Errorf("repro %s runs --client %s, not %s", name, lib, client)}
			}
			if _, fixed := entry.Repro.FixRelease(); !fixed && worker.CompareVersions(good, bad) > 0 {
				// A design limit: every release is bad, so --good would be found not good, after builds.
				return runner.UsageError{Err: fmt.Errorf("repro %s: no release fixes it (a design limit: the catalog names a mitigation, not a release), so there is no fix to find between --bad %s and --good %s", name, bad, good)}
			}
			if spec.Releases.Parse == nil {
				return runner.UsageError{Err: fmt.Errorf("--client %s: its library has no registry release list to bisect", client)}
			}
			if err := checkBisectArgs(cmd, name, good); err != nil {
				return err
			}
			markRan(cmd)
			releases, err := listReleases(cmd.Context(), spec.Releases)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if results == "" {
				results = filepath.Join("results", "bisect", time.Now().Format("20060102T150405"))
			}
			lo, hi := slices.Index(releases, good), slices.Index(releases, bad)
			if lo >= 0 && hi >= 0 {
				fmt.Printf("bisect %s: %s %s..%s, %d stable releases from %s, %d seed(s) each\n", name, client,
					releases[min(lo, hi)], releases[max(lo, hi)], max(lo, hi)-min(lo, hi)+1, spec.Releases.Registry, seeds)
			}
			oracle := releaseOracle(spec, name, exe, results, seeds, parallel)
			out, err := bisect.Search(cmd.Context(), releases, good, bad, oracle, printStep)
			var ie bisect.InputError
			if errors.As(err, &ie) {
				return runner.UsageError{Err: err}
			}
			if err != nil {
				return err
			}
			what, older, newer := "the fix", "bad", "good"
			if out.Older == bisect.Good {
				what, older, newer = "the regression", "good", "bad"
			}
			if !out.Exact() {
				fmt.Printf("%s: the verdict flips from %s (%s %s) to %s (%s %s), but %s could not be judged: it is one of them or %s\n",
					what, older, client, out.Last, newer, client, out.First, strings.Join(out.Skipped, ", "), out.First)
				return exitError{exitUnknown}
			}
			fmt.Printf("%s: %s %s is the first %s release (%s %s the last %s); %d releases judged\n",
				what, client, out.First, newer, client, out.Last, older, len(out.Steps))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&client, "client", "", "the library's worker: "+join(worker.Names()))
	f.StringVar(&good, "good", "", "a release without the bug (older or newer than --bad)")
	f.StringVar(&bad, "bad", "", "a release with the bug")
	f.IntVar(&seeds, "seeds", 3, "seeds per release (1..N); a release is bad when any is caught")
	f.IntVar(&parallel, "parallel", defaultParallel(), "runs at a time")
	f.StringVar(&results, "results", "", "directory (default results/bisect/TIME), a suite per release")
	return cmd
}

// entryClient is the worker the entry's buggy side runs, without its version.
func entryClient(s *suite.Suite) string {
	for _, c := range s.Cases {
		if i := slices.Index(c.Args, "--client"); c.Entry == "buggy" && i >= 0 && i+1 < len(c.Args) {
			lib, _, _ := strings.Cut(c.Args[i+1], "@")
			return lib
		}
	}
	return ""
}

// checkBisectArgs checks the buggy side's flags at a version before anything runs.
func checkBisectArgs(cmd *cobra.Command, name, version string) error {
	s, err := repro.Get(name)
	if err != nil {
		return runner.UsageError{Err: err}
	}
	repro.Reseed(s, 1)
	if err := repro.WithVersion(s, version); err != nil {
		return runner.UsageError{Err: err}
	}
	for _, c := range s.Cases {
		if err := dryRun(cmd, c.Args); err != nil {
			return runner.UsageError{Err: fmt.Errorf("repro %s: %s", name, oneLine(err))}
		}
	}
	return nil
}

func printStep(s bisect.Step) {
	what := fmt.Sprintf("caught %d/%d", s.Caught, s.Seeds)
	if s.Verdict == bisect.Skip {
		what = "skipped: " + s.Why
	} else if s.Caught > 0 {
		what += fmt.Sprintf(", median first violation %.1fs", s.FirstViolation.Seconds())
	}
	fmt.Printf("  %-10s %-4s  %s  (%s)", s.Version, s.Verdict, what, s.Took.Round(time.Second))
	if s.Dir != "" {
		fmt.Printf("  %s", s.Dir)
	}
	fmt.Println()
}

// releaseOracle judges a release: the worker is built first (a release that does not build is skipped),
// then the entry's buggy side runs at that release on seeds 1..seeds, as repro --version does.
func releaseOracle(spec worker.Spec, name, exe, results string, seeds, parallel int) bisect.Oracle {
	return func(ctx context.Context, v string) bisect.Result {
		start := time.Now()
		skip := func(why string) bisect.Result {
			return bisect.Result{Verdict: bisect.Skip, Why: why, Seeds: seeds, Took: time.Since(start)}
		}
		if _, err := worker.Build(ctx, spec, v, os.Stderr); err != nil {
			return skip("does not build with the worker: " + oneLine(err))
		}
		s, err := repro.Get(name)
		if err != nil {
			return skip(oneLine(err))
		}
		repro.Reseed(s, seeds)
		if err := repro.WithVersion(s, v); err != nil {
			return skip(oneLine(err))
		}
		if err := os.MkdirAll(results, 0o755); err != nil {
			return skip(oneLine(err))
		}
		if err := suite.Subdir(results, v); err != nil { // not a link planted in --results
			return skip(oneLine(err))
		}
		dir := filepath.Join(results, v)
		rep, err := suite.Run(ctx, s, "", keptRuns(exe, dir, parallel))
		if err != nil {
			return skip(oneLine(err))
		}
		r := judgeRelease(rep, seeds, time.Since(start))
		r.Dir = dir
		return r
	}
}

// judgeRelease: bad when any seed was caught; good when every seed was valid; otherwise (a seed with no
// verdict: unknown, or the run failed) it cannot be called good, and is skipped.
func judgeRelease(rep *suite.Report, seeds int, took time.Duration) bisect.Result {
	r := bisect.Result{Seeds: seeds, Took: took}
	var firsts []time.Duration
	var none []string
	for _, o := range rep.Outcomes {
		switch o.Verdict {
		case "invalid":
			r.Caught++
			firsts = append(firsts, time.Duration(o.FirstNs))
		case "valid":
		default:
			none = append(none, fmt.Sprintf("seed %d %s (%s)", o.Seed, o.Verdict, o.Violation))
		}
	}
	switch {
	case r.Caught > 0:
		r.Verdict = bisect.Bad
		sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
		r.FirstViolation = firsts[len(firsts)/2]
	case len(none) > 0 || len(rep.Outcomes) < seeds:
		r.Verdict, r.Why = bisect.Skip, "no verdict: "+strings.Join(none, "; ")
	default:
		r.Verdict = bisect.Good
	}
	return r
}
