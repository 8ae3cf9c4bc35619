package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/lockcheck/lockcheck/repro"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/suite"
	"github.com/spf13/cobra"
)

func newReproCmd() *cobra.Command {
	var (
		seeds, parallel int
		version, junit  string
		results         string
		all, quick      bool
	)
	cmd := &cobra.Command{
		Use:   "repro list | NAME... | --all",
		Short: "Reproduce a catalogued lock bug: the buggy and the fixed version on the same seeds and schedule",
		Example: `  lockcheck repro list
  lockcheck repro redsync-extend-lost-lock --seeds 5
  lockcheck repro redsync-extend-lost-lock --version v4.0.2   # is mine affected?
  lockcheck repro --all --seeds 3 --junit repro.xml
  lockcheck repro --quick --seeds 1                         # the entries that decide in seconds`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == "list" {
				markRan(cmd)
				return printCatalog()
			}
			var entries []*suite.Suite
			if all && quick {
				return runner.UsageError{Err: fmt.Errorf("repro: --all and --quick exclude each other")}
			}
			if all || quick {
				list := repro.List
				if quick {
					list = repro.Quick
				}
				l, err := list()
				if err != nil {
					return err
				}
				entries = l
			}
			for _, name := range args {
				s, err := repro.Get(name)
				if err != nil {
					return runner.UsageError{Err: err}
				}
				entries = append(entries, s)
			}
			if len(entries) == 0 {
				return runner.UsageError{Err: fmt.Errorf("repro: name an entry (lockcheck repro list), or --all, or --quick")}
			}
			if seeds < 1 {
				return runner.UsageError{Err: fmt.Errorf("--seeds must be at least 1, got %d", seeds)}
			}
			for _, s := range entries {
				repro.Reseed(s, seeds)
				if version != "" {
					if err := repro.WithVersion(s, version); err != nil {
						return runner.UsageError{Err: err}
					}
				}
				for _, c := range s.Cases {
					if err := dryRun(cmd, c.Args); err != nil {
						return runner.UsageError{Err: fmt.Errorf("repro %s: %s", s.Name, oneLine(err))}
					}
				}
			}
			markRan(cmd)
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if results == "" {
				results = filepath.Join("results", "repro", time.Now().Format("20060102T150405"))
			}
			if err := runner.ResultsDir(results); err != nil {
				return err
			}
			for _, s := range entries { // each entry's runs go into a directory of its own
				if err := suite.Subdir(results, s.Name); err != nil {
					return err
				}
			}
			ok := true
			undetermined := false // --version: some entry's runs could not tell (exit 2)
			total := &suite.Report{Name: "repro", Started: time.Now()}
			for _, s := range entries {
				r := s.Repro
				fmt.Printf("%s: %s (%s; affected %s, fixed %s)\n", s.Name, r.Summary, r.Issue, r.Affected, r.FixedIn)
				dir := filepath.Join(results, s.Name)
				rep, err := suite.Run(cmd.Context(), s, "", keptRuns(exe, dir, parallel))
				if err != nil {
					return err
				}
				sides := repro.Tally(rep)
				repro.Print(os.Stdout, sides, version == "")
				fmt.Printf("kept in %s (index.html lists its runs)\n", dir)
				for _, side := range sides {
					if version != "" { // one side only: say whether that version is affected
						a := side.Answer()
						fmt.Printf("%s at %s: %s\n", r.Library, version, a)
						undetermined = undetermined || !a.Decided
						continue
					}
					ok = ok && side.Passed
				}
				for _, o := range rep.Outcomes {
					o.ID = s.Name + "/" + o.ID
					if version == "" {
						o.Met = sideOf(sides, o.Entry).Passed
					}
					total.Outcomes = append(total.Outcomes, o)
				}
				if rep.Stopped != "" {
					return exitError{exitUnknown}
				}
			}
			total.Seconds = time.Since(total.Started).Seconds()
			if junit != "" {
				if err := suite.WriteJUnit(junit, total); err != nil {
					return err
				}
			}
			if !ok {
				return exitError{exitInvalid}
			}
			if undetermined {
				return exitError{exitUnknown}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&seeds, "seeds", 5, "seeds per side (1..N)")
	f.StringVar(&version, "version", "", "run only the buggy side, with the library at this version: is it affected?")
	f.StringVar(&junit, "junit", "", "JUnit XML: one testcase per run, failing when its side missed its expectation")
	f.BoolVar(&all, "all", false, "every entry of the catalog")
	f.BoolVar(&quick, "quick", false, "the entries marked quick (both sides decided in seconds on one seed)")
	f.IntVar(&parallel, "parallel", defaultParallel(), "runs at a time")
	f.StringVar(&results, "results", "", "directory (default results/repro/TIME)")
	return cmd
}

// keptRuns runs a repro's or bisect's suite into dir keeping every run (the caught ones are the evidence),
// with a line per run naming its directory.
func keptRuns(exe, dir string, parallel int) suite.Config {
	return suite.Config{Exe: exe, Dir: dir, Parallel: parallel, KeepAll: true, Each: func(o suite.Outcome) {
		fmt.Printf("  %-6s seed %-3d %-8s %s\n", o.Entry, o.Seed, o.Verdict, filepath.Join(dir, o.Dir))
	}}
}

func sideOf(sides []repro.Side, entry string) repro.Side {
	for _, s := range sides {
		if s.Entry == entry {
			return s
		}
	}
	return repro.Side{}
}

func printCatalog() error {
	l, err := repro.List()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLIBRARY\tKIND\tAFFECTED\tFIXED\tCHECKER\tQUICK\tWHAT")
	for _, s := range l {
		r := s.Repro
		q := ""
		if r.Quick {
			q = "quick"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, r.Library, r.Kind, r.Affected, r.FixedIn, r.Checker, q, r.Summary)
	}
	return tw.Flush()
}
