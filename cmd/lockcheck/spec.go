package main

import (
	"errors"

	"github.com/lockcheck/lockcheck/lockspec"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
)

// useLockSpec makes the lock of --lock-spec FILE the lock under test: runner.Prepare loads it, as the
// test's own kind (nothing is registered). Every error is bad input, reported before anything starts.
func useLockSpec(cmd *cobra.Command, path string, o *runner.Options) error {
	if path == "" {
		return nil
	}
	if cmd.Flags().Changed("lock") {
		return runner.UsageError{Err: errors.New("--lock and --lock-spec: choose one")}
	}
	o.LockSpec = path
	return nil
}

// listLockSpec registers a spec's lock for `lockcheck locks --lock-spec FILE`: the listing is of the
// registry.
func listLockSpec(path string) error {
	if path == "" {
		return nil
	}
	if _, err := lockspec.Register(path); err != nil {
		return runner.UsageError{Err: err}
	}
	return nil
}
