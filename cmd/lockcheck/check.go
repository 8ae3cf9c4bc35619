package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
)

func newCheckCmd() *cobra.Command {
	timeout := runner.Defaults().CheckTimeout
	var proof string
	cmd := &cobra.Command{
		Use:   "check RUN_DIR|history.jsonl",
		Short: "Re-check a recorded history offline (also a partial one from a killed run); writes <history>.check.json, .check.html and .check.summary.html",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			markRan(cmd)
			if err := runner.CheckCheckTimeout(timeout); err != nil {
				return err
			}
			path, err := runner.ResolveHistory(args[0])
			if err != nil {
				return err
			}
			res, err := runner.CheckProof(cmd.Context(), path, timeout, proof)
			if errors.Is(err, runner.ErrCheckInterrupted) {
				fmt.Fprintln(os.Stderr, "lockcheck:", err)
				return exitError{exitUnknown}
			}
			if err != nil && res == nil {
				return err
			}
			res.Table(os.Stdout)
			if err != nil { // a read-only directory: the verdict stands, only its files are missing
				fmt.Fprintf(os.Stderr, "lockcheck: the verdict's files were not written: %v\n", err)
			}
			return exitError{res.Valid.ExitCode()}
		},
	}
	cmd.Flags().DurationVar(&timeout, "check-timeout", timeout, "bound on the porcupine search (then: unknown)")
	cmd.Flags().StringVar(&proof, "proof", "", "when porcupine finds the history invalid, write its proof (the fewest commands that still have no legal order) to `FILE`, a history of its own")
	return cmd
}
