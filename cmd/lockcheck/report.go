package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockcheck/lockcheck/bugreport"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	var out, shrinkDir, scheduleFile string
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Write a bug report in Markdown for an invalid run (with its shrink's minimal command, when lockcheck shrink ran on it)",
		Long: `Write a bug report a maintainer can act on: a title in words, what is affected (library, server,
topology, persistence, lockcheck), the steps (the command that reproduces it and what the application did),
expected, actual (the run's story), the proof excerpt, how often it reproduces, the fault timeline and where
the full history is. When 'lockcheck shrink RUN_DIR' ran (or --shrink names its directory), the report is about a run of its
minimal command.
It is written to RUN_DIR/report.md (or --out; - for standard output) and its path printed; --out never
replaces a file that is not a report (the run's own history, results, pages, proof). A run directory is
data: the command is rebuilt from the flags a file may give, the others listed beside it; a schedule the
run played is carried inline when its sha256 is the run's (RUN_DIR/schedule.yaml, or --schedule FILE).`,
		Example: `  lockcheck report results/latest
  lockcheck report --out - results/latest`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			markRan(cmd)
			dir := args[0]
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return runner.UsageError{Err: fmt.Errorf("%s: not a run directory", dir)}
			}
			in, err := bugreport.Load(dir, shrinkDir)
			if err != nil {
				return runner.UsageError{Err: err}
			}
			if scheduleFile != "" {
				if err := in.UseSchedule(scheduleFile); err != nil {
					return runner.UsageError{Err: err}
				}
			}
			if out == "-" {
				return in.Write(os.Stdout)
			}
			if out == "" {
				out = filepath.Join(dir, "report.md")
			}
			if err := reportOut(out); err != nil {
				return runner.UsageError{Err: fmt.Errorf("--out: %v", err)}
			}
			if err := report.WriteAtomic(out, in.Write); err != nil {
				return err
			}
			fmt.Println(out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "where to write the report (default RUN_DIR/report.md; - for standard output)")
	cmd.Flags().StringVar(&scheduleFile, "schedule", "", "the schedule file the run played, to carry inline (refused unless its sha256 is the run's)")
	cmd.Flags().StringVar(&shrinkDir, "shrink", "", "a shrink's directory (its shrink.json) to report from (default: the newest under RUN_DIR/shrink/)")
	return cmd
}

// reportOut refuses an --out that exists and is not a report lockcheck wrote: a run's own history,
// results, summary page, timeline and proof are lockcheck's files too, but a report replacing one leaves
// the run unreadable (issue 36, item 6). Nothing else is replaced either: not a link, not a user's file.
func reportOut(out string) error {
	if err := report.Overwritable(out); err != nil {
		return err
	}
	if _, err := os.Lstat(out); err == nil && filepath.Ext(out) != ".md" {
		return fmt.Errorf("%s exists and is not a report (a file of a run, or another of lockcheck's files): a report replaces only a report", out)
	}
	return nil
}
