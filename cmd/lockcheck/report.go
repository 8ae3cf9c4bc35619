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
	var out, shrinkDir string
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Write a bug report in Markdown for an invalid run (with its shrink's minimal command, when lockcheck shrink ran on it)",
		Long: `Write a bug report a maintainer can act on: a title in words, what is affected (library, server,
topology, persistence, lockcheck), the steps (the command that reproduces it and what the application did),
expected, actual (the run's story), the proof excerpt, how often it reproduces, the fault timeline and where
the full history is. When 'lockcheck shrink RUN_DIR' ran (or --shrink names its directory), the report is about a run of its
minimal command.
It is written to RUN_DIR/report.md (or --out; - for standard output) and its path printed.`,
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
			if out == "-" {
				return in.Write(os.Stdout)
			}
			if out == "" {
				out = filepath.Join(dir, "report.md")
			}
			if err := report.Overwritable(out); err != nil {
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
	cmd.Flags().StringVar(&shrinkDir, "shrink", "", "a shrink's directory (its shrink.json) to report from (default: the newest under RUN_DIR/shrink/)")
	return cmd
}
